# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each served model version costs per instance, measured on a live Triton host.

Host memory: the RSS (VmRSS of /proc/<pid>/status) of the python-backend stubs, the processes named
``triton_python_backend_stub`` under the tritonserver process. Each python-based model instance (the python backend,
and backends built on it such as the collection's onnxruntime backend) runs in one stub, started by Triton 2.51 as
``triton_python_backend_stub <repository>/<model>/<version>/<file> <shm region> <shm size> <shm growth> <parent pid>
<backend dir> <ipc handle> <instance name> <runtime dir>``, so its model and version are the directories of its first
argument. GPU memory: ``nvidia-smi --query-compute-apps`` rows of those stubs (module_utils/nvidia_smi.py). Triton's
own ``memory_usage`` statistics are returned as Triton reports them (the backends serving the collection's models
report none in 2.51).

Instances that run inside tritonserver itself (C++ backends) share its process with every other such model; their
footprint is reported unknown with that reason, never guessed. The ``footprint`` of each version is per instance, in
MiB, the shape module_utils/gpu_budget.py reads from an inventory's declared ``footprint``: the largest instance,
rounded up, so that a measured footprint can replace a declared one.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import math
import os

STUB_NAME = "triton_python_backend_stub"
SERVER_NAME = "tritonserver"
PROC = "/proc"
SOURCE = "triton_footprint"
NO_NVIDIA_SMI = "nvidia-smi not installed"
# Triton's memory_usage entries: {"type": "CPU" | "CPU_PINNED" | "GPU", "id": device, "byte_size": bytes}
_MIB = 1024 * 1024


def _read(path, binary=False):
    try:
        with open(path, "rb" if binary else "r") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def parse_status_rss_kib(text):
    """VmRSS of a /proc/<pid>/status text in KiB; None when absent (a kernel thread, a zombie)."""
    for line in (text or "").splitlines():
        if line.startswith("VmRSS:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1])
    return None


def parse_stat_ppid(text):
    """The parent PID of a /proc/<pid>/stat text (the comm in parentheses may hold spaces); 0 when unreadable."""
    try:
        return int(text.rsplit(")", 1)[1].split()[1])
    except (AttributeError, IndexError, ValueError):
        return 0


def parse_cmdline(raw):
    """/proc/<pid>/cmdline (NUL-separated bytes or text) -> argv list."""
    if raw is None:
        return []
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    argv = raw.split("\0")
    return argv[:-1] if argv and argv[-1] == "" else argv


def processes(proc=PROC):
    """Every process readable under ``proc``: {pid: {pid, ppid, comm, argv, rss_kib}}."""
    found = {}
    try:
        names = os.listdir(proc)
    except (IOError, OSError):
        return found
    for name in names:
        if not name.isdigit():
            continue
        base = os.path.join(proc, name)
        stat = _read(os.path.join(base, "stat"))
        if stat is None:
            continue
        found[int(name)] = {"pid": int(name), "ppid": parse_stat_ppid(stat),
                            "comm": (_read(os.path.join(base, "comm")) or "").strip(),
                            "argv": parse_cmdline(_read(os.path.join(base, "cmdline"), binary=True)),
                            "rss_kib": parse_status_rss_kib(_read(os.path.join(base, "status")))}
    return found


def server_pids(procs):
    """PIDs of the processes named tritonserver."""
    return sorted(pid for pid, info in procs.items() if info["comm"] == SERVER_NAME)


def url_port(url):
    """The TCP port an http(s) URL names (80/443 by default); None without a URL."""
    if not url:
        return None
    scheme, _sep, rest = url.partition("://")
    hostport = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if hostport.startswith("["):  # [v6]:port
        tail = hostport.split("]", 1)[1]
        port = tail[1:] if tail.startswith(":") else ""
    else:
        port = hostport.rpartition(":")[2] if ":" in hostport else ""
    if port.isdigit():
        return int(port)
    return 443 if scheme.lower() == "https" else 80


def listening_pids(pids, port, proc=PROC):
    """Those of ``pids`` that hold a TCP socket listening on ``port`` (IPv4 or IPv6, this network namespace)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        for line in (_read(os.path.join(proc, "net", table)) or "").splitlines()[1:]:
            fields = line.split()
            # sl local_address rem_address st ... inode: st 0A is LISTEN; the port is the local address's hex tail
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add("socket:[%s]" % fields[9])
    found = []
    for pid in pids:
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            fds = os.listdir(fd_dir)
        except (IOError, OSError):
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in inodes:
                    found.append(pid)
                    break
            except (IOError, OSError):
                continue
    return found


def descendants(procs, root):
    """PIDs below ``root`` (children, their children...)."""
    children = {}
    for pid, info in procs.items():
        children.setdefault(info["ppid"], []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return sorted(found)


def stub_identity(argv):
    """A stub's argv -> {model, version, instance}; None when the argv is not a python-backend stub's."""
    if len(argv) < 2 or os.path.basename(argv[0]) != STUB_NAME:
        return None
    version_dir = os.path.dirname(argv[1])
    version = os.path.basename(version_dir)
    model = os.path.basename(os.path.dirname(version_dir))
    if not version.isdigit() or not model:
        return None
    return {"model": model, "version": int(version), "instance": argv[8] if len(argv) > 8 else None}


def stubs(procs, server_pid):
    """The python-backend stubs under ``server_pid``: [{pid, model, version, instance, rss_kib}], by pid."""
    found = []
    for pid in descendants(procs, server_pid):
        identity = stub_identity(procs[pid]["argv"])
        if identity:
            found.append(dict(identity, pid=pid, rss_kib=procs[pid]["rss_kib"]))
    return found


def memory_usage(stats, version):
    """model_stats[].memory_usage of ``version`` from a GET /v2/models/<name>/versions/<v>/stats answer ([] if none)."""
    for entry in (stats or {}).get("model_stats") or []:
        if str(entry.get("version")) == str(version):
            return list(entry.get("memory_usage") or [])
    return []


def _ceil_mib(kib):
    return int(math.ceil(kib / 1024.0))


def measure(models, stub_list, apps=None, gpu_reason=None, usage=None, server_pid=None, measured=None):
    """Per model version: {name, version, instances, host_mib, gpu_mib, per_instance, triton_memory_usage, footprint,
    unknown}.

    ``models``: [{name, versions}]; ``stub_list``: ``stubs()``; ``apps``: nvidia-smi compute apps (None with
    ``gpu_reason`` when they could not be read); ``usage``: {(name, version): memory_usage list}; ``measured``: the
    time stamp the footprints carry.
    """
    gpu_of = {}
    for app in apps or []:
        if app.get("used_memory_mib") is None:
            gpu_of.setdefault(app["pid"], None)
        elif app["pid"] not in gpu_of or gpu_of[app["pid"]] is not None:
            gpu_of[app["pid"]] = gpu_of.get(app["pid"], 0) + app["used_memory_mib"]
    results = []
    for model in models:
        for version in model["versions"]:
            mine = [s for s in stub_list if s["model"] == model["name"] and s["version"] == int(version)]
            results.append(_entry(model["name"], int(version), mine, apps, gpu_of, gpu_reason,
                                  (usage or {}).get((model["name"], int(version)), []), server_pid, measured))
    return results


def _entry(name, version, mine, apps, gpu_of, gpu_reason, usage, server_pid, measured):
    unknown = []
    per_instance = []
    for stub in mine:
        gpu = None if apps is None else gpu_of.get(stub["pid"], 0)
        per_instance.append({"instance": stub["instance"], "pid": stub["pid"], "rss_kib": stub["rss_kib"],
                             "host_mib": None if stub["rss_kib"] is None else round(stub["rss_kib"] / 1024.0, 1),
                             "gpu_mib": gpu})
    host = gpu = each_host = each_gpu = None
    if not mine:
        unknown.append("no python-backend stub of %s version %s under tritonserver%s: its instances run inside "
                       "tritonserver (shared with every in-process model) or it is not loaded"
                       % (name, version, "" if server_pid is None else " (pid %s)" % server_pid))
    else:
        rss = [i["rss_kib"] for i in per_instance]
        if None in rss:
            unknown.append("RSS of stub pid(s) %s unreadable" % ", ".join(str(i["pid"]) for i in per_instance if i["rss_kib"] is None))
        else:
            host, each_host = _ceil_mib(sum(rss)), _ceil_mib(max(rss))
        if apps is None:
            unknown.append("GPU memory: %s" % gpu_reason)
        else:
            gpus = [i["gpu_mib"] for i in per_instance]
            if None in gpus:
                unknown.append("GPU memory of stub pid(s) %s not reported by nvidia-smi ([N/A], e.g. under MIG)"
                               % ", ".join(str(i["pid"]) for i in per_instance if i["gpu_mib"] is None))
            else:
                gpu, each_gpu = sum(gpus), max(gpus)
    footprint = {"gpu_mib": each_gpu, "host_mib": each_host, "source": SOURCE}
    if measured:
        footprint["measured"] = measured
    return {"name": name, "version": version, "instances": len(mine), "host_mib": host, "gpu_mib": gpu,
            "per_instance": per_instance, "triton_memory_usage": usage, "footprint": footprint, "unknown": unknown}
