#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_gpu_info
short_description: Report NVIDIA GPUs, driver, CUDA and fabric manager versions from nvidia-smi
version_added: "0.2.0"
description:
  - Runs C(nvidia-smi --query-gpu) and reports each GPU with index, UUID, name, PCI bus id, memory,
    driver version, persistence mode, MIG mode and ECC error counters, plus the CUDA version, the loaded
    kernel module (version and open/proprietary flavour, from C(/proc/driver/nvidia/version)) and the
    fabric manager version when C(nv-fabricmanager) is installed.
  - Each GPU's compute capability is read from nvidia-smi's C(compute_cap) field (drivers from R510 on), asked in a
    query of its own; where nvidia-smi cannot answer it (an older driver), it comes from the GPU's name
    (the table of C(plugins/module_utils/gpu_compat.py)), and RV(gpus[].compute_capability_source) says which.
  - Also counts NVIDIA GPUs and NVSwitches on the PCI bus from sysfs, which works before any driver is loaded.
  - A host without nvidia-smi, without a loaded driver, or without GPUs is not an error; RV(gpus) is then
    empty and RV(status) says why. RV(host_kind) tells a host with no NVIDIA GPU at all (V(cpu)) from one whose
    PCI bus shows NVIDIA GPUs that nvidia-smi does not list (V(broken)); callers refuse to serve the latter on CPU.
  - When O(expected_driver_version) or O(expected_gpu_count) are given, RV(problems) lists every mismatch
    between nvidia-smi, the kernel module, fabric manager and those expectations. The module never fails
    on a mismatch; the caller decides (the C(nvidia_driver) role asserts RV(problems) is empty).
author:
  - aiops.triton contributors (@aiops)
options:
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) binary. When omitted it is searched in E(PATH) and C(/usr/bin).
    type: path
  expected_driver_version:
    description:
      - Driver version the host is pinned to. A branch (V(535)) matches any V(535.x); a full version must match exactly.
    type: str
  expected_gpu_count:
    description:
      - Number of GPUs nvidia-smi must list.
    type: int
notes:
  - Read-only; supports check mode.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Read GPU facts
  aiops.triton.nvidia_gpu_info:
  register: gpu_info

- name: Verify an 8-GPU host pinned to 535.154.05
  aiops.triton.nvidia_gpu_info:
    expected_driver_version: "535.154.05"
    expected_gpu_count: 8
  register: gpu_check
  failed_when: gpu_check.problems | length > 0
"""

RETURN = r"""
status:
  description: V(ok), V(not_installed) (no nvidia-smi), V(no_driver) (kernel module not loaded) or V(no_devices).
  returned: always
  type: str
  sample: ok
message:
  description: One line a person can read about RV(status).
  returned: always
  type: str
  sample: "8 GPU(s), driver 535.154.05, CUDA 12.2"
gpus:
  description: GPUs as listed by nvidia-smi, sorted by index. Fields nvidia-smi reports as N/A are null.
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      uuid: GPU-0fd630f1-f29d-0da9-953f-48f1a09f76b5
      name: NVIDIA H100 80GB HBM3
      pci_bus_id: "00000000:1B:00.0"
      memory_total_mib: 81559
      memory_used_mib: 0
      driver_version: 535.154.05
      persistence_mode: true
      mig_mode: disabled
      mig_mode_pending: disabled
      ecc_mode: enabled
      ecc_errors_corrected_volatile: 0
      ecc_errors_uncorrected_volatile: 0
      ecc_errors_uncorrected_aggregate: 0
      compute_capability: "9.0"
      compute_capability_source: nvidia-smi
  contains:
    compute_capability:
      description:
        - The GPU's CUDA compute capability (V(9.0)); null when nvidia-smi does not report it and the name is not in
          the table.
      type: str
    compute_capability_source:
      description:
        - V(nvidia-smi) (its C(compute_cap) field), V(name) (looked up by the GPU's name, where nvidia-smi is older than
          R510 and cannot report it), or null when unknown.
      type: str
compute_cap_error:
  description:
    - What nvidia-smi answered when asked for C(compute_cap) and could not report it (a driver before R510 prints
      C(Field "compute_cap" is not a valid field to query.)); null when it reported it or no GPU was listed.
  returned: always
  type: str
  sample: null
gpu_count:
  description: Number of GPUs nvidia-smi lists.
  returned: always
  type: int
  sample: 8
driver_version:
  description: Driver version from nvidia-smi, null when unknown.
  returned: always
  type: str
  sample: 535.154.05
cuda_version:
  description: Highest CUDA version the driver supports, from the nvidia-smi banner; null when unknown.
  returned: always
  type: str
  sample: "12.2"
kernel_module:
  description: Loaded kernel module from C(/proc/driver/nvidia/version); null when none is loaded.
  returned: always
  type: dict
  sample: {version: 535.154.05, flavor: open}
fabricmanager_version:
  description: Version printed by C(nv-fabricmanager --version); null when it is not installed.
  returned: always
  type: str
  sample: 535.154.05
