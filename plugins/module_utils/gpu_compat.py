# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Can a host run what the inventory pins? The driver/CUDA/Triton/TensorRT table, kept here once, and the checks.

Pure functions on plain data: the ``aiops.triton.gpu_compat_*`` filters build one host's facts and pins into the
spec :func:`check_host` reads (playbooks/validate.yml, before any host is contacted). Every value of the tables
below names the NVIDIA page it was read from (SOURCES); docs/gpu-compatibility.md says how to extend them.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import re

# Inventory-level variables this check reads (module_utils/fleet.py adds them to the names the validation
# play knows). triton_gpus is shared with the GPU memory budget (module_utils/gpu_budget.py).
VARIABLES = frozenset(["triton_gpus", "triton_gpu_forward_compat"])

SOURCES = {
    "cuda_drivers": "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html "
                    "(Table 3, CUDA Toolkit and Corresponding Driver Versions, Linux x86_64)",
    "cuda_minor_compat": "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html "
                         "(Table 2, Minimum Required Driver Version for CUDA Minor Version Compatibility)",
    "triton_release_notes": "https://docs.nvidia.com/deeplearning/triton-inference-server/release-notes/ "
                            "(rel-YY-MM.html, Driver Requirements and GPU Requirements)",
    "support_matrix": "https://docs.nvidia.com/deeplearning/frameworks/support-matrix/index.html",
    "forward_compat": "https://docs.nvidia.com/deploy/cuda-compatibility/index.html (forward compatibility, cuda-compat)",
    "cuda_gpus": "https://developer.nvidia.com/cuda-gpus (compute capability per GPU)",
    "onnxruntime": "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements",
    "tensorrt": "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/advanced.html "
                "(version compatibility, hardware compatibility)",
}

# Minimum Linux x86_64 driver of each CUDA major.minor's GA release (SOURCES["cuda_drivers"], Table 3). Updates may
# name a later driver (12.6 Update 3: >= 560.35.05); NVIDIA's Triton release notes ask for the branch of the GA.
CUDA_MIN_DRIVER = {
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
}

# CUDA minor-version compatibility (SOURCES["cuda_minor_compat"], Table 2): an application built with any 12.x runs
# on a 12.x-era driver from R525 on (13.x: R580), without the features a newer driver brings (PTX JIT of newer PTX).
# The minimum named is the GA driver of the major's first release (Table 3).
MINOR_COMPAT_MIN_DRIVER = {"12": "525.60.13", "13": "580.65.06"}

# Data-center GPUs run a newer CUDA on an older driver through the cuda-compat package NVIDIA's containers carry
# (SOURCES["forward_compat"]); each Triton release note lists the drivers it supports that way, each "that
# version or later on its branch". The operator declares triton_gpu_forward_compat: true for such hosts.
_FORWARD_2024 = ("470.57", "525.85", "535.86", "545.23")

