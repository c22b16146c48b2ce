"""The real ansible-rulebook (Java 17, drools) runs the collection's rulebook: Alertmanager webhooks reach the
collection's event source, the rules pick the remediation, and the gate playbook (dry run, on a localhost inventory)
records what it would run. Forged requests are refused and counted, and the source keeps serving; a resolved alert
and an alert no rule routes run nothing. What the gate runs for real (quarantine, restart) are the rolling playbooks,
proven on the lab fleet in molecule/lb."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
import yaml

pytestmark = pytest.mark.integration

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "eda-" + "5d41402abc4b2a76b9719d911017c592"
HOSTS = ["eda-gpu", "eda-down", "eda-drift"]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def post(port, body, token=TOKEN):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/alerts" % port, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def alert(name, host, status="firing"):
    return {"status": status, "labels": {"alertname": name, "host": host, "severity": "critical"},
            "annotations": {"summary": "%s on %s" % (name, host)}, "startsAt": "2026-12-06T03:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "fp-%s-%s" % (name, host), "generatorURL": "http://prom"}


def webhook(*alerts):
    return {"version": "4", "status": "firing", "receiver": "aiops-eda", "groupKey": "{}:{}", "alerts": list(alerts),
            "externalURL": "http://alertmanager:9093"}


def records(state):
    path = os.path.join(state, "results.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as answer:
        text = answer.read().decode()
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.fixture
def rulebook(tmp_path):
    java_home = os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    assert os.path.exists(os.path.join(java_home, "bin", "java")), "Java 17 (openjdk-17-jre-headless) is missing: make setup"
    executable = shutil.which("ansible-rulebook")
    assert executable, "ansible-rulebook is missing (requirements/eda.txt): make setup"
    port, state = free_port(), str(tmp_path / "state")
    inventory = tmp_path / "inventory.yml"
    write_inventory(inventory, {host: "up" for host in HOSTS})
    variables = tmp_path / "vars.yml"
    variables.write_text(yaml.safe_dump({"aiops_eda_listen_port": port, "aiops_eda_dry_run": True,
                                         "aiops_eda_state_dir": state, "aiops_eda_window_seconds": 1800}))
    env = dict(os.environ, JAVA_HOME=java_home, AIOPS_EDA_TOKEN=TOKEN, ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(CHECKOUT, ".collection"))
    log = open(str(tmp_path / "rulebook.log"), "w")
    proc = subprocess.Popen([executable, "--rulebook", "aiops.triton.alertmanager_remediation", "-i", str(inventory),
                             "--vars", str(variables), "-E", "AIOPS_EDA_TOKEN"],
                            cwd=str(tmp_path), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 90
    while time.time() < deadline:
        assert proc.poll() is None, open(str(tmp_path / "rulebook.log")).read()[-4000:]
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=2).close()
            break
        except OSError:
            time.sleep(0.5)
    else:
        pytest.fail("the event source did not answer in 90 s:\n" + open(str(tmp_path / "rulebook.log")).read()[-4000:])
    yield proc, port, state, tmp_path / "rulebook.log"
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def write_inventory(path, states):
    """The lab's hosts as local connections. The balancer's view of every host (triton_lb_states, what HAProxy's
    status read sets) comes from the inventory, which each playbook run reads again; the site-hook status method
    reads this host's own state from it too."""
    status = path.parent / "lb-status"
    status.write_text("#!/bin/sh\n%s -c 'import json, os, sys; print(json.load(open(sys.argv[1]))[os.environ[\"AIOPS_LB_HOST\"]])' %s\n"
                      % (os.path.realpath(shutil.which("python3")), path.parent / "lb-states.json"))
    status.chmod(0o755)
    (path.parent / "lb-states.json").write_text(json.dumps(states))
    path.write_text(yaml.safe_dump({"all": {"children": {"triton_servers": {"hosts": {
        host: {"ansible_connection": "local", "ansible_python_interpreter": os.path.realpath(shutil.which("python3")),
               "triton_lb_drain_method": "command", "triton_lb_status_command": str(status), "triton_lb_states": states}
        for host in HOSTS}}}}}))


