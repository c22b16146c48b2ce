# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU and host memory budget of a host's model set: instances x footprint, plus a candidate's peak, plus headroom.

Pure arithmetic on plain data (the ``aiops.triton.gpu_memory_budget`` filter builds the input from the inventory and
GPU facts). Triton places instances as its ModelConfig says (model_config.proto, ModelInstanceGroup): a KIND_GPU
group puts ``count`` instances on each GPU of ``gpus`` (every GPU when empty); KIND_CPU puts ``count`` on the host;
KIND_AUTO is GPU on a host with GPUs. On a host with no GPU, GPU groups run on CPU (model_config.apply_host_overrides).
A rollout adds to the serving set, for a while, the larger of: the staged candidates (``<name>__candidate``, one
instance per instance group of every changed model, loaded together while they are verified; none where
triton_models_stage_candidates is false), or the largest single reload (Triton loads a changed model's new set
beside the serving one and unloads the old only once the new is ready). A footprint nobody declared or measured is
reported as unknown, never counted as zero.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import math
import re

# Inventory-level variables the budget reads (module_utils/fleet.py adds them to the names the validation play knows).
VARIABLES = frozenset(["triton_gpu_budget_headroom", "triton_host_memory_mib"])
DEFAULT_HEADROOM = "10%"
FOOTPRINT_KEYS = ("gpu_mib", "host_mib")
# module_utils/fleet.py CANDIDATE_SUFFIX, the name a staged candidate loads under (fleet imports this module, so it is
# spelled here; test_gpu_budget.py holds them equal).
CANDIDATE_SUFFIX = "__candidate"


class BudgetError(Exception):
    """A value the budget cannot read (a headroom, a footprint); the message names it."""


def mib(value):
    """12345 -> "12,345 MiB"."""
    return "{:,} MiB".format(int(value))


def parse_headroom(value):
    """"10%" -> ("percent", 10.0); 2048 or "2048" -> ("mib", 2048)."""
    text = str(DEFAULT_HEADROOM if value in (None, "") else value).strip()
    try:
        if isinstance(value, bool):
            raise ValueError(text)
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent < 100:
                raise ValueError(text)
            return ("percent", percent)
        amount = int(text)
        if amount < 0:
            raise ValueError(text)
        return ("mib", amount)
    except ValueError:
        raise BudgetError("triton_gpu_budget_headroom must be a percentage of each device (10%%) or MiB (2048), got %r"
                          % (value,))


def headroom_mib(capacity, headroom):
    """The MiB kept free on a device of ``capacity`` MiB (a percentage rounds half up)."""
    kind, amount = headroom
    if kind == "percent":
        return min(int(capacity), int(math.floor(capacity * amount / 100.0 + 0.5)))
    return min(int(capacity), int(amount))


def headroom_text(headroom):
    kind, amount = headroom
    return ("%g%% headroom" % amount) if kind == "percent" else ("%s headroom" % mib(amount))


def footprint(declared, version):
    """{"gpu_mib", "host_mib"} per instance of ``version`` (None where unknown) from a model's ``footprint``.

    ``declared``: None; {"gpu_mib": 1200, "host_mib": 300} for every version; or per version {2: {...}, "3": {...}}.
    """
    if declared in (None, ""):
        return {"gpu_mib": None, "host_mib": None}
    if not isinstance(declared, dict):
        raise BudgetError("footprint must be a mapping, got %r" % (declared,))
    if any(k in declared for k in FOOTPRINT_KEYS):
        chosen = declared
    else:
        keys = [k for k in declared if not re.match(r"^[0-9]+$", str(k).strip())]
        if keys:
            raise BudgetError("footprint must be gpu_mib and host_mib, or keyed by version number, got key(s) %s"
                              % ", ".join(map(str, keys)))
        chosen = None
        for key, value in declared.items():
            if str(key).strip() == str(version):
                chosen = value
        if chosen in (None, "unknown"):
            return {"gpu_mib": None, "host_mib": None}
        if not isinstance(chosen, dict):
            raise BudgetError("footprint of version %s must be a mapping of gpu_mib and host_mib, got %r" % (version, chosen))
    result = {}
    for key in FOOTPRINT_KEYS:
        value = chosen.get(key)
        if value in (None, "", "unknown"):
            result[key] = None
        elif isinstance(value, bool) or not re.match(r"^[0-9]+$", str(value).strip()):
            raise BudgetError("footprint %s must be MiB (a non-negative integer) or unknown, got %r" % (key, value))
        else:
            result[key] = int(str(value).strip())
    unknown = sorted(set(chosen) - set(FOOTPRINT_KEYS) - {"source", "measured"})
    if unknown:
        raise BudgetError("footprint has unknown key(s) %s (gpu_mib, host_mib, source, measured)" % ", ".join(map(str, unknown)))
    return result