host_kind:
  description:
    - V(gpu) when nvidia-smi lists GPUs; V(cpu) when neither nvidia-smi nor the PCI bus shows an NVIDIA GPU;
      V(broken) when the PCI bus shows NVIDIA GPUs but nvidia-smi lists none (driver missing, not loaded or not answering).
  returned: always
  type: str
  sample: gpu
nvidia_smi_output:
  description: What nvidia-smi printed when it failed (for example that it could not communicate with the driver); null otherwise.
  returned: always
  type: str
  sample: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
pci:
  description: NVIDIA PCI functions found in sysfs, independent of the driver.
  returned: always
  type: dict
  sample: {gpus: ["0000:1b:00.0"], nvswitches: ["0000:05:00.0"]}
problems:
  description: Mismatches between nvidia-smi, kernel module, fabric manager and the expectations; empty when consistent.
  returned: always
  type: list
  elements: str
  sample: ["expected 8 GPUs, nvidia-smi lists 7"]
ansible_facts:
  description: The same keys as the result, under C(nvidia_gpu_facts).
  returned: always
  type: dict
  contains:
    nvidia_gpu_facts:
      description: Every key above, for the rest of the run (the host's GPU facts every role reads).
      type: dict
      returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils import gpu_compat
from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return ""


def gather(module, nvidia_smi_path):
    """Collect everything the module reports; raises NvidiaSmiError for output it cannot read."""
    result = {
        "status": "ok",
        "gpus": [],
        "driver_version": None,
        "cuda_version": None,
        "kernel_module": smi.parse_proc_version(_read_text(smi.PROC_VERSION_PATH)),
        "fabricmanager_version": None,
        "pci": smi.scan_pci(smi.PCI_DEVICES_PATH),
        "nvidia_smi_output": None,
        "compute_cap_error": None,
    }
    fabricmanager = module.get_bin_path("nv-fabricmanager", opt_dirs=["/usr/bin"])
    if fabricmanager:
        rc, out, err = module.run_command([fabricmanager, "--version"])
        result["fabricmanager_version"] = smi.parse_fabricmanager_version(out + err)

    binary = smi.find(module, nvidia_smi_path)
    if not binary:
        result["status"] = "not_installed"
        return result
    rc, out, err = smi.run(module, smi.query_command(binary))
    if rc != 0:
        status = smi.classify_failure(rc, out + err)
        if status is None:
            raise smi.NvidiaSmiError("%s failed with rc %d: %s" % (binary, rc, (err or out).strip()))
        result["status"] = status
        result["nvidia_smi_output"] = (out + err).strip()
        return result
    result["gpus"] = smi.parse_query_gpu(out)
    if result["gpus"]:
        caps, result["compute_cap_error"] = smi.compute_caps(module, binary)
        for gpu in result["gpus"]:
            add_compute_capability(gpu, caps.get(gpu["index"]))
    versions = sorted(set(gpu["driver_version"] for gpu in result["gpus"] if gpu["driver_version"]))
    result["driver_version"] = versions[0] if versions else None
    rc, out, err = smi.run(module, [binary])
    if rc == 0:
        result["cuda_version"] = smi.parse_cuda_version(out)
    return result


def add_compute_capability(gpu, reported):
    """The GPU's compute capability as nvidia-smi reported it, else as its name gives it, and which of the two."""
    by_name = None if reported else gpu_compat.gpu_compute_capability(gpu["name"])
    gpu["compute_capability"] = reported or by_name
    gpu["compute_capability_source"] = "nvidia-smi" if reported else ("name" if by_name else None)


def describe(result):
    if result["status"] == "not_installed":
        return "nvidia-smi is not installed"
    if result["status"] == "no_driver":
        return "nvidia-smi cannot talk to the NVIDIA kernel module (not loaded; %d NVIDIA GPU(s) on the PCI bus): %s" % (
            len(result["pci"]["gpus"]), result["nvidia_smi_output"])
    if result["status"] == "no_devices":
        return "the NVIDIA driver is loaded but sees no GPU (%d NVIDIA GPU(s) on the PCI bus): %s" % (
            len(result["pci"]["gpus"]), result["nvidia_smi_output"])
    return "%d GPU(s), driver %s, CUDA %s" % (len(result["gpus"]), result["driver_version"], result["cuda_version"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            expected_driver_version=dict(type="str"),
            expected_gpu_count=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    try:
        result = gather(module, module.params["nvidia_smi_path"])
    except smi.NvidiaSmiError as exc:
        module.fail_json(msg="cannot read nvidia-smi output: %s" % exc)
    result["gpu_count"] = len(result["gpus"])
    result["host_kind"] = smi.host_kind(result["gpu_count"], result["pci"]["gpus"])
    result["message"] = describe(result)
    result["problems"] = smi.check_consistency(
        result["gpus"],
        kernel_module=result["kernel_module"],
        expected_driver_version=module.params["expected_driver_version"],
        expected_gpu_count=module.params["expected_gpu_count"],
        fabricmanager_version=result["fabricmanager_version"],
    )
    # The fact other roles read (aiops.triton.common's gpu_facts entry point reads once per run).
    module.exit_json(changed=False, ansible_facts={"nvidia_gpu_facts": result}, **result)


if __name__ == "__main__":
    main()
