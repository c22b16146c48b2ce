"""Benchmark: the fleet at 8, 16 and 24 lab hosts in one run (issue 23 item 4).

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_fleet.py [--hosts 8,16,24] [--rounds 2] [--skip-setup]

Brings the lab up to the largest size (lab/labctl.py up: the canary lab-1, then wave_1 and wave_2 taking
turns, so every prefix lab-1..N has three rollout groups), publishes the model set and converges every host
(not measured). Then, on lab-1..N (--limit) for each size N:

1. **No-change `site.yml`**, sizes interleaved over the rounds (8, 16, 24, 24, 16, 8): through the lab's
   transport (lab_podman, nsenter), the wall time; and over SSH (the lab key, host keys pinned, ControlPersist,
   pipelining: what a controller does to a real fleet), the wall time and the **controller's** CPU-seconds
   (user + sys of ansible-playbook, its forks and their ssh clients: wait4's rusage) and its peak memory (the
   summed PSS of that process tree, sampled every 0.2 s). Through the lab transport the modules run in
   processes the controller forks (nsenter), so only the SSH runs separate the controller from the hosts.
   Every run must end changed=0 failed=0 on every host.
2. **A model rollout under light load**: a new `anomaly_detector` version (version 2's files and golden cases
   under a new number, molecule/model_variants.py's "good" variant) published to the lab's S3, then
   playbooks/model_upgrade.yml with that version pinned for every group (-e triton_models_list): canary, then
   each wave in batches of 50% (6 batches at every size: the batches grow with the fleet, not their number),
   each batch verified and baked (the lab's 15 s). One HTTP client sends anomaly_detector requests through the
   lab's HAProxy at about 20 per second the whole time; every answer counts. The run must end rc 0 with the new
   version the only one READY on every named host.

Prints markdown tables for docs/benchmarks.md, writes build/bench_fleet.json and docs/img/bench_fleet.png.
Exits 1 when a run broke its promise, 2 before anything starts on a loaded machine (tests/benchmarks/_load.py).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import yaml

import _load
from bench_converge import ROOT, is_no_change, lab_env, parse_recap, recap_problems

sys.path[:0] = [os.path.join(ROOT, "molecule"), os.path.join(ROOT, "lab"), os.path.join(ROOT, ".collection")]
import lab_hosts  # noqa: E402  (molecule/lab_hosts.py: host readers shared with the molecule drivers)
import model_variants  # noqa: E402  (the "good" anomaly_detector variant the lb scenario publishes)
from labctl_lib.hosts import rollout_groups  # noqa: E402  (how labctl splits lab-1..N into rollout groups)
from labctl_lib.memory import pss_kib  # noqa: E402  (one process's PSS, as labctl memory reads it)
from ansible_collections.aiops.triton.plugins.module_utils.fleet import batch_sizes  # noqa: E402

LAB_INVENTORY = os.path.join(ROOT, "inventories", "lab")


def _group_models(group):
    with open(os.path.join(LAB_INVENTORY, "group_vars", group, "models.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


# the lab inventory's rollout groups in order, each with its triton_rollout_serial and triton_models_list
GROUPS = dict((group, _group_models(group)) for group in ("triton_canary", "triton_wave_1", "triton_wave_2"))
SSH_CONNECTION = """---
# bench_fleet.py: the lab hosts over SSH, as a controller reaches a real fleet (instead of lab_podman).
ansible_connection: ansible.builtin.ssh
ansible_user: root
ansible_pipelining: true
ansible_ssh_private_key_file: %(key)s
ansible_ssh_common_args: -o UserKnownHostsFile=%(known_hosts)s -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes
"""


def names(count):
    return ["lab-%d" % i for i in range(1, count + 1)]


def ssh_inventory(workdir, hosts):
    """A copy of inventories/lab whose Triton and LB hosts are reached over SSH at their bridge addresses."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, "lab", "labctl.py"), "ssh"] + hosts,
                         capture_output=True, text=True, check=True, cwd=ROOT)
    ssh = json.loads(out.stdout)
    inventory = os.path.join(workdir, "inventory")
    shutil.copytree(LAB_INVENTORY, inventory)
    for group in ("triton_servers", "triton_lb"):
        with open(os.path.join(inventory, "group_vars", group, "connection.yml"), "w", encoding="utf-8") as handle:
            handle.write(SSH_CONNECTION % ssh)
    os.makedirs(os.path.join(inventory, "host_vars"), exist_ok=True)
    for host, address in ssh["hosts"].items():
        with open(os.path.join(inventory, "host_vars", "%s.yml" % host), "w", encoding="utf-8") as handle:
            handle.write("---\nansible_host: %s\n" % address)
    return inventory