def wait_records(state, count, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline and len(records(state)) < count:
        time.sleep(1)
    return records(state)


def test_alerts_drive_the_gate_forged_requests_change_nothing(rulebook):
    proc, port, state, log = rulebook
    # Forged first: refused, counted, nothing run, and the source keeps serving.
    assert post(port, webhook(alert("TritonGPUUnhealthy", "eda-gpu")), token=None) == 401
    assert post(port, webhook(alert("TritonGPUUnhealthy", "eda-gpu")), token="wrong-" + TOKEN) == 401
    assert post(port, b"{not json") == 400
    assert post(port, {"alerts": 3}) == 400
    # One alert per rule, plus a resolved one and one no rule routes: only the three firing ones run the gate.
    assert post(port, webhook(alert("TritonGPUUnhealthy", "eda-gpu"), alert("TritonLBDown", "eda-gpu"))) == 202
    assert post(port, webhook(alert("TritonDown", "eda-down"), alert("TritonDown", "eda-gpu", status="resolved"))) == 202
    assert post(port, webhook(alert("TritonModelVersionDrift", "eda-drift"))) == 202
    found = wait_records(state, 3)
    time.sleep(5)  # anything the resolved or unrouted alert would wrongly start has had time to record
    found = records(state)
    assert proc.poll() is None, open(str(log)).read()[-4000:]
    would = sorted((r["host"], r["outcome"], r.get("would_run", r.get("reason"))) for r in found)
    assert would == [
        ("eda-down", "dry-run", "ansible-playbook aiops.triton.restart --limit eda-down"),
        ("eda-drift", "dry-run", "ansible-playbook aiops.triton.models --limit eda-drift --check --diff"),
        ("eda-gpu", "dry-run", "ansible-playbook aiops.triton.quarantine --limit eda-gpu"),
    ], (found, open(str(log)).read()[-4000:])
    by_host = {r["host"]: r for r in found}
    assert by_host["eda-gpu"]["alert"]["alertname"] == "TritonGPUUnhealthy"
    assert by_host["eda-gpu"]["alert"]["fingerprint"] == "fp-TritonGPUUnhealthy-eda-gpu"
    assert by_host["eda-down"]["remediation"] == "restart"
    counts = metrics(port)
    assert counts['aiops_eda_webhook_requests_total{result="bad_token"}'] == "2"
    assert counts['aiops_eda_webhook_requests_total{result="bad_json"}'] == "1"
    assert counts['aiops_eda_webhook_requests_total{result="bad_payload"}'] == "1"
    assert counts['aiops_eda_webhook_requests_total{result="accepted"}'] == "3"
    assert counts["aiops_eda_webhook_alerts_total"] == "5"
    # A host already out of traffic: restarting another would put 2 of 3 out, over the cap of 1. Refused, recorded,
    # nothing run; the source goes on.
    write_inventory(log.parent / "inventory.yml", dict({host: "up" for host in HOSTS}, **{"eda-drift": "drained"}))
    assert post(port, webhook(alert("TritonNotReady", "eda-gpu"))) == 202
    found = wait_records(state, 4)
    refused = [r for r in found if r["outcome"] == "refused"]
    assert [r["host"] for r in refused] == ["eda-gpu"], (found, open(str(log)).read()[-4000:])
    assert ("restarting eda-gpu would put 2 of 3 hosts out of traffic (already out: eda-drift drained), more than "
            "triton_gpu_health_max_unhealthy allows (1)") in refused[0]["reason"], refused
    assert refused[0]["alert"]["alertname"] == "TritonNotReady"
    assert proc.poll() is None
    assert TOKEN not in open(str(log)).read()
