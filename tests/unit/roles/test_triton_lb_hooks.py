"""The drain/undrain/status contract of aiops.triton.triton_lb, run by ansible-playbook with a second
implementation: a command hook and a site task file, both backed by tests/doubles/lb-hook.double (a
stand-in for a site's own load balancer that keeps each host's state and records every call).
The built-in HAProxy implementation runs the same playbook in tests/integration/test_triton_lb_haproxy.py.
"""

import json

import pytest

from lb_harness import DOUBLE, SITE_TASKS, command_hooks, output, run_action, write_inventory

SERVERS = {"t1": {}, "t2": {}}


def calls(folder):
    path = folder / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture()
def command_lab(tmp_path):
    """Two Triton hosts whose load balancer is the double, reached through the command hooks."""
    (tmp_path / "double").mkdir()
    group_vars = command_hooks(triton_lb_drain_timeout=42)
    inventory = write_inventory(tmp_path / "hosts.yml", SERVERS, group_vars=group_vars)
    return inventory, tmp_path


def test_command_hooks_drain_status_undrain(command_lab, monkeypatch):
    inventory, folder = command_lab
    monkeypatch.setenv("AIOPS_LB_DOUBLE_DIR", str(folder / "double"))
    proc, states = run_action(inventory, "status", folder)
    assert proc.returncode == 0, output(proc)
    assert states == {"t1": "up", "t2": "up"}

    proc = run_action(inventory, "drain", folder, limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    drains = [c for c in calls(folder / "double") if c["action"] == "drain"]
    assert [c["host"] for c in drains] == ["t1"], "drain must name exactly the host being drained"
    assert drains[0]["env"] == {"AIOPS_LB_HOST": "t1", "AIOPS_LB_ACTION": "drain", "AIOPS_LB_TIMEOUT": "42"}

    proc, states = run_action(inventory, "status", folder)
    assert proc.returncode == 0, output(proc)
    assert states == {"t1": "drained", "t2": "up"}

    proc = run_action(inventory, "undrain", folder, limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    proc, states = run_action(inventory, "status", folder)
    assert states == {"t1": "up", "t2": "up"}
    assert [(c["action"], c["host"]) for c in calls(folder / "double") if c["action"] != "status"] == [
        ("drain", "t1"), ("undrain", "t1")]


def test_a_refusing_balancer_fails_the_drain(command_lab, monkeypatch):
    inventory, folder = command_lab
    monkeypatch.setenv("AIOPS_LB_DOUBLE_DIR", str(folder / "double"))
    monkeypatch.setenv("AIOPS_LB_DOUBLE_FAIL", "t2")
    proc = run_action(inventory, "drain", folder)[0]
    assert proc.returncode != 0
    assert "balancer refused to drain t2" in proc.stdout
    assert "failed=1" in proc.stdout and "t1                         : ok=" in proc.stdout


def test_status_output_outside_the_contract_reads_unknown(command_lab, monkeypatch):
    inventory, folder = command_lab
    monkeypatch.setenv("AIOPS_LB_DOUBLE_DIR", str(folder / "double"))
    (folder / "double" / "state.json").write_text(json.dumps({"t1": "half-open"}))
    proc, states = run_action(inventory, "status", folder)
    assert proc.returncode == 0, output(proc)
    assert states == {"t1": "unknown", "t2": "up"}


@pytest.mark.parametrize("action", ["drain", "undrain", "status"])
def test_command_method_without_its_command_fails_clearly(command_lab, monkeypatch, action):
    inventory, folder = command_lab
    monkeypatch.setenv("AIOPS_LB_DOUBLE_DIR", str(folder / "double"))
    proc = run_action(inventory, action, folder, extra={"triton_lb_%s_command" % action: ""}, limit="t1")[0]
    assert proc.returncode != 0
    assert "triton_lb_drain_method is command but triton_lb_%s_command is empty" % action in proc.stdout
    assert calls(folder / "double") == []


def test_site_task_files(tmp_path, monkeypatch):
    (tmp_path / "double").mkdir()
    monkeypatch.setenv("AIOPS_LB_DOUBLE_DIR", str(tmp_path / "double"))
    group_vars = {"triton_lb_drain_method": "tasks", "lb_double": DOUBLE}
    group_vars.update(("triton_lb_%s_tasks" % a, "%s/%s.yml" % (SITE_TASKS, a)) for a in ("drain", "undrain", "status"))
    inventory = write_inventory(tmp_path / "hosts.yml", SERVERS, group_vars=group_vars)
    proc = run_action(inventory, "drain", tmp_path, limit="t2")[0]
    assert proc.returncode == 0, output(proc)
    proc, states = run_action(inventory, "status", tmp_path)
    assert states == {"t1": "up", "t2": "drained"}, output(proc)
    proc = run_action(inventory, "undrain", tmp_path, limit="t2")[0]
    assert proc.returncode == 0, output(proc)
    assert [(c["action"], c["host"]) for c in calls(tmp_path / "double") if c["action"] != "status"] == [
        ("drain", "t2"), ("undrain", "t2")]


def test_no_load_balancer_waits_the_grace_and_reads_unknown(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", SERVERS, group_vars={"triton_lb_drain_grace": 1})
    proc = run_action(inventory, "drain", tmp_path, limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    assert "no load balancer, wait for clients to move away (s) 1" in proc.stdout, "without a triton_lb group the default method is none"
    proc, states = run_action(inventory, "status", tmp_path)
    assert states == {"t1": "unknown", "t2": "unknown"}


def test_an_unknown_method_is_refused_before_anything_runs(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", SERVERS, group_vars={"triton_lb_drain_method": "f5"})
    proc = run_action(inventory, "drain", tmp_path, limit="t1")[0]
    assert proc.returncode != 0
    assert "triton_lb_drain_method" in proc.stdout and "haproxy, command, tasks, none" in proc.stdout


def test_tasks_method_without_its_task_file_fails_clearly(tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", SERVERS, group_vars={"triton_lb_drain_method": "tasks"})
    proc = run_action(inventory, "status", tmp_path, limit="t1")[0]
    assert proc.returncode != 0
    assert "triton_lb_drain_method is tasks but triton_lb_status_tasks is empty" in proc.stdout
