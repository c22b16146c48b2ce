"""A synthetic fleet-raw.json: what playbooks/verify.yml writes for N hosts, in its exact schema (per host the
triton_models fleet_state fact: pinned, verify (triton_verify), gpu (nvidia_gpu_info), configs
(triton_model_config in check mode), plus groups and the load-balancer state; the inventory's hosts and,
where the GPU-health read ran, each host's triton_gpu_health fact).

A few hosts of every 250 carry each kind of problem, at fixed places, so a test knows what the report must
say. Deterministic: the same arguments give the same file.

    python tests/unit/tools/fleet_synth.py --hosts 1000 --out build/fleet-synth [--render] [--screenshot docs/img/x.png]
"""

import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODELS = {"anomaly_detector": (2, 1.2), "alert_classifier": (1, 0.8), "metric_forecaster": (1, 3.5), "ops_pipeline": (1, 4.0)}
GROUPS = ["triton_canary", "triton_wave_1", "triton_wave_2"]
TRITON = "2.51.0"
URL = "http://127.0.0.1:8000"
# problem -> where it lands among the hosts (index from the start; one more every 250 hosts)
PROBLEMS = {"unreachable": 5, "drift": 7, "golden": 9, "drained": 11, "quarantined": 13, "gpu_unhealthy": 16, "slow": 17,
            "not_reported": 19}


def host_name(index, count):
    return "lab-%d" % (index + 1) if count <= 32 else "triton-%04d.dc%d.example.com" % (index + 1, 1 + index % 3)


def group_of(index, count):
    """The lab's layout: the first hosts are the canary (1 in 50), the rest alternate between the waves."""
    canary = max(1, count // 50)
    return GROUPS[0] if index < canary else GROUPS[1 + (index - canary) % 2]


def problems_at(index, count):
    """At 24 hosts each problem once; at 1,000 hosts four times."""
    return set(p for p, at in PROBLEMS.items() if index >= at and (index - at) % 250 == 0 and count > at)


def _model(name, version, base, rng, problems):
    p50 = round(base * rng.lognormvariate(0, 0.15) * (25 if "slow" in problems else 1), 3)
    cases = [{"name": case, "protocol": protocol, "passed": True, "message": ""}
             for case in ("normal_window", "cpu_spike", "memory_leak") for protocol in ("http", "grpc")]
    failures = []
    if "golden" in problems and name == "alert_classifier":
        cases[1].update(passed=False, message="output label: expected 'disk_full', got 'cpu_high'")
        failures.append("%s: version %d: golden case 'normal_window' over grpc: %s" % (name, version, cases[1]["message"]))
    served = version - 1 if "drift" in problems and name == "anomaly_detector" else version
    latency = {"requests": 30, "p50_ms": p50, "p99_ms": round(p50 * rng.uniform(1.4, 3.0), 3), "p50_budget_ms": None, "p99_budget_ms": None}
    states = dict((str(v), "READY" if v == served else "UNAVAILABLE") for v in range(1, max(version, served) + 1))
    return {"name": name, "passed": not failures, "failures": failures, "gpu": {}, "states": states,
            "versions": [{"version": served, "ready": True, "cases": cases, "latency": latency}]}, failures


def _gpu(index, gpu_host):
    if not gpu_host:
        return {"status": "not_installed", "message": "nvidia-smi is not installed", "gpus": [], "host_kind": "cpu"}
    gpus = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%04d-%d" % (index, i), "memory_total_mib": 81559,
             "driver_version": "550.127.08"} for i in range(8)]
    return {"status": "ok", "message": "8 GPU(s), driver 550.127.08, CUDA 12.4", "gpus": gpus, "host_kind": "gpu"}


def _gpu_health(gpu_host, problems):
    """The triton_gpu_health fact (the GPU-health read) of one host."""
    if not gpu_host:
        return {"verdict": "healthy", "reasons": [], "gpus": [], "xid_events": [], "quarantined": False, "quarantine": None}
    bad = "quarantined" in problems or "gpu_unhealthy" in problems
    reasons = ["GPU 3 (00000000:3B:00.0): Xid 79 (fallen off the bus)"] if bad else []
    health = {"verdict": "unhealthy" if bad else "healthy", "reasons": reasons, "xid_events": [{"xid": 79, "gpu": 3}] if bad else [],
              "gpus": [{"index": i, "bus_id": "00000000:%02X:00.0" % (0x18 + i * 0x11), "name": "NVIDIA H100 80GB HBM3",
                        "verdict": "unhealthy" if bad and i == 3 else "healthy", "reasons": reasons if bad and i == 3 else []} for i in range(8)],
              "quarantined": False, "quarantine": None}
    if "quarantined" in problems:  # nvidia_gpu_health: the record of roles/triton_rolling's quarantine_mark
        health.update(quarantined=True, quarantine={"reason": reasons[0], "since": "2026-03-02T04:11:09Z", "verdict": "unhealthy"})
    return health


