"""Benchmark: Ansible's own SSH strategy against Mitogen's persistent interpreter, side by side (issue 35 item 1).

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_mitogen.py [--hosts 8] [--rounds 3]

The lab must be up at the largest size (`make lab HOSTS=N`); one site.yml over SSH first (not measured; --skip-converge
leaves it out) brings every host back to the inventory, undoing an earlier run's rollouts. Both variants reach lab-1..N over
SSH exactly as bench_fleet.py does (the lab key, host keys pinned, pipelining, ControlPersist for Ansible's
ssh): only the strategy differs. ``ssh`` is ansible-core's linear strategy; ``mitogen`` is Mitogen for
Ansible's mitogen_linear (requirements/mitogen.txt, installed into .venv by `make bench-mitogen`), which keeps
one Python per host and sends modules over its own channel. Per size, the variants alternate (ssh then mitogen,
the next round reversed), so load from the machine falls on both alike; every run must end changed=0 and
failed=0 on every host. Reports the median wall time, its share per host, the controller's CPU-seconds (the
whole ansible-playbook process tree, its ssh clients and masters: wait4's rusage), the machine's CPU-seconds (every
core's busy time from /proc/stat: the controller, and the hosts' sshd and module processes, which share its cores
in the lab; hosts' share = machine - controller) and the ratios mitogen / ssh,
with the load average before and after; writes build/bench_mitogen.json. With --rollouts N, each variant then runs
N model rollouts the same way (bench_fleet.py's: a new anomaly_detector version, playbooks/model_upgrade.yml on
lab-1..N under light load through HAProxy, each batch verified and baked 15 s), alternating. Exits 1 when a run
changed something or failed (a rollout: rc, a failed request, a host not upgraded), 2 before anything starts when
the machine is loaded (tests/benchmarks/_load.py).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import _load
import bench_ab
from bench_converge import ROOT, is_no_change, lab_env, recap_problems
import bench_fleet
from bench_fleet import names, playbook, ssh_inventory

VARIANTS = ("ssh", "mitogen")


def machine_cpu(path="/proc/stat"):
    """CPU-seconds every core has been busy since boot (the "cpu" line less idle and iowait)."""
    with open(path, encoding="utf-8") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def mitogen_strategy_dir(python=sys.executable):
    """Where the installed ansible_mitogen keeps its strategy plugins (None when it is not installed)."""
    proc = subprocess.run([python, "-c", "import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return None
    return os.path.join(proc.stdout.strip(), "plugins", "strategy")


def variant_env(env, variant, strategy_dir):
    """The environment of one run: ansible-core's linear strategy, or mitogen_linear from strategy_dir."""
    env = dict(env)
    if variant == "mitogen":
        env.update(ANSIBLE_STRATEGY_PLUGINS=strategy_dir, ANSIBLE_STRATEGY="mitogen_linear")
    else:
        env.pop("ANSIBLE_STRATEGY", None)
    return env


def order(sizes, rounds):
    """(size, variant) in run order: bench_ab's alternation, ssh then mitogen."""
    return bench_ab.order(sizes, rounds, VARIANTS)


def summarise(runs, sizes):
    """Per size and variant: median wall, per host, controller CPU per host; per size the mitogen / ssh ratios."""
    rows = []
    for size in sizes:
        row = {"hosts": size}
        for variant in VARIANTS:
            mine = [r for r in runs if r["hosts"] == size and r["variant"] == variant]
            wall = statistics.median(r["seconds"] for r in mine)
            cpu = statistics.median(r["controller_cpu_s"] for r in mine)
            hosts_cpu = statistics.median(r["machine_cpu_s"] - r["controller_cpu_s"] for r in mine)
            row[variant] = {"runs": [r["seconds"] for r in mine], "median_s": round(wall, 1),
                            "per_host_s": round(wall / size, 2), "controller_cpu_s": round(cpu, 1),
                            "controller_cpu_per_host_s": round(cpu / size, 2), "hosts_cpu_s": round(hosts_cpu, 1),
                            "hosts_cpu_per_host_s": round(hosts_cpu / size, 2)}
        row["wall_ratio"] = round(row["mitogen"]["median_s"] / row["ssh"]["median_s"], 3)
        row["cpu_ratio"] = round(row["mitogen"]["controller_cpu_s"] / row["ssh"]["controller_cpu_s"], 3)
        row["hosts_cpu_ratio"] = round(row["mitogen"]["hosts_cpu_s"] / row["ssh"]["hosts_cpu_s"], 3)
        rows.append(row)
    return rows


