"""Benchmark: wall time of a rolling Triton restart and a rolling reboot at 2, 4 and 8 lab hosts, under load.

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_rolling.py [--hosts 2,4,8]

Brings the lab up to the largest host count with its HAProxy (lab/labctl.py up; hosts already there are
kept), publishes the model set (make lab-up publish-models) and converges every host once (not measured). Then, for each size N in
order, on lab-1..lab-N (--limit; the canary alone first, then wave_1 and wave_2 in batches of 50%):
  - a rolling Triton restart: playbooks/triton_server.yml with a new triton_server_log_verbose value,
    so every named host's unit changes (drain, restart, ready, golden cases, undrain per batch);
  - a rolling reboot: playbooks/reboot.yml.
Clients (molecule/lb's load generator: two gRPC and two HTTP, real tritonclient) send every request
through the lab's HAProxy during each run and count each outcome. A measured run must end rc 0 with every
named host restarted (MainPID) or rebooted (its PID 1's start time); failed requests are reported, not
hidden. Prints a markdown table for docs/benchmarks.md and writes build/bench_rolling.json. Exits 1 when a
run failed its promise, 2 before anything starts on a loaded machine (tests/benchmarks/_load.py).
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import _load
from bench_converge import ROOT, lab_env

sys.path.insert(0, os.path.join(ROOT, "molecule"))
import lab_hosts  # noqa: E402  (molecule/lab_hosts.py: host readers shared with the molecule drivers)


def _load_generator():
    """molecule/lb's Load (clients through HAProxy), imported from its driver rather than written again."""
    path = os.path.join(ROOT, "molecule", "lb", "files", "rolling_under_load.py")
    spec = importlib.util.spec_from_file_location("rolling_under_load", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(env, playbook, limit, log, extra=()):
    argv = ["ansible-playbook", "-i", "inventories/lab", playbook, "--limit", limit] + list(extra)
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    wall = time.monotonic() - start
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("### %s (%.1f s, rc %d)\n%s\n%s\n" % (" ".join(argv), wall, proc.returncode, proc.stdout, proc.stderr))
    return wall, proc.returncode


def measure(env, gen, lb_ip, kind, hosts, log, verbose):
    limit = ",".join(hosts)
    if kind == "restart":
        playbook, extra, read = "playbooks/triton_server.yml", ["-e", "triton_server_log_verbose=%d" % verbose], lab_hosts.main_pid
    else:
        playbook, extra, read = "playbooks/reboot.yml", [], gen.boot_id
    before = dict((h, read(h)) for h in hosts)
    with gen.Load(lb_ip) as load:
        wall, rc = run(env, playbook, limit, log, extra)
    after = dict((h, read(h)) for h in hosts)
    counts = load.result
    entry = {"kind": kind, "hosts": len(hosts), "seconds": round(wall, 1), "rc": rc,
             "answered": sum(c["ok"] for c in counts), "failed": sum(c["failed"] for c in counts),
             "all_changed": all(before[h] != after[h] and after[h] not in ("", "0") for h in hosts),
             "errors": [e for c in counts for e in c["errors"]][:5]}
    print("%s at %d hosts: %.0f s, rc %d, %d answered, %d failed, every host %s: %s" % (
        kind, len(hosts), wall, rc, entry["answered"], entry["failed"],
        "restarted" if kind == "restart" else "rebooted", entry["all_changed"]), flush=True)
    return entry


def table(results, load):
    lines = ["| Hosts | Rolling restart (s) | per host (s) | requests answered / failed | "
             "Rolling reboot (s) | per host (s) | requests answered / failed |", "|---:|---:|---:|---|---:|---:|---|"]
    for size in sorted(set(r["hosts"] for r in results)):
        row = ["%d" % size]
        for kind in ("restart", "reboot"):
            entry = next(r for r in results if r["hosts"] == size and r["kind"] == kind)
            row += ["%.0f" % entry["seconds"], "%.0f" % (entry["seconds"] / size),
                    "%d / %d" % (entry["answered"], entry["failed"])]
        lines.append("| " + " | ".join(row) + " |")
    return _load.mark_tables("\n".join(lines), load)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="2,4,8", help="lab sizes to measure, comma-separated (default 2,4,8)")
    _load.add_argument(parser)
    args = parser.parse_args(argv)
    sizes = sorted(int(n) for n in args.hosts.split(","))
    load = _load.start(allow=args.allow_loaded)
    subprocess.run(["make", "-s", "lab-up", "publish-models", "HOSTS=%d" % sizes[-1]], cwd=ROOT, check=True)
    env = lab_env()
    log = os.path.join(ROOT, "build", "bench_rolling.log")
    open(log, "w", encoding="utf-8").close()
    names = ["lab-%d" % i for i in range(1, sizes[-1] + 1)]
    wall, rc = run(env, "site.yml", ",".join(names + ["lab-lb"]), log)
    print("converge of %d hosts (not measured): %.0f s, rc %d" % (len(names), wall, rc), flush=True)
    if rc != 0:
        print("bench: the converge failed; see %s" % log, file=sys.stderr)
        return 1
    gen = _load_generator()
    lb_ip = lab_hosts.host_ip("lab-lb")
    results = []
    for verbose, size in enumerate(sizes, start=1):
        hosts = names[:size]
        results.append(measure(env, gen, lb_ip, "restart", hosts, log, verbose))
        results.append(measure(env, gen, lb_ip, "reboot", hosts, log, verbose))
    load = _load.finish(load)
    text = table(results, load)
    print(text)
    print("bench: %s" % load.describe())
    with open(os.path.join(ROOT, "build", "bench_rolling.json"), "w", encoding="utf-8") as handle:
        json.dump({"results": results, "load": load.as_dict()}, handle, indent=2)
    broken = [r for r in results if r["rc"] != 0 or not r["all_changed"]]
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
