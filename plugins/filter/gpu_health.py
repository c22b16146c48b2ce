# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU-health gates' fleet-wide decisions (playbooks/models.yml, quarantine.yml); docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import math

from ansible.errors import AnsibleFilterError


def _health(hostvars, host):
    return (hostvars.get(host) or {}).get("triton_gpu_health") or {}


def host_faulted(hostvars, host):
    """True where the host must not serve: its GPU verdict is unhealthy, or it is quarantined."""
    health = _health(hostvars, host)
    return health.get("verdict") == "unhealthy" or bool(health.get("quarantined"))


def fault_reasons(hostvars, host):
    """The host's reasons in one line (its quarantine first)."""
    health = _health(hostvars, host)
    reasons = list(health.get("reasons") or [])
    if health.get("quarantined"):
        record = health.get("quarantine") or {}
        reasons.insert(0, "quarantined (%s)" % ((record.get("reason") if isinstance(record, dict) else "") or "by an operator"))
    return "; ".join(reasons) or "no reason recorded"


def max_unhealthy(limit, members):
    """How many of ``members`` hosts may be out for a host fault: a count (``1``) or a percentage (``25%``, rounded down,
    never below 1 for a group that has hosts, so a single host's fault never stops a fleet)."""
    text = str(limit).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if percent < 0 or percent > 100:
                raise ValueError(text)
            return max(1 if members else 0, int(math.floor(members * percent / 100.0)))
        count = int(text)
        if count < 0:
            raise ValueError(text)
        return count
    except ValueError:
        raise AnsibleFilterError("triton_gpu_health_max_unhealthy must be a count (2) or a percentage (25%%), got %r" % (limit,))


def gpu_health_refusals(hostvars, membership, ordered_groups, hosts, limit, canary=True):
    """Why a run must stop before (more) hosts change (empty: it may go on).

    A rollout group with more hosts faulted (unhealthy GPU or quarantined) than ``limit`` allows: a fleet-wide
    signal is more likely software than hardware. With ``canary``, the first group of the plan with a host in
    ``hosts`` and no healthy one among them: nothing could prove the change first.
    """
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("gpu_health_refusals: hosts must be a list, got %s" % type(hosts).__name__)
    problems = []
    first = True
    for group in ordered_groups or []:
        members = list(membership.get(group) or [])
        faulted = [h for h in members if host_faulted(hostvars, h)]
        allowed = max_unhealthy(limit, len(members))
        if len(faulted) > allowed:
            problems.append(
                "%s: %d of %d hosts are out for a host fault (%s), more than triton_gpu_health_max_unhealthy allows (%d): "
                "a fault on this many hosts at once is more likely software than hardware"
                % (group, len(faulted), len(members), "; ".join("%s: %s" % (h, fault_reasons(hostvars, h)) for h in faulted), allowed))
        in_run = [h for h in members if h in hosts]
        if canary and first and in_run:
            first = False
            if all(host_faulted(hostvars, h) for h in in_run):
                problems.append("%s (the canary) has no healthy host to prove the change on (%s)"
                                % (group, "; ".join("%s: %s" % (h, fault_reasons(hostvars, h)) for h in in_run)))
    return problems


def quarantine_refusals(draining, membership, ordered_groups, states, limit, action="quarantining"):
    """Why ``action`` (quarantining, restarting) ``draining`` would put more hosts of a rollout group out of traffic than ``limit`` allows.

    Out of traffic: a member whose load-balancer state (``states``: host -> up, drained, down, maint, unknown) is not
    ``up``, plus the ones to quarantine. A storm of alerts quarantines nothing beyond the cap.
    """
    draining = list(draining or [])
    problems = []
    for group in ordered_groups or []:
        members = list(membership.get(group) or [])
        taken = [h for h in members if h in draining]
        if not taken:
            continue
        already = [h for h in members if h not in draining and states.get(h, "unknown") != "up"]
        allowed = max_unhealthy(limit, len(members))
        if len(taken) + len(already) > allowed:
            problems.append("%s: %s %s would put %d of %d hosts out of traffic%s, more than "
                            "triton_gpu_health_max_unhealthy allows (%d)"
                            % (group, action, ", ".join(taken), len(taken) + len(already), len(members),
                               " (already out: %s)" % ", ".join("%s %s" % (h, states.get(h, "unknown")) for h in already)
                               if already else "", allowed))
    return problems


def gpu_health_faults(hostvars, hosts):
    """The hosts among ``hosts`` that must not serve, each with its reasons: [{host, reasons}]."""
    return [{"host": h, "reasons": fault_reasons(hostvars, h)} for h in hosts or [] if host_faulted(hostvars, h)]


class FilterModule(object):
    def filters(self):
        return {"gpu_health_refusals": gpu_health_refusals, "gpu_health_faults": gpu_health_faults,
                "quarantine_refusals": quarantine_refusals}
