# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling host-operation summary (roles/triton_rolling); docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def rolling_summary(hostvars, hosts):
    """One line per host, in plan order: its outcome (and error), or that the run did not reach it."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("rolling_summary: hosts must be a list, got %s" % type(hosts).__name__)
    lines = []
    for host in hosts:
        result = (hostvars.get(host) or {}).get("triton_rolling_result")
        if not result:
            lines.append("%s: not reached" % host)
            continue
        line = "%s [%s]: %s" % (host, result.get("group", "?"), result.get("outcome", "?"))
        if result.get("error"):
            line += ": %s" % result["error"]
        lines.append(line)
    return lines


def drain_refusals(draining, membership, ordered_groups, states):
    """Why draining ``draining`` would leave a rollout group with no host up (empty: it would not).

    ``membership``: group -> hosts (Ansible's ``groups``); ``ordered_groups``: the rollout groups;
    ``states``: host -> load-balancer state (up, drained, down, maint, unknown); a host missing from it
    is unknown, which does not count as serving.
    """
    draining = list(draining or [])
    problems = []
    for group in ordered_groups or []:
        members = list(membership.get(group) or [])
        taken = [h for h in members if h in draining]
        if not taken:
            continue
        rest = [h for h in members if h not in draining]
        if any(states.get(h) == "up" for h in rest):
            continue
        known = ["%s %s" % (h, states[h]) for h in rest if h in states]
        unknown = [h for h in rest if h not in states]
        parts = (["others: " + ", ".join(known)] if known else []) + (["state unknown: " + ", ".join(unknown)] if unknown else [])
        detail = "; ".join(parts)
        problems.append("%s would have no host up (draining %s%s)" % (group, ", ".join(taken), "; " + detail if detail else ""))
    return problems


class FilterModule(object):
    def filters(self):
        return {"rolling_summary": rolling_summary, "drain_refusals": drain_refusals}
