# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one GPU health verdict: healthy, degraded or unhealthy, per GPU and per host.

Used by the ``nvidia_gpu_health`` module (the ``triton_gpu_health`` role's ``read``, the gates of rolling operations)
and by the role's reporter, which runs this very file on the host without Ansible
(``roles/triton_gpu_health/files/aiops_gpu_health.py``): standard library only, and every command runs through the
``runner`` the caller passes (``module.run_command`` in the module, ``subprocess`` in the reporter).

Inputs, all read-only:
  - ``nvidia-smi -q -x``: ECC counters (SRAM/DRAM, volatile/aggregate), retired pages and pending retirement, the row
    remapper (pending, failure, correctable/uncorrectable remaps, histogram), clock event reasons, PCIe link
    generation and width (current and maximum), persistence mode, the driver's reset/recovery flags. Element names
    are those the real 535 binary prints (tests/fixtures/nvidia_smi/recorded_real_535.261.03_q_x_*) and the older
    (``clocks_throttle_reasons``, ``single_bit``/``double_bit``) and newer names public outputs show.
  - the kernel log since boot (``journalctl -k -b``): the driver's ``NVRM: Xid`` lines, classified with NVIDIA's Xid
    catalogue below; lines older than ``since`` (set after a GPU reset cleared a fault) are ignored.
  - the PCI bus in sysfs (``nvidia_smi.scan_pci``): an NVIDIA GPU there that nvidia-smi does not list has fallen off
    the bus or lost its driver.
  - DCGM where it is installed (``dcgmi health -c``; ``dcgmi diag -r 1`` only when asked): never required.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import calendar
import json
import os
import re
import time
from xml.etree import ElementTree

from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi

HEALTHY = "healthy"
DEGRADED = "degraded"
UNHEALTHY = "unhealthy"
VERDICTS = (HEALTHY, DEGRADED, UNHEALTHY)
# aiops_gpu_health_verdict and aiops_gpu_host_health carry these numbers
VERDICT_VALUE = {HEALTHY: 0, DEGRADED: 1, UNHEALTHY: 2}

HARDWARE = "hardware"
APPLICATION = "application"
UNKNOWN = "unknown"

# NVIDIA's Xid catalogue: "Xid Errors", https://docs.nvidia.com/deploy/xid-errors/ (the table of Xids, their
# meaning and the recommended action), with the memory ones from "GPU Memory Error Management" (row remapping,
# https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) and "Dynamic Page Retirement"
# (https://docs.nvidia.com/deploy/dynamic-page-retirement/).
#   hardware:    a fault of the GPU, its memory, its links or its firmware: the host must not serve (unhealthy).
#   application: caused by the program on the GPU (bad kernel, bad address, a channel torn down after another
#                error): reported, not a host fault, the verdict stays as it is.
# An Xid not in this table is "unknown": reported and the host degraded, until someone classifies it here.
# reset: NVIDIA's recovery action for it is a GPU reset (nvidia-smi -r), so the repair ladder may clear it without a
# reboot; 79 (fallen off the bus) needs at least a reboot, 92 (high single-bit rate) a replacement plan.
XID_CATALOGUE = {
    13: (APPLICATION, "Graphics Engine Exception (usually the application: out-of-range access, illegal instruction)", False),
    31: (APPLICATION, "GPU memory page fault (usually the application: an illegal address)", False),
    43: (APPLICATION, "GPU stopped processing: the application's channel was reset after its own fault", False),
    45: (APPLICATION, "Preemptive cleanup after previous errors (the application's context was torn down)", False),
    48: (HARDWARE, "Double Bit ECC Error (DBE): uncorrectable memory error", True),
    61: (HARDWARE, "Internal micro-controller breakpoint/warning", True),
    62: (HARDWARE, "Internal micro-controller halt", True),
    63: (HARDWARE, "ECC page retirement or row remapping recording event (a GPU reset activates it)", True),
    64: (HARDWARE, "ECC page retirement or row remapper recording failure", True),
    74: (HARDWARE, "NVLink error", True),
    79: (HARDWARE, "GPU has fallen off the bus", False),
    92: (HARDWARE, "High single-bit ECC error rate", False),
    94: (HARDWARE, "Contained ECC error (the affected application was stopped)", True),
    95: (HARDWARE, "Uncontained ECC error (every application on the GPU is affected)", True),
    119: (HARDWARE, "GSP RPC timeout (GPU firmware does not answer)", True),
    120: (HARDWARE, "GSP error (GPU firmware)", True),
    121: (HARDWARE, "C2C (chip-to-chip) link error", True),
    140: (HARDWARE, "Unrecovered ECC error", True),
    143: (HARDWARE, "GPU initialization failure", False),
}

DEFAULT_THRESHOLDS = {
    # unhealthy above: uncorrectable ECC errors (DRAM + SRAM) since the driver loaded
    "ecc_uncorrectable_volatile_max": 0,
    # degraded above (with no volatile ones): uncorrectable errors over the GPU's life (InfoROM)
    "ecc_uncorrectable_aggregate_max": 0,
    # unhealthy above: NVIDIA's Dynamic Page Retirement guide treats a board with 60 or more retired pages as
    # eligible for replacement (RMA), so 59 is the most a serving GPU may have (pre-Ampere; A100/H100 remap rows)
    "retired_pages_max": 59,
    # degraded above: rows remapped for correctable errors (a GPU whose memory keeps wearing; this collection's choice)
    "remapped_rows_correctable_max": 64,
    # degraded: PCIe link below what the GPU and slot can do (width always; generation when the GPU is not idle,
    # because an idle GPU lowers its link speed to save power)
    "degrade_on_pcie_downgrade": True,
    # compare with these instead of the GPU's own maximum (cloud boards wired x8 report x16 capability)
    "pcie_min_link_gen": None,
    "pcie_min_link_width": None,
    # degraded: clocks held down by hardware (HW slowdown, HW thermal slowdown, HW power brake)
    "degrade_on_hw_slowdown": True,
    # degraded: persistence mode off (the driver tears the GPU down between clients: slow starts, lost state)
    "degrade_on_persistence_off": True,
    # degraded: an Xid this collection's catalogue does not classify
    "degrade_on_unknown_xid": True,
    # unhealthy: nvidia-smi lists fewer GPUs (None: not checked)
    "expected_gpu_count": None,
}

# Clock event ("throttle") reasons that mean the hardware holds the clocks down (NVML bits 0x8, 0x40, 0x80).
HW_SLOWDOWN_REASONS = (
    ("hw_slowdown", "HW slowdown"),
    ("hw_thermal_slowdown", "HW thermal slowdown"),
    ("hw_power_brake_slowdown", "HW power brake slowdown"),
)

DEFAULT_KERNEL_LOG_COMMAND = ["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso"]
DMESG_COMMAND = ["dmesg", "--time-format", "iso"]

_NA = ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", "[Unknown Error]", "Uninitialized",
       "Insufficient Permissions", "[Insufficient Permissions]")
