# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read HAProxy's runtime API answers (``show stat``, ``show servers state``); docs beside this file.

The triton_lb role fetches the text through the admin socket (socat) and decides with these filters
when a drained server has no request left and which state a Triton host is in.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import csv
import re
import shlex

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

# srv_admin_state bits (HAProxy's include/haproxy/server-t.h, SRV_ADMF_*).
ADMIN_MAINT = 0x01 | 0x02 | 0x04 | 0x20 | 0x40  # forced, inherited, config, resolution, hostname
ADMIN_DRAIN = 0x08 | 0x10  # forced, inherited
# srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping (soft-stopped by a 404 check).
OP_DOWN = 0
# Which state wins when load balancers or backends disagree: an operator's choice first, then health.
PRECEDENCE = ("maint", "drained", "down", "unknown", "up")


def _texts(value, name):
    if isinstance(value, string_types):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, string_types) for v in value):
        return list(value)
    raise AnsibleFilterError("%s expects the runtime API's answer as a string or a list of strings, got %s"
                             % (name, type(value).__name__))


def _backends(backends, name):
    if backends is None:
        return None
    if isinstance(backends, string_types):
        return [backends]
    if isinstance(backends, (list, tuple)) and all(isinstance(b, string_types) for b in backends):
        return list(backends)
    raise AnsibleFilterError("%s: backends must be a backend name or a list of names" % name)


def stat_rows(text):
    """``show stat`` CSV as a list of dicts (the header line starts with '# ')."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# "):
        raise AnsibleFilterError("not an answer to 'show stat' (no '# pxname,...' header): %r" % text[:200])
    lines[0] = lines[0][2:]
    return list(csv.DictReader(lines))


def servers_state_rows(text):
    """``show servers state`` as a list of dicts: a version line, a '# ' header, one line per server."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = next((line for line in lines if line.startswith("# ")), None)
    if header is None:
        raise AnsibleFilterError("not an answer to 'show servers state' (no '# be_id ...' header): %r" % text[:200])
    names = header[2:].split()
    rows = []
    for line in lines[lines.index(header) + 1:]:
        fields = line.split()
        if len(fields) >= len(names) - 2:  # older versions end a few columns earlier
            rows.append(dict(zip(names, fields)))
    return rows


def haproxy_in_flight(value, server, backends=None):
    """Requests HAProxy has on ``server`` right now: current sessions plus queued ones, summed over the
    backends (all when None) and over every answer when ``value`` is a list (one per load balancer)."""
    wanted = _backends(backends, "haproxy_in_flight")
    total, found = 0, set()
    for text in _texts(value, "haproxy_in_flight"):
        for row in stat_rows(text):
            if row.get("svname") != server or (wanted is not None and row.get("pxname") not in wanted):
                continue
            found.add(row["pxname"])
            total += int(row.get("scur") or 0) + int(row.get("qcur") or 0)
    missing = sorted(set(wanted or []) - found) if wanted is not None else []
    if not found or missing:
        raise AnsibleFilterError("HAProxy has no server %r in backend(s) %s" % (server, ", ".join(missing) or "any"))
    return total


def _row_state(row):
    admin = int(row.get("srv_admin_state") or 0)
    if admin & ADMIN_MAINT:
        return "maint"
    if admin & ADMIN_DRAIN:
        return "drained"
    if int(row.get("srv_op_state") or 0) == OP_DOWN:
        return "down"
    return "up"


def haproxy_server_state(value, server, backends=None):
    """One of up, drained, down, maint, unknown for ``server`` across the backends and load balancers:
    maintenance or drain set by an operator wins over health; a backend without the server is unknown."""
    wanted = _backends(backends, "haproxy_server_state")
    states = []
    for text in _texts(value, "haproxy_server_state"):
        rows = [r for r in servers_state_rows(text) if r.get("srv_name") == server]
        seen = set()
        for row in rows:
            if wanted is None or row.get("be_name") in wanted:
                seen.add(row.get("be_name"))
                states.append(_row_state(row))
        if not seen or (wanted is not None and set(wanted) - seen):
            states.append("unknown")
    if not states:
        return "unknown"
    return min(states, key=PRECEDENCE.index)


def haproxy_server_states(value, servers, backends=None):
    """{server: state} for every name in ``servers``, from the same answers (see haproxy_server_state)."""
    if isinstance(servers, string_types) or not isinstance(servers, (list, tuple)):
        raise AnsibleFilterError("haproxy_server_states: servers must be a list of server names")
    return dict((server, haproxy_server_state(value, server, backends)) for server in servers)


# socat's error line on a failed connect: "... socat[812] E connect(5, AF=1 "/run/haproxy/admin.sock", 25): Connection refused"
_SOCAT_ERROR = re.compile(r"socat\[\d+\] E .*\)\s*:\s*([^:()]+?)\s*$")


def _socket_of(result):
    argv = result.get("cmd") or []
    if isinstance(argv, string_types):
        try:
            argv = shlex.split(argv)
        except ValueError:
            argv = argv.split()
    for arg in reversed(list(argv)):
        arg = str(arg)
        if arg.startswith("unix-connect:"):
            return arg[len("unix-connect:"):]
    return ""


def _why(result):
    if result.get("unreachable"):
        return "the host could not be reached: %s" % (result.get("msg") or "unreachable").strip()
    lines = [line.strip() for line in (result.get("stderr") or "").splitlines() if line.strip()]
    for line in reversed(lines):  # socat's own error, not the shell's broken pipe after it
        found = _SOCAT_ERROR.search(line)
        if found:
            return found.group(1)
    if lines:
        return lines[-1]
    if result.get("rc") not in (None, 0):
        return (result.get("msg") or "socat exit code %s" % result.get("rc")).strip()
    return "no answer within socat's timeout"


def haproxy_unanswered(value):
    """The load balancers whose admin socket did not answer, from the results of one socat call per load balancer
    (a registered loop over the balancer hosts): [{host, socket, reason}] in their order; empty when every one answered.

    A call answered when socat exited 0 with some output; otherwise the reason is socat's error (its errno text,
    such as "Connection refused" or "No such file or directory"), or why the host could not be reached."""
    if isinstance(value, dict):
        value = value.get("results", [value])
    if not isinstance(value, (list, tuple)) or not all(isinstance(r, dict) for r in value):
        raise AnsibleFilterError("haproxy_unanswered expects the registered results of the socat calls (a list of dicts)")
    problems = []
    for result in value:
        if result.get("skipped"):
            continue
        if not result.get("unreachable") and result.get("rc") == 0 and (result.get("stdout") or "").strip():
            continue
        problems.append({"host": str(result.get("item", "")), "socket": _socket_of(result), "reason": _why(result)})
    return problems


class FilterModule(object):
    def filters(self):
        return {"haproxy_in_flight": haproxy_in_flight, "haproxy_server_state": haproxy_server_state,
                "haproxy_server_states": haproxy_server_states, "haproxy_unanswered": haproxy_unanswered}
