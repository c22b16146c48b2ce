# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Will the fleet's pins run on its GPUs, and fit in their memory? (playbooks/validate.yml); docs beside this file.

The inventory and GPU facts become plain specs here; the table and the checks are module_utils/gpu_compat.py,
the arithmetic module_utils/gpu_budget.py. Only the variables named below are read from hostvars, so a
variable of another role that needs a lookup (the lab's image file) is never templated here.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import os
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.parsing.convert_bool import boolean

try:
    import yaml
    from ansible_collections.aiops.triton.plugins.module_utils import fleet
    from ansible_collections.aiops.triton.plugins.module_utils import gpu_budget
    from ansible_collections.aiops.triton.plugins.module_utils import gpu_compat
except ImportError as exc:  # pragma: no cover - only when the collection is broken
    raise AnsibleFilterError("aiops.triton GPU filters cannot load: %s" % to_native(exc))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The group gpu_stack.yml and nvidia_driver_upgrade.yml install and pin the NVIDIA driver on.
GPU_SERVERS_GROUP = "triton_gpu_servers"
# The host's GPU facts (an nvidia_gpu_info result; roles/common gpu_facts sets it once per run), when this run read them.
GPU_FACTS = "nvidia_gpu_facts"
TENSORRT_KEYS = {"compute_capability", "arch", "version", "version_compatible"}
_DEFAULTS = {}


def role_default(role, name):
    """A literal default of one of the collection's roles (defaults/main.yml): what a host gets when the inventory is silent."""
    if role not in _DEFAULTS:
        try:
            with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as handle:
                _DEFAULTS[role] = yaml.safe_load(handle) or {}
        except (IOError, OSError, yaml.YAMLError):
            _DEFAULTS[role] = {}
    return _DEFAULTS[role].get(name)


def native_onnxruntime_gpu(path=os.path.join(ROOT, "roles", "triton_server", "files", "requirements-native-gpu.txt")):
    """The onnxruntime-gpu version the native GPU venv pins (roles/triton_server), or None."""
    try:
        with open(path) as handle:
            for line in handle:
                match = re.match(r"^\s*onnxruntime-gpu\s*==\s*([0-9][0-9.]*)", line)
                if match:
                    return match.group(1)
    except (IOError, OSError):
        pass
    return None


def _get(hostvars, host, name, default=None):
    value = (hostvars.get(host) or {}).get(name)
    return default if value in (None, "") else value


def _servers(groups):
    return list(groups.get(fleet.SERVERS_GROUP) or [])


def _desired(hostvars, host, cache):
    """The host's present models (triton_models_list over the catalog), [] when the inventory cannot say (fleet_problems
    reports that)."""
    return fleet.present_models(_get(hostvars, host, "triton_models_list", []),
                                _get(hostvars, host, "triton_models_catalog", {}), cache)


def _gpus(hostvars, host, facts=None):
    """The host's GPUs from ``facts`` (an nvidia_gpu_info result the caller read), else this run's GPU_FACTS, else triton_gpus."""
    facts = facts if isinstance(facts, dict) and facts.get("gpus") else _get(hostvars, host, GPU_FACTS)
    try:
        return gpu_compat.host_gpus(facts, _get(hostvars, host, "triton_gpus"))
    except gpu_compat.CompatError as exc:
        return [], None, ["%s: %s" % (GPU_FACTS, exc)]


def _driver(hostvars, host, facts, on_gpu_stack, problems):
    """(running or pinned driver, the pin when the first came from facts)."""
    pin = None
    version = _get(hostvars, host, "nvidia_driver_version")
    branch = _get(hostvars, host, "nvidia_driver_branch")
    if on_gpu_stack and version is not None:
        try:
            gpu_compat.version_tuple(version)
            pin = {"version": str(version), "source": "nvidia_driver_version"}
        except gpu_compat.CompatError as exc:
            problems.append("nvidia_driver_version: %s" % exc)
    elif on_gpu_stack and branch is not None:
        if re.match(r"^[0-9]+$", str(branch).strip()):
            pin = {"branch": str(branch).strip(), "source": "nvidia_driver_branch"}
        else:
            problems.append("nvidia_driver_branch must be a branch number (560), got %r" % (branch,))
    running = (facts or {}).get("driver_version") if isinstance(facts, dict) and facts.get("gpus") else None
    if running:
        return {"version": str(running), "source": "running, from GPU facts"}, pin
    return pin, None


def _stack(hostvars, host):
    """(stack, why Triton runs without GPUs)."""
    method = _get(hostvars, host, "triton_server_install_method", role_default("triton_server", "triton_server_install_method"))
    if method == "container":
        mode = _get(hostvars, host, "triton_server_container_gpu_mode", role_default("triton_server", "triton_server_container_gpu_mode"))
        if mode == "none":
            return None, "triton_server_container_gpu_mode is none: the container sees no GPU"
        tag = str(_get(hostvars, host, "triton_server_container_tag", role_default("triton_server", "triton_server_container_tag")))
        if "cpu-only" in tag:
            return None, "the image %s is a CPU-only build" % tag
        image = _get(hostvars, host, "triton_server_container_image", role_default("triton_server", "triton_server_container_image"))
        return {"method": "container", "image": image, "tag": tag}, None
    if _get(hostvars, host, "triton_server_native_device", role_default("triton_server", "triton_server_native_device")) == "cpu":
        return None, "triton_server_native_device is cpu"
    return {"method": "native", "onnxruntime_gpu": native_onnxruntime_gpu()}, None


def _per_version(value, version):
    """A model's tensorrt/footprint value for one version: flat (every version) or keyed by version number."""
    if not isinstance(value, dict) or not value or any(not re.match(r"^[0-9]+$", str(k)) for k in value):
        return value
    for key, item in value.items():
        if str(key) == str(version):
            return item
    return None


def _plan_gpus(config):
    """The GPU indexes a model's GPU instance groups name; None for every GPU of the host."""
    groups = config.get("instance_group") or [{"kind": "KIND_GPU"}]
    indexes = set()
    on_gpu = False
    for group in groups:
        if group.get("kind", "KIND_AUTO") in ("KIND_GPU", "KIND_AUTO"):
            on_gpu = True
            if not group.get("gpus"):
                return None
            indexes.update(int(g) for g in group["gpus"])
    return sorted(indexes) if on_gpu else []


def _plans(models, problems):
    """The TensorRT plan models of a host's set, one entry per served version (its own tag or the model's)."""
    plans = []
    for model in models:
        config = model.get("config") or {}
        if config.get("platform") != "tensorrt_plan" and config.get("backend") != "tensorrt":
            if model.get("tensorrt") not in (None, {}):
                problems.append("model %s: tensorrt is set but the model is not a TensorRT plan (platform tensorrt_plan)" % model["name"])
            continue
        where = _plan_gpus(config)
        if where == []:
            continue  # KIND_CPU only: no GPU to judge
        by_cc = config.get("cc_model_filenames") or {}
        for version in model.get("versions") or [None]:
            tag = _per_version(model.get("tensorrt"), version) if version is not None else model.get("tensorrt")
            tag = tag if isinstance(tag, dict) else {}
            unknown = sorted(set(tag) - TENSORRT_KEYS)
            if unknown:
                problems.append("model %s: tensorrt has unknown key(s) %s (%s)" % (model["name"], ", ".join(unknown), ", ".join(sorted(TENSORRT_KEYS))))
            try:
                if by_cc:
                    built, source = sorted(set(gpu_compat.compute_capability(k) for k in by_cc)), "cc_model_filenames"
                elif tag.get("compute_capability") or tag.get("arch"):
                    built = [gpu_compat.compute_capability(tag.get("compute_capability") or tag.get("arch"))]
                    source = "tensorrt.compute_capability"
                else:
                    built, source = [], None
                if tag.get("version") is not None:
                    gpu_compat.version_tuple(tag["version"])
            except gpu_compat.CompatError as exc:
                problems.append("model %s: %s" % (model["name"], exc))
                continue
            plans.append({"model": model["name"], "versions": [version] if version is not None else [], "gpus": where,
                          "compute_capabilities": built, "built_source": source,
                          "tensorrt": str(tag["version"]) if tag.get("version") is not None else None,
                          "version_compatible": bool(tag.get("version_compatible"))})
    return plans


def compat_spec(hostvars, groups, host, cache=None):
    """One host's spec for module_utils.gpu_compat.check_host, and the inventory problems found building it."""
    cache = {} if cache is None else cache
    on_gpu_stack = host in (groups.get(GPU_SERVERS_GROUP) or [])
    gpus, source, problems = _gpus(hostvars, host)
    facts = _get(hostvars, host, GPU_FACTS)
    driver, pinned = _driver(hostvars, host, facts, on_gpu_stack, problems)
    forward = _get(hostvars, host, "triton_gpu_forward_compat", False)
    if not isinstance(forward, bool):
        problems.append("triton_gpu_forward_compat must be true or false, got %r" % (forward,))
        forward = False
    stack, why = _stack(hostvars, host)
    if stack is not None and not gpus and driver is None and not on_gpu_stack:
        stack, why = None, "no GPU known (no GPU facts, no triton_gpus, not in %s)" % GPU_SERVERS_GROUP
    # a host whose Triton uses no GPU has no plan to judge: its model set is not even read (a large fleet's catalog)
    plans = _plans(_desired(hostvars, host, cache), problems) if stack is not None else []
    spec = {"host": host, "gpus": gpus, "gpus_source": source, "driver": driver, "pinned": pinned, "stack": stack,
            "no_gpu_stack": why, "forward_compat": forward, "plans": plans}
    if driver is None:
        if on_gpu_stack:
            branch = role_default("nvidia_driver", "nvidia_driver_branch")
            hint = ("no GPU facts, and neither nvidia_driver_version nor nvidia_driver_branch is set: the nvidia_driver "
                    "role's default branch %s would be installed" % branch)
            need = gpu_compat.requirement(stack)[0] if stack else None
            if need and branch and not gpu_compat.driver_meets({"branch": branch}, need["min_driver"]):
                hint += (", older than %s, the minimum for %s that %s needs, unless these are data-center GPUs with "
                         "triton_gpu_forward_compat" % (need["min_driver"], need["cuda_label"], need["label"]))
            spec["driver_hint"] = hint
        else:
            spec["driver_hint"] = "no GPU facts, and the host is not in %s, whose driver the collection pins" % GPU_SERVERS_GROUP
    return spec, ["host %s: %s" % (host, p) for p in problems]


def gpu_compat_report(hostvars, groups):
    """Every Triton host against the compatibility table.

    {hosts, refusals, problems, not_checked, notes, checked, summary, lines}: ``lines`` is what a person reads, one
    per host whose Triton would use GPUs (a host without GPUs is only counted in ``summary``), then the notes.
    """
    if not isinstance(groups, dict):
        raise AnsibleFilterError("gpu_compat_report: groups must be a mapping (Ansible's groups), got %s" % type(groups).__name__)
    report = {"hosts": [], "refusals": [], "problems": [], "not_checked": [], "notes": [], "lines": []}
    cache = {}
    for host in _servers(groups):
        spec, problems = compat_spec(hostvars, groups, host, cache)
        result = gpu_compat.check_host(spec)
        report["hosts"].append(result)
        report["problems"].extend(problems)
        for key in ("refusals", "not_checked", "notes"):
            report[key].extend(result[key])
        if spec["stack"] is None:
            continue
        need = result.get("requirement")
        line = "%s: %s" % (host, result["status"].replace("_", " "))
        if need:
            line += " (%s, %s: driver %s or newer)" % (need["label"], need["cuda_label"], need["min_driver"])
        if result["not_checked"]:
            line += (": " if result["status"] == "not_checked" else "; not checked: ") + "; ".join(
                n[len(host) + 2:] if n.startswith(host + ": ") else n for n in result["not_checked"])
        report["lines"].append(line)
    counts = dict((s, sum(1 for r in report["hosts"] if r["status"] == s)) for s in ("ok", "refused", "not_checked"))
    report["checked"] = counts["ok"] + counts["refused"]
    report["summary"] = "GPU compatibility: %d ok, %d refused, %d not checked" % (counts["ok"], counts["refused"], counts["not_checked"])
    report["lines"] += report["notes"]
    return report


def gpu_compat_refusals(hostvars, groups):
    """Why the fleet's pins cannot run on its GPUs, one sentence per host and problem (empty: nothing refused)."""
    report = gpu_compat_report(hostvars, groups)
    return report["problems"] + report["refusals"]


def _stage_candidates(hostvars, host, problems):
    """triton_models_stage_candidates of the host (the role's default where unset): whether a rollout stages candidates."""
    value = _get(hostvars, host, "triton_models_stage_candidates", role_default("triton_models", "triton_models_stage_candidates"))
    try:
        return boolean(True if value is None else value, strict=True)
    except TypeError:
        problems.append("host %s: triton_models_stage_candidates must be true or false, got %r" % (host, value))
        return True


def _footprint_lines(specs, measured):
    """One line per model version and where its footprint comes from (declared, measured, unknown), hosts grouped."""
    seen = {}
    for host in sorted(specs):
        for model in specs[host]["models"]:
            for version, source in sorted((model.get("footprint_sources") or {}).items(), key=lambda i: int(i[0])):
                each = gpu_budget.footprint(model["footprint"], version)
                text = "%s v%s: %s" % (model["name"], version, source)
                if source != "unknown":
                    text += " (per instance: GPU %s, host %s" % tuple(
                        "?" if each[k] is None else gpu_budget.mib(each[k]) for k in gpu_budget.FOOTPRINT_KEYS)
                    where = (((measured or {}).get(host) or {}).get(model["name"]) or {}).get(str(version)) or {}
                    if source == "measured" and where.get("location"):
                        text += "; %s, on %s at %s" % (where["location"], where.get("host") or "?",
                                                       where.get("measured") or "?")
                    text += ")"
                seen.setdefault(text, []).append(host)
    return ["footprint %s: %s" % (text, ", ".join(hosts)) for text, hosts in sorted(seen.items())]


def gpu_memory_budget(hostvars, groups, headroom=None, candidates=None, gpu_facts=None, measured=None):
    """Each Triton host's GPU and host memory budget: {rows, refusals, unknown, lines, declared, measured, problems}.

    ``gpu_facts``: host -> nvidia_gpu_info result read by this run (playbooks/verify.yml), before nvidia_gpu_facts.
    ``measured``: host -> model -> version -> footprint recorded in S3 (the aiops.triton.model_footprints lookup's
    ``footprints``); counted where the inventory declares none for that version.
    """
    if not isinstance(groups, dict):
        raise AnsibleFilterError("gpu_memory_budget: groups must be a mapping (Ansible's groups), got %s" % type(groups).__name__)
    specs, problems, cache, declared, was_measured = {}, [], {}, False, False
    for host in _servers(groups):
        gpus, source, gpu_problems = _gpus(hostvars, host, (gpu_facts or {}).get(host))
        problems.extend("host %s: %s" % (host, p) for p in gpu_problems)
        models = _desired(hostvars, host, cache)
        declared = declared or any(m.get("footprint") not in (None, {}) for m in models)
        mine = (measured or {}).get(host) or {}
        try:
            models = [gpu_budget.merge_footprints(m, dict((str(v), f.get("footprint", f)) for v, f in (mine.get(m["name"]) or {}).items()))
                      for m in models]
        except (gpu_budget.BudgetError, TypeError, ValueError, AttributeError) as exc:
            problems.append("host %s: %s" % (host, exc))
            continue
        was_measured = was_measured or any("measured" in (m.get("footprint_sources") or {}).values() for m in models)
        memory = _get(hostvars, host, "triton_host_memory_mib", (_get(hostvars, host, "ansible_facts", {}) or {}).get("memtotal_mb"))
        spec = {"gpus": gpus, "host_memory_mib": memory, "models": models,
                "headroom": _get(hostvars, host, "triton_gpu_budget_headroom", headroom),
                "stage_candidates": _stage_candidates(hostvars, host, problems)}
        try:
            if memory is not None and (isinstance(memory, bool) or int(memory) <= 0):
                raise gpu_budget.BudgetError("triton_host_memory_mib must be MiB (a positive integer), got %r" % (memory,))
            gpu_budget.budget({host: spec})
        except (gpu_budget.BudgetError, TypeError, ValueError) as exc:
            problems.append("host %s: %s" % (host, exc))
            continue
        specs[host] = spec
    result = gpu_budget.budget(specs, headroom, candidates)
    result["footprints"] = _footprint_lines(specs, measured)
    if result["lines"]:
        result["lines"] = result["lines"] + result["footprints"]
    result.update({"declared": declared, "measured": was_measured, "problems": problems})
    return result


class FilterModule(object):
    def filters(self):
        return {"gpu_compat_report": gpu_compat_report, "gpu_compat_refusals": gpu_compat_refusals,
                "gpu_memory_budget": gpu_memory_budget}
