# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet filters: inventory validation, the rollout plan, a group's desired model set (docs beside this file)."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import glob
import os

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

try:
    import yaml
    from ansible_collections.aiops.triton.plugins.filter import rolling
    from ansible_collections.aiops.triton.plugins.module_utils import fleet
except ImportError as exc:  # pragma: no cover - only when the collection is broken
    raise AnsibleFilterError("aiops.triton fleet filters cannot load: %s" % to_native(exc))

ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def known_variables(roles_dir=ROLES_DIR):
    """Every option any role of the collection declares in meta/argument_specs.yml."""
    names = set()
    for path in glob.glob(os.path.join(roles_dir, "*", "meta", "argument_specs.yml")):
        with open(path) as handle:
            specs = (yaml.safe_load(handle) or {}).get("argument_specs", {})
        for entry in specs.values():
            names.update((entry or {}).get("options", {}) or {})
    return names


def _servers(groups):
    return list(groups.get(fleet.SERVERS_GROUP, []))


def _fleet_var(hostvars, servers, name):
    values = [hostvars[h].get(name) for h in servers]
    return values[0] if values else None


def _membership(groups, ordered, servers):
    """Rollout group -> hosts; without named groups every Triton host is in the one default group."""
    if ordered == [fleet.SERVERS_GROUP]:
        return {fleet.SERVERS_GROUP: servers}
    return dict((g, list(groups[g])) for g in ordered if g in groups)


def _ordered_groups(hostvars, groups):
    servers = _servers(groups)
    try:
        return fleet.rollout_groups(_fleet_var(hostvars, servers, "triton_rollout_groups"))
    except fleet.FleetError as exc:
        raise AnsibleFilterError(to_native(exc))


def fleet_problems(hostvars, groups):
    """Every inventory problem, as text naming host/group/field; an empty list when the fleet is valid."""
    servers = _servers(groups)
    if not servers:
        return ["inventory group %s is missing or empty" % fleet.SERVERS_GROUP]
    try:
        ordered = fleet.rollout_groups(_fleet_var(hostvars, servers, "triton_rollout_groups"))
    except fleet.FleetError as exc:
        return [to_native(exc)]
    problems = []
    variants = set(repr(hostvars[h].get("triton_rollout_groups")) for h in servers)
    if len(variants) > 1:
        problems.append("triton_rollout_groups must be one fleet-wide list (set it in group_vars/all or %s)" % fleet.SERVERS_GROUP)
    hosts = {}
    for host in servers:
        facts = hostvars[host]
        models = facts.get("triton_models_list")
        hosts[host] = {
            "variables": [name for name in facts.keys() if name.startswith("triton_")],
            "triton_models_list": models,
            "triton_models_catalog": facts.get("triton_models_catalog"),
            "required": dict(
                [("triton_server_api_key", facts.get("triton_models_api_key") or facts.get("triton_server_api_key"))]
                + ([("triton_models_s3_bucket", facts.get("triton_models_s3_bucket"))] if models else [])),
        }
    membership = _membership(groups, ordered, servers)
    problems.extend(fleet.check_fleet(hosts, ordered, membership, known_variables()))
    return problems


def rollout_plan(hostvars, groups, hosts=None):
    """{pattern, batches, order, groups}: rollout groups in order, each in its own batches (triton_rollout_serial).

    ``hosts``: the hosts this run may touch (``ansible_play_hosts_all``, so ``--limit`` is honoured).
    """
    servers = [h for h in _servers(groups) if hosts is None or h in hosts]
    ordered = _ordered_groups(hostvars, groups)
    membership = _membership(groups, ordered, servers)
    serial = {}
    for group in ordered:
        members = [h for h in membership.get(group, []) if h in servers]
        serial[group] = hostvars[members[0]].get("triton_rollout_serial", 1) if members else 1
    try:
        return fleet.rollout_plan(servers, membership, ordered, serial)
    except fleet.FleetError as exc:
        raise AnsibleFilterError(to_native(exc))


def desired_models(entries, catalog=None, resolved=None):
    """triton_models_list merged over the catalog, each config pinned to its versions."""
    try:
        return fleet.desired_models(entries, catalog or {}, resolved or {})
    except fleet.FleetError as exc:
        raise AnsibleFilterError(to_native(exc))


def verified_records(present, load_results):
    """What triton_model_state records: each model's pinned config and the versions its load left READY."""
    by_name = dict((r.get("name") or r.get("item", {}).get("name"), r) for r in load_results)
    return [{"name": m["name"], "config": m["config"], "versions": by_name.get(m["name"], {}).get("after", m.get("versions", []))}
            for m in present]


def records_current(records, present, load_results):
    """True when recording ``present`` with its load results would change none of ``records`` (the rollback
    records triton_model_state read earlier in the run): the same plan the module makes, on the controller."""
    plan = fleet.record_plan(fleet.plain_copy(records or {}), fleet.plain_copy(verified_records(present, load_results)))
    return not (plan[1] or plan[2])  # (after, written, removed)


def rollout_outcome(load_results, group, status, error="", failure=None):
    """This host's line of the rollout summary: per model, READY versions before -> after; on failure, what failed."""
    models = [{"name": r.get("name"), "from": r.get("before", []), "to": r.get("after", [])} for r in load_results if r.get("name")]
    return {"group": group, "status": status, "models": models, "error": error, "failure": failure or {}}


