# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Event-Driven Ansible: may an alert remediate this host now (playbooks/eda_remediate.yml); docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import datetime

from ansible.errors import AnsibleFilterError

# Outcomes that say a remediation ran (or runs): the others (refused, throttled, dry-run) changed nothing.
RAN = ("done", "failed")


def _iso(epoch):
    return datetime.datetime.fromtimestamp(float(epoch), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time(record):
    try:
        return float(record.get("time"))
    except (TypeError, ValueError):
        return None


def _alertname(record):
    alert = record.get("alert") or {}
    return alert.get("alertname") or (alert.get("labels") or {}).get("alertname") or "?"


def eda_refusal(records, host, now, window_seconds):
    """Why ``host`` may not be remediated at ``now`` (epoch seconds), "" when it may.

    ``records``: the result log (playbooks/eda_remediate.yml), dicts with time (epoch), id, host, remediation,
    outcome (started, done, failed, refused, throttled, dry-run, ...). A ``started`` record with no later record of
    the same id is a remediation in progress (for at most ``window_seconds``: older, its gate died); a ``done`` or ``failed`` record of the host less than
    ``window_seconds`` before ``now`` throttles. Refusals, throttles and dry-runs changed nothing and do not count.
    """
    if not isinstance(records, (list, tuple)):
        raise AnsibleFilterError("eda_refusal: records must be a list, got %s" % type(records).__name__)
    try:
        now = float(now)
        window = float(window_seconds)
    except (TypeError, ValueError):
        raise AnsibleFilterError("eda_refusal: now and window_seconds must be numbers, got %r and %r" % (now, window_seconds))
    records = [r for r in records if isinstance(r, dict) and _time(r) is not None]
    for index, record in enumerate(records):
        if record.get("host") != host or record.get("outcome") != "started":
            continue
        later = [r for r in records[index + 1:] if r.get("id") == record.get("id")]
        # A start with no end older than the window: the gate died (kill -9, a lost controller); it no longer blocks.
        if not later and now - _time(record) < window:
            return "a remediation of %s is in progress since %s (%s, %s)" % (
                host, _iso(_time(record)), record.get("remediation") or "?", _alertname(record))
    ran = [r for r in records if r.get("host") == host and r.get("outcome") in RAN and now - _time(r) < window]
    if ran:
        last = max(ran, key=_time)
        return "%s was remediated at %s, inside the %s s window (%s)" % (
            host, _iso(_time(last)), int(window) if window == int(window) else window, last.get("remediation") or "?")
    return ""


class FilterModule(object):
    def filters(self):
        return {"eda_refusal": eda_refusal}