def plan(size):
    """The rollout's batches on lab-1..size: {group: [batch sizes]}, as the rollout_plan filter splits them."""
    return dict((group, batch_sizes(len(hosts), GROUPS[group]["triton_rollout_serial"]))
                for group, hosts in rollout_groups(names(size)) if hosts)


def _processes():
    """pid -> (ppid, cmdline, CPU seconds) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry)] = (int(fields[1]), cmdline, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return table


def _ssh_masters(control_dir, table=None):
    """pid -> CPU s of the ssh ControlPersist masters of one run (they detach from the run's process tree)."""
    table = _processes() if table is None else table
    return dict((pid, cpu) for pid, (_ppid, cmdline, cpu) in table.items() if control_dir in cmdline and "ssh" in cmdline)


def _tree_pss_kib(root_pid, control_dir):
    """Summed PSS (KiB) of root_pid, its descendants and the run's ssh masters: what the controller holds."""
    table = _processes()
    children = {}
    for pid, (ppid, _cmdline, _cpu) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, todo, seen = 0, [root_pid] + list(_ssh_masters(control_dir, table)), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(children.get(pid, []))
        total += pss_kib(pid)
    return total


def playbook(env, inventory, path, limit, log, extra=()):
    """Run one ansible-playbook; returns wall s, rc, recap, controller CPU s (the whole process tree and its ssh
    masters), peak PSS MiB. Each run gets its own ssh ControlPath directory, its masters stopped after it."""
    argv = ["ansible-playbook", "-i", inventory, path, "--limit", limit] + list(extra)
    control_dir = tempfile.mkdtemp(prefix="bench-fleet-cp-")
    env = dict(env, ANSIBLE_SSH_CONTROL_PATH_DIR=control_dir)
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    peak, done = [0], threading.Event()

    def sample():
        while not done.wait(0.2):
            peak[0] = max(peak[0], _tree_pss_kib(proc.pid, control_dir))
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc
    masters = _ssh_masters(control_dir)
    for pid in masters:
        try:
            os.kill(pid, 15)
        except OSError:
            pass
    shutil.rmtree(control_dir, ignore_errors=True)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("### %s (%.1f s, rc %d)\n%s\n" % (" ".join(argv), wall, rc, output))
    return {"wall": wall, "rc": rc, "recap": parse_recap(output), "cpu": usage.ru_utime + usage.ru_stime + sum(masters.values()),
            "peak_pss_mib": peak[0] / 1024.0}


class LightLoad(object):
    """One HTTP client, anomaly_detector through the lab's HAProxy at about ``rate`` requests per second."""

    def __init__(self, lb_ip, rate=20.0):
        import numpy as np
        import tritonclient.http as httpclient
        self.client = httpclient.InferenceServerClient("%s:8000" % lb_ip, connection_timeout=10, network_timeout=30)
        window = httpclient.InferInput("metrics_input", [1, 60, 20], "FP32")
        window.set_data_from_numpy(np.zeros((1, 60, 20), dtype=np.float32))
        self.inputs, self.period = [window], 1.0 / rate
        self.stop, self.ok, self.failed, self.errors, self.versions = threading.Event(), 0, 0, [], {}
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        deadline = time.monotonic()
        while not self.stop.is_set():
            try:
                result = self.client.infer("anomaly_detector", self.inputs)
                version = result.get_response().get("model_version", "?")
                self.versions[version] = self.versions.get(version, 0) + 1
                self.ok += 1
            except Exception as exc:  # every failure is counted and kept, never hidden
                self.failed += 1
                if len(self.errors) < 5:
                    self.errors.append(str(exc)[:200])
            deadline += self.period
            self.stop.wait(max(0.0, deadline - time.monotonic()))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=60)
        return False


def rollout(env, size, version, workdir, log, lb_ip, inventory="inventories/lab"):
    hosts = names(size)
    model_variants.publish_anomaly(workdir, version, "good")
    # the lab's model set (the canary's list; every group pins the same) with anomaly_detector at the new version
    pins = {"triton_models_list": [dict(m, versions=[version]) if m["name"] == "anomaly_detector" else m
                                   for m in GROUPS["triton_canary"]["triton_models_list"]]}
    with LightLoad(lb_ip) as load:
        run = playbook(env, inventory, "playbooks/model_upgrade.yml", ",".join(hosts), log,
                       ["-e", json.dumps(pins)])
    served = dict((h, lab_hosts.serving(lab_hosts.host_ip(h)).get("anomaly_detector")) for h in hosts)
    batches = plan(size)
    entry = {"hosts": size, "version": version, "seconds": round(run["wall"], 1), "rc": run["rc"], "batches": batches,
             "answered": load.ok, "failed": load.failed, "errors": load.errors, "versions_answered": load.versions,
             "all_upgraded": all(v == [version] for v in served.values()),
             "not_upgraded": sorted(h for h, v in served.items() if v != [version])}
    print("rollout at %d hosts: %.0f s, rc %d, plan %s, %d answered, %d failed, every host serves %d: %s" % (
        size, run["wall"], run["rc"], batches, load.ok, load.failed, version, entry["all_upgraded"]), flush=True)
    return entry