def merge_footprints(model, measured):
    """``model`` with the footprint the budget counts per version: the inventory's (declared) wins, else one measured
    on a host and recorded in S3 (``measured``: {version: {gpu_mib, host_mib, ...}}, FOOTPRINT.json), else unknown.

    Adds ``footprint_sources``: {version: "declared" | "measured" | "unknown"}. An unresolved ``latest: N`` (which
    versions is not known here) and an ensemble (no instances of its own) keep what the inventory declares.
    """
    versions = [v for v in model.get("versions") or [] if re.match(r"^[0-9]+$", str(v).strip())]
    if not versions or (model.get("config") or {}).get("platform") == "ensemble":
        return model
    measured = dict((str(k).strip(), v) for k, v in (measured or {}).items())
    chosen, sources = {}, {}
    for version in versions:
        each = footprint(model.get("footprint"), version)
        if any(each[k] is not None for k in FOOTPRINT_KEYS):
            chosen[str(version)], sources[str(version)] = each, "declared"
            continue
        found = footprint(measured.get(str(version)), version) if measured.get(str(version)) else each
        known = any(found[k] is not None for k in FOOTPRINT_KEYS)
        chosen[str(version)], sources[str(version)] = found, "measured" if known else "unknown"
    return dict(model, footprint=chosen, footprint_sources=sources)


def placement(config, gpu_indexes, one_per_group=False):
    """Where Triton puts a model's instances on a host with GPUs ``gpu_indexes``: {"gpu": {index: n}, "cpu": n}.

    ``one_per_group``: a staged candidate's placement (module_utils/fleet.py candidate_config: each group's count is 1).
    """
    gpu_indexes = sorted(set(gpu_indexes or []))
    placed = {"gpu": {}, "cpu": 0}
    groups = (config or {}).get("instance_group")
    if not groups:
        groups = [{"count": 1, "kind": "KIND_GPU" if gpu_indexes else "KIND_CPU"}]
    for group in groups:
        count = 1 if one_per_group else int(group.get("count", 1) or 1)
        kind = group.get("kind", "KIND_AUTO") or "KIND_AUTO"
        if kind in ("KIND_GPU", "KIND_AUTO") and gpu_indexes:
            for index in group.get("gpus") or gpu_indexes:
                placed["gpu"][int(index)] = placed["gpu"].get(int(index), 0) + count
        else:  # KIND_CPU; GPU groups on a host without GPUs; KIND_MODEL (the backend places it): host memory only
            placed["cpu"] += count
    return placed


def _sets(model, gpu_indexes, staged=False):
    """One entry per version the model loads: (version, footprint, placement)."""
    if (model.get("config") or {}).get("platform") == "ensemble":
        return []
    versions = list(model.get("versions") or [])
    if not versions:  # latest: N not resolved against S3: N versions, which ones unknown
        versions = ["latest"] * int(model.get("latest") or 1)
    where = placement(model.get("config"), gpu_indexes, staged)
    return [(version, footprint(model.get("footprint"), version), where) for version in versions]


def _device_load(model, device, gpu_indexes, staged=False):
    """(known MiB, terms, unknown lines, sources) of one model's set on ``device`` ("host" or a GPU index); sources:
    [{model, version, source}] of each version on it, source declared, measured or unknown."""
    mib_total, terms, unknown, sources = 0, [], [], []
    for version, each, where in _sets(model, gpu_indexes, staged):
        if device == "host":
            count = where["cpu"] + sum(where["gpu"].values())
            size = each["host_mib"]
        else:
            count = where["gpu"].get(device, 0)
            size = each["gpu_mib"]
        if not count:
            continue
        label = "%s%s %s" % (model["name"], CANDIDATE_SUFFIX if staged else "",
                             "v%s" % version if str(version).isdigit() else "(%s)" % version)
        if size is None:
            unknown.append("%s (%d instance%s)" % (label, count, "" if count == 1 else "s"))
            sources.append({"model": model["name"], "version": str(version), "source": "unknown"})
            continue
        mib_total += count * size
        # a footprint measured on a host (FOOTPRINT.json) says so; one the inventory declares is the plain case
        measured = (model.get("footprint_sources") or {}).get(str(version)) == "measured"
        terms.append("%s %d×%s%s" % (label, count, mib(size), " measured" if measured else ""))
        sources.append({"model": model["name"], "version": str(version), "source": "measured" if measured else "declared"})
    return mib_total, terms, unknown, sources