# NGC Triton container release -> what it is built on (SOURCES["triton_release_notes"]: "Release YY.MM is based on
# CUDA x.y.z" and "supports CUDA compute capability x.y and later"; triton and tensorrt from the support matrix).
# tensorrt None: not verified for this table, so a plan's TensorRT version is reported as not checked, never guessed.
TRITON_RELEASES = {
    "24.01": {"triton": "2.42.0", "cuda": "12.3.2", "min_compute_capability": "6.0", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "24.04": {"triton": "2.45.0", "cuda": "12.4", "min_compute_capability": "6.0", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "24.05": {"triton": "2.46.0", "cuda": "12.4.1", "min_compute_capability": "6.0", "tensorrt": "10.0.1",
              "forward_compat": _FORWARD_2024},
    "24.07": {"triton": "2.48.0", "cuda": "12.5.1", "min_compute_capability": "6.0", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "24.08": {"triton": "2.49.0", "cuda": "12.6.0", "min_compute_capability": "6.0", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "24.10": {"triton": "2.51.0", "cuda": "12.6.2", "min_compute_capability": "6.0", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "24.12": {"triton": "2.53.0", "cuda": "12.6.3", "min_compute_capability": "6.0", "tensorrt": "10.7.0",
              "forward_compat": _FORWARD_2024},
    "25.01": {"triton": "2.54.0", "cuda": "12.8.0", "min_compute_capability": "7.5", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "25.03": {"triton": "2.56.0", "cuda": "12.8.1", "min_compute_capability": "7.5", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
    "25.04": {"triton": "2.57.0", "cuda": "12.9.0", "min_compute_capability": "7.5", "tensorrt": None,
              "forward_compat": _FORWARD_2024},
}

# onnxruntime-gpu on PyPI (the native method's GPU venv): the CUDA major its wheels are built for
# (SOURCES["onnxruntime"]: CUDA 12.x the default from 1.19; "built with CUDA 12.x are compatible with any CUDA
# 12.x"). From 1.27 PyPI carries CUDA 13 builds (roles/triton_server/files/requirements-native-gpu.txt records why
# it pins 1.26). As (first version, first version after, CUDA major).
ONNXRUNTIME_GPU_CUDA = (
    ("1.19", "1.27", "12"),
    ("1.27", None, "13"),
)

# Compute capability of the GPUs nvidia-smi names most often in data centers (SOURCES["cuda_gpus"]); matched as
# whole words of the name nvidia-smi prints ("NVIDIA A100-SXM4-80GB" is an A100, never an A10). A GPU not listed
# here needs compute_capability in triton_gpus.
GPU_COMPUTE_CAPABILITY = (
    ("B200", "10.0"), ("GH200", "9.0"), ("H200", "9.0"), ("H100", "9.0"), ("H800", "9.0"),
    ("L40S", "8.9"), ("L40", "8.9"), ("L4", "8.9"), ("L20", "8.9"),
    ("A100", "8.0"), ("A800", "8.0"), ("A30", "8.0"),
    ("A40", "8.6"), ("A16", "8.6"), ("A10G", "8.6"), ("A10", "8.6"), ("A2", "8.6"),
    ("T4", "7.5"), ("V100", "7.0"), ("P100", "6.0"), ("P40", "6.1"), ("P4", "6.1"),
)

UPGRADE_PLAYBOOK = "playbooks/nvidia_driver_upgrade.yml"


class CompatError(Exception):
    """A value the table cannot read (a version, a compute capability); the message names it."""


def version_tuple(text):
    """"535.161.08" -> (535, 161, 8); raises CompatError on anything else."""
    value = str(text).strip()
    if not re.match(r"^[0-9]+(\.[0-9]+)*$", value):
        raise CompatError("%r is not a version" % (text,))
    return tuple(int(part) for part in value.split("."))


def compute_capability(value):
    """"8.6", 8.6, "sm_86", "sm_90a", "86" -> "8.6"; raises CompatError on anything else."""
    text = str(value).strip().lower()
    match = re.match(r"^(?:sm_?|compute_)?([0-9]+)a?$", text)
    if match and len(match.group(1)) >= 2:
        digits = match.group(1)
        return "%d.%d" % (int(digits[:-1]), int(digits[-1]))
    match = re.match(r"^([0-9]+)\.([0-9]+)$", text)
    if match:
        return "%d.%d" % (int(match.group(1)), int(match.group(2)))
    raise CompatError("%r is not a compute capability (8.6 or sm_86)" % (value,))


def gpu_compute_capability(name):
    """The compute capability GPU_COMPUTE_CAPABILITY gives a GPU name, or None."""
    for model, capability in GPU_COMPUTE_CAPABILITY:
        if re.search(r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])" % re.escape(model), str(name or "")):
            return capability
    return None


def _capability(value, name, given):
    """(compute capability, where it came from): ``value`` as ``given`` says, else the name's (GPU_COMPUTE_CAPABILITY)."""
    if value not in (None, ""):
        return compute_capability(value), given
    by_name = gpu_compute_capability(name)
    return by_name, "name" if by_name else None


def host_gpus(facts, declared):
    """A host's GPUs as [{"index", "name", "memory_mib", "compute_capability", "compute_capability_source"}], where
    they came from, and problems.

    ``facts``: aiops.triton.nvidia_gpu_info's result (its ``gpus``), used when it lists GPUs: its compute capability
    is nvidia-smi's ``compute_cap`` where the driver reports it (R510 on), else the name's, else the one ``declared``
    gives the GPU of the same index, and ``compute_capability_source`` says which. Else ``declared``, the
    inventory's triton_gpus: [{name, memory_mib, compute_capability, index}] for hosts not reached yet. A compute
    capability not given comes from the GPU's name (GPU_COMPUTE_CAPABILITY) or stays None.
    """
    problems = []
    if isinstance(facts, dict) and facts.get("gpus"):
        # what facts and the name cannot say, triton_gpus may (a driver before R510 reports no compute_cap)
        declared_by_index = dict((int(g.get("index", i)), g.get("compute_capability")) for i, g in enumerate(declared)
                                 if isinstance(g, dict)) if isinstance(declared, list) else {}
        gpus = []
        for gpu in facts["gpus"]:
            name = gpu.get("name")
            given = gpu.get("compute_capability") or gpu.get("compute_cap")
            capability, source = _capability(given, name, gpu.get("compute_capability_source") or "GPU facts")
            if capability is None and declared_by_index.get(int(gpu.get("index", len(gpus)))) not in (None, ""):
                capability = compute_capability(declared_by_index[int(gpu.get("index", len(gpus)))])
                source = "triton_gpus"
            gpus.append({"index": int(gpu.get("index", len(gpus))), "name": name, "memory_mib": gpu.get("memory_total_mib"),
                         "compute_capability": capability, "compute_capability_source": source})
        return gpus, "GPU facts", problems
    if declared in (None, "", []):
        return [], None, problems
    if not isinstance(declared, list):
        return [], None, ["triton_gpus must be a list of GPUs ({name, memory_mib, compute_capability}), got %r" % (declared,)]
    gpus = []
    for position, gpu in enumerate(declared):
        where = "triton_gpus[%d]" % position
        if not isinstance(gpu, dict):
            problems.append("%s must be a mapping (name, memory_mib, compute_capability), got %r" % (where, gpu))
            continue
        unknown = sorted(set(gpu) - {"index", "name", "memory_mib", "compute_capability"})
        if unknown:
            problems.append("%s: unknown key(s) %s (index, name, memory_mib, compute_capability)" % (where, ", ".join(map(str, unknown))))
        memory = gpu.get("memory_mib")
        if memory is not None and (isinstance(memory, bool) or not re.match(r"^[0-9]+$", str(memory).strip()) or int(memory) <= 0):
            problems.append("%s.memory_mib must be MiB (a positive integer), got %r" % (where, memory))
            memory = None
        try:
            capability, source = _capability(gpu.get("compute_capability"), gpu.get("name"), "triton_gpus")
        except CompatError as exc:
            problems.append("%s.compute_capability: %s" % (where, exc))
            capability, source = None, None
        gpus.append({"index": int(gpu.get("index", position)), "name": gpu.get("name"),
                     "memory_mib": int(memory) if memory is not None else None, "compute_capability": capability,
                     "compute_capability_source": source})
    return gpus, "triton_gpus", problems


def release_of_tag(tag):
    """"24.12-py3" -> "24.12"; None for a tag that names no release."""
    match = re.match(r"^([0-9]{2}\.[0-9]{2})(?:-|$)", str(tag or ""))
    return match.group(1) if match else None


def cuda_minor(cuda):
    return ".".join(str(cuda).split(".")[:2])


def onnxruntime_cuda_major(version):
    """The CUDA major an onnxruntime-gpu version from PyPI needs, or None when the table does not know it."""
    try:
        have = version_tuple(version)[:2]
    except CompatError:
        return None
    for first, after, major in ONNXRUNTIME_GPU_CUDA:
        if have >= version_tuple(first) and (after is None or have < version_tuple(after)):
            return major
    return None


def driver_meets(driver, minimum):
    """Whether ``driver`` ({"version": "535.161.08"} or a branch {"branch": "535"}) is at least ``minimum``.

    A branch pin gets the newest driver of that branch (roles/nvidia_driver), so a branch at or above the
    minimum's branch meets it.
    """
    floor = version_tuple(minimum)
    if driver.get("branch") is not None:
        return int(driver["branch"]) >= floor[0]
    return version_tuple(driver["version"]) >= floor


def forward_compatible(driver, supported):
    """The entry of ``supported`` ("535.86": R535 from 535.86 on) that lets ``driver`` run by forward compatibility."""
    for entry in supported or ():
        floor = version_tuple(entry)
        if driver.get("branch") is not None:
            if int(driver["branch"]) == floor[0]:
                return entry
        elif version_tuple(driver["version"])[0] == floor[0] and version_tuple(driver["version"]) >= floor:
            return entry
    return None


def driver_text(driver):
    if driver.get("branch") is not None:
        return "driver branch %s (%s)" % (driver["branch"], driver["source"])
    return "driver %s (%s)" % (driver["version"], driver["source"])


def newest_release_for(driver):
    """The newest Triton release of the table this driver runs without forward compatibility, or None."""
    for release in sorted(TRITON_RELEASES, key=version_tuple, reverse=True):
        if driver_meets(driver, CUDA_MIN_DRIVER[cuda_minor(TRITON_RELEASES[release]["cuda"])]):
            return release
    return None


def requirement(stack):
    """What a host's Triton needs from its driver and GPUs, or (None, why not checked).

    ``stack``: {"method": "container", "image": ..., "tag": "24.12-py3"} or {"method": "native",
    "onnxruntime_gpu": "1.26.0"}.
    """
    if stack.get("method") == "container":
        release = release_of_tag(stack.get("tag"))
        if release is None:
            return None, "the image tag %r names no Triton release (YY.MM-...)" % (stack.get("tag"),)
        if release not in TRITON_RELEASES:
            return None, ("Triton %s (%s:%s) is not in the compatibility table (plugins/module_utils/gpu_compat.py, "
                          "docs/gpu-compatibility.md says how to add it)" % (release, stack.get("image"), stack.get("tag")))
        data = TRITON_RELEASES[release]
        minor = cuda_minor(data["cuda"])
        return {"label": "Triton %s (%s:%s)" % (release, stack.get("image"), stack.get("tag")), "release": release,
                "cuda": data["cuda"], "cuda_label": "CUDA %s" % minor, "min_driver": CUDA_MIN_DRIVER[minor],
                "forward_compat": data["forward_compat"], "min_compute_capability": data["min_compute_capability"],
                "tensorrt": data["tensorrt"], "older": "pin an older Triton with triton_server_container_tag"}, None
    version = stack.get("onnxruntime_gpu")
    major = onnxruntime_cuda_major(version) if version else None
    if major is None:
        return None, "onnxruntime-gpu %s of the native GPU venv is not in the compatibility table" % (version or "(no pin)",)
    return {"label": "onnxruntime-gpu %s of the native GPU venv" % version, "release": None, "cuda": major,
            "cuda_label": "CUDA %s.x (minor-version compatibility)" % major, "min_driver": MINOR_COMPAT_MIN_DRIVER[major],
            "forward_compat": (), "min_compute_capability": None, "tensorrt": None,
            "older": "pin an onnxruntime-gpu built for an older CUDA"}, None


def gpus_text(gpus, indexes=None):
    """"GPU 0 NVIDIA A10" / "GPUs 0, 1 NVIDIA H100 80GB HBM3" / "GPU unknown"."""
    chosen = [g for g in gpus or [] if indexes is None or g.get("index") in indexes]
    if not chosen:
        return "GPU unknown"
    names = []
    for gpu in chosen:
        if gpu.get("name") not in names:
            names.append(gpu.get("name"))
    parts = []
    for name in names:
        same = [str(g.get("index")) for g in chosen if g.get("name") == name]
        parts.append("%s %s%s" % ("GPUs" if len(same) > 1 else "GPU", ", ".join(same), " " + name if name else ""))
    return "; ".join(parts)


def _driver_refusal(host, gpus, driver, need, pinned, forward_declared):
    text = ("%s (%s): %s is older than %s, the minimum for %s that %s needs: upgrade with %s "
            "(nvidia_driver_version %s or newer, or nvidia_driver_branch %d or newer) or %s"
            % (host, gpus_text(gpus), driver_text(driver), need["min_driver"], need["cuda_label"], need["label"],
               UPGRADE_PLAYBOOK, need["min_driver"], version_tuple(need["min_driver"])[0], need["older"]))
    if need["release"]:
        older = newest_release_for(driver)
        text += (" (the newest in the table this driver runs: %s)" % older if older
                 else " (no release in the table, %s and later, runs on it)" % min(TRITON_RELEASES, key=version_tuple))
    if pinned and driver_meets(pinned, need["min_driver"]):
        text += "; the inventory already pins %s: run %s before this" % (driver_text(pinned), UPGRADE_PLAYBOOK)
    entry = forward_compatible(driver, need["forward_compat"])
    if entry and not forward_declared:
        text += ("; on data-center GPUs the image's CUDA forward compatibility supports R%s from %s: declare "
                 "triton_gpu_forward_compat: true for such hosts" % (version_tuple(entry)[0], entry))
    return text


def _plan_problems(host, gpus, plan, need):
    """Refusals and not-checked notes of one TensorRT plan model on this host's GPUs."""
    refusals, unchecked = [], []
    indexes = plan.get("gpus")
    used = [g for g in gpus if indexes is None or g.get("index") in indexes]
    label = "model %s version %s" % (plan["model"], ", ".join(str(v) for v in plan.get("versions") or []) or "(latest)")
    built = plan.get("compute_capabilities")
    if not used:
        unchecked.append("%s: %s is a TensorRT plan and the GPUs it runs on are not known" % (host, label))
    elif not built:
        unchecked.append("%s: %s is a TensorRT plan with no architecture tag (tensorrt.compute_capability or "
                         "cc_model_filenames)" % (host, label))
    else:
        unknown = [g for g in used if not g.get("compute_capability")]
        if unknown:
            unchecked.append("%s: %s: compute capability of %s unknown (declare compute_capability in triton_gpus)"
                             % (host, label, gpus_text(unknown)))
        wrong = {}
        for gpu in used:
            if gpu.get("compute_capability") and gpu["compute_capability"] not in built:
                wrong.setdefault(gpu["compute_capability"], []).append(gpu["index"])
        for capability in sorted(wrong):
            refusals.append(
                "%s (%s, compute capability %s): %s is a TensorRT plan built for compute capability %s (%s), and a plan "
                "runs only on the architecture it was built for: build one on a GPU of compute capability %s and ship it "
                "with cc_model_filenames, or serve this model from a rollout group without this host"
                % (host, gpus_text(gpus, wrong[capability]), capability, label, ", ".join(sorted(built)),
                   plan.get("built_source"), capability))
    version = plan.get("tensorrt")
    if version and need and need.get("tensorrt"):
        have, runtime = version_tuple(version), version_tuple(need["tensorrt"])
        if plan.get("version_compatible"):
            fits = have[0] == runtime[0] and runtime[:2] >= have[:2]
            rule = "a version-compatible plan needs the same TensorRT major, at least as new"
        else:
            fits = have[:2] == runtime[:2]
            rule = "a plan loads only in the TensorRT major.minor that built it"
        if not fits:
            refusals.append("%s (%s): %s is a TensorRT plan built with TensorRT %s and %s ships TensorRT %s (%s): "
                            "rebuild it with TensorRT %s or pin the Triton release it was built for"
                            % (host, gpus_text(used), label, version, need["label"], need["tensorrt"], rule,
                               ".".join(str(p) for p in runtime[:2])))
    elif version and need and need.get("release"):
        unchecked.append("%s: %s: the TensorRT version of Triton %s is not in the table" % (host, label, need["release"]))
    return refusals, unchecked


def check_host(spec):
    """One host against the table: {"host", "status", "refusals", "not_checked", "notes", "requirement"}.

    ``spec`` (plain data, built by the filter from facts and the inventory):
      host; gpus: [{"index", "name", "compute_capability"}] (empty when unknown); driver: {"version"|"branch",
      "source"} or None; pinned: the inventory's pin when ``driver`` came from facts, else None; stack (see
      :func:`requirement`) or None with ``no_gpu_stack`` saying why Triton runs without GPUs; forward_compat: bool;
      plans: [{"model", "versions", "gpus", "compute_capabilities", "built_source", "tensorrt", "version_compatible"}];
      driver_hint: a sentence for a host whose driver is not known.
    """
    host = spec["host"]
    result = {"host": host, "refusals": [], "not_checked": [], "notes": [], "requirement": None}
    if spec.get("stack") is None:
        result["not_checked"].append("%s: %s" % (host, spec.get("no_gpu_stack") or "Triton runs without GPUs"))
        result["status"] = "not_checked"
        return result
    gpus = list(spec.get("gpus") or [])
    need, why = requirement(spec["stack"])
    result["requirement"] = need
    checked = False
    driver = spec.get("driver")
    if need is None:
        result["not_checked"].append("%s: %s" % (host, why))
    elif driver is None:
        result["not_checked"].append("%s: driver not known (%s)" % (host, spec.get("driver_hint") or "no GPU facts, no pin"))
    else:
        checked = True
        if driver_meets(driver, need["min_driver"]):
            pass
        elif spec.get("forward_compat") and forward_compatible(driver, need["forward_compat"]):
            result["notes"].append("%s: %s runs %s by CUDA forward compatibility (triton_gpu_forward_compat, data-center "
                                   "GPUs only)" % (host, driver_text(driver), need["label"]))
        else:
            result["refusals"].append(_driver_refusal(host, gpus, driver, need, spec.get("pinned"), spec.get("forward_compat")))
    if need and need.get("min_compute_capability"):
        floor = version_tuple(need["min_compute_capability"])
        for gpu in gpus:
            if gpu.get("compute_capability"):
                checked = True
                if version_tuple(gpu["compute_capability"]) < floor:
                    older = [r for r in sorted(TRITON_RELEASES, key=version_tuple, reverse=True)
                             if version_tuple(TRITON_RELEASES[r]["min_compute_capability"]) <= version_tuple(gpu["compute_capability"])]
                    result["refusals"].append(
                        "%s (%s, compute capability %s): %s supports compute capability %s and later: %s%s"
                        % (host, gpus_text(gpus, [gpu["index"]]), gpu["compute_capability"], need["label"],
                           need["min_compute_capability"], need["older"],
                           " (the newest in the table for this GPU: %s)" % older[0] if older else ""))
    for plan in spec.get("plans") or []:
        refusals, unchecked = _plan_problems(host, gpus, plan, need)
        checked = checked or bool(refusals) or (not unchecked and bool(gpus))
        result["refusals"].extend(refusals)
        result["not_checked"].extend(unchecked)
    # ok: every check ran and passed; not_checked: something could not be checked (the lines say what), none refused
    result["status"] = "refused" if result["refusals"] else ("ok" if checked and not result["not_checked"] else "not_checked")
    return result
