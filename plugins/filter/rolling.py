# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling host-operation summary (roles/triton_rolling); docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def _plan_groups(hostvars):
    """host -> rollout group from the plan on localhost (playbooks/rolling_plan.yml), for hosts the run did not reach."""
    plan = (hostvars.get("localhost") or {}).get("triton_rollout_plan") or {}
    return dict((h, g.get("name")) for g in plan.get("groups") or [] for h in g.get("hosts") or [])


def summary_rows(hostvars, hosts, fact, judge, name):
    """One row per host in plan order: {host, group, counts (the group line's keys), needs_person, line, result}.

    ``judge(host, group, result)`` -> (counts, needs_person, line) for a host with a result (``fact`` in its hostvars)."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("%s: hosts must be a list, got %s" % (name, type(hosts).__name__))
    planned = _plan_groups(hostvars)
    rows = []
    for host in hosts:
        result = (hostvars.get(host) or {}).get(fact)
        group = (result or {}).get("group") or planned.get(host) or "?"
        if result:
            counts, needs_person, line = judge(host, group, result)
        else:
            counts, needs_person, line = ["not reached"], False, "%s: not reached" % host
        rows.append({"host": host, "group": group, "counts": counts, "needs_person": needs_person, "line": line, "result": result or None})
    return rows


def summary_lines(rows, keys, always, details="", extra=None):
    """Counts first: one line per rollout group (``keys`` in order: those in ``always`` even at 0, the others where not 0),
    ``extra`` lines, then a line per host that needs a person, then where the full per-host list is (``details``): a run
    over 1,000 hosts prints a few lines."""
    groups = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    lines = []
    for group, members in groups.items():
        counted = {}
        for row in members:
            for key in row["counts"]:
                counted[key] = counted.get(key, 0) + 1
        shown = [k for k in keys if k in counted or k in always]
        shown += sorted(k for k in counted if k not in keys)
        lines.append("%s: %d hosts, %s" % (group, len(members), ", ".join("%d %s" % (counted.get(k, 0), k) for k in shown)))
    lines.extend(extra or [])
    lines.extend(row["line"] for row in rows if row["needs_person"])
    if details:
        lines.append("every host: %s" % details)
    return lines


def _rolling_judge(host, group, result):
    outcome = str(result.get("outcome") or "?")
    failed = "failed" in outcome
    drained = "left drained" in outcome or "still out of traffic" in outcome or outcome.startswith("quarantined")
    counts = ["failed" if failed else "unchanged" if outcome == "unchanged" else "set up" if outcome.startswith("set up")
              else "would change" if outcome.startswith("would") else "done"]
    counts += ["left drained"] if drained else []
    line = "%s [%s]: %s" % (host, group, outcome)
    if result.get("error"):
        line += ": %s" % result["error"]
    return counts, failed or drained or bool(result.get("error")), line


ROLLING_KEYS = ["done", "unchanged", "set up", "would change", "failed", "left drained", "not reached"]
ROLLING_ALWAYS = ["done", "failed", "left drained"]


def rolling_summary_hosts(hostvars, hosts):
    """Every host of the run (plan order) with its outcome: the JSON the summary names."""
    return summary_rows(hostvars, hosts, "triton_rolling_result", _rolling_judge, "rolling_summary_hosts")


def rolling_summary(hostvars, hosts, details=""):
    """Counts per rollout group, then only the hosts that need a person (failed, left drained), in plan order."""
    rows = summary_rows(hostvars, hosts, "triton_rolling_result", _rolling_judge, "rolling_summary")
    return summary_lines(rows, ROLLING_KEYS, ROLLING_ALWAYS, details)


# load-balancer states of a host that takes no traffic (unknown is not among them: it may be serving)
NOT_SERVING = ("down", "drained", "maint")


def drain_refusals(draining, membership, ordered_groups, states):
    """Why draining ``draining`` would leave a rollout group with no host up (empty: it would not).

    ``membership``: group -> hosts (Ansible's ``groups``); ``ordered_groups``: the rollout groups;
    ``states``: host -> load-balancer state (up, drained, down, maint, unknown); a host missing from it
    is unknown, which does not count as serving. Hosts that all serve nothing already (down, drained, maint) take
    no traffic away: restarting or repairing the only host of a group whose Triton died is what brings it back.
    """
    draining = list(draining or [])
    problems = []
    for group in ordered_groups or []:
        members = list(membership.get(group) or [])
        taken = [h for h in members if h in draining]
        if not taken or all(states.get(h) in NOT_SERVING for h in taken):
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
        return {"rolling_summary": rolling_summary, "rolling_summary_hosts": rolling_summary_hosts, "drain_refusals": drain_refusals}