def host(index, count, rng):
    """(raw result, triton_gpu_health fact) of one host."""
    name, group = host_name(index, count), group_of(index, count)
    problems = problems_at(index, count)
    gpu_host = count > 32 or index % 4 != 3  # the lab: every fourth host has no GPU
    pinned = [{"name": m, "versions": [v]} for m, (v, _b) in MODELS.items()]
    raw = {"host": name, "groups": ["triton_servers", group], "pinned": pinned,
           "lb_state": "drained" if problems & {"drained", "quarantined"} else "up", "lb_error": "", "gpu": _gpu(index, gpu_host),
           "configs": [{"item": {"name": m}, "changed": False} for m in MODELS]}
    if "unreachable" in problems:
        msg = "Triton at %s is not live after 5s (cannot reach Triton)" % URL
        raw["verify"] = {"failed": True, "msg": msg, "server": {}, "models": [], "failures": ["Triton at %s is not live after 5s" % URL]}
        raw["lb_state"] = "down"
    else:
        models, failures = [], []
        for model_name, (version, base) in MODELS.items():
            model, failed = _model(model_name, version, base, rng, problems)
            models.append(model)
            failures.extend(failed)
        raw["verify"] = {"changed": False, "failed": False, "server": {"live": True, "ready": True, "version": TRITON},
                         "models": models, "failures": failures}
    if "drift" in problems:
        raw["configs"][0] = {"item": {"name": "anomaly_detector"}, "changed": True,
                             "diff": {"before": "name: \"anomaly_detector\"\nversion_policy {\n  specific {\n    versions: [ 1 ]\n  }\n}\n",
                                      "after": "name: \"anomaly_detector\"\nversion_policy {\n  specific {\n    versions: [ 2 ]\n  }\n}\n"}}
    return raw, _gpu_health(gpu_host, problems)


def raw_fleet(count, seed=36, gpu_health=True):
    """What verify.yml's controller play writes as fleet-raw.json for ``count`` hosts."""
    rng = random.Random(seed)
    hosts = [host(i, count, rng) for i in range(count)]
    raw = {"rollout_groups": list(GROUPS), "inventory_hosts": [h["host"] for h, _g in hosts],
           "hosts": [h for i, (h, _g) in enumerate(hosts) if "not_reported" not in problems_at(i, count)]}
    if gpu_health:  # verify.yml writes each host's triton_gpu_health fact (null where it was not read) beside the results
        raw["gpu_health"] = dict((h["host"], health) for h, health in hosts)
    return raw


def load_report():
    """playbooks/files/fleet_report.py as a module (it is a script verify.yml runs, not a package)."""
    sys.path.insert(0, os.path.join(ROOT, "playbooks", "files"))
    import fleet_report  # pylint: disable=import-outside-toplevel
    return fleet_report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--out", required=True, help="directory for fleet-raw.json (and the report with --render)")
    parser.add_argument("--no-gpu-health", action="store_true", help="leave out the triton_gpu_health facts")
    parser.add_argument("--render", action="store_true", help="render fleet-report.{json,html} beside it")
    parser.add_argument("--screenshot", metavar="PNG", help="render, then a 1280x2000 screenshot in headless Chromium (docs/img)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    raw = raw_fleet(args.hosts, gpu_health=not args.no_gpu_health)
    path = os.path.join(args.out, "fleet-raw.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(raw, handle, indent=1)
    print(path)
    if args.render or args.screenshot:
        load_report().main(["--raw", path, "--out", args.out, "--inventory", "inventories/production"])
    if args.screenshot:
        import headless  # pylint: disable=import-outside-toplevel
        print(headless.screenshot(os.path.join(args.out, "fleet-report.html"), args.screenshot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
