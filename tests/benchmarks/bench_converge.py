"""Benchmark: wall time of a site.yml that changes nothing, at 1, 3 and 6 lab hosts, in one run.

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_converge.py [--hosts 1,3,6] [--rounds 2]

Brings the lab up to the largest host count (lab/labctl.py up; hosts already there are kept), publishes
the model set, converges every host once (not measured), then runs `ansible-playbook site.yml --limit
lab-1..N` for each N, interleaved over the rounds (1, 3, 6, 6, 3, 1, ...) so load from other work on
the machine falls on every size alike. Each measured run must end with changed=0 and failed=0 on
every host. Reports the median wall time per size, the time per host, and the ratio of per-host time
at the largest size to the middle one (target <= 1.3: forks do the parallel work), with the load
average around the run. The lab enters its hosts with nsenter (exec_method nsenter of the lab's lab_podman);
the sizes named by --podman-exec are measured in the same rounds through `podman exec` as well, so the
transport's share is a ratio from one run. Prints a markdown table for docs/benchmarks.md and writes
build/bench_converge.json. Exits 1 when a measured run changed something or failed, 2 before anything
starts when the machine is loaded (tests/benchmarks/_load.py; --allow-loaded runs anyway, the table
marked as not a result).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import _load

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def lab_env():
    """This environment plus the lab's exports (lab/labctl.py env), as `make site` evaluates them."""
    out = subprocess.run(["bash", "-c", 'eval "$("$0" lab/labctl.py env)" && env -0', sys.executable],
                         capture_output=True, check=True, cwd=ROOT).stdout
    env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    env["PATH"] = os.path.join(ROOT, ".venv", "bin") + os.pathsep + env["PATH"]
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".collection")
    return env


def site(env, limit, log, extra_vars=()):
    argv = ["ansible-playbook", "-i", "inventories/lab", "site.yml", "--limit", limit]
    for item in extra_vars:
        argv += ["-e", item]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    wall = time.monotonic() - start
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("### %s (%.1f s, rc %d)\n%s\n%s\n" % (" ".join(argv), wall, proc.returncode, proc.stdout, proc.stderr))
    return wall, proc.returncode, parse_recap(proc.stdout)


def recap_problems(recap):
    """Hosts of a PLAY RECAP that changed, failed or were unreachable, sorted."""
    return sorted(h for h, r in recap.items() if r["changed"] or r["failed"] or r["unreachable"])


def is_no_change(rc, recap, hosts):
    """A run that changed nothing: rc 0, no host changed or failed, and the recap's lab hosts exactly ``hosts``."""
    return rc == 0 and not recap_problems(recap) and sorted(h for h in recap if h.startswith("lab-")) == sorted(hosts)