# nvidia-smi when a GPU does not answer: "Unable to determine the device handle for GPU0000:4E:00.0: GPU is lost.
# Reboot the system to recover this GPU" (the recorded 535 binary prints "GPU1" / "gpu 1" when it knows no bus id)
_HANDLE_ERROR_RE = re.compile(r"Unable to determine the device handle for (?:GPU|gpu)\s*([0-9A-Fa-f:.]+)\s*:\s*(.*)")
_LIST_LINE_RE = re.compile(r"^GPU (\d+): (.*?) \(UUID: (\S+)\)\s*$")
_XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+),\s*(.*)$")
_TIME_RE = re.compile(r"^\[?(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?")
_GPU_LOST_TEXT = ("GPU is lost", "fallen off the bus")


class GpuHealthError(Exception):
    """Output that could not be understood."""


# --- small helpers ----------------------------------------------------------------------------------------------
def _text(node, path):
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in _NA else value


def _int(node, path):
    value = _text(node, path)
    if value is None:
        return None
    match = re.match(r"^(-?\d+)", value)
    return int(match.group(1)) if match else None


def _yes(node, path):
    value = _text(node, path)
    if value is None:
        return None
    return value.lower() in ("yes", "enabled", "active", "true")


def _sum(values):
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def normalize_bus_id(value):
    """'0000:4e:00', 'PCI:0000:4E:00.0', '00000000:4E:00.0' -> '00000000:4E:00.0' (nvidia-smi's form); None if not one."""
    if not value:
        return None
    text = value.strip()
    if text.upper().startswith("PCI:"):
        text = text[4:]
    match = re.match(r"^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?$", text)
    if not match:
        return None
    return "%08X:%02X:%02X.%s" % (int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16), match.group(4) or "0")


def _device(bus_id):
    """Bus id without the function: an Xid names domain:bus:device only."""
    return bus_id.rsplit(".", 1)[0] if bus_id else None


def worst(verdicts):
    best = HEALTHY
    for verdict in verdicts:
        if VERDICT_VALUE[verdict] > VERDICT_VALUE[best]:
            best = verdict
    return best


def thresholds_with_defaults(thresholds=None):
    merged = dict(DEFAULT_THRESHOLDS)
    for name, value in (thresholds or {}).items():
        if name not in DEFAULT_THRESHOLDS:
            raise GpuHealthError("unknown threshold %r (known: %s)" % (name, ", ".join(sorted(DEFAULT_THRESHOLDS))))
        if value is None or value == "":
            continue
        if isinstance(DEFAULT_THRESHOLDS[name], bool):
            merged[name] = value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on")
        else:
            try:
                merged[name] = int(value)
            except (TypeError, ValueError):
                raise GpuHealthError("threshold %s must be an integer, got %r" % (name, value))
    return merged


# --- nvidia-smi -q -x ---------------------------------------------------------------------------------------------
def _ecc(gpu):
    errors = gpu.find("ecc_errors")
    out = {"mode": (_text(gpu, "ecc_mode/current_ecc") or "").lower() or None}
    for scope in ("volatile", "aggregate"):
        node = errors.find(scope) if errors is not None else None
        # 535+ (recorded): sram_correctable, sram_uncorrectable_parity, sram_uncorrectable_secded, dram_*;
        # 525-535 early: sram_uncorrectable; before: single_bit / double_bit per location with a total.
        dram_unc = _int(node, "dram_uncorrectable")
        sram_unc = _sum([_int(node, "sram_uncorrectable"), _int(node, "sram_uncorrectable_parity"),
                         _int(node, "sram_uncorrectable_secded")])
        dram_cor = _int(node, "dram_correctable")
        sram_cor = _int(node, "sram_correctable")
        unc = _sum([dram_unc, sram_unc])
        cor = _sum([dram_cor, sram_cor])
        if unc is None:
            unc = _int(node, "double_bit/total")
            dram_unc = _int(node, "double_bit/device_memory")
        if cor is None:
            cor = _int(node, "single_bit/total")
        out["uncorrectable_%s" % scope] = unc
        out["correctable_%s" % scope] = cor
        out["dram_uncorrectable_%s" % scope] = dram_unc
        out["sram_uncorrectable_%s" % scope] = sram_unc
    out["sram_threshold_exceeded"] = _yes(errors, "aggregate/sram_threshold_exceeded")
    out["unrepairable_memory"] = _yes(errors, "unrepairable_memory")
    return out


