"""The container method under change: a hot model update, kill -9.

Run from side_effect.yml on the controller against the scenario's inventory:
  0. first, as converged: the role's shipped default, triton_server_container_key_file_args: false (the key in
     Triton's argv, as NVIDIA's image needs it; the scenario converges with it): what `nobody` on the host sees
     in /proc, ps, podman inspect, systemctl and the journal holds no key, while root's ps does (the key is
     there, hidepid hides it);
  1. anomaly_detector 1 -> 2 (and ops_pipeline, which needs 2) with playbooks/model_upgrade.yml: rc 0,
     the host serves exactly the new pins, and the same container kept running (a hot update);
  2. kill -9 of the container's main process on the host: systemd restarts the unit, a new container
     serves the same models, inference answers;
  3. last, triton_server.yml with key_file_args true (the lab image reads the key from a file): the setting
     changed on a live host, the key leaves Triton's argv (verify checks every view of it).
Writes what it saw to --results and exits non-zero on the first broken promise.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "molecule"))
import scenario_checks  # noqa: E402  (molecule/scenario_checks.py, unit-tested in tests/unit/molecule)

HOST = "container-1"
KEY_HEADER = "triton-admin-key"


def on_host(*argv):
    return subprocess.run(["podman", "exec", HOST] + list(argv), capture_output=True, text=True, check=False)


def container():
    """{id, pid} of the tritonserver container on the host (pid as the host's kernel numbers it)."""
    out = on_host("podman", "inspect", "--format", "{{.Id}} {{.State.Pid}} {{.State.Running}}", "tritonserver")
    if out.returncode != 0:
        return {"id": None, "pid": None, "running": False}
    cid, pid, running = out.stdout.split()
    return {"id": cid, "pid": int(pid), "running": running == "true"}


def host_ip():
    out = subprocess.run(["podman", "inspect", "--format", '{{(index .NetworkSettings.Networks "aiops-lab").IPAddress}}',
                          HOST], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def request(url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET", headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as response:
        return response.status, response.read()


def serving(ip):
    """model -> READY versions, from the repository index (the key guards it)."""
    _status, body = request("http://%s:8000/v2/repository/index" % ip, b"{}",
                            {KEY_HEADER: os.environ["AIOPS_LAB_TRITON_API_KEY"]})
    ready = {}
    for entry in json.loads(body):
        if entry.get("state") == "READY":
            ready.setdefault(entry["name"], []).append(int(entry["version"]))
    return dict((m, sorted(v)) for m, v in ready.items())


def wait_ready(ip, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if request("http://%s:8000/v2/health/ready" % ip)[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(2)
    return False


def classify(ip, text):
    body = json.dumps({"inputs": [{"name": "alert_text", "datatype": "BYTES", "shape": [1, 1], "data": [text]}]})
    _status, out = request("http://%s:8000/v2/models/alert_classifier/infer" % ip, body.encode(),
                           {"Content-Type": "application/json"})
    return dict((o["name"], o["data"]) for o in json.loads(out)["outputs"])


def playbook(inventory, workdir, name, path, extra_vars):
    env = dict(os.environ, **scenario_checks.ROLLOUT_ENV)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
                           os.path.join(ROOT, path), "-e", json.dumps(extra_vars)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800, check=False)
    log = os.path.join(workdir, "%s.log" % name)
    with open(log, "w") as handle:
        handle.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    return proc.returncode, log


def upgrade(inventory, workdir, name, anomaly):
    pins = [{"name": "anomaly_detector", "versions": anomaly}, {"name": "alert_classifier", "versions": [1]},
            {"name": "metric_forecaster", "versions": [1]}, {"name": "ops_pipeline", "versions": [1]}]
    return playbook(inventory, workdir, name, "playbooks/model_upgrade.yml", {"triton_models_list": pins})


# What an unprivileged host user can read of a running Triton: every process's command line, the process
# table, the engine, the unit's properties, Triton's journal. Each view keeps its exit status: one that cannot
# run shows nothing, and must fail the check, not pass it (scenario_checks.view_outcome). nobody's HOME
# (/nonexistent) stops podman before it asks anything; a user with a home of their own gets this far.
NOBODY_VIEWS = {
    "proc_cmdline": "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done",
    "ps": "ps -eo args",
    "podman_inspect": "HOME=$(mktemp -d) podman inspect tritonserver 2>&1",
    "systemctl_show": "systemctl show tritonserver.service 2>&1",
    "journal": "journalctl --no-pager -u tritonserver.service 2>&1",
}
# the views that must run and print (the others may be refused: refused is hidden)
NOBODY_MUST_SHOW = ("proc_cmdline", "ps", "systemctl_show")


def as_nobody(command):
    return on_host("runuser", "-u", "nobody", "--", "sh", "-c", "cd / && " + command)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    workdir = os.path.dirname(args.results)
    ip = host_ip()
    results = {}

    def check(condition, message):
        if not condition:
            results["failed_check"] = message
        with open(args.results, "w") as handle:
            json.dump(results, handle, indent=2)
        if not condition:
            print("CONTAINER CHECK FAILED: %s" % message)
            sys.exit(1)

    before = container()
    check(before["running"], "no running tritonserver container after converge")

    # as converged, with the shipped default (key_file_args false): the key is in Triton's argv
    key = os.environ["AIOPS_LAB_TRITON_API_KEY"]
    shipped = results["shipped_default"] = {"ready": wait_ready(ip)}
    check(shipped["ready"], "not ready after converge with the shipped default (key_file_args false)")
    views = dict((name, as_nobody(command)) for name, command in NOBODY_VIEWS.items())
    shipped["nobody_views"] = dict((name, scenario_checks.view_outcome(out.returncode, out.stdout + out.stderr))
                                   for name, out in views.items())
    shipped["nobody_failed"] = sorted(name for name, outcome in shipped["nobody_views"].items()
                                      if outcome == "broken" or (name in NOBODY_MUST_SHOW and outcome != "shown"))
    views = dict((name, out.stdout + out.stderr) for name, out in views.items())
    shipped["nobody_sees_key"] = scenario_checks.nobody_sees(views, key)
    shipped["nobody_ps_lines"] = len(views["ps"].splitlines())
    shipped["proc_mount"] = on_host("findmnt", "-no", "OPTIONS", "/proc").stdout.strip()
    # positive controls: the key is in argv (root sees it) and nobody's views ran and list its own processes
    shipped["root_ps_has_key"] = key in on_host("ps", "-eo", "args").stdout
    shipped["root_inspect_has_key"] = key in on_host("podman", "inspect", "tritonserver").stdout
    shipped["root_journal_has_key"] = key in on_host("journalctl", "--no-pager", "-u", "tritonserver.service").stdout
    check(shipped["nobody_failed"] == [], "as nobody these views failed to run: %s" % shipped["nobody_failed"])
    check(shipped["root_ps_has_key"], "the shipped default did not put the key in argv: the check below would prove nothing")
    check("ps -eo args" in views["ps"], "nobody's ps did not even list itself: %s" % views["ps"][:500])
    check(shipped["nobody_sees_key"] == [], "with the shipped default, nobody reads the key in %s" % shipped["nobody_sees_key"])

    started = time.time()
    rc, log = upgrade(args.inventory, workdir, "hot_update", [2])
    results["hot_update"] = {"rc": rc, "seconds": round(time.time() - started, 1), "serving": serving(ip),
                             "container_kept": container()["id"] == before["id"]}
    check(rc == 0, "hot update: ansible-playbook rc=%s (log %s)" % (rc, log))
    check(results["hot_update"]["serving"].get("anomaly_detector") == [2]
          and results["hot_update"]["serving"].get("ops_pipeline") == [1],
          "hot update: serving %s" % results["hot_update"]["serving"])
    check(results["hot_update"]["container_kept"], "hot update restarted the container")

    restarts = int(on_host("systemctl", "show", "-p", "NRestarts", "--value", "tritonserver").stdout.strip() or 0)
    killed = container()
    on_host("kill", "-9", str(killed["pid"]))
    deadline = time.time() + 240
    now = container()
    while time.time() < deadline and not (now["running"] and now["id"] not in (None, killed["id"])):
        time.sleep(2)
        now = container()
    results["kill"] = {"killed_pid": killed["pid"], "new_container": now["id"] not in (None, killed["id"]),
                       "ready": wait_ready(ip),
                       "n_restarts": int(on_host("systemctl", "show", "-p", "NRestarts", "--value",
                                                 "tritonserver").stdout.strip() or 0) - restarts}
    check(results["kill"]["new_container"] and results["kill"]["ready"], "no new serving container after kill -9: %s"
          % results["kill"])
    results["kill"]["serving"] = serving(ip)
    results["kill"]["classified"] = classify(ip, "Disk space on /dev/sda1 is 95% full")
    check(results["kill"]["n_restarts"] == 1, "systemd restarted the unit %d times" % results["kill"]["n_restarts"])
    check(results["kill"]["serving"].get("anomaly_detector") == [2], "after restart: %s" % results["kill"]["serving"])

    # the setting changed on the live host: the key leaves Triton's argv (verify reads every view of it)
    rc, log = playbook(args.inventory, workdir, "key_file_args_on", "playbooks/triton_server.yml",
                       {"triton_server_container_key_file_args": True})
    switched = results["key_file_args_on"] = {"rc": rc, "ready": wait_ready(ip)}
    check(rc == 0 and switched["ready"], "switching key_file_args to true: rc=%s (log %s)" % (rc, log))
    switched["serving"] = serving(ip)
    switched["root_ps_has_key"] = key in on_host("ps", "-eo", "args").stdout
    check(switched["serving"].get("anomaly_detector") == [2], "after the switch: %s" % switched["serving"])
    check(not switched["root_ps_has_key"], "key_file_args true left the key in Triton's argv")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