def parse_recap(output):
    """host -> {ok, changed, unreachable, failed} from an ansible-playbook PLAY RECAP."""
    return dict((m[0], {"ok": int(m[1]), "changed": int(m[2]), "unreachable": int(m[3]), "failed": int(m[4])})
                for m in RECAP.findall(output))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="1,3,6", help="host counts to measure (comma separated)")
    parser.add_argument("--rounds", type=int, default=2, help="measured runs per host count")
    parser.add_argument("--podman-exec", default="3", help="host counts also measured with exec_method podman ('' for none)")
    parser.add_argument("--skip-setup", action="store_true", help="the lab is up, published and converged already")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], help="passed to every ansible-playbook run")
    _load.add_argument(parser)
    args = parser.parse_args(argv)
    # before the lab is brought up: what counts is other work on the machine, not this script's setup
    load = _load.start(allow=args.allow_loaded)
    sizes = sorted(int(n) for n in args.hosts.split(","))
    via_podman = [int(n) for n in args.podman_exec.split(",") if n.strip()]
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    log = os.path.join(ROOT, "build", "bench_converge.log")
    open(log, "w").close()
    all_hosts = ",".join("lab-%d" % i for i in range(1, sizes[-1] + 1))
    if not args.skip_setup:
        subprocess.run(["make", "-s", "lab-up", "publish-models", "HOSTS=%d" % sizes[-1]], cwd=ROOT, check=True)
    env = lab_env()
    if not args.skip_setup:
        wall, rc, recap = site(env, all_hosts, log, args.extra_vars)
        print("converge %d hosts (not measured): %.0f s, rc %d" % (sizes[-1], wall, rc), flush=True)
        if rc != 0:
            raise SystemExit("the first site.yml failed; see %s" % log)
    order = []
    for number in range(args.rounds):
        order.extend(sizes if number % 2 == 0 else list(reversed(sizes)))
    load_before = os.getloadavg()  # after the setup, just before the measured runs
    # (hosts, transport) -> wall times; transport "nsenter" is the lab's own
    variants = [(n, "nsenter") for n in sizes] + [(n, "podman exec") for n in via_podman]
    walls = dict((v, []) for v in variants)
    bad = []
    for size in order:
        for variant in [v for v in variants if v[0] == size]:
            limit = ",".join("lab-%d" % i for i in range(1, size + 1))
            extra = list(args.extra_vars) + (["ansible_podman_exec_method=podman"] if variant[1] == "podman exec" else [])
            wall, rc, recap = site(env, limit, log, extra)
            walls[variant].append(wall)
            if not is_no_change(rc, recap, limit.split(",")):
                bad.append("%d hosts (%s): rc %d, changed/failed on %s" % (size, variant[1], rc, recap_problems(recap) or "?"))
            changed = sorted(set(r["changed"] for r in recap.values()))
            print("%d hosts, %s: %.1f s (rc %d, changed=%s)" % (size, variant[1], wall, rc, changed), flush=True)
    _load.finish(load)
    load_after = load.after
    rows = []
    for size, transport in variants:
        mid = statistics.median(walls[(size, transport)])
        rows.append({"hosts": size, "transport": transport, "runs": [round(w, 1) for w in walls[(size, transport)]],
                     "median_s": round(mid, 1), "per_host_s": round(mid / size, 1)})
    median = dict(((r["hosts"], r["transport"]), r["median_s"]) for r in rows)
    per_host = dict((r["hosts"], r["per_host_s"]) for r in rows if r["transport"] == "nsenter")
    middle, largest = sizes[len(sizes) // 2], sizes[-1]
    ratio = round(per_host[largest] / per_host[middle], 2) if per_host[middle] else None
    exec_ratios = dict((n, round(median[(n, "podman exec")] / median[(n, "nsenter")], 2)) for n in via_podman if n in sizes)
    result = {"rows": rows, "ratio_per_host": {"sizes": [largest, middle], "value": ratio},
              "podman_exec_over_nsenter": exec_ratios,
              "load_before": [round(x, 1) for x in load_before], "load_after": [round(x, 1) for x in load_after],
              "cpus": os.cpu_count(), "failures": bad, "load": load.as_dict()}
    with open(os.path.join(ROOT, "build", "bench_converge.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
    lines = ["", "| Hosts | Transport | No-change `site.yml` runs (s) | Median (s) | Per host (s) |", "|---:|---|---|---:|---:|"]
    for row in rows:
        runs = ", ".join("%.1f" % w for w in row["runs"])
        lines.append("| %d | %s | %s | %.1f | %.1f |" % (row["hosts"], row["transport"], runs, row["median_s"], row["per_host_s"]))
    lines += ["", "Per-host time at %d hosts / at %d hosts: %s (target <= 1.3). podman exec / nsenter, same hosts: %s. "
              "Load average (1/5/15 min) before the script %s, before the measured runs %s, after %s; %d CPUs."
              % (largest, middle, ratio, exec_ratios, [round(x, 1) for x in load.before], result["load_before"],
                 result["load_after"], result["cpus"])]
    print(_load.mark_tables("\n".join(lines), load))
    if bad:
        print("NOT A NO-CHANGE RUN: %s (log: %s)" % ("; ".join(bad), log))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