def table(rows, load):
    lines = ["| Hosts | ssh runs (s) | mitogen runs (s) | Per host: ssh / mitogen (s) | Controller CPU-s per host: "
             "ssh / mitogen | Hosts' CPU-s per host: ssh / mitogen | Wall mitogen / ssh | Controller CPU mitogen / ssh "
             "| Hosts' CPU mitogen / ssh |", "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        ssh, mit = row["ssh"], row["mitogen"]
        lines.append("| %d | %s | %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.3f | %.3f | %.3f |" % (
            row["hosts"], ", ".join("%.1f" % w for w in ssh["runs"]), ", ".join("%.1f" % w for w in mit["runs"]),
            ssh["per_host_s"], mit["per_host_s"], ssh["controller_cpu_per_host_s"], mit["controller_cpu_per_host_s"],
            ssh["hosts_cpu_per_host_s"], mit["hosts_cpu_per_host_s"], row["wall_ratio"], row["cpu_ratio"],
            row["hosts_cpu_ratio"]))
    return _load.mark_tables("\n".join(lines + ["", load.describe()]), load)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="8", help="host counts (comma separated; lab-1..N must be converged)")
    parser.add_argument("--rounds", type=int, default=3, help="no-change runs per size and variant")
    parser.add_argument("--rollouts", type=int, default=0, help="model rollouts per variant at the largest size")
    parser.add_argument("--skip-converge", action="store_true", help="every host is at the inventory's state already")
    _load.add_argument(parser)
    args = parser.parse_args(argv)
    strategy_dir = mitogen_strategy_dir()
    if not strategy_dir:
        print("bench: Mitogen is not installed in this Python (pip install -r requirements/mitogen.txt, or "
              "make bench-mitogen)", file=sys.stderr)
        return 2
    load = _load.start(allow=args.allow_loaded)
    sizes = sorted(int(n) for n in args.hosts.split(","))
    env = lab_env()
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    log = os.path.join(ROOT, "build", "bench_mitogen.log")
    open(log, "w", encoding="utf-8").close()
    workdir = tempfile.mkdtemp(prefix="bench-mitogen-")
    runs, rollouts = [], []
    try:
        inventory = ssh_inventory(workdir, names(sizes[-1]) + ["lab-lb"])
        if not args.skip_converge:
            first = playbook(variant_env(env, "ssh", strategy_dir), inventory, "site.yml", ",".join(names(sizes[-1])), log)
            print("converge of %d hosts (not measured): %.0f s, rc %d" % (sizes[-1], first["wall"], first["rc"]), flush=True)
            if first["rc"] != 0:
                print("bench: the converge failed; see %s" % log, file=sys.stderr)
                return 1
        for size, variant in order(sizes, args.rounds):
            hosts = names(size)
            busy = machine_cpu()
            run = playbook(variant_env(env, variant, strategy_dir), inventory, "site.yml", ",".join(hosts), log)
            busy = machine_cpu() - busy
            ok = is_no_change(run["rc"], run["recap"], hosts)
            runs.append({"hosts": size, "variant": variant, "seconds": round(run["wall"], 1), "rc": run["rc"],
                         "controller_cpu_s": round(run["cpu"], 1), "machine_cpu_s": round(busy, 1), "ok": ok,
                         "problems": recap_problems(run["recap"])})
            print("%d hosts, %s: %.1f s, controller %.0f CPU-s, machine %.0f CPU-s, rc %d, changed/failed on %s" % (
                size, variant, run["wall"], run["cpu"], busy, run["rc"], runs[-1]["problems"] or "none"), flush=True)
        if args.rollouts:
            os.environ.update(env)  # the publisher reads the lab's S3 endpoint and keys from here
            lb_ip = bench_fleet.lab_hosts.host_ip("lab-lb")
            base = int(time.time()) % 100000 * 10  # version numbers no earlier run published
            for number, (_size, variant) in enumerate(order([sizes[-1]], args.rollouts)):
                entry = bench_fleet.rollout(variant_env(env, variant, strategy_dir), sizes[-1], base + number, workdir,
                                            log, lb_ip, inventory=inventory)
                rollouts.append(dict(entry, variant=variant))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = _load.finish(load)
    bad = [r for r in runs if not r["ok"]] + [r for r in rollouts if r["rc"] or r["failed"] or not r["all_upgraded"]]
    rows = summarise(runs, sizes) if not bad else []
    with open(os.path.join(ROOT, "build", "bench_mitogen.json"), "w", encoding="utf-8") as handle:
        json.dump({"runs": runs, "rows": rows, "rollouts": rollouts, "load": load.as_dict(), "cpus": os.cpu_count()},
                  handle, indent=1)
    if bad:
        print("BROKEN RUN: %s (log: %s)" % (json.dumps(bad), log))
        return 1
    print(table(rows, load))
    for variant in VARIANTS:
        mine = [r["seconds"] for r in rollouts if r["variant"] == variant]
        if mine:
            print("rollout at %d hosts, %s: %s s (median %.1f)" % (sizes[-1], variant, ", ".join("%.1f" % s for s in mine),
                                                                   statistics.median(mine)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
