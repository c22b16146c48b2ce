#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_gpu_health
short_description: One health verdict per NVIDIA GPU and per host (healthy, degraded, unhealthy), with reasons
version_added: "0.2.0"
description:
  - 'Reads, in one call and without changing anything, what tells a sick GPU from a healthy one, and returns a verdict
    per GPU and per host with the reasons in words an on-call engineer understands, for example
    "GPU 3 (00000000:4E:00.0): row remap pending, reset required".'
  - C(nvidia-smi -q -x) gives ECC counters (SRAM and DRAM, volatile and aggregate), retired pages and pending
    retirement, the row remapper (pending, failure, remapped rows, banks without spare rows), clock event reasons
    (hardware slowdown, hardware thermal slowdown, hardware power brake), the PCIe link generation and width against
    their maximum, persistence mode and the driver's own reset flags.
  - "The kernel log since boot (or since O(since) / O(since_file)) gives the driver's C(NVRM: Xid) lines, classified with
    NVIDIA's Xid catalogue (U(https://docs.nvidia.com/deploy/xid-errors/)) into V(hardware) (48, 61-64, 74, 79, 92, 94,
    95, 119-121, 140, 143: unhealthy), V(application) (13, 31, 43, 45: reported, not a host fault) and V(unknown)
    (reported, degraded)."
  - "The PCI bus in sysfs shows NVIDIA GPUs whatever the driver says: one that nvidia-smi does not list, or that
    nvidia-smi reports lost (C(GPU is lost)), has fallen off the bus and makes the host unhealthy."
  - DCGM is used where C(dcgmi) is installed (C(dcgmi health -c); C(dcgmi diag -r 1) only with O(dcgm_diag)), never
    required. The module does not configure DCGM health watches.
  - Verdicts. V(unhealthy) (never serve) on a hardware Xid, a GPU fallen off the bus, a row remap pending or failed,
    uncorrectable ECC errors since the driver loaded above O(ecc_uncorrectable_volatile_max), a page retirement
    pending, more retired pages than O(retired_pages_max), the driver asking for a reset, fewer GPUs than
    O(expected_gpu_count), nvidia-smi failing on a host whose PCI bus shows NVIDIA GPUs, or a DCGM failure.
    V(degraded) (serve, report, alert) on a PCIe link below its maximum, hardware clock slowdown, persistence mode off,
    uncorrectable ECC errors over the GPU's life only, many rows remapped for correctable errors, a memory bank without
    spare rows, an unknown Xid or a DCGM warning. Otherwise V(healthy).
  - "A host with no NVIDIA GPU on the PCI bus and no nvidia-smi is a CPU host: V(healthy), RV(host_kind=cpu), and
    RV(status) says why."
  - The result is also set as the fact C(triton_gpu_health), so a play reads it once per run; read it again after a
    driver change, a GPU reset or a reboot.
author:
  - aiops.triton contributors (@aiops)
