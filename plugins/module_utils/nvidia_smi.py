# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one parser for nvidia-smi and related driver state.

Used by the ``nvidia_gpu_info`` module and, through it, by the driver and toolkit roles'
post-checks, and by ``triton_verify`` for GPU placement.  Modules run nvidia-smi only through
``run`` with an argv built here.  Pure functions over text so they can be tested on recorded outputs.

The GPU query is ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,nounits``; with a
header line the columns are mapped by name, so a reordered or extended query still parses.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import csv
import os
import re

QUERY_FIELDS = (
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "driver_version",
    "persistence_mode",
    "mig.mode.current",
    "mig.mode.pending",
    "ecc.mode.current",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total",
)
QUERY_FORMAT = "csv,nounits"

# nvidia-smi exit codes for "nothing to talk to"; see nvidia-smi(1) RETURN VALUE.
RC_NO_DEVICES = 6
RC_NO_DRIVER = 9

PROC_VERSION_PATH = "/proc/driver/nvidia/version"
PCI_DEVICES_PATH = "/sys/bus/pci/devices"
NVIDIA_PCI_VENDOR = "0x10de"
# PCI class codes (without prog-if): VGA and 3D controllers are GPUs, "other bridge" is NVSwitch.
GPU_PCI_CLASSES = ("0x0300", "0x0302")
NVSWITCH_PCI_CLASS = "0x0680"

_UNAVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", "[Insufficient Permissions]", "")
_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")


class NvidiaSmiError(Exception):
    """nvidia-smi output could not be understood."""