def staging_plan(models, sync_results, validate_results, suffix=fleet.CANDIDATE_SUFFIX):
    """The candidates triton_models stages (see module_utils.fleet.staging_plan); a model changes when its
    sync or its config (the preflight's check-mode render) changed."""
    changed = set()
    for model, sync, validate in zip(models, sync_results, validate_results):
        if (sync or {}).get("changed") or (validate or {}).get("changed"):
            changed.add(model["name"])
    return fleet.staging_plan(fleet.plain_copy(models), changed, suffix)


def sync_batch(models, records, keep_versions):
    """s3_model_sync's batch for these models: pinned versions (else latest N), each one's verified versions
    from its rollback record (only those are kept for rollback) and its keep_versions (else the role's)."""
    batch = []
    for model in models:
        element = {"model": model["name"], "keep_versions": model.get("keep_versions", keep_versions),
                   "verified_versions": ((records or {}).get(model["name"]) or {}).get("verified", [])}
        if model.get("versions") is not None:
            element["versions"] = model["versions"]
        else:
            element["latest"] = model.get("latest")
        batch.append(element)
    return batch


def load_batch(models, sync_results, config_results):
    """triton_model's batch: each model at its pinned versions (an ensemble at its own policy), reloaded when
    this run changed its files (sync) or its config.pbtxt (render, or the check-mode render in check mode)."""
    batch = []
    for model, sync, config in zip(models, sync_results, config_results):
        element = {"name": model["name"], "reload": bool((sync or {}).get("changed") or (config or {}).get("changed"))}
        if model.get("versions") is not None and not model.get("ensemble"):
            element["versions"] = model["versions"]
        batch.append(element)
    return batch


def model_changes(models, sync_results, config_results, load_results):
    """One line per model and kind of change (files, config.pbtxt, READY versions) from the batch results of
    the sync, the render (or check-mode render) and the load: a batch task's output names only the host."""
    lines = []
    for index, model in enumerate(models):
        name = model["name"]
        sync, config, load = (_nth(results, index) for results in (sync_results, config_results, load_results))
        if sync.get("changed"):
            parts = ["%s %s" % (label, sync.get(key)) for key, label in
                     (("versions_added", "fetch"), ("versions_replaced", "replace"), ("versions_removed", "remove"),
                      ("recovered", "clean up")) if sync.get(key)]
            lines.append("%s: files - %s" % (name, ", ".join(parts) or "changed"))
        if config.get("changed"):
            lines.append("%s: config.pbtxt - %s is not what the inventory renders"
                         % (name, config.get("path") or "the file"))
        if load.get("changed"):
            moved = (name, load.get("before"), load.get("after"), load.get("action", "load"))
            lines.append("%s: READY versions %s -> %s (%s)" % moved)
        if any(result.get("failed") for result in (sync, config, load)):
            lines.append("%s: failed - %s" % (name, "; ".join(r["msg"] for r in (sync, config, load) if r.get("failed"))))
    return lines


def _nth(results, index):
    results = results or []
    return (results[index] or {}) if index < len(results) else {}


ROLLOUT_KEYS = ["changed", "unchanged", "rolled back", "left drained", "not reached"]
ROLLOUT_ALWAYS = ["changed", "rolled back", "left drained"]


def _rollout_judge(host, group, outcome):
    """A host needs a person unless its models changed or stayed as pinned: rolled back, left drained, or an error."""
    status = str(outcome.get("status") or "unknown")
    key = status if status in ("changed", "unchanged", "rolled back") else ("left drained" if "left drained" in status else status)
    line = fleet.summary_lines([(host, dict(outcome, group=group))])[0]  # the per-host line the scenario checks parse
    return [key], key not in ("changed", "unchanged") or bool(outcome.get("error")), line


def _rollout_rows(hostvars, hosts, name):
    return rolling.summary_rows(hostvars, hosts, "triton_rollout_result", _rollout_judge, name)


def rollout_summary_hosts(hostvars, hosts):
    """Every host of the rollout (plan order) with its outcome: the JSON the summary names."""
    return _rollout_rows(hostvars, hosts, "rollout_summary_hosts")


def rollout_summary(hostvars, hosts, details=""):
    """Counts per rollout group, each group's version changes with their host counts, then only the hosts that need a
    person (rolled back and why, left drained), in rollout order."""
    rows = _rollout_rows(hostvars, hosts, "rollout_summary")
    moves = {}
    for row in rows:
        if row["counts"] == ["changed"]:
            for model in row["result"].get("models") or []:
                if model.get("from") != model.get("to"):
                    key = (row["group"], model.get("name"), str(model.get("from", [])), str(model.get("to", [])))
                    moves[key] = moves.get(key, 0) + 1
    extra = ["%s: %s %s -> %s on %d host%s" % (key + (count, "" if count == 1 else "s")) for key, count in moves.items()]
    return rolling.summary_lines(rows, ROLLOUT_KEYS, ROLLOUT_ALWAYS, details, extra)


class FilterModule(object):
    def filters(self):
        return {
            "fleet_problems": fleet_problems,
            "rollout_plan": rollout_plan,
            "desired_models": desired_models,
            "rollout_summary": rollout_summary,
            "rollout_summary_hosts": rollout_summary_hosts,
            "rollout_outcome": rollout_outcome,
            "verified_records": verified_records,
            "records_current": records_current,
            "staging_plan": staging_plan,
            "sync_batch": sync_batch,
            "load_batch": load_batch,
            "model_changes": model_changes,
        }