options:
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) binary. When omitted it is searched in E(PATH) and C(/usr/bin).
    type: path
  kernel_log_command:
    description:
      - The command (argv) that prints the kernel log to look for Xid lines in.
      - When omitted, C(journalctl -k -b --no-pager -o short-iso) (this boot's kernel messages with their time), or
        C(dmesg --time-format iso) where journalctl is absent; with neither, RV(notes) says Xid events are unknown.
    type: list
    elements: str
  since:
    description:
      - Epoch seconds; Xid lines logged before it are ignored (a GPU reset at that time cleared them).
      - The later of this and the time in O(since_file) counts.
    type: float
  since_file:
    description:
      - A file holding epoch seconds, written after a successful GPU reset so the faults it cleared stop counting.
        A missing file counts nothing out.
    type: path
  quarantine_file:
    description:
      - A file whose existence means the host is quarantined (kept out of traffic on purpose); its JSON record
        (C(reason), C(since), C(verdict)) is returned as RV(quarantine). Missing file, or not given, RV(quarantined=false).
    type: path
  dcgm:
    description:
      - Ask DCGM (C(dcgmi health -c)) too where C(dcgmi) is installed. A DCGM failure makes the host unhealthy, a
        warning degraded; a host engine that does not answer is only noted.
    type: bool
    default: true
  dcgm_diag:
    description:
      - Also run DCGM's short diagnostic, C(dcgmi diag -r 1) (tens of seconds; it loads the GPUs). Only where asked.
    type: bool
    default: false
  expected_gpu_count:
    description:
      - Number of GPUs that must answer nvidia-smi; fewer is unhealthy. Not checked when omitted.
    type: int
  ecc_uncorrectable_volatile_max:
    description:
      - Most uncorrectable ECC errors (DRAM and SRAM) since the driver loaded a GPU may have; more is unhealthy
        (reset required).
    type: int
    default: 0
  ecc_uncorrectable_aggregate_max:
    description:
      - Most uncorrectable ECC errors over the GPU's life (InfoROM) a GPU may have without being degraded, when it has
        none since the driver loaded.
    type: int
    default: 0
  retired_pages_max:
    description:
      - Most retired memory pages (single- and double-bit, GPUs before Ampere) a GPU may have; more is unhealthy.
        NVIDIA's Dynamic Page Retirement guide (U(https://docs.nvidia.com/deploy/dynamic-page-retirement/)) treats 60 or
        more retired pages as eligible for replacement, hence 59.
    type: int
    default: 59
  remapped_rows_correctable_max:
    description:
      - "Most rows remapped for correctable errors (A100, H100 and later) before the GPU is degraded. This collection's
        choice: a GPU whose memory keeps wearing is worth a look before its banks run out of spare rows."
    type: int
    default: 64
  degrade_on_pcie_downgrade:
    description:
      - A PCIe link below its maximum width, or below its maximum generation while the GPU is not idle (an idle GPU
        lowers its link speed on purpose), is degraded.
    type: bool
    default: true
  pcie_min_link_gen:
    description:
      - Compare the current PCIe generation with this instead of the GPU's maximum.
    type: int
  pcie_min_link_width:
    description:
      - Compare the current PCIe width with this instead of the GPU's maximum (for example V(8) for boards a cloud
        wires x8 that report x16 capability).
    type: int
  degrade_on_hw_slowdown:
    description:
      - Clocks held down by the hardware (clock event reasons HW slowdown, HW thermal slowdown, HW power brake) are degraded.
    type: bool
    default: true
  degrade_on_persistence_off:
    description:
      - Persistence mode off is degraded.
    type: bool
    default: true
  degrade_on_unknown_xid:
    description:
      - An Xid this collection's catalogue does not classify is degraded (it is always reported).
    type: bool
    default: true
notes:
  - Read-only; supports check mode (it reads the same in check mode).
  - Run it with root privileges where the kernel log or nvidia-smi need them.
seealso:
  - module: aiops.triton.nvidia_gpu_info
  - name: NVIDIA Xid errors
    description: The catalogue the classification follows.
    link: https://docs.nvidia.com/deploy/xid-errors/
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
- name: Read the GPUs' health (sets the fact triton_gpu_health)
  aiops.triton.nvidia_gpu_health:
    since_file: /var/lib/aiops-triton/gpu_health/since
    quarantine_file: /var/lib/aiops-triton/gpu_health/quarantine.json
  become: true

- name: Never put an unhealthy GPU host into traffic
  ansible.builtin.assert:
    that: triton_gpu_health.verdict != 'unhealthy'
    fail_msg: "{{ triton_gpu_health.reasons | join('; ') }}"

- name: An 8-GPU host on boards wired x8, DCGM's short diagnostic too
  aiops.triton.nvidia_gpu_health:
    expected_gpu_count: 8
    pcie_min_link_width: 8
    dcgm_diag: true
  register: gpu_health
"""

RETURN = r"""
verdict:
  description: The host's verdict, the worst of its GPUs and its host-level findings.
  returned: always
  type: str
  choices: [healthy, degraded, unhealthy]
  sample: unhealthy
reasons:
  description: Why, unhealthy findings first, one line each naming the GPU; empty when healthy.
  returned: always
  type: list
  elements: str
  sample: ["GPU 3 (00000000:4E:00.0): row remap pending, reset required"]