def _advice(row):
    """What would make a device that does not fit fit, from its own numbers."""
    bigger = "more host memory (triton_host_memory_mib)" if row["device"] == "host memory" else "a GPU with more memory"
    if row["serving_mib"] > row["available_mib"]:
        return ("the set does not fit even between rollouts: serve fewer instances (instance_group count) or fewer "
                "models here (a rollout group without this host), or %s" % bigger)
    if row["transient"] == "staged" and row["serving_mib"] + row["reload_mib"] <= row["available_mib"]:
        return ("change fewer models per rollout, or set triton_models_stage_candidates: false for this host (no candidate "
                "copies; a changed version then serves before its golden cases pass): either way the peak is the largest "
                "reload, %s, which fits" % mib(row["serving_mib"] + row["reload_mib"]))
    return ("lower the instance count of %s (its new set loads beside the old one), move a model to a rollout group "
            "without this host, or %s" % (row["reload"], bigger))


def device_rows(host, spec, headroom, candidates=None):
    """Budget rows of one host: one per GPU with known memory, one for host memory when it is known.

    ``spec``: {"gpus": [{"index", "name", "memory_mib"}], "host_memory_mib": int or None, "models": [{"name",
    "versions" or "latest", "config", "footprint"}], "stage_candidates": bool (triton_models_stage_candidates,
    default true)}. ``candidates``: names of the models one rollout changes; None: every model (the worst case).

    A rollout (roles/triton_models, tasks/deploy.yml) first stages every changed model as ``<name>__candidate``, one
    instance per instance group, all at once, and removes them; then loads the changed models one at a time, and
    Triton loads each new set beside the serving one and unloads the old only once the new is ready. The peak is the
    serving set plus the larger of the two: the staged candidates, or the largest single reload.
    """
    gpus = [g for g in spec.get("gpus") or [] if g.get("index") is not None]
    indexes = [int(g["index"]) for g in gpus]
    models = list(spec.get("models") or [])
    stage = spec.get("stage_candidates", True) is not False
    changing = [m for m in models if candidates is None or m["name"] in candidates]
    devices = [("GPU %d" % int(g["index"]), int(g["index"]), g.get("name"), g.get("memory_mib")) for g in gpus]
    devices.append(("host memory", "host", None, spec.get("host_memory_mib")))
    rows = []
    for label, device, name, capacity in devices:
        loads = [(m["name"],) + _device_load(m, device, indexes) for m in models]
        serving = sum(load[1] for load in loads)
        ranked = sorted((load for load in loads if load[1] and any(m["name"] == load[0] for m in changing)),
                        key=lambda load: (-load[1], load[0]))
        reload = ranked[0] if ranked else (None, 0, [], [], [])
        staged = [(m["name"],) + _device_load(m, device, indexes, staged=True) for m in changing] if stage else []
        staged_mib = sum(load[1] for load in staged)
        transient = "staged" if stage and staged_mib > reload[1] else ("reload" if reload[1] else None)
        row = {"host": host, "device": label, "name": name, "capacity_mib": None, "headroom_mib": None,
               "available_mib": None, "serving_mib": serving, "terms": [t for load in loads for t in load[2]],
               "unknown": [u for load in loads for u in load[3]], "sources": [f for load in loads for f in load[4]],
               "stage_candidates": stage,
               "staged": [load[0] for load in staged if load[1]], "staged_mib": staged_mib if stage else None,
               "staged_terms": [t for load in staged for t in load[2]],
               "reload": reload[0], "reload_mib": reload[1], "reload_terms": reload[2], "transient": transient,
               "peak_mib": serving + max(staged_mib, reload[1]), "fits": None, "over_mib": 0, "advice": None}
        if capacity in (None, ""):
            if serving or row["unknown"]:
                rows.append(row)
            continue
        row["capacity_mib"] = int(capacity)
        row["headroom_mib"] = headroom_mib(int(capacity), headroom)
        row["available_mib"] = row["capacity_mib"] - row["headroom_mib"]
        row["fits"] = row["peak_mib"] <= row["available_mib"]
        row["over_mib"] = max(0, row["peak_mib"] - row["available_mib"])
        if not row["fits"]:
            row["advice"] = _advice(row)
        rows.append(row)
    return rows


