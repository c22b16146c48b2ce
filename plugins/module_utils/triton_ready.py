# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until Triton answers ``/v2/health/ready``, reading its systemd unit every round.

A unit that cannot become ready ends the wait at once, named with its state: stopped, failed, not installed or
masked, or crash-looping under ``Restart=on-failure`` (waiting to restart, or restarted since the wait began). A
port nobody will open again is otherwise polled for the whole timeout and ends in a bare "Connection refused".
A unit state that cannot be read is no reason to stop: the wait goes on and the timeout names what was read.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import time

READY_PATH = "/v2/health/ready"
UNIT_PROPERTIES = ("LoadState", "ActiveState", "SubState", "Result", "NRestarts", "ExecMainStatus")
# No single probe may hold the wait longer than this; Triton answers its health endpoint at once when it runs.
PROBE_TIMEOUT = 10.0


def show_argv(systemctl, unit):
    """The one read of the unit per round."""
    return [systemctl, "show", "-p", ",".join(UNIT_PROPERTIES), unit]


def parse_show(text):
    """``systemctl show -p ...`` output as a dict of the properties in UNIT_PROPERTIES."""
    fields = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in UNIT_PROPERTIES:
            fields[key.strip()] = value.strip()
    return fields


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _readable(fields):
    return bool(fields.get("ActiveState") or fields.get("LoadState"))


def unit_words(fields, error=None):
    """The unit's state in words: ``inactive (dead)``, ``failed (failed, result exit-code, status 1)``,
    ``activating (auto-restart, result exit-code, status 1, restarted 2 times)``, ``not installed (not-found)``."""
    load = fields.get("LoadState", "")
    if load == "not-found":
        return "not installed (not-found)"
    if load == "masked":
        return "masked"
    active = fields.get("ActiveState", "")
    if not active:
        return "unknown (systemctl show gave no state%s)" % ((": " + error) if error else "")
    details = [fields.get("SubState") or "?"]
    result = fields.get("Result", "")
    if result and result != "success":
        details.append("result " + result)
        # after a clean stop ExecMainStatus may still hold SIGTERM's number: shown only for a failure
        status = _int(fields.get("ExecMainStatus"))
        if status:
            details.append(("signal %d" if result in ("signal", "core-dump") else "status %d") % status)
    restarts = _int(fields.get("NRestarts"))
    if restarts:
        details.append("restarted %d time%s" % (restarts, "" if restarts == 1 else "s"))
    return "%s (%s)" % (active, ", ".join(details))


def judge(fields, baseline_restarts):
    """``(reason, cause)`` when the unit cannot become ready, else None.

    reason is ``stopped`` or ``crash_loop``; ``baseline_restarts`` is NRestarts at the wait's first read (None when
    systemd does not report it).
    """
    load = fields.get("LoadState", "")
    if load == "not-found":
        return "stopped", "no such unit is installed"
    if load == "masked":
        return "stopped", "the unit is masked"
    if fields.get("ActiveState") in ("inactive", "failed"):
        return "stopped", "it is not running and systemd will not start it again by itself"
    if fields.get("SubState", "").startswith("auto-restart"):
        return "crash_loop", "Triton exited and systemd is about to restart it: a crash loop, not a slow start"
    restarts = _int(fields.get("NRestarts"))
    if baseline_restarts is not None and restarts is not None and restarts > baseline_restarts:
        grown = restarts - baseline_restarts
        return "crash_loop", ("Triton exited and systemd restarted it %d time%s during the wait: a crash loop, not a slow start"
                              % (grown, "" if grown == 1 else "s"))
    return None


def wait_ready(probe, read_unit, timeout, delay, clock=None, sleep=None):
    """Poll until ready, the unit cannot become ready, or ``timeout`` seconds passed.

    ``probe(seconds)`` -> ``(ready, answer)``: one readiness request with at most ``seconds`` to answer, and its answer
    in words. ``read_unit()`` -> ``(fields, error)``: the unit's properties (empty when they could not be read) and
    why not; None when no unit is watched. Returns the result the module returns (without ``msg``).
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    started = clock()
    deadline = started + timeout
    fields, error, baseline, rounds = {}, None, None, 0
    read_once = False
    while True:
        rounds += 1
        ready, answer = probe(max(1.0, min(PROBE_TIMEOUT, deadline - clock())))
        verdict = ("ready", "") if ready else None
        if verdict is None and read_unit is not None:
            fields, error = read_unit()
            if _readable(fields):
                if not read_once:
                    baseline, read_once = _int(fields.get("NRestarts")), True
                verdict = judge(fields, baseline)
        now = clock()
        if verdict is None and now >= deadline:
            verdict = ("timeout", "no 200 from %s within %s s" % (READY_PATH, timeout))
        if verdict is not None:
            reason, cause = verdict
            return dict(ready=reason == "ready", reason=reason, cause=cause, seconds=round(now - started, 1),
                        rounds=rounds, answer=answer, unit=fields,
                        status=unit_words(fields, error) if read_unit is not None else "")
        sleep(max(0.0, min(delay, deadline - now)))


def message(result, url, unit, timeout):
    """The failure (or success) in words: the unit, its state, the last answer and what to run next."""
    where = url.rstrip("/") + READY_PATH
    if result["ready"]:
        return "Triton at %s is ready (after %s s)." % (where, result["seconds"])
    find_why = " Find why: journalctl -u %s -n 50." % unit if unit else ""
    if result["reason"] in ("stopped", "crash_loop"):
        return ("Triton's unit %s is %s, so Triton cannot become ready (%s; last answer from %s after %s s: %s).%s"
                % (unit, result["status"], result["cause"], where, result["seconds"], result["answer"], find_why))
    text = "Triton did not report ready at %s within %s s (last answer: %s)" % (where, timeout, result["answer"])
    if unit:
        text += "; its unit %s is %s" % (unit, result["status"])
    return text + "." + find_why
