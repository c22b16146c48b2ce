# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet as desired state: rollout groups, each group's model set, and the rollout plan.

Pure functions on plain data, used on the controller by the ``aiops.triton.fleet`` filters (the
validation play and the rollout plan) and on hosts by the triton_models role through the same filters.
Model configs are checked with the same code ``triton_model_config`` runs.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import difflib
import re

from ansible_collections.aiops.triton.plugins.module_utils.gpu_budget import VARIABLES as BUDGET_VARIABLES
from ansible_collections.aiops.triton.plugins.module_utils.gpu_compat import VARIABLES as COMPAT_VARIABLES
from ansible_collections.aiops.triton.plugins.module_utils.model_config import ModelConfigError, validate

# The one group every Triton host is in; the default single rollout group when none are named.
SERVERS_GROUP = "triton_servers"
# Inventory-level variables the collection reads that no role declares (the rollout's are the triton_rollout role's):
# the catalog, and the GPUs a host has and the budget's headroom, read by playbooks/validate.yml
# (docs/gpu-compatibility.md).
FLEET_VARIABLES = frozenset(["triton_models_catalog"]) | COMPAT_VARIABLES | BUDGET_VARIABLES
# Keys of a triton_models_list entry, and the ones a catalog entry may provide. footprint (MiB per instance) and
# tensorrt (what a plan was built for) are read on the controller only (playbooks/validate.yml).
ENTRY_KEYS = frozenset(["name", "config", "versions", "latest", "keep_versions", "verify", "latency_budget", "state",
                        "footprint", "tensorrt"])
CATALOG_KEYS = ENTRY_KEYS - frozenset(["name", "versions", "latest", "state"])
_SERIAL = re.compile(r"^([0-9]+)%$")
# triton_models stages a changed model as <name> + this suffix before it serves; no real model may end in it.
CANDIDATE_SUFFIX = "__candidate"


class FleetError(Exception):
    """An inventory problem; the message names the host/group, model and field."""


def is_ensemble(config):
    return (config or {}).get("platform") == "ensemble"


def ensemble_steps(config):
    """The steps of an ensemble's scheduling (empty for any other model)."""
    return ((config or {}).get("ensemble_scheduling") or {}).get("step") or []