def _transient_text(row):
    if row["transient"] == "staged":
        return ("staging the candidates of %s at once adds %s (one instance per instance group: %s)"
                % (", ".join(row["staged"]), mib(row["staged_mib"]), " + ".join(row["staged_terms"])))
    if row["transient"] == "reload":
        return ("reloading %s adds %s (Triton loads the new set beside the serving one: %s)"
                % (row["reload"], mib(row["reload_mib"]), " + ".join(row["reload_terms"])))
    return "a rollout adds nothing known"


def refusal(row, headroom):
    """The sentence for a row that does not fit: the host and device, what is added up, by how much it is over, what to do."""
    where = "%s %s%s" % (row["host"], row["device"], " (%s)" % row["name"] if row.get("name") else "")
    text = ("%s: serving %s = %s; %s: peak %s > %s − %s (%s) by %s" % (
        where, " + ".join(row["terms"]) or "nothing known", mib(row["serving_mib"]), _transient_text(row),
        mib(row["peak_mib"]), mib(row["capacity_mib"]), headroom_text(headroom), mib(row["available_mib"]),
        mib(row["over_mib"])))
    if row["unknown"]:
        text += "; not counted, footprint unknown: %s" % ", ".join(row["unknown"])
    return text + ". To fit: %s" % row["advice"]


def table(rows):
    """The budget as fixed-width lines a person reads in a run's output."""
    header = ("host", "device", "capacity", "headroom", "serving", "staged", "reload", "peak", "fits", "unknown")
    body = []
    for row in rows:
        def cell(key):
            return "?" if row.get(key) is None else "{:,}".format(row[key])
        fits = "?" if row["fits"] is None else ("yes" if row["fits"] else "NO, over by {:,}".format(row["over_mib"]))
        device = row["device"] + (" " + row["name"] if row.get("name") else "")
        staged = "off" if not row["stage_candidates"] else "%s%s" % (
            cell("staged_mib"), " (%d model%s)" % (len(row["staged"]), "" if len(row["staged"]) == 1 else "s") if row["staged"] else "")
        reload = "%s%s" % (cell("reload_mib"), " (%s)" % row["reload"] if row["reload"] else "")
        body.append((row["host"], device, cell("capacity_mib"), cell("headroom_mib"), cell("serving_mib"), staged, reload,
                     cell("peak_mib"), fits, ", ".join(row["unknown"]) or "-"))
    widths = [max(len(str(line[i])) for line in [header] + body) for i in range(len(header))]
    return ["  ".join(str(value).ljust(widths[i]) for i, value in enumerate(line)).rstrip() for line in [header] + body]


def budget(hosts, headroom=DEFAULT_HEADROOM, candidates=None):
    """The budget of every host: {"rows", "refusals", "unknown", "lines"} (MiB, per instance footprints).

    ``hosts``: host -> spec (see :func:`device_rows`), each may carry its own "headroom"; ``candidates``: host ->
    names, or one list for every host, or None (every model may change in one rollout).
    """
    rows, refusals = [], []
    for host in sorted(hosts):
        spec = hosts[host]
        room = parse_headroom(spec.get("headroom", headroom))
        chosen = candidates.get(host) if isinstance(candidates, dict) else candidates
        for row in device_rows(host, spec, room, chosen):
            rows.append(row)
            if row["fits"] is False:
                refusals.append(refusal(row, room))
    unknown = ["%s %s: %s" % (r["host"], r["device"], ", ".join(r["unknown"])) for r in rows if r["unknown"]]
    return {"rows": rows, "refusals": refusals, "unknown": unknown, "lines": table(rows) if rows else []}
