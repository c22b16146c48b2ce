"""Roll model versions across the fleet scenario's hosts while clients hammer every host.

Three rollouts, each with `playbooks/model_upgrade.yml` run by ansible-playbook against the scenario's
own inventory plus changed group pins (an overlay copy of its group_vars, nothing under git changes):
  1. anomaly_detector 1 -> 2 on every group: succeeds, 0 failed requests, every host serves exactly [2];
  2. a broken version 3 (loads, fails its golden cases), published here: the canary fails verification
     and is restored to 2, the rollout stops before wave_1, 0 failed requests, every host serves [2];
  3. metric_forecaster dropped from wave_1's list: unloaded and deleted there only;
  4. drift in check mode: a hand-edited config.pbtxt on one host is named and left alone.
Clients: real tritonclient, gRPC and HTTP, one process per host and protocol, the seed's request shapes
(anomaly_detector [4, 60, 20] FP32, alert_classifier alert texts). Writes the counts and the state it saw
to --results, prints a summary, and exits non-zero on the first broken promise.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "molecule"))
import scenario_checks  # noqa: E402  (molecule/scenario_checks.py, unit-tested in tests/unit/molecule)
from lab_hosts import host_ip, main_pid, on_disk, publish_broken_anomaly, serving  # noqa: E402

SCENARIO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = {"triton_canary": ["fleet-1"], "triton_wave_1": ["fleet-2", "fleet-3"]}
ALERTS = ["Pod memory usage exceeds 90% threshold", "Network latency P99 increased to 5000ms",
          "Disk space on /dev/sda1 is 95% full"]


# -- load ---------------------------------------------------------------------------------------
def _client_loop(host, protocol, stop, counts):
    """Alternate anomaly_detector and alert_classifier requests until told to stop; count the outcomes."""
    if protocol == "grpc":
        import tritonclient.grpc as tc
        client = tc.InferenceServerClient("%s:8001" % host)
    else:
        import tritonclient.http as tc
        client = tc.InferenceServerClient("%s:8000" % host, connection_timeout=10, network_timeout=10)
    rng = np.random.default_rng(7)
    ok = failed = 0
    errors = []
    while not stop.is_set():
        try:
            window = tc.InferInput("metrics_input", [4, 60, 20], "FP32")
            window.set_data_from_numpy(rng.normal(size=(4, 60, 20)).astype(np.float32))
            result = client.infer("anomaly_detector", [window])
            scores = result.as_numpy("anomaly_score")
            assert scores.shape == (4, 1) and np.all((scores >= 0) & (scores <= 1)), scores
            texts = tc.InferInput("alert_text", [3, 1], "BYTES")
            texts.set_data_from_numpy(np.array([[t.encode()] for t in ALERTS], dtype=object))
            labels = client.infer("alert_classifier", [texts]).as_numpy("class_label")
            assert [x[0].decode() for x in labels] == ["memory", "network", "disk"], labels
            ok += 2
            time.sleep(0.02)  # a steady stream, not a CPU hog: the rollout shares these 2 cores
        except Exception as exc:  # every failure is counted and kept, never hidden
            failed += 1
            if len(errors) < 5:
                errors.append("%s %s: %s" % (host, protocol, str(exc)[:300]))
    counts.put({"host": host, "protocol": protocol, "ok": ok, "failed": failed, "errors": errors})


class Load(object):
    def __init__(self, hosts):
        self.hosts = hosts
        self.stop = multiprocessing.Event()
        self.counts = multiprocessing.Queue()
        self.procs = [multiprocessing.Process(target=_client_loop, args=(ip, proto, self.stop, self.counts))
                      for ip in hosts.values() for proto in ("grpc", "http")]

    def __enter__(self):
        for proc in self.procs:
            proc.start()
        time.sleep(3)  # every client is sending before the rollout starts
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.result = [self.counts.get(timeout=60) for _proc in self.procs]
        for proc in self.procs:
            proc.join(timeout=30)
        return False


# -- inventory overlay and rollouts -------------------------------------------------------------
def overlay(inventory, workdir, pins):
    """The scenario's inventory with group pins replaced: pins = {group: [model entries]}."""
    dest = os.path.join(workdir, "rollout_inventory")  # not "inventory": that is molecule's own
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "group_vars"))
    for name in os.listdir(os.path.dirname(inventory)):  # molecule's hosts and the linked rollout groups
        if name != "group_vars":
            with open(os.path.realpath(os.path.join(os.path.dirname(inventory), name))) as handle:
                text = handle.read()
            # the lab's pipelining podman connection (lab/plugins/connection, as the lab uses): one exec per task
            text = text.replace("ansible_connection: podman\n", "ansible_connection: lab_podman\n      ansible_pipelining: true\n")
            with open(os.path.join(dest, name), "w") as handle:
                handle.write(text)
    # molecule's ANSIBLE_CONFIG (inherited by the rollouts) does not name the lab's plugin path
    os.environ["ANSIBLE_CONNECTION_PLUGINS"] = ":".join(
        filter(None, [os.path.join(ROOT, "lab", "plugins", "connection"), os.environ.get("ANSIBLE_CONNECTION_PLUGINS")]))
    os.symlink(os.path.realpath(os.path.join(SCENARIO, "group_vars", "triton_servers")),
               os.path.join(dest, "group_vars", "triton_servers"))
    for group, entries in pins.items():
        os.makedirs(os.path.join(dest, "group_vars", group))
        serial = yaml.safe_load(open(os.path.join(SCENARIO, "group_vars", group, "models.yml")))["triton_rollout_serial"]
        with open(os.path.join(dest, "group_vars", group, "models.yml"), "w") as handle:
            yaml.safe_dump({"triton_rollout_serial": serial, "triton_models_list": entries}, handle)
    return dest


