"""Benchmark: a no-change site.yml of this checkout against the same run of a git ref, side by side.

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_ab.py --baseline REF [--hosts 8,24] [--rounds 2]

The lab must be up and converged with at least the largest host count (`make lab HOSTS=N`, or
bench_fleet's setup). The baseline is REF's files (`git archive`, under build/ab-baseline/, with its own
.collection link and ansible.cfg); both run against this checkout's lab inventory, so only the collection
differs. Sizes and the two collections alternate (per round: each size, baseline then change, the next
round in reverse), so load from the machine falls on both alike; every run must end changed=0 and failed=0
on every host. Prints, per size, both medians and the ratio change / baseline (below 1: the change is
faster), with the load average before and after, and writes build/bench_ab.json. Exits 1 when a run
changed something or failed, 2 before anything starts when the machine is loaded (tests/benchmarks/_load.py).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import _load
from bench_converge import is_no_change, lab_env, parse_recap, recap_problems

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BASELINE = os.path.join(ROOT, "build", "ab-baseline")


def export_baseline(ref, dest=BASELINE):
    """REF's tracked files in ``dest`` with a .collection link to them, as `make setup` links a checkout."""
    commit = subprocess.run(["git", "rev-parse", "--verify", ref + "^{commit}"], capture_output=True, text=True,
                            check=True, cwd=ROOT).stdout.strip()
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    archive = subprocess.run(["git", "archive", commit], capture_output=True, check=True, cwd=ROOT).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    link = os.path.join(dest, ".collection", "ansible_collections", "aiops")
    os.makedirs(link)
    os.symlink(dest, os.path.join(link, "triton"))
    return commit


def run_site(env, root, limit, log):
    """A no-change site.yml of the collection at ``root`` (its site.yml, ansible.cfg and .collection) on the
    lab inventory of this checkout."""
    argv = ["ansible-playbook", "-i", os.path.join(ROOT, "inventories", "lab"), "site.yml", "--limit", limit]
    env = dict(env, ANSIBLE_COLLECTIONS_PATH=os.path.join(root, ".collection"))
    cpu_before = children_cpu()
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, check=False)
    wall = time.monotonic() - start
    cpu = children_cpu() - cpu_before
    with open(log, "a", encoding="utf-8") as handle:
        run = (" ".join(argv), root, wall, proc.returncode, proc.stdout, proc.stderr)
        handle.write("### %s in %s (%.1f s, rc %d)\n%s\n%s\n" % run)
    return wall, cpu, proc.returncode, parse_recap(proc.stdout)


def children_cpu():
    """CPU-seconds of every finished descendant: ansible-playbook, its forks and, through the lab's nsenter
    transport, the hosts' module processes (less noisy than wall time on a shared machine)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def order(sizes, rounds, variants=("baseline", "change")):
    """(size, variant) in run order: each round every size, each variant in turn; odd rounds reversed."""
    runs = []
    for number in range(rounds):
        one = [(size, variant) for size in sizes for variant in variants]
        runs.extend(one if number % 2 == 0 else list(reversed(one)))
    return runs


def summarize(walls, sizes, cpus=None):
    """Per size: the runs, medians, per-host medians and change / baseline (wall time; CPU-seconds too when given)."""
    rows = []
    for size in sizes:
        base, change = statistics.median(walls[(size, "baseline")]), statistics.median(walls[(size, "change")])
        cpu = {}
        if cpus:
            cpu_base, cpu_change = statistics.median(cpus[(size, "baseline")]), statistics.median(cpus[(size, "change")])
            cpu = {"baseline_cpu_s": round(cpu_base, 1), "change_cpu_s": round(cpu_change, 1),
                   "cpu_ratio": round(cpu_change / cpu_base, 3)}
        row = {"hosts": size, "baseline_runs": [round(w, 1) for w in walls[(size, "baseline")]],
               "change_runs": [round(w, 1) for w in walls[(size, "change")]],
               "baseline_s": round(base, 1), "change_s": round(change, 1),
               "baseline_per_host_s": round(base / size, 2), "change_per_host_s": round(change / size, 2),
               "ratio": round(change / base, 3)}
        row.update(cpu)
        rows.append(row)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--baseline", required=True, help="git ref whose collection is the baseline")
    parser.add_argument("--hosts", default="8,24", help="host counts (comma separated; lab-1..N must be converged)")
    parser.add_argument("--rounds", type=int, default=2, help="runs per size and collection")
    _load.add_argument(parser)
    args = parser.parse_args(argv)
    load = _load.start(allow=args.allow_loaded)
    sizes = sorted(int(n) for n in args.hosts.split(","))
    commit = export_baseline(args.baseline)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                                check=True, cwd=ROOT).stdout.strip())
    log = os.path.join(ROOT, "build", "bench_ab.log")
    open(log, "w").close()
    env = lab_env()
    walls = dict(((size, variant), []) for size in sizes for variant in ("baseline", "change"))
    cpus = dict((key, []) for key in walls)
    bad = []
    for size, variant in order(sizes, args.rounds):
        limit = ",".join("lab-%d" % i for i in range(1, size + 1))
        wall, cpu, rc, recap = run_site(env, BASELINE if variant == "baseline" else ROOT, limit, log)
        walls[(size, variant)].append(wall)
        cpus[(size, variant)].append(cpu)
        if not is_no_change(rc, recap, limit.split(",")):
            bad.append("%d hosts (%s): rc %d, changed/failed on %s" % (size, variant, rc, recap_problems(recap) or "?"))
        print("%d hosts, %s: %.1f s, %.0f CPU-s (rc %d)" % (size, variant, wall, cpu, rc), flush=True)
    _load.finish(load)
    rows = summarize(walls, sizes, cpus)
    result = {"baseline": commit, "change": head + (" + uncommitted changes" if dirty else ""), "rows": rows,
              "failures": bad, "cpus": os.cpu_count(), "load": load.as_dict()}
    with open(os.path.join(ROOT, "build", "bench_ab.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
    lines = ["", "Baseline %s, change %s." % (commit[:10], result["change"][:10] + result["change"][40:]), "",
             "| Hosts | Baseline runs (s) | Change runs (s) | Baseline median (s) | Change median (s) "
             "| Per host: baseline / change (s) | Change / baseline | CPU-s: baseline / change | CPU change / baseline |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append("| %d | %s | %s | %.1f | %.1f | %.2f / %.2f | %.3f | %.0f / %.0f | %.3f |" % (
            row["hosts"], ", ".join("%.1f" % w for w in row["baseline_runs"]),
            ", ".join("%.1f" % w for w in row["change_runs"]), row["baseline_s"], row["change_s"],
            row["baseline_per_host_s"], row["change_per_host_s"], row["ratio"], row["baseline_cpu_s"],
            row["change_cpu_s"], row["cpu_ratio"]))
    lines += ["", load.describe()]
    print(_load.mark_tables("\n".join(lines), load))
    if bad:
        print("NOT A NO-CHANGE RUN: %s (log: %s)" % ("; ".join(bad), log))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