def query_command(nvidia_smi="nvidia-smi"):
    """The argv that produces the CSV this module parses."""
    return [nvidia_smi, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=" + QUERY_FORMAT]


# compute_cap ("The CUDA Compute Capability, represented as Major DOT Minor", nvidia-smi --help-query-gpu) exists from
# driver R510 on; an older nvidia-smi refuses the whole query ('Field "compute_cap" is not a valid field to query.',
# rc 2), so it is asked on its own: that refusal never costs the GPU list above.
COMPUTE_CAP_FIELDS = ("index", "compute_cap")
_COMPUTE_CAP = re.compile(r"^[0-9]+\.[0-9]+$")


def compute_cap_command(nvidia_smi="nvidia-smi"):
    """The argv printing each GPU's index and compute capability, one CSV line each (COMPUTE_CAP_FIELDS)."""
    return [nvidia_smi, "--query-gpu=" + ",".join(COMPUTE_CAP_FIELDS), "--format=csv,noheader,nounits"]


def parse_compute_cap(text):
    """``compute_cap_command`` output -> {index: "major.minor"}; a GPU it reports as N/A is left out.

    Raises NvidiaSmiError on a line that is not such a row.
    """
    caps = {}
    for row in csv.reader([line for line in text.splitlines() if line.strip()], skipinitialspace=True):
        cols = [col.strip() for col in row]
        if len(cols) != len(COMPUTE_CAP_FIELDS) or not cols[0].isdigit() or not (_blank(cols[1]) or _COMPUTE_CAP.match(cols[1])):
            raise NvidiaSmiError("compute_cap query: expected 'index, major.minor', got %r" % ", ".join(row))
        if not _blank(cols[1]):
            caps[int(cols[0])] = cols[1]
    return caps


def compute_caps(module, nvidia_smi):
    """({index: "major.minor"}, None) from nvidia-smi's compute_cap; ({}, what it said) where it cannot answer it."""
    rc, out, err = run(module, compute_cap_command(nvidia_smi))
    if rc != 0:
        return {}, ((err or out).strip() or "rc %d" % rc)
    try:
        return parse_compute_cap(out), None
    except NvidiaSmiError as exc:
        return {}, str(exc)


COMPUTE_APPS_FIELDS = ("pid", "process_name", "used_memory", "gpu_uuid")


def compute_apps_command(nvidia_smi="nvidia-smi"):
    """The argv listing the processes that hold a GPU context: one CSV line each (COMPUTE_APPS_FIELDS)."""
    return [nvidia_smi, "--query-compute-apps=" + ",".join(COMPUTE_APPS_FIELDS), "--format=csv,noheader,nounits"]


def parse_compute_apps(text):
    """``compute_apps_command`` output -> [{pid, process_name, used_memory_mib, gpu_uuid}].

    Lines that are not such a row ("No running processes found") are skipped; a process on two GPUs
    is two rows.  Memory that nvidia-smi cannot read ([N/A], e.g. under MIG) is None.
    """
    apps = []
    for row in csv.reader([line for line in text.splitlines() if line.strip()], skipinitialspace=True):
        cols = [col.strip() for col in row]
        if len(cols) != len(COMPUTE_APPS_FIELDS) or not cols[0].isdigit():
            continue
        apps.append({"pid": int(cols[0]), "process_name": cols[1], "used_memory_mib": _int(cols[2], "used_memory"),
                     "gpu_uuid": cols[3]})
    return apps


def find(module, nvidia_smi_path=None):
    """The nvidia-smi to run: the given path, else the one on PATH or in /usr/bin; None when absent."""
    return nvidia_smi_path or module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin"])


def run(module, argv):
    """Run an nvidia-smi argv built here; the one place the collection executes nvidia-smi."""
    return module.run_command(argv)


def _checked(module, nvidia_smi, argv):
    """stdout of an nvidia-smi argv; raises NvidiaSmiError naming rc and its message when it fails."""
    rc, out, err = run(module, argv)
    if rc != 0:
        raise NvidiaSmiError("%s failed (rc=%s): %s" % (nvidia_smi, rc, (err or out).strip()))
    return out


def compute_apps(module, nvidia_smi):
    """Processes holding a GPU context (``parse_compute_apps``); raises NvidiaSmiError when nvidia-smi fails."""
    return parse_compute_apps(_checked(module, nvidia_smi, compute_apps_command(nvidia_smi)))


def gpus(module, nvidia_smi):
    """The GPUs nvidia-smi lists (``parse_query_gpu``); raises NvidiaSmiError when nvidia-smi fails."""
    return parse_query_gpu(_checked(module, nvidia_smi, query_command(nvidia_smi)))


def _blank(value):
    return value is None or value.strip() in _UNAVAILABLE


def _int(value, field):
    if _blank(value):
        return None
    text = value.strip()
    # With units (format=csv) memory reads "81559 MiB"; keep the number.
    if text.endswith(" MiB"):
        text = text[:-4]
    try:
        return int(text)
    except ValueError:
        raise NvidiaSmiError("%s: expected an integer, got %r" % (field, value))


def _mode(value):
    """Enabled/Disabled -> 'enabled'/'disabled'; N/A -> None."""
    if _blank(value):
        return None
    return value.strip().lower()


def _enabled(value):
    mode = _mode(value)
    if mode is None:
        return None
    return mode == "enabled"


def _header_name(column):
    # "memory.total [MiB]" -> "memory.total"
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", column.strip())


def parse_query_gpu(text):
    """Parse ``--query-gpu`` CSV (with or without header) into a list of GPU dicts.

    Returns GPUs sorted by index.  Raises NvidiaSmiError on anything that is not the CSV
    (for example the "couldn't communicate with the NVIDIA driver" message).
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    rows = list(csv.reader(lines, skipinitialspace=True))
    first = [_header_name(col) for col in rows[0]]
    if "index" in first and "uuid" in first:
        fields, rows = first, rows[1:]
    else:
        fields = list(QUERY_FIELDS)
    gpus = []
    for number, row in enumerate(rows, start=1):
        if len(row) != len(fields):
            raise NvidiaSmiError("row %d has %d columns, expected %d: %r" % (number, len(row), len(fields), ", ".join(row)))
        raw = dict(zip(fields, [col.strip() for col in row]))
        missing = [f for f in ("index", "uuid", "name") if f not in raw]
        if missing:
            raise NvidiaSmiError("query output lacks columns: %s" % ", ".join(missing))
        gpus.append({
            "index": _int(raw["index"], "index"),
            "uuid": raw["uuid"],
            "name": raw["name"],
            "pci_bus_id": None if _blank(raw.get("pci.bus_id")) else raw["pci.bus_id"],
            "memory_total_mib": _int(raw.get("memory.total"), "memory.total"),
            "memory_used_mib": _int(raw.get("memory.used"), "memory.used"),
            "driver_version": None if _blank(raw.get("driver_version")) else raw["driver_version"],
            "persistence_mode": _enabled(raw.get("persistence_mode")),
            "mig_mode": _mode(raw.get("mig.mode.current")),
            "mig_mode_pending": _mode(raw.get("mig.mode.pending")),
            "ecc_mode": _mode(raw.get("ecc.mode.current")),
            "ecc_errors_corrected_volatile": _int(raw.get("ecc.errors.corrected.volatile.total"), "ecc.errors.corrected.volatile.total"),
            "ecc_errors_uncorrected_volatile": _int(raw.get("ecc.errors.uncorrected.volatile.total"), "ecc.errors.uncorrected.volatile.total"),
            "ecc_errors_uncorrected_aggregate": _int(raw.get("ecc.errors.uncorrected.aggregate.total"), "ecc.errors.uncorrected.aggregate.total"),
        })
    return sorted(gpus, key=lambda gpu: gpu["index"])


def classify_failure(rc, output):
    """Map a failed nvidia-smi run to 'no_driver' / 'no_devices', or None if it is a real error."""
    if rc == RC_NO_DRIVER or "couldn't communicate with the NVIDIA driver" in output:
        return "no_driver"
    if rc == RC_NO_DEVICES or "No devices were found" in output:
        return "no_devices"
    return None


def parse_cuda_version(text):
    """CUDA version from the plain ``nvidia-smi`` banner or ``nvidia-smi -q``; None if absent."""
    match = re.search(r"CUDA Version\s*:\s*([0-9]+(?:\.[0-9]+)*)", text)
    return match.group(1) if match else None


def parse_proc_version(text):
    """Parse /proc/driver/nvidia/version -> {'version', 'flavor': 'open'|'proprietary'} or None."""
    match = re.search(r"NVRM version:.*?Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)", text)
    if not match:
        return None
    flavor = "open" if "Open Kernel Module" in match.group(0) else "proprietary"
    return {"version": match.group(1), "flavor": flavor}


def parse_fabricmanager_version(text):
    """``nv-fabricmanager --version`` prints 'Fabric Manager version is : 535.154.05'."""
    match = re.search(r"Fabric Manager version is\s*:\s*([0-9]+(?:\.[0-9]+)+)", text)
    return match.group(1) if match else None


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return ""


def scan_pci(devices_path=PCI_DEVICES_PATH):
    """NVIDIA GPUs and NVSwitches seen on the PCI bus, driver or not: {'gpus': [...], 'nvswitches': [...]}."""
    found = {"gpus": [], "nvswitches": []}
    try:
        names = sorted(os.listdir(devices_path))
    except (IOError, OSError):
        return found
    for name in names:
        device = os.path.join(devices_path, name)
        if _read(os.path.join(device, "vendor")).lower() != NVIDIA_PCI_VENDOR:
            continue
        pci_class = _read(os.path.join(device, "class")).lower()[:6]
        if pci_class in GPU_PCI_CLASSES:
            found["gpus"].append(name)
        elif pci_class == NVSWITCH_PCI_CLASS:
            found["nvswitches"].append(name)
    return found


def host_kind(gpu_count, pci_gpus):
    """What a host is for serving: 'gpu' (nvidia-smi lists GPUs), 'cpu' (no NVIDIA GPU on the PCI bus at all)
    or 'broken' (NVIDIA GPUs on the PCI bus that nvidia-smi does not list: no driver, or one that does not
    answer). A broken host must never be served on CPU in silence."""
    if gpu_count:
        return "gpu"
    return "broken" if pci_gpus else "cpu"


def version_matches(actual, wanted):
    """'535' matches any 535.x; '535.154.05' matches only itself."""
    if not actual or not wanted:
        return False
    want = str(wanted).split(".")
    return str(actual).split(".")[:len(want)] == want


def check_consistency(gpus, kernel_module=None, expected_driver_version=None, expected_gpu_count=None, fabricmanager_version=None):
    """Return human-readable mismatches between nvidia-smi, the kernel module, fabric manager and the pins.

    An empty list means consistent.  Checks that need data which is absent are skipped, except
    the GPU count, which is always checked when expected.
    """
    problems = []
    if expected_gpu_count is not None and len(gpus) != int(expected_gpu_count):
        problems.append("expected %d GPUs, nvidia-smi lists %d" % (int(expected_gpu_count), len(gpus)))
    smi_versions = sorted(set(gpu["driver_version"] for gpu in gpus if gpu.get("driver_version")))
    if len(smi_versions) > 1:
        problems.append("nvidia-smi reports several driver versions: %s" % ", ".join(smi_versions))
    smi_version = smi_versions[0] if smi_versions else None
    module_version = (kernel_module or {}).get("version")
    if smi_version and module_version and smi_version != module_version:
        problems.append("nvidia-smi driver %s != loaded kernel module %s (NVML/driver mismatch: reboot or reload the module)" % (smi_version, module_version))
    if expected_driver_version:
        for label, actual in (("nvidia-smi driver", smi_version), ("kernel module", module_version), ("fabric manager", fabricmanager_version)):
            if actual and not version_matches(actual, expected_driver_version):
                problems.append("%s %s does not match pinned %s" % (label, actual, expected_driver_version))
    if fabricmanager_version and smi_version and fabricmanager_version != smi_version:
        problems.append("fabric manager %s != driver %s" % (fabricmanager_version, smi_version))
    return problems