findings:
  description: RV(reasons) with their severity and whether a GPU reset can clear each.
  returned: always
  type: list
  elements: dict
  sample: [{"severity": "unhealthy", "reason": "GPU 3 (00000000:4E:00.0): row remap pending, reset required", "reset": true}]
notes:
  description: What does not change the verdict but is worth knowing (application Xids, an unreadable kernel log, DCGM not answering).
  returned: always
  type: list
  elements: str
  sample: ["Xid 13 on 00000000:4E:00.0 at 2026-12-05T10:00:00+0000: Graphics Engine Exception (application, not a host fault)"]
status:
  description: One line for a person about the host and its verdict.
  returned: always
  type: str
  sample: "unhealthy: 8 GPU(s) answer nvidia-smi (7 healthy, 0 degraded, 1 unhealthy); GPU 3 (00000000:4E:00.0): row remap pending, reset required"
gpus:
  description:
    - The GPUs that answer nvidia-smi, with their verdict and reasons. Counters nvidia-smi reports as N/A are null.
    - C(ecc) has C(mode), C(uncorrectable_volatile), C(uncorrectable_aggregate), C(correctable_volatile),
      C(correctable_aggregate), C(dram_uncorrectable_volatile), C(sram_uncorrectable_volatile) (and C(_aggregate)),
      C(sram_threshold_exceeded), C(unrepairable_memory).
    - C(retired_pages) has C(single_bit), C(double_bit), C(total), C(pending); C(remapped_rows) has C(pending), C(failure),
      C(correctable), C(uncorrectable), C(histogram); C(clocks_event_reasons) maps each reason to true when active;
      C(pcie) has C(gen_current), C(gen_max), C(width_current), C(width_max), C(replay_counter).
  returned: always
  type: list
  elements: dict
  sample:
    - index: 3
      bus_id: "00000000:4E:00.0"
      uuid: GPU-5f0c3a1e-7b2d-4c9a-8e61-d0a4b3c2e1f0
      name: NVIDIA H100 80GB HBM3
      verdict: unhealthy
      reasons: ["row remap pending, reset required"]
      reset_recommended: true
      remapped_rows: {pending: true, failure: false, correctable: 1, uncorrectable: 0}
      pcie: {gen_current: 5, gen_max: 5, width_current: 16, width_max: 16, replay_counter: 0}
      persistence_mode: true
gpu_count:
  description: GPUs seen by nvidia-smi, the ones it reports lost included.
  returned: always
  type: int
  sample: 8
xid_events:
  description: The Xid lines of the kernel log that count (since boot, or since RV(since)), oldest first.
  returned: always
  type: list
  elements: dict
  sample:
    - xid: 79
      bus_id: "00000000:4E:00.0"
      class: hardware
      meaning: GPU has fallen off the bus
      line: "2026-12-05T10:00:00+0000 gpu-infer-02 kernel: NVRM: Xid (PCI:0000:4e:00): 79, pid=0, GPU has fallen off the bus."
      time: "2026-12-05T10:00:00+0000"
      message: "pid=0, GPU has fallen off the bus."
reset_recommended:
  description: True when a fault found is one a GPU reset can clear (a pending row remap or page retirement, volatile ECC
    errors, Xid 48, 61-64, 74, 94, 95, 119-121, 140).
  returned: always
  type: bool
  sample: true
fallen_off_bus:
  description: Bus ids (or nvidia-smi indexes) of GPUs fallen off the bus.
  returned: always
  type: list
  elements: str
  sample: ["00000000:4E:00.0"]
dcgm:
  description: DCGM's view (C(health), C(diag), C(error)); null where dcgmi is not installed or O(dcgm=false).
  returned: always
  type: dict
  sample: {"health": {"overall": "healthy", "details": []}, "diag": null, "error": null}
host_kind:
  description: V(gpu) when nvidia-smi sees GPUs, V(cpu) with no NVIDIA GPU anywhere, V(broken) when the PCI bus shows
    NVIDIA GPUs that nvidia-smi does not (no driver, not answering).
  returned: always
  type: str
  sample: gpu