def _retired_pages(gpu):
    node = gpu.find("retired_pages")
    single = _int(node, "multiple_single_bit_retirement/retired_count")
    double = _int(node, "double_bit_retirement/retired_count")
    pending = _yes(node, "pending_retirement")
    if pending is None:
        pending = _yes(node, "pending_blacklist")
    return {"single_bit": single, "double_bit": double, "total": _sum([single, double]), "pending": pending}


def _remapped_rows(gpu):
    node = gpu.find("remapped_rows")
    histogram = None
    if node is not None and node.find("row_remapper_histogram") is not None:
        hist = node.find("row_remapper_histogram")
        histogram = dict((name, _int(hist, "row_remapper_histogram_%s" % name)) for name in ("max", "high", "partial", "low", "none"))
    return {"pending": _yes(node, "remapped_row_pending"), "failure": _yes(node, "remapped_row_failure"),
            "correctable": _int(node, "remapped_row_corr"), "uncorrectable": _int(node, "remapped_row_unc"),
            "histogram": histogram}


def _clocks_event_reasons(gpu):
    for tag, prefix in (("clocks_event_reasons", "clocks_event_reason_"), ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        node = gpu.find(tag)
        if node is not None and len(node):
            return dict((child.tag[len(prefix):] if child.tag.startswith(prefix) else child.tag, _yes(node, child.tag))
                        for child in node)
    return {}


def _pcie(gpu):
    link = gpu.find("pci/pci_gpu_link_info")
    return {"gen_current": _int(link, "pcie_gen/current_link_gen"), "gen_max": _int(link, "pcie_gen/max_link_gen"),
            "width_current": _int(link, "link_widths/current_link_width"), "width_max": _int(link, "link_widths/max_link_width"),
            "replay_counter": _int(gpu, "pci/replay_counter")}


def parse_gpu(gpu, index):
    """One <gpu> element -> the module's GPU dict (without verdict)."""
    bus_id = normalize_bus_id(_text(gpu, "pci/pci_bus_id") or gpu.get("id"))
    return {
        "index": index,
        "bus_id": bus_id,
        "uuid": _text(gpu, "uuid"),
        "name": _text(gpu, "product_name"),
        "ecc": _ecc(gpu),
        "retired_pages": _retired_pages(gpu),
        "remapped_rows": _remapped_rows(gpu),
        "clocks_event_reasons": _clocks_event_reasons(gpu),
        "pcie": _pcie(gpu),
        "persistence_mode": _yes(gpu, "persistence_mode"),
        "performance_state": _text(gpu, "performance_state"),
        "reset_required": _yes(gpu, "gpu_reset_status/reset_required"),
        "drain_and_reset_recommended": _yes(gpu, "gpu_reset_status/drain_and_reset_recommended"),
        "recovery_action": _text(gpu, "gpu_recovery_action"),
    }


def parse_q_x(text, indexes=None):
    """``nvidia-smi -q -x`` -> {driver_version, cuda_version, attached_gpus, gpus}. GPU indexes are the order nvidia-smi
    prints them in (the XML has no index), or ``indexes`` for a ``-i`` subset. Raises GpuHealthError on non-XML."""
    try:
        root = ElementTree.fromstring(text.encode("utf-8") if not isinstance(text, bytes) else text)
    except ElementTree.ParseError as exc:
        raise GpuHealthError("nvidia-smi -q -x printed no XML (%s): %s" % (exc, text.strip()[:300]))
    if root.tag != "nvidia_smi_log":
        raise GpuHealthError("nvidia-smi -q -x printed <%s>, not <nvidia_smi_log>" % root.tag)
    elements = root.findall("gpu")
    if indexes is not None and len(indexes) != len(elements):
        raise GpuHealthError("asked nvidia-smi for GPUs %s, it printed %d" % (indexes, len(elements)))
    gpus = [parse_gpu(gpu, indexes[pos] if indexes is not None else pos) for pos, gpu in enumerate(elements)]
    return {"driver_version": _text(root, "driver_version"), "cuda_version": _text(root, "cuda_version"),
            "attached_gpus": _int(root, "attached_gpus"), "gpus": gpus}


def parse_lost(text):
    """GPUs nvidia-smi says it cannot reach: [{"id": "1" or "00000000:4E:00.0", "message"}]."""
    lost = []
    for line in text.splitlines():
        match = _HANDLE_ERROR_RE.search(line)
        if match:
            lost.append({"id": match.group(1).rstrip(":"), "message": match.group(2).strip()})
    return lost


def parse_list(text):
    """``nvidia-smi -L`` -> ([answering indexes], [lost {"id", "message"}])."""
    answering = []
    for line in text.splitlines():
        match = _LIST_LINE_RE.match(line.strip())
        if match:
            answering.append(int(match.group(1)))
    return answering, parse_lost(text)


# --- kernel log: Xid -------------------------------------------------------------------------------------------
def parse_time(line):
    """Epoch seconds of a journal short-iso or dmesg --time-format iso line; None when the line has no such time."""
    match = _TIME_RE.match(line)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = float("0." + match.group(7)) if match.group(7) else 0.0
    zone = match.group(8)
    fields = (year, month, day, hour, minute, second, 0, 0, -1)
    if zone is None:
        return time.mktime(fields) + fraction
    epoch = calendar.timegm(fields) + fraction
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        epoch -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    return epoch


def classify_xid(xid):
    """(class, meaning, reset clears it) from the catalogue; unknown Xids are (unknown, ..., False)."""
    if xid in XID_CATALOGUE:
        return XID_CATALOGUE[xid]
    return (UNKNOWN, "not classified in this collection's Xid catalogue (see https://docs.nvidia.com/deploy/xid-errors/)", False)


def parse_xid_lines(text, since=None):
    """Xid events of a kernel log, oldest first, without the ones logged before ``since`` (epoch seconds)."""
    events = []
    for raw in text.splitlines():
        match = _XID_RE.search(raw)
        if not match:
            continue
        epoch = parse_time(raw.strip())
        if since is not None and epoch is not None and epoch < since:
            continue
        xid = int(match.group(2))
        xid_class, meaning, _reset = classify_xid(xid)
        stamp = _TIME_RE.match(raw.strip())
        events.append({"xid": xid, "bus_id": normalize_bus_id(match.group(1)), "class": xid_class, "meaning": meaning,
                       "line": raw.strip(), "time": stamp.group(0).lstrip("[") if stamp else None, "epoch": epoch,
                       "message": match.group(3).strip()})
    return events


def read_since(since=None, since_file=None):
    """The later of ``since`` and the epoch in ``since_file`` (absent file: none); raises GpuHealthError on garbage."""
    values = []
    if since not in (None, ""):
        try:
            values.append(float(since))
        except (TypeError, ValueError):
            raise GpuHealthError("since must be epoch seconds, got %r" % (since,))
    if since_file and os.path.exists(since_file):
        with open(since_file) as handle:
            content = handle.read().strip()
        if content:
            try:
                values.append(float(content))
            except ValueError:
                raise GpuHealthError("%s must hold epoch seconds, it holds %r" % (since_file, content[:80]))
    return max(values) if values else None


def read_kernel_log(runner, which, command=None):
    """(text, {"command", "source", "error"}): the given command, else journalctl -k -b, else dmesg, else nothing."""
    if command:
        argv, source = list(command), "command"
    elif which("journalctl"):
        argv, source = [which("journalctl")] + DEFAULT_KERNEL_LOG_COMMAND[1:], "journalctl"
    elif which("dmesg"):
        argv, source = [which("dmesg")] + DMESG_COMMAND[1:], "dmesg"
    else:
        return "", {"command": None, "source": None, "error": "neither journalctl nor dmesg is installed: Xid events unknown"}
    try:
        rc, out, err = runner(argv)
    except (OSError, IOError) as exc:
        return "", {"command": argv, "source": source, "error": "cannot run %s: %s" % (argv[0], exc)}
    if rc != 0:
        return out or "", {"command": argv, "source": source, "error": "%s failed (rc=%s): %s" % (argv[0], rc, (err or out).strip()[:300])}
    return out, {"command": argv, "source": source, "error": None}


# --- DCGM (optional) ---------------------------------------------------------------------------------------------
def _find_key(data, wanted):
    if isinstance(data, dict):
        for key, value in data.items():
            if re.sub(r"[^a-z]", "", str(key).lower()) == wanted and isinstance(value, str):
                return value
            found = _find_key(value, wanted)
            if found is not None:
                return found
    elif isinstance(data, list):
        for value in data:
            found = _find_key(value, wanted)
            if found is not None:
                return found
    return None


def _level(word):
    word = (word or "").strip().lower()
    if word.startswith("fail"):
        return "failure"
    if word.startswith("warn"):
        return "warning"
    if word in ("healthy", "pass", "ok"):
        return "healthy"
    return None


def parse_dcgm_health(text):
    """``dcgmi health -c`` (table or -j JSON) -> {"overall": healthy|warning|failure|None, "details": [str]}."""
    overall = None
    try:
        overall = _level(_find_key(json.loads(text), "overallhealth"))
    except ValueError:
        match = re.search(r"Overall Health\s*[:|]\s*(\w+)", text)
        overall = _level(match.group(1)) if match else None
    details = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        cell = cells[-1] if cells else ""
        if re.search(r"\b(Warning|Failure|Fail)\b", cell) and not re.match(r"^(Warning|Failure|Healthy)$", cell) \
                and "Overall Health" not in line:
            details.append(cell)
    return {"overall": overall, "details": details}


def parse_dcgm_diag(text):
    """``dcgmi diag -r 1``: {"overall": failure when a test failed, warning when one warned, else healthy, "details"}."""
    failed = [line.strip().strip("|").strip() for line in text.splitlines() if re.search(r"\|\s*Fail", line)]
    warned = [line.strip().strip("|").strip() for line in text.splitlines() if re.search(r"\|\s*Warn", line)]
    overall = "failure" if failed else "warning" if warned else "healthy"
    return {"overall": overall, "details": [re.sub(r"\s*\|\s*", ": ", d) for d in failed + warned]}


def read_dcgm(runner, which, diag=False):
    """DCGM's view where dcgmi is installed, else None. Never raises: an unreachable host engine is a note."""
    dcgmi = which("dcgmi")
    if not dcgmi:
        return None
    result = {"health": None, "diag": None, "error": None}
    try:
        rc, out, err = runner([dcgmi, "health", "-c"])
        if rc == 0:
            result["health"] = parse_dcgm_health(out)
        else:
            result["error"] = "dcgmi health -c failed (rc=%s): %s" % (rc, (err or out).strip()[:300])
        if diag:
            rc, out, err = runner([dcgmi, "diag", "-r", "1"])
            if rc in (0, 226) or "Fail" in out:  # a failed test is a result, not an error
                result["diag"] = parse_dcgm_diag(out)
            else:
                result["error"] = "dcgmi diag -r 1 failed (rc=%s): %s" % (rc, (err or out).strip()[:300])
    except (OSError, IOError) as exc:
        result["error"] = "cannot run dcgmi: %s" % exc
    return result


# --- verdict ------------------------------------------------------------------------------------------------------
class Findings(object):
    """Reasons with their severity; reset: a GPU reset can clear it."""

    def __init__(self):
        self.items = []

    def add(self, severity, text, reset=False):
        self.items.append({"severity": severity, "reason": text, "reset": bool(reset)})

    def verdict(self):
        return worst([item["severity"] for item in self.items])

    def ordered(self):
        return [i for i in self.items if i["severity"] == UNHEALTHY] + [i for i in self.items if i["severity"] == DEGRADED]

    def reasons(self):
        return [item["reason"] for item in self.ordered()]

    def reset(self):
        return any(item["reset"] for item in self.items if item["severity"] != HEALTHY)


def label(gpu):
    return "GPU %s (%s)" % (gpu["index"], gpu["bus_id"] or "bus id unknown")


def _xid_summary(events):
    """'Xid 63 at 2026-12-05T10:00:00+0000' or 'Xid 63 (3 times, last at ...)'."""
    last = events[-1]
    when = (" at %s" % last["time"]) if last["time"] else ""
    if len(events) > 1:
        when = " (%d times%s)" % (len(events), (", last at %s" % last["time"]) if last["time"] else "")
    return "Xid %d%s: %s" % (last["xid"], when, last["meaning"])


def _xid_findings(findings, events, thresholds):
    by_xid = {}
    for event in events:
        by_xid.setdefault(event["xid"], []).append(event)
    for xid in sorted(by_xid):
        xid_class, _meaning, reset = classify_xid(xid)
        text = _xid_summary(by_xid[xid])
        if xid_class == HARDWARE:
            findings.add(UNHEALTHY, text + (", reset required" if reset else ""), reset)
        elif xid_class == UNKNOWN and thresholds["degrade_on_unknown_xid"]:
            findings.add(DEGRADED, text)


def evaluate_gpu(gpu, events, thresholds):
    """Findings for one GPU from its -q -x data and the Xid events on its bus."""
    findings = Findings()
    ecc, remap, pages, pcie = gpu["ecc"], gpu["remapped_rows"], gpu["retired_pages"], gpu["pcie"]
    if remap["failure"]:
        findings.add(UNHEALTHY, "row remapping failed: memory can no longer be repaired, replace the GPU")
    if remap["pending"]:
        findings.add(UNHEALTHY, "row remap pending, reset required", reset=True)
    volatile = ecc["uncorrectable_volatile"]
    if volatile is not None and volatile > thresholds["ecc_uncorrectable_volatile_max"]:
        parts = ", ".join("%s %d" % (kind, ecc["%s_uncorrectable_volatile" % kind.lower()])
                          for kind in ("DRAM", "SRAM") if ecc["%s_uncorrectable_volatile" % kind.lower()])
        findings.add(UNHEALTHY, "%d uncorrectable ECC error(s) since the driver loaded%s, more than ecc_uncorrectable_volatile_max (%d), "
                     "reset required" % (volatile, " (%s)" % parts if parts else "", thresholds["ecc_uncorrectable_volatile_max"]),
                     reset=True)
    elif ecc["uncorrectable_aggregate"] is not None and ecc["uncorrectable_aggregate"] > thresholds["ecc_uncorrectable_aggregate_max"]:
        findings.add(DEGRADED, "%d uncorrectable ECC error(s) over the GPU's life (none since the driver loaded)" % ecc["uncorrectable_aggregate"])
    if ecc["sram_threshold_exceeded"]:
        findings.add(UNHEALTHY, "SRAM uncorrectable error threshold exceeded: replace the GPU")
    if ecc["unrepairable_memory"]:
        findings.add(UNHEALTHY, "memory the GPU cannot repair: replace the GPU")
    if pages["pending"]:
        findings.add(UNHEALTHY, "page retirement pending, reset required", reset=True)
    if pages["total"] is not None and pages["total"] > thresholds["retired_pages_max"]:
        findings.add(UNHEALTHY, "%d retired pages, more than retired_pages_max (%d): replace the GPU"
                     % (pages["total"], thresholds["retired_pages_max"]))
    if remap["correctable"] is not None and remap["correctable"] > thresholds["remapped_rows_correctable_max"]:
        findings.add(DEGRADED, "%d rows remapped for correctable errors, more than remapped_rows_correctable_max (%d)"
                     % (remap["correctable"], thresholds["remapped_rows_correctable_max"]))
    if remap["histogram"] and remap["histogram"].get("none"):
        findings.add(DEGRADED, "%d memory bank(s) have no spare row left: the next row failure there cannot be remapped"
                     % remap["histogram"]["none"])
    if gpu["reset_required"]:
        findings.add(UNHEALTHY, "the driver reports a GPU reset is required", reset=True)
    elif gpu["drain_and_reset_recommended"]:
        findings.add(DEGRADED, "the driver recommends a drain and GPU reset", reset=True)
    action = (gpu.get("recovery_action") or "").strip()
    if action and action.lower() != "none":
        if action.lower() == "drain p2p":
            findings.add(DEGRADED, "the driver's recovery action: %s" % action)
        else:
            findings.add(UNHEALTHY, "the driver's recovery action: %s" % action, reset="reset" in action.lower())
    if thresholds["degrade_on_pcie_downgrade"]:
        gen_floor = thresholds["pcie_min_link_gen"] or pcie["gen_max"]
        width_floor = thresholds["pcie_min_link_width"] or pcie["width_max"]
        idle = bool(gpu["clocks_event_reasons"].get("gpu_idle"))
        low_gen = pcie["gen_current"] is not None and gen_floor is not None and pcie["gen_current"] < gen_floor and not idle
        low_width = pcie["width_current"] is not None and width_floor is not None and pcie["width_current"] < width_floor
        if low_gen or low_width:
            now = " ".join(part for part in ("gen %s" % pcie["gen_current"] if low_gen else "",
                                             "x%s" % pcie["width_current"] if low_width else "") if part)
            can = " ".join(part for part in ("gen %s" % gen_floor if low_gen else "", "x%s" % width_floor if low_width else "") if part)
            findings.add(DEGRADED, "PCIe link %s, capable of %s" % (now, can))
    if thresholds["degrade_on_hw_slowdown"]:
        active = [text for name, text in HW_SLOWDOWN_REASONS if gpu["clocks_event_reasons"].get(name)]
        if active:
            findings.add(DEGRADED, "clocks held down by the hardware (%s)" % ", ".join(active))
    if thresholds["degrade_on_persistence_off"] and gpu["persistence_mode"] is False:
        findings.add(DEGRADED, "persistence mode is off")
    _xid_findings(findings, events, thresholds)
    return findings


def _lost_label(item, gpus):
    ident = item["id"]
    if ":" in ident:
        return "GPU %s" % (normalize_bus_id(ident) or ident)
    return "GPU %s" % ident


def evaluate(smi_state, events, pci_gpus, thresholds, dcgm=None):
    """The host's verdict from the nvidia-smi state, the Xid events, the PCI bus and DCGM. Returns the fact."""
    thresholds = thresholds_with_defaults(thresholds)
    gpus = smi_state["gpus"]
    host = Findings()
    notes = list(smi_state.get("notes") or [])
    by_device = {}
    for gpu in gpus:
        by_device.setdefault(_device(gpu["bus_id"]), []).append(gpu)
    gpu_events = dict((gpu["index"], []) for gpu in gpus)
    unplaced = []
    for event in events:
        owners = by_device.get(_device(event["bus_id"]))
        if owners:
            gpu_events[owners[0]["index"]].append(event)
        else:
            unplaced.append(event)
    for event in events:
        if event["class"] == APPLICATION:
            notes.append("Xid %d on %s%s: %s (application, not a host fault)" % (
                event["xid"], event["bus_id"], " at %s" % event["time"] if event["time"] else "", event["meaning"]))
    out_gpus = []
    for gpu in gpus:
        findings = evaluate_gpu(gpu, gpu_events[gpu["index"]], thresholds)
        entry = dict(gpu)
        entry.update(verdict=findings.verdict(), reasons=findings.reasons(), reset_recommended=findings.reset())
        out_gpus.append(entry)
        for item in findings.items:
            host.add(item["severity"], "%s: %s" % (label(gpu), item["reason"]), item["reset"])
    by_bus = {}
    for event in unplaced:
        by_bus.setdefault(event["bus_id"], []).append(event)
    for bus_id in sorted(by_bus, key=lambda b: b or ""):
        sub = Findings()
        _xid_findings(sub, by_bus[bus_id], thresholds)
        for item in sub.items:
            host.add(item["severity"], "%s (not listed by nvidia-smi): %s" % (bus_id, item["reason"]), item["reset"])
    # Fallen off the bus: bus ids where known (nvidia-smi's message, the PCI bus, Xid 79), else nvidia-smi's index.
    fallen, lost_by_index = set(), []
    for item in smi_state.get("lost") or []:
        message = re.sub(r"\s+", " ", item["message"]).strip().rstrip(".")
        host.add(UNHEALTHY, "%s: fallen off the bus (nvidia-smi: %s): reboot, replace the GPU if it stays lost"
                 % (_lost_label(item, gpus), message))
        bus = normalize_bus_id(item["id"])
        if bus:
            fallen.add(bus)
        else:
            lost_by_index.append(item["id"])
    listed = set(_device(gpu["bus_id"]) for gpu in gpus if gpu["bus_id"])
    missing = sorted(normalize_bus_id(name) for name in pci_gpus if _device(normalize_bus_id(name)) not in listed)
    if smi_state["status"] == "ok" and missing:
        if not smi_state.get("lost"):
            host.add(UNHEALTHY, "%d NVIDIA GPU(s) on the PCI bus that nvidia-smi does not list (%s): fallen off the bus or "
                     "without a driver" % (len(missing), ", ".join(missing)))
        fallen.update(missing)
    for event in events:
        if event["xid"] == 79:
            fallen.add(event["bus_id"])
    unlisted = [bus for bus in fallen if _device(bus) not in listed]
    fallen = sorted(fallen) + ["index %s" % index for index in lost_by_index[len(unlisted):]]
    failure = smi_state.get("failure")
    if failure:
        host.add(UNHEALTHY, failure)
    expected = thresholds["expected_gpu_count"]
    answering = len(gpus)
    if expected is not None and smi_state["status"] != "not_installed" and answering < int(expected):
        host.add(UNHEALTHY, "expected %d GPUs, %d answer nvidia-smi" % (int(expected), answering))
    if dcgm:
        for kind in ("health", "diag"):
            view = dcgm.get(kind)
            if not view or view["overall"] in (None, HEALTHY):
                continue
            text = "DCGM %s: %s%s" % ("health check" if kind == "health" else "diagnostic (dcgmi diag -r 1)", view["overall"],
                                      " (%s)" % "; ".join(view["details"]) if view["details"] else "")
            host.add(UNHEALTHY if view["overall"] == "failure" else DEGRADED, text)
        if dcgm.get("error"):
            notes.append(dcgm["error"])
    gpu_count = len(gpus) + len(smi_state.get("lost") or [])
    kind = smi.host_kind(gpu_count, pci_gpus)
    verdict = host.verdict()
    fact = {
        "verdict": verdict,
        "reasons": host.reasons(),
        "findings": host.ordered(),
        "notes": notes,
        "gpus": out_gpus,
        "gpu_count": gpu_count,
        "xid_events": [dict((k, v) for k, v in event.items() if k != "epoch") for event in events],
        "reset_recommended": host.reset(),
        "fallen_off_bus": [b for b in fallen if b],
        "dcgm": dcgm,
        "host_kind": kind,
        "driver_version": smi_state.get("driver_version"),
        "pci_gpus": list(pci_gpus),
    }
    fact["status"] = describe(fact, smi_state)
    return fact


def describe(fact, smi_state):
    """One line for a person: what the host is and its verdict."""
    if fact["host_kind"] == "cpu" and not fact["gpus"] and fact["verdict"] == HEALTHY:
        return "CPU host: no NVIDIA GPU on the PCI bus%s; nothing to check" % (
            " and no nvidia-smi" if smi_state["status"] == "not_installed" else " (nvidia-smi: %s)" % smi_state["status"])
    counts = dict((v, len([g for g in fact["gpus"] if g["verdict"] == v])) for v in VERDICTS)
    line = "%s: %d GPU(s) answer nvidia-smi (%d healthy, %d degraded, %d unhealthy)" % (
        fact["verdict"], len(fact["gpus"]), counts[HEALTHY], counts[DEGRADED], counts[UNHEALTHY])
    if fact["fallen_off_bus"]:
        line += "; fallen off the bus: %s" % ", ".join(fact["fallen_off_bus"])
    if fact["reasons"]:
        line += "; " + fact["reasons"][0] + (" (+%d more)" % (len(fact["reasons"]) - 1) if len(fact["reasons"]) > 1 else "")
    return line


# --- reading the host ----------------------------------------------------------------------------------------------
def read_nvidia_smi(runner, nvidia_smi):
    """{status, gpus, lost, failure, driver_version, notes}: what nvidia-smi -q -x says, never raising on a sick GPU.

    status: ok, not_installed, no_driver, no_devices, failed. A GPU that is lost makes -q -x print no XML at all
    (recorded: recorded_real_535.261.03_q_x_xid79_second_of_two.txt); then -L names the GPUs that answer and
    -q -x -i <those> reads them alone.
    """
    state = {"status": "ok", "gpus": [], "lost": [], "failure": None, "driver_version": None, "notes": []}
    if not nvidia_smi:
        state["status"] = "not_installed"
        return state
    rc, out, err = runner([nvidia_smi, "-q", "-x"])
    if rc == 0:
        parsed = parse_q_x(out)
        state.update(gpus=parsed["gpus"], driver_version=parsed["driver_version"])
        return state
    text = (out or "") + (err or "")
    lost = parse_lost(text)
    if lost or any(marker in text for marker in _GPU_LOST_TEXT):
        state["lost"] = lost or [{"id": "?", "message": text.strip().splitlines()[0] if text.strip() else "GPU is lost"}]
        rc_l, out_l, err_l = runner([nvidia_smi, "-L"])
        answering, lost_l = parse_list((out_l or "") + (err_l or ""))
        if lost_l:
            state["lost"] = lost_l
        if answering:
            rc_i, out_i, err_i = runner([nvidia_smi, "-q", "-x", "-i", ",".join(str(i) for i in answering)])
            if rc_i == 0:
                parsed = parse_q_x(out_i, indexes=answering)
                state.update(gpus=parsed["gpus"], driver_version=parsed["driver_version"])
            else:
                state["notes"].append("nvidia-smi -q -x -i %s failed too (rc=%s)" % (",".join(map(str, answering)), rc_i))
        return state
    status = smi.classify_failure(rc, text)
    if status:
        state["status"] = status
        state["notes"].append("nvidia-smi: %s" % text.strip()[:300])
        return state
    state["status"] = "failed"
    state["failure"] = "nvidia-smi -q -x failed (rc=%s): %s" % (rc, text.strip()[:300] or "no output")
    return state


def read_host(runner, which, nvidia_smi_path=None, kernel_log_command=None, since=None, since_file=None, dcgm=True,
              dcgm_diag=False, thresholds=None, pci_devices_path=None):
    """Everything, read once: the fact the module returns and the reporter writes.

    ``runner(argv) -> (rc, stdout, stderr)``; ``which(name) -> path or None``.
    """
    thresholds = thresholds_with_defaults(thresholds)
    nvidia_smi = nvidia_smi_path or which("nvidia-smi")
    pci = smi.scan_pci(pci_devices_path or smi.PCI_DEVICES_PATH)
    state = read_nvidia_smi(runner, nvidia_smi)
    if state["status"] in ("not_installed", "no_driver", "no_devices") and pci["gpus"]:
        state["failure"] = "%d NVIDIA GPU(s) on the PCI bus (%s) but %s" % (
            len(pci["gpus"]), ", ".join(pci["gpus"]),
            {"not_installed": "nvidia-smi is not installed",
             "no_driver": "nvidia-smi cannot talk to the NVIDIA driver (not loaded or failed)",
             "no_devices": "the driver sees none of them"}[state["status"]])
    since_epoch = read_since(since, since_file)
    log_text, log_info = read_kernel_log(runner, which, kernel_log_command)
    events = parse_xid_lines(log_text, since_epoch)
    dcgm_view = read_dcgm(runner, which, dcgm_diag) if dcgm and state["status"] == "ok" else None
    fact = evaluate(state, events, pci["gpus"], thresholds, dcgm_view)
    if log_info["error"]:
        fact["notes"].append("kernel log: %s" % log_info["error"])
    fact["kernel_log"] = log_info
    fact["since"] = since_epoch
    fact["nvidia_smi_path"] = nvidia_smi
    fact["nvidia_smi_status"] = state["status"]
    return fact


def read_quarantine(path):
    """The quarantine record (a JSON object: reason, since, verdict) when ``path`` exists, else None."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            record = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        return {"reason": "quarantined (the record %s cannot be read: %s)" % (path, exc)}
    return record if isinstance(record, dict) else {"reason": str(record)}


# --- node exporter textfile ------------------------------------------------------------------------------------------
def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(**labels):
    return "{%s}" % ",".join('%s="%s"' % (name, _escape(value)) for name, value in sorted(labels.items()))


def render_metrics(fact, now, success=True):
    """The reporter's textfile: the verdict, its reasons and the counters the alert rules read."""
    lines = []

    def metric(name, kind, help_text, samples):
        lines.append("# HELP %s %s" % (name, help_text))
        lines.append("# TYPE %s %s" % (name, kind))
        for labels, value in samples:
            lines.append("%s%s %s" % (name, labels, value))

    metric("aiops_gpu_health_read_success", "gauge", "1 when the GPU health was read (0: the reporter failed, see its journal).",
           [("", int(bool(success)))])
    metric("aiops_gpu_health_read_timestamp_seconds", "gauge", "When the GPU health was last read.", [("", int(now))])
    if not success:
        return "\n".join(lines) + "\n"
    metric("aiops_gpu_host_health", "gauge", "The host's GPU verdict: 0 healthy, 1 degraded, 2 unhealthy (never serve).",
           [(_labels(host_kind=fact["host_kind"]), VERDICT_VALUE[fact["verdict"]])])
    gpus = fact["gpus"]
    metric("aiops_gpu_health_verdict", "gauge", "Per GPU: 0 healthy, 1 degraded, 2 unhealthy.",
           [(_labels(gpu=g["index"], bus_id=g["bus_id"] or "", uuid=g["uuid"] or ""), VERDICT_VALUE[g["verdict"]]) for g in gpus])
    metric("aiops_gpu_health_reason", "gauge", "One series per reason of the host's verdict.",
           [(_labels(severity=item["severity"], reason=item["reason"]), 1) for item in fact["findings"]])
    metric("aiops_gpu_quarantined", "gauge", "1 while the host is quarantined (kept out of traffic on purpose).",
           [("", int(bool(fact.get("quarantined"))))])
    metric("aiops_gpu_fallen_off_bus", "gauge", "GPUs fallen off the bus (Xid 79, lost to nvidia-smi, or on the PCI bus but not listed).",
           [("", len(fact["fallen_off_bus"]))])
    metric("aiops_gpu_reset_recommended", "gauge", "1 when a GPU reset can clear a fault of this host.",
           [("", int(fact["reset_recommended"]))])
    metric("aiops_gpu_row_remap_pending", "gauge", "1 when a GPU has a row remap waiting for a reset.",
           [(_labels(gpu=g["index"], bus_id=g["bus_id"] or ""), int(bool(g["remapped_rows"]["pending"]))) for g in gpus])
    metric("aiops_gpu_ecc_uncorrectable_volatile", "gauge", "Uncorrectable ECC errors (DRAM + SRAM) since the driver loaded.",
           [(_labels(gpu=g["index"], bus_id=g["bus_id"] or ""), g["ecc"]["uncorrectable_volatile"])
            for g in gpus if g["ecc"]["uncorrectable_volatile"] is not None])
    counts = {}
    for event in fact["xid_events"]:
        key = (event["xid"], event["class"], event["bus_id"] or "")
        counts[key] = counts.get(key, 0) + 1
    metric("aiops_gpu_xid_events_total", "counter", "Xid events in the kernel log since boot (or since the last GPU reset that cleared them).",
           [(_labels(xid=xid, **{"class": cls, "bus_id": bus}), n) for (xid, cls, bus), n in sorted(counts.items())])
    return "\n".join(lines) + "\n"