def pins(anomaly, forecaster=True):
    return [{"name": "anomaly_detector", "versions": anomaly}, {"name": "alert_classifier", "versions": [1]}] + (
        [{"name": "metric_forecaster", "versions": [1]}] if forecaster else []) + [{"name": "ops_pipeline", "versions": [1]}]


def upgrade(inventory_dir, log, playbook="playbooks/model_upgrade.yml", *extra):
    env = dict(os.environ, **scenario_checks.ROLLOUT_ENV)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory_dir,
                           os.path.join(ROOT, playbook)] + list(extra),
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800, check=False)
    with open(log, "w") as handle:
        handle.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    return proc


def recap_changed(out):
    """host -> changed count from the PLAY RECAP."""
    return dict((line.split()[0], int(line.split("changed=")[1].split()[0]))
                for line in out.splitlines() if " changed=" in line and line.split() and line.split()[0].startswith("fleet-"))


def check(condition, message, results, path):
    if not condition:
        results["failed_check"] = message
        json.dump(results, open(path, "w"), indent=2)
        print("FLEET CHECK FAILED: %s" % message)
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    workdir = os.path.dirname(args.results)
    hosts = dict((h, host_ip(h)) for g in GROUPS.values() for h in g)
    results = {"hosts": hosts, "rollouts": {}}

    def rollout(name, group_pins, expect_ok):
        inv = overlay(args.inventory, workdir, group_pins)
        pids = dict((h, main_pid(h)) for h in hosts)
        start = time.time()
        with Load(hosts) as load:
            proc = upgrade(inv, os.path.join(workdir, "%s.log" % name))
        counts = load.result
        entry = {"rc": proc.returncode, "seconds": round(time.time() - start, 1), "clients": counts,
                 "answered": sum(c["ok"] for c in counts), "failed": sum(c["failed"] for c in counts),
                 "serving": dict((h, serving(ip)) for h, ip in hosts.items()),
                 "summary": [line for line in proc.stdout.splitlines() if "[triton_" in line]}
        results["rollouts"][name] = entry
        print("%s: rc=%s, %d requests answered, %d failed, %.0f s" % (name, proc.returncode, entry["answered"], entry["failed"], entry["seconds"]))
        check((proc.returncode == 0) == expect_ok, "%s: ansible-playbook rc=%s (log %s/%s.log)" % (name, proc.returncode, workdir, name),
              results, args.results)
        check(entry["failed"] == 0, "%s: %d requests failed: %s" % (name, entry["failed"], [c["errors"] for c in counts]),
              results, args.results)
        check(all(c["ok"] > 0 for c in counts), "%s: a client got no answer at all" % name, results, args.results)
        check(pids == dict((h, main_pid(h)) for h in hosts), "%s: Triton restarted (MainPID %s -> %s): hot updates must not restart it"
              % (name, pids, dict((h, main_pid(h)) for h in hosts)), results, args.results)
        return entry, proc

    entry, _proc = rollout("upgrade_1_to_2", {"triton_canary": pins([2]), "triton_wave_1": pins([2])}, True)
    check(all(s["anomaly_detector"] == [2] for s in entry["serving"].values()), "after 1 -> 2: %s" % entry["serving"],
          results, args.results)

    broken_cases = publish_broken_anomaly(workdir, 3)
    entry, proc = rollout("broken_v3", {"triton_canary": pins([3]), "triton_wave_1": pins([3])}, False)
    out = proc.stdout + proc.stderr
    entry["broken_cases"] = broken_cases
    entry["golden_cases_failed"] = scenario_checks.golden_case_failures(out, "fleet-1", "anomaly_detector", 3)
    check(all(s["anomaly_detector"] == [2] for s in entry["serving"].values()), "after broken v3: %s" % entry["serving"],
          results, args.results)
    check(any(line.startswith("fleet-1 [triton_canary]: rolled back") for line in scenario_checks.summary_lines(out, "fleet-1")),
          "the canary's summary line does not say rolled back: %s" % scenario_checks.summary_lines(out, "fleet-1"),
          results, args.results)
    # the reason, from the rollout summary: anomaly_detector (or its candidate) version 3 failed golden
    # cases v3 has; a failure at sync or load, or another version's, does not pass (tests/unit/molecule)
    why = scenario_checks.rolled_back_for_golden_cases(out, "fleet-1", "anomaly_detector", 3, broken_cases)
    check(why is None, "broken v3: %s" % why, results, args.results)
    for host in GROUPS["triton_wave_1"]:
        check(3 not in on_disk(host, "anomaly_detector"), "%s (wave_1) was touched by the broken rollout" % host, results, args.results)
    results["rollouts"]["broken_v3"]["wave_1_on_disk"] = dict((h, on_disk(h, "anomaly_detector")) for h in GROUPS["triton_wave_1"])

    entry, _proc = rollout("drop_forecaster_wave_1", {"triton_canary": pins([2]), "triton_wave_1": pins([2], forecaster=False)}, True)
    for host in GROUPS["triton_wave_1"]:
        check(entry["serving"][host]["metric_forecaster"] == [] and on_disk(host, "metric_forecaster") == [],
              "%s still has metric_forecaster" % host, results, args.results)
    check(entry["serving"]["fleet-1"]["metric_forecaster"] == [1], "the canary lost metric_forecaster", results, args.results)

    # Drift in check mode: a hand-edited config.pbtxt on one host is named (host, model, difference) and
    # left as it is; the other hosts report nothing. (A converged fleet reporting changed=0 is the
    # idempotence step; models.yml's check mode on every drift kind: tests/integration.)
    inv = overlay(args.inventory, workdir, {"triton_canary": pins([2]), "triton_wave_1": pins([2], forecaster=False)})
    config = "/var/lib/triton/models/anomaly_detector/config.pbtxt"
    original = subprocess.run(["podman", "exec", "fleet-3", "cat", config], capture_output=True, text=True, check=True).stdout
    edited = original + 'parameters {\n  key: "drift_probe"\n  value {\n    string_value: "edit"\n  }\n}\n'
    subprocess.run(["podman", "exec", "-i", "fleet-3", "sh", "-c", "cat > %s" % config], input=edited, text=True, check=True)
    proc = upgrade(inv, os.path.join(workdir, "check_drift.log"), "playbooks/model_upgrade.yml", "--check", "--diff")
    # check mode renders each config once, in the preflight's validation (the rollout's, which shows the diff)
    render = [t for t in proc.stdout.split("TASK [") if t.startswith("aiops.triton.triton_models : Validate every model config")]
    named = [t for t in proc.stdout.split("TASK [") if t.startswith("aiops.triton.triton_models : Name each model that changed")]
    after = subprocess.run(["podman", "exec", "fleet-3", "cat", config], capture_output=True, text=True, check=True).stdout
    results["check_drift"] = {"rc": proc.returncode, "changed": recap_changed(proc.stdout), "render": render[-1:] and render[-1][-1500:]}
    check(proc.returncode == 0 and render and "changed: [fleet-3]" in render[-1] and '-  key: "drift_probe"' in render[-1]
          and named and "ok: [fleet-3]" in named[-1] and "anomaly_detector: config.pbtxt - %s is not what the inventory renders" % config in named[-1],
          "check mode did not name fleet-3's hand-edited config: %s %s" % (render, named), results, args.results)
    check(recap_changed(proc.stdout).get("fleet-1") == 0 and recap_changed(proc.stdout).get("fleet-2") == 0,
          "check mode reported changes on undrifted hosts: %s" % recap_changed(proc.stdout), results, args.results)
    check(after == edited, "check mode changed fleet-3's config.pbtxt", results, args.results)
    subprocess.run(["podman", "exec", "-i", "fleet-3", "sh", "-c", "cat > %s" % config], input=original, text=True, check=True)

    json.dump(results, open(args.results, "w"), indent=2)
    print("FLEET OK: %d requests answered during the rollouts, 0 failed" % sum(r["answered"] for r in results["rollouts"].values()))


if __name__ == "__main__":
    main()
