"""playbooks/eda_remediate.yml, the rulebooks' gate, run by ansible-playbook on a localhost-only inventory.

No child playbook runs here: the dry run, the throttle and the one-host refusal all end before it.
"""

import json
import os
import subprocess
import sys
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLAYBOOK = os.path.join(ROOT, "playbooks", "eda_remediate.yml")
HOST = "eda-lab-1"


def event(host=HOST, alertname="TritonGPUUnhealthy"):
    return {"ruleset": "aiops.triton alert remediation", "rule": "gpu_unhealthy", "event": {
        "alert": {"status": "firing", "labels": {"alertname": alertname, "host": host, "severity": "critical"},
                  "annotations": {"summary": "GPU unhealthy"}, "startsAt": "2026-12-06T20:00:00Z",
                  "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "abc123", "generatorURL": ""},
        "alertmanager": {}, "meta": {"hosts": host}}}


def run(tmp_path, extra, hosts=(HOST, "eda-lab-2"), limit=HOST):  # a second host: a group a drain would not empty
    inventory = tmp_path / "inventory.yml"
    # the balancer's view for the cap check a restart or quarantine passes first (the site-hook status method; every
    # host's state, as HAProxy's status read sets it): every host up
    inventory.write_text(yaml.safe_dump({"all": {"children": {"triton_servers": {"hosts": dict(
        (h, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "triton_lb_drain_method": "command",
             "triton_lb_status_command": "echo up", "triton_lb_states": dict((other, "up") for other in hosts)})
        for h in hosts)}}}}))
    state = tmp_path / "eda"
    variables = dict({"ansible_eda": event(), "triton_remediation_state_dir": str(state)}, **extra)
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    command = ["ansible-playbook", "-i", str(inventory), PLAYBOOK, "-e", "@%s" % extra_file]
    if limit:
        command += ["--limit", limit]
    proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=240, env=env, cwd=str(tmp_path))
    log = state / "results.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    return proc, records


def test_a_dry_run_records_the_command_it_would_run(tmp_path):
    proc, records = run(tmp_path, {"triton_remediation_action": "quarantine", "triton_remediation_dry_run": True})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["outcome"] for r in records] == ["dry-run"]
    (record,) = records
    assert record["would_run"] == "ansible-playbook aiops.triton.quarantine --limit %s" % HOST
    assert record["host"] == HOST and record["remediation"] == "quarantine"
    assert record["alert"]["alertname"] == "TritonGPUUnhealthy" and record["alert"]["fingerprint"] == "abc123"
    assert record["id"].startswith("abc123-")
    assert "aiops.triton.quarantine --limit %s" % HOST in proc.stdout
    assert not os.listdir(tmp_path / "eda" / "reports"), "a dry run wrote a report"


def test_a_drift_check_dry_run_would_run_models_in_check_mode(tmp_path):
    proc, records = run(tmp_path, {"triton_remediation_action": "drift_check", "triton_remediation_dry_run": True})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert records[-1]["would_run"] == "ansible-playbook aiops.triton.models --limit %s --check --diff" % HOST


def test_a_remediation_inside_the_window_is_throttled_and_runs_nothing(tmp_path):
    state = tmp_path / "eda"
    state.mkdir()
    seeded = {"time": time.time() - 60, "id": "old-1", "host": HOST, "remediation": "restart", "outcome": "done"}
    (state / "results.jsonl").write_text(json.dumps(seeded) + "\n")
    proc, records = run(tmp_path, {"triton_remediation_action": "quarantine"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["outcome"] for r in records] == ["done", "throttled"]
    assert "inside the 1800 s window (restart)" in records[-1]["reason"]
    assert "Run the remediation" not in proc.stdout, "the child ran although throttled"
    assert not os.listdir(state / "reports"), "a throttled alert wrote a report"


def test_two_hosts_in_the_play_are_refused(tmp_path):
    proc, records = run(tmp_path, {"triton_remediation_action": "restart", "triton_remediation_dry_run": True},
                        hosts=(HOST, "eda-lab-2"), limit=None)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "Refusing to remediate 2 hosts" in out and "exactly one host" in out, out
    assert records == []
