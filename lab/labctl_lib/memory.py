"""What each lab host holds in memory: its container's cgroup (v1 memory controller, podman's cgroupfs manager)
and the PSS of every process in it, summed by command (docs/scaling.md, "A lab host's memory")."""

import os

from . import common

CGROUP_MEMORY = "/sys/fs/cgroup/memory/libpod_parent"
MIB = 1024.0 * 1024.0


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def cgroup_dir(name, root=CGROUP_MEMORY):
    cid = common.podman("inspect", "--format", "{{.Id}}", name).stdout.strip()
    path = os.path.join(root, "libpod-%s" % cid)
    if not os.path.isdir(path):
        raise common.LabError("no memory cgroup for %s at %s (cgroup v1 with podman's cgroupfs manager expected)" % (name, path))
    return path


def pss_kib(pid, proc="/proc"):
    try:
        for line in _read(os.path.join(proc, str(pid), "smaps_rollup")).splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def command(pid, proc="/proc"):
    """The process's name as ps shows it; python stubs by the model they serve."""
    try:
        argv = _read(os.path.join(proc, str(pid), "cmdline")).split("\0")
        comm = _read(os.path.join(proc, str(pid), "comm")).strip()
    except OSError:
        return "?"
    if comm.startswith("triton_python_b") or argv[0].endswith("triton_python_backend_stub"):
        # argv[1] is the model's file in the repository: <repository>/<model>/<version>/model.py (or model.onnx)
        model = argv[1].rsplit("/", 3)[-3] if len(argv) > 1 and argv[1].count("/") >= 3 else "?"
        return "python stub (%s)" % model
    return comm


def host_memory(cgroup, proc="/proc"):
    """{usage_mib, peak_mib, rss_mib, cache_mib, shmem_mib, processes: {command: [count, pss_mib]}}"""
    stat = dict(line.split() for line in _read(os.path.join(cgroup, "memory.stat")).splitlines())
    processes = {}
    for pid in _read(os.path.join(cgroup, "cgroup.procs")).split():
        entry = processes.setdefault(command(pid, proc), [0, 0.0])
        entry[0] += 1
        entry[1] += pss_kib(pid, proc) / 1024.0
    return {"usage_mib": int(_read(os.path.join(cgroup, "memory.usage_in_bytes"))) / MIB,
            "peak_mib": int(_read(os.path.join(cgroup, "memory.max_usage_in_bytes"))) / MIB,
            "rss_mib": int(stat.get("total_rss", 0)) / MIB, "cache_mib": int(stat.get("total_cache", 0)) / MIB,
            "shmem_mib": int(stat.get("total_shmem", 0)) / MIB, "processes": processes}