def no_change(env, inventory, transport, size, log):
    hosts = names(size)
    run = playbook(env, inventory, "site.yml", ",".join(hosts), log)
    problems = recap_problems(run["recap"])
    ok = is_no_change(run["rc"], run["recap"], hosts)
    print("no-change at %d hosts (%s): %.1f s, rc %d, controller %.0f CPU-s, peak %.0f MiB, changed/failed on %s" % (
        size, transport, run["wall"], run["rc"], run["cpu"], run["peak_pss_mib"], problems or "none"), flush=True)
    return {"hosts": size, "transport": transport, "seconds": round(run["wall"], 1), "rc": run["rc"],
            "controller_cpu_s": round(run["cpu"], 1), "peak_pss_mib": round(run["peak_pss_mib"]), "ok": ok,
            "problems": problems}


def summarise(runs, sizes):
    """Per size and transport: median wall, per host, controller CPU per host, peak PSS."""
    rows = []
    for size in sizes:
        for transport in ("lab_podman", "ssh"):
            mine = [r for r in runs if r["hosts"] == size and r["transport"] == transport]
            if not mine:
                continue
            wall = statistics.median(r["seconds"] for r in mine)
            cpu = statistics.median(r["controller_cpu_s"] for r in mine)
            rows.append({"hosts": size, "transport": transport, "runs": [r["seconds"] for r in mine],
                         "median_s": round(wall, 1), "per_host_s": round(wall / size, 2),
                         "controller_cpu_s": round(cpu, 1), "controller_cpu_per_host_s": round(cpu / size, 2),
                         "peak_pss_mib": max(r["peak_pss_mib"] for r in mine)})
    return rows