def plain_copy(value):
    """A deep copy in plain JSON types (dict, list, str, int, float, bool, None).

    On the controller the filters receive Ansible's lazy, tagged containers; copy.deepcopy of those costs
    about a thousand times more (0.3 s for the lab catalog alone, 10 s per host in site.yml's play context).
    """
    if isinstance(value, dict):
        return dict((plain_copy(k), plain_copy(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain_copy(v) for v in value]
    for kind in (bool, str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value


# The verified versions a rollback record remembers; s3_model_sync keeps only these when it prunes.
VERIFIED_HISTORY = 20


def verified_history(previous, versions, limit=VERIFIED_HISTORY):
    """Versions verified on this host, most recently verified first: ``versions`` (just verified), then
    the earlier ones. s3_model_sync keeps only these when it prunes, so a failed version never displaces
    the rollback target."""
    current = sorted((int(v) for v in versions), reverse=True)
    earlier = [v for v in (previous or {}).get("verified", []) if v not in current]
    return (current + earlier)[:limit]


def record_plan(before, models):
    """What recording ``models`` (name, config, versions) does to the rollback records ``before`` (name ->
    config, versions, verified; as triton_model_state reads them): (after, written, removed)."""
    after, written = {}, []
    for model in models:
        missing = [k for k in ("name", "config", "versions") if k not in model]
        if missing:
            raise ValueError("models entry %r lacks %s" % (model.get("name", "?"), ", ".join(missing)))
        name = model["name"]
        versions = sorted(int(v) for v in model["versions"])
        after[name] = {"config": model["config"], "versions": versions, "verified": verified_history(before.get(name), versions)}
        if before.get(name) != after[name]:
            written.append(name)
    return after, written, sorted(set(before) - set(after))


def pin_versions(config, versions):
    """The config Triton must load: exactly ``versions`` (ensembles have no version policy)."""
    pinned = plain_copy(config)
    if not is_ensemble(pinned):
        pinned["version_policy"] = {"specific": {"versions": sorted(int(v) for v in versions)}}
    return pinned


def candidate_config(config, name):
    """A staged candidate's config: the model's pinned config under the candidate's name, one instance per
    instance group (it answers only the golden cases; the host holds two copies while it runs)."""
    staged = plain_copy(config)
    staged["name"] = name
    if staged.get("instance_group"):
        staged["instance_group"] = [dict(group, count=1) for group in staged["instance_group"]]
    return staged


def staging_plan(models, changed, suffix=CANDIDATE_SUFFIX):
    """The candidates to stage, in load order: each changed non-ensemble model, then each ensemble that changed
    or calls a staged model (directly or through another ensemble), its steps pointed at the staged candidates
    so the ensemble's golden cases run over the new versions before any of them serves.

    models: the desired models (name, config, versions, ensemble, verify, latency_budget); changed: names whose
    files or config change."""
    plan, staged = [], {}
    for model in models:
        if not model.get("ensemble") and model["name"] in changed:
            staged[model["name"]] = model["name"] + suffix
            plan.append(_candidate(model, staged[model["name"]], {}))
    ensembles = [m for m in models if m.get("ensemble")]
    grew = True
    while grew:
        grew = False
        for model in ensembles:
            if model["name"] in staged:
                continue
            if model["name"] in changed or any(step.get("model_name") in staged for step in ensemble_steps(model["config"])):
                staged[model["name"]] = model["name"] + suffix
                plan.append(_candidate(model, staged[model["name"]], staged))
                grew = True
    return plan


def _candidate(model, name, renames):
    config = candidate_config(model["config"], name)
    for step in ensemble_steps(config):
        step["model_name"] = renames.get(step.get("model_name"), step.get("model_name"))
    entry = {"name": model["name"], "candidate": name, "versions": list(model.get("versions") or []),
             "ensemble": bool(model.get("ensemble")), "config": config, "verify": model.get("verify", True)}
    if model.get("latency_budget") is not None:
        entry["latency_budget"] = model["latency_budget"]
    return entry


def _entry_problems(entry, where):
    problems = []
    if not isinstance(entry, dict):
        return ["%s: each triton_models_list entry must be a mapping, got %s" % (where, type(entry).__name__)]
    if str(entry.get("name", "")).endswith(CANDIDATE_SUFFIX):
        problems.append("%s: model names ending in %r are reserved for the staged copy of a changed model"
                        % (where, CANDIDATE_SUFFIX))
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        problems.append("%s: unknown key(s) %s (allowed: %s)" % (where, ", ".join(unknown), ", ".join(sorted(ENTRY_KEYS))))
    if entry.get("state", "present") not in ("present", "absent"):
        problems.append("%s: state must be present or absent, got %r" % (where, entry.get("state")))
    has_versions, has_latest = "versions" in entry, "latest" in entry
    if entry.get("state", "present") == "present" and has_versions == has_latest:
        problems.append("%s: needs exactly one of versions or latest" % where)
    if has_versions:
        versions = entry["versions"]
        if (not isinstance(versions, list) or not versions
                or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in versions)
                or len(set(versions)) != len(versions)):
            problems.append("%s: versions must be a non-empty list of distinct positive integers, got %r" % (where, versions))
    if has_latest and (isinstance(entry["latest"], bool) or not isinstance(entry["latest"], int) or entry["latest"] < 1):
        problems.append("%s: latest must be a positive integer, got %r" % (where, entry["latest"]))
    config = entry.get("config")
    if not isinstance(config, dict):
        problems.append("%s: config (Triton ModelConfig as data) is missing or not a mapping" % where)
        return problems
    if config.get("name", entry.get("name")) != entry.get("name"):
        problems.append("%s: config.name %r differs from name %r" % (where, config.get("name"), entry.get("name")))
    if "version_policy" in config:
        problems.append("%s: config.version_policy is derived from versions (the single source of truth for what "
                        "serves); remove it" % where)
    return problems


def desired_models(entries, catalog=None, resolved=None):
    """Each triton_models_list entry merged over ``catalog[name]``, its config pinned to its versions.

    ``resolved`` maps "<model>:<N>" -> versions for ``latest: N`` entries resolved once per rollout.
    Raises FleetError on the first malformed entry.  Entries with ``state: absent`` are kept (flagged)
    so the role can unload and delete them.
    """
    if not isinstance(entries, list):
        raise FleetError("triton_models_list must be a list, got %s" % type(entries).__name__)
    catalog = catalog or {}
    result = []
    for index, raw in enumerate(entries):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise FleetError("triton_models_list[%d]: each entry needs a name (a string)" % index)
        base = catalog.get(raw["name"], {})
        if not isinstance(base, dict):
            raise FleetError("triton_models_catalog[%r] must be a mapping" % raw["name"])
        entry = dict((k, plain_copy(v)) for k, v in base.items() if k in CATALOG_KEYS)
        entry.update(plain_copy(raw))
        where = "triton_models_list[%d] (%s)" % (index, raw["name"])
        problems = _entry_problems(entry, where)
        if problems:
            raise FleetError("; ".join(problems))
        entry.setdefault("state", "present")
        entry["ensemble"] = is_ensemble(entry["config"])
        if "latest" in entry:
            # resolved per model and N: two groups may ask for different N of the same model
            entry["latest_key"] = "%s:%d" % (raw["name"], entry["latest"])
            entry["resolved"] = bool((resolved or {}).get(entry["latest_key"]))
            if entry["resolved"]:
                entry["versions"] = sorted(int(v) for v in resolved[entry["latest_key"]])
        if entry["state"] == "present" and "versions" in entry:
            entry["config"] = pin_versions(entry["config"], entry["versions"])
        elif entry["state"] == "present" and not entry["ensemble"]:
            # unresolved latest: N serves the N newest versions on disk; older ones kept for rollback do not
            entry["config"]["version_policy"] = {"latest": {"num_versions": entry["latest"]}}
        result.append(entry)
    return result


def present_models(entries, catalog, cache=None):
    """The present models of one host's triton_models_list over its triton_models_catalog, as the controller plugins
    read them (gpu_fit filters, model_footprints lookup): [] when the inventory cannot say (fleet_problems reports that).

    ``cache`` (a dict the caller keeps across hosts) holds each distinct list and catalog once: a fleet's hosts
    usually share both, and merging a large catalog per host is what would cost.
    """
    cache = {} if cache is None else cache
    key = repr((entries, catalog))
    if key not in cache:
        try:
            cache[key] = [m for m in desired_models(entries, catalog) if m.get("state") == "present"]
        except (FleetError, TypeError, ValueError, AttributeError):
            cache[key] = []
    return cache[key]


def check_model_set(entries, catalog, where):
    """Problems with one group's model list: entries, Triton's rules, ensemble wiring within the group."""
    try:
        desired = desired_models(entries, catalog)
    except FleetError as exc:
        return ["%s: %s" % (where, exc)]
    present = [m for m in desired if m["state"] == "present"]
    names = [m["name"] for m in desired]
    problems = ["%s: model %s is listed twice" % (where, n) for n in sorted(set(n for n in names if names.count(n) > 1))]
    configs = dict((m["name"], m["config"]) for m in present)
    for model in present:
        # gpus=None: the host's GPUs are checked on the host; the wiring check sees only this group's models.
        try:
            validate(model["config"], gpus=None, models=dict((k, v) for k, v in configs.items() if k != model["name"]))
        except ModelConfigError as exc:
            problems.append("%s: model %s: %s" % (where, model["name"], exc))
    return problems


def known_variable_problems(host, names, known):
    problems = []
    for name in sorted(names):
        if name.startswith("triton_") and name not in known and name not in FLEET_VARIABLES:
            close = difflib.get_close_matches(name, sorted(set(known) | FLEET_VARIABLES), n=1)
            hint = " (did you mean %s?)" % close[0] if close else ""
            problems.append("host %s: unknown variable %s%s" % (host, name, hint))
    return problems


def rollout_groups(groups_var):
    """The ordered rollout groups: ``triton_rollout_groups`` or, when unset, all Triton hosts as one group."""
    if groups_var in (None, ""):
        return [SERVERS_GROUP]
    if not isinstance(groups_var, list) or not groups_var or not all(isinstance(g, str) and g for g in groups_var):
        raise FleetError("triton_rollout_groups must be a non-empty list of inventory group names, got %r" % (groups_var,))
    if len(set(groups_var)) != len(groups_var):
        raise FleetError("triton_rollout_groups names a group twice: %r" % (groups_var,))
    return list(groups_var)


def batch_sizes(count, serial):
    """Split a group of ``count`` hosts into batches of ``serial`` (an int or "N%"), never fewer than 1."""
    if isinstance(serial, bool):
        raise FleetError("triton_rollout_serial must be an integer or a percentage like '50%%', got %r" % (serial,))
    if isinstance(serial, int):
        size = serial
    else:
        match = _SERIAL.match(str(serial).strip())
        if match:
            size = count * int(match.group(1)) // 100
        elif str(serial).strip().isdigit():
            size = int(str(serial).strip())
        else:
            raise FleetError("triton_rollout_serial must be an integer or a percentage like '50%%', got %r" % (serial,))
    size = max(1, min(size, count)) if count else 0
    if not size:
        return []
    return [size] * (count // size) + ([count % size] if count % size else [])


def rollout_plan(servers, membership, ordered_groups, serial_of):
    """The rollout: groups in order, each split into its own batches.

    ``servers``: Triton hosts in inventory order; ``membership``: group -> hosts;
    ``serial_of``: group -> its triton_rollout_serial.  Returns {pattern, batches, order, groups}
    where ``pattern`` lists the groups in order (Ansible keeps that order) and ``batches`` is a
    ``serial`` list whose batches never span two groups.
    """
    order, batches, plan_groups = [], [], []
    for group in ordered_groups:
        hosts = [h for h in membership.get(group, []) if h in servers and h not in order]
        sizes = batch_sizes(len(hosts), serial_of.get(group, 1))
        order.extend(hosts)
        batches.extend(sizes)
        plan_groups.append({"name": group, "hosts": hosts, "batches": sizes})
    return {"pattern": ":".join(ordered_groups), "batches": batches or [1], "order": order, "groups": plan_groups}


def check_fleet(hosts, ordered_groups, membership, known):
    """Every inventory problem the validation play reports, each naming host/group/field.

    ``hosts``: host -> {"variables": [names], "triton_models_list": ..., "triton_models_catalog": ...,
    "required": {var: value}}.
    """
    problems = []
    for group in ordered_groups:
        if group not in membership:
            problems.append("rollout group %s (in triton_rollout_groups) is not an inventory group" % group)
    for host in sorted(hosts):
        mine = [g for g in ordered_groups if host in membership.get(g, [])]
        if len(mine) != 1:
            problems.append("host %s must be in exactly one rollout group of %s, is in %s" % (
                host, ordered_groups, mine or "none"))
        problems.extend(known_variable_problems(host, hosts[host].get("variables", []), known))
        for name, value in sorted(hosts[host].get("required", {}).items()):
            if value in (None, ""):
                problems.append("host %s: %s is required and empty" % (host, name))
    for group in ordered_groups:
        members = [h for h in membership.get(group, []) if h in hosts]
        if not members:
            continue
        lists = [h for h in members if not hosts[h].get("triton_models_list")]
        if lists:
            problems.append("rollout group %s: no triton_models_list for host(s) %s" % (group, ", ".join(lists)))
            continue
        keys = dict((h, repr((hosts[h]["triton_models_list"], hosts[h].get("triton_models_catalog")))) for h in members)
        shared = len(set(keys.values())) == 1
        seen = set()
        for host in members:
            if keys[host] in seen:
                continue
            seen.add(keys[host])
            where = "rollout group %s" % group if shared else "rollout group %s (host %s)" % (group, host)
            problems.extend(check_model_set(hosts[host]["triton_models_list"], hosts[host].get("triton_models_catalog"), where))
    return problems


def summary_lines(outcomes):
    """One line per host: from-versions -> to-versions per model, or rolled back and why."""
    lines = []
    for host, outcome in outcomes:
        if not outcome:
            lines.append("%s: not reached (the rollout stopped before its batch)" % host)
            continue
        status = outcome.get("status", "unknown")
        models = ", ".join("%s %s -> %s" % (m["name"], m.get("from", []), m.get("to", [])) for m in outcome.get("models", []))
        line = "%s [%s]: %s" % (host, outcome.get("group", "?"), status)
        if models:
            line += ": " + models
        if outcome.get("error"):
            line += " -- " + outcome["error"]
        lines.append(line)
    return lines