driver_version:
  description: The driver version nvidia-smi reports; null when unknown.
  returned: always
  type: str
  sample: 535.261.03
pci_gpus:
  description: NVIDIA GPUs on the PCI bus (sysfs names), driver or not.
  returned: always
  type: list
  elements: str
  sample: ["0000:4e:00.0"]
kernel_log:
  description: The command that printed the kernel log, its kind (V(journalctl), V(dmesg), V(command)) and its error if it failed.
  returned: always
  type: dict
  sample: {"command": ["/usr/bin/journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"], "source": "journalctl", "error": null}
since:
  description: The epoch seconds from which Xid lines count; null for the whole boot.
  returned: always
  type: float
  sample: 1796464800.0
since_file:
  description: O(since_file) as given.
  returned: always
  type: str
  sample: /var/lib/aiops-triton/gpu_health/since
nvidia_smi_path:
  description: The nvidia-smi used; null when none is installed.
  returned: always
  type: str
  sample: /usr/bin/nvidia-smi
nvidia_smi_status:
  description: V(ok), V(not_installed), V(no_driver), V(no_devices) or V(failed).
  returned: always
  type: str
  sample: ok
quarantined:
  description: True when O(quarantine_file) exists.
  returned: always
  type: bool
  sample: false
quarantine:
  description: The quarantine record when RV(quarantined), else null.
  returned: always
  type: dict
  sample: {"reason": "GPU 3 (00000000:4E:00.0): row remap pending, reset required", "since": "2026-12-05T10:00:00Z", "verdict": "unhealthy"}
quarantine_file:
  description: O(quarantine_file) as given.
  returned: always
  type: str
  sample: /var/lib/aiops-triton/gpu_health/quarantine.json
read_at:
  description: When the health was read (epoch seconds).
  returned: always
  type: float
  sample: 1796464800.0
ansible_facts:
  description: The same keys as the result, under C(triton_gpu_health).
  returned: always
  type: dict
  contains:
    triton_gpu_health:
      description: Every key above, for the rest of the play.
      type: dict
      returned: always
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils import gpu_health as gh


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            kernel_log_command=dict(type="list", elements="str"),
            since=dict(type="float"),
            since_file=dict(type="path"),
            quarantine_file=dict(type="path"),
            dcgm=dict(type="bool", default=True),
            dcgm_diag=dict(type="bool", default=False),
            expected_gpu_count=dict(type="int"),
            ecc_uncorrectable_volatile_max=dict(type="int", default=0),
            ecc_uncorrectable_aggregate_max=dict(type="int", default=0),
            retired_pages_max=dict(type="int", default=59),
            remapped_rows_correctable_max=dict(type="int", default=64),
            degrade_on_pcie_downgrade=dict(type="bool", default=True),
            pcie_min_link_gen=dict(type="int"),
            pcie_min_link_width=dict(type="int"),
            degrade_on_hw_slowdown=dict(type="bool", default=True),
            degrade_on_persistence_off=dict(type="bool", default=True),
            degrade_on_unknown_xid=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    thresholds = dict((name, params[name]) for name in gh.DEFAULT_THRESHOLDS)

    def runner(argv):
        return module.run_command(argv)

    def which(name):
        return module.get_bin_path(name, opt_dirs=["/usr/bin", "/usr/sbin", "/bin", "/sbin"])

    try:
        fact = gh.read_host(runner, which, nvidia_smi_path=params["nvidia_smi_path"],
                            kernel_log_command=params["kernel_log_command"], since=params["since"],
                            since_file=params["since_file"], dcgm=params["dcgm"], dcgm_diag=params["dcgm_diag"],
                            thresholds=thresholds)
    except gh.GpuHealthError as exc:
        module.fail_json(msg="cannot read the GPUs' health: %s" % exc)
    record = gh.read_quarantine(params["quarantine_file"])
    fact.update(quarantined=record is not None, quarantine=record, quarantine_file=params["quarantine_file"],
                since_file=params["since_file"], read_at=time.time())
    module.exit_json(changed=False, ansible_facts={"triton_gpu_health": fact}, **fact)


if __name__ == "__main__":
    main()