def tables(rows, rollouts, sizes, load):
    lines = ["| Hosts | Transport | No-change `site.yml` runs (s) | Median (s) | Per host (s) | Controller CPU-s "
             "(median) | per host | Controller peak PSS (MiB) |", "|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        cpu = ("%.1f | %.2f" % (r["controller_cpu_s"], r["controller_cpu_per_host_s"])) if r["transport"] == "ssh" \
            else "(modules run in the controller's forks) | -"
        peak = "%d" % r["peak_pss_mib"] if r["transport"] == "ssh" else "-"
        lines.append("| %d | %s | %s | %.1f | %.2f | %s | %s |" % (
            r["hosts"], r["transport"], ", ".join("%.1f" % s for s in r["runs"]), r["median_s"], r["per_host_s"], cpu, peak))
    per_host = dict((r["hosts"], r["per_host_s"]) for r in rows if r["transport"] == "lab_podman")
    lines += ["", "Per-host cost at %d hosts / at %d hosts (lab transport): **%.2f** (target <= 1.2); at %d hosts: "
              "**%.2f s per host** (target <= 6)." % (sizes[-1], sizes[0], per_host[sizes[-1]] / per_host[sizes[0]],
                                                      sizes[-1], per_host[sizes[-1]]), ""]
    lines += ["| Hosts | Model rollout (s) | Batches: hosts each (canary; wave_1; wave_2) | requests answered / failed "
              "| versions answered | every host on the new version |", "|---:|---:|---|---|---|---|"]
    for r in rollouts:
        lines.append("| %d | %.0f | %s | %d / %d | %s | %s |" % (
            r["hosts"], r["seconds"], "; ".join(", ".join(str(b) for b in r["batches"][g]) for g in GROUPS if g in r["batches"]),
            r["answered"], r["failed"],
            ", ".join("v%s: %d" % kv for kv in sorted(r["versions_answered"].items())), r["all_upgraded"]))
    return _load.mark_tables("\n".join(lines), load)


def plot(rows, rollouts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for transport, style in (("lab_podman", "o-"), ("ssh", "s--")):
        mine = [r for r in rows if r["transport"] == transport]
        left.plot([r["hosts"] for r in mine], [r["per_host_s"] for r in mine], style, label="%s wall / host" % transport)
    ssh = [r for r in rows if r["transport"] == "ssh"]
    left.plot([r["hosts"] for r in ssh], [r["controller_cpu_per_host_s"] for r in ssh], "^:", label="controller CPU-s / host (ssh)")
    left.axhline(6, color="grey", linewidth=0.8, linestyle=":", label="target 6 s / host")
    left.set_xlabel("hosts")
    left.set_ylabel("seconds per host")
    left.set_title("No-change site.yml")
    left.set_ylim(bottom=0)
    left.legend(fontsize=8)
    right.plot([r["hosts"] for r in rollouts], [r["seconds"] for r in rollouts], "o-")
    right.set_xlabel("hosts (6 batches at every size)")
    right.set_ylabel("seconds")
    right.set_title("Model rollout (canary + 2 waves, 15 s bake)")
    right.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="8,16,24", help="fleet sizes, comma separated")
    parser.add_argument("--rounds", type=int, default=2, help="no-change runs per size and transport")
    parser.add_argument("--skip-setup", action="store_true", help="the lab is up at the largest size and published")
    parser.add_argument("--skip-converge", action="store_true", help="every host is converged to the inventory already")
    parser.add_argument("--ssh-rounds", type=int, default=1, help="rounds that also run over SSH (controller figures)")
    parser.add_argument("--no-rollout", action="store_true", help="only the no-change runs")
    parser.add_argument("--no-ssh", action="store_true", help="only the lab transport (no controller figures)")
    _load.add_argument(parser)
    args = parser.parse_args(argv)
    load = _load.start(allow=args.allow_loaded)
    sizes = sorted(int(n) for n in args.hosts.split(","))
    everyone = names(sizes[-1])
    if not args.skip_setup:
        subprocess.run(["make", "-s", "lab-up", "publish-models", "HOSTS=%d" % sizes[-1]], cwd=ROOT, check=True)
    env = lab_env()
    os.environ.update(env)  # the publisher and the host readers read the lab's S3 endpoint and API key from here
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    log = os.path.join(ROOT, "build", "bench_fleet.log")
    open(log, "w", encoding="utf-8").close()
    if not args.skip_converge:
        # every host (and lab-lb) at the inventory's model set: also undoes an earlier run's rollouts
        first = playbook(env, "inventories/lab", "site.yml", ",".join(everyone + ["lab-lb"]), log)
        print("converge of %d hosts (not measured): %.0f s, rc %d" % (len(everyone), first["wall"], first["rc"]), flush=True)
        if first["rc"] != 0:
            print("bench: the converge failed; see %s" % log, file=sys.stderr)
            return 1
    workdir = tempfile.mkdtemp(prefix="bench-fleet-")
    try:
        ssh_inv = None if args.no_ssh else ssh_inventory(workdir, everyone + ["lab-lb"])
        order = []
        for number in range(args.rounds):
            order.extend(sizes if number % 2 == 0 else list(reversed(sizes)))
        print("bench: load average before the measured runs: %s" % " / ".join("%.2f" % x for x in os.getloadavg()), flush=True)
        runs = []
        for position, size in enumerate(order):
            runs.append(no_change(env, "inventories/lab", "lab_podman", size, log))
            if ssh_inv and position < args.ssh_rounds * len(sizes):
                runs.append(no_change(env, ssh_inv, "ssh", size, log))
        rollouts = []
        if not args.no_rollout:
            lb_ip = lab_hosts.host_ip("lab-lb")
            base = int(time.time()) % 100000 * 10  # a version number no earlier run published
            for number, size in enumerate([sizes[1], sizes[0], sizes[-1]] if len(sizes) == 3 else sizes):
                rollouts.append(rollout(env, size, base + number, workdir, log, lb_ip))
            rollouts.sort(key=lambda r: r["hosts"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = _load.finish(load)
    rows = summarise(runs, sizes)
    text = tables(rows, rollouts, sizes, load)
    print(text)
    result = {"no_change_runs": runs, "rows": rows, "rollouts": rollouts, "load": load.as_dict(), "cpus": os.cpu_count()}
    with open(os.path.join(ROOT, "build", "bench_fleet.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
    if rollouts:
        plot(rows, rollouts, os.path.join(ROOT, "docs", "img", "bench_fleet.png"))
    broken = [r for r in runs if not r["ok"]] + [r for r in rollouts if r["rc"] or not r["all_upgraded"] or r["failed"]]
    for item in broken:
        print("BROKEN PROMISE: %s" % json.dumps(item, sort_keys=True))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
