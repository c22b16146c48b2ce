"""The alert rules: promtool check rules, promtool test rules (alerts_test.yml), runbooks, coverage."""

import os
import shutil
import subprocess

import pytest
import yaml

from monitoring_render import render_rules

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "alerts_test.yml")
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus) is not installed; make setup installs it")


@pytest.fixture()
def rules_dir(tmp_path):
    (tmp_path / "aiops-triton.rules.yml").write_text(render_rules())
    shutil.copy(TESTS, tmp_path / "alerts_test.yml")
    return tmp_path


def rules():
    return yaml.safe_load(render_rules())["groups"][0]["rules"]


@needs_promtool
def test_promtool_checks_the_rules(rules_dir):
    proc = subprocess.run([PROMTOOL, "check", "rules", str(rules_dir / "aiops-triton.rules.yml")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: %d rules found" % len(rules()) in proc.stdout


@needs_promtool
def test_promtool_unit_tests_pass(rules_dir):
    proc = subprocess.run([PROMTOOL, "test", "rules", str(rules_dir / "alerts_test.yml")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_promtool
def test_promtool_tests_fail_when_a_threshold_moves(tmp_path):
    """The tests pin behaviour: a rule that fires too late (queue budget 10x higher) fails them."""
    (tmp_path / "aiops-triton.rules.yml").write_text(render_rules({"triton_monitoring_queue_p99_budget_ms": 2000}))
    shutil.copy(TESTS, tmp_path / "alerts_test.yml")
    proc = subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "alerts_test.yml")], capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "TritonQueueTimeP99High" in proc.stdout + proc.stderr


def test_every_alert_has_a_runbook_severity_and_summary():
    for rule in rules():
        annotations = rule.get("annotations", {})
        assert annotations.get("runbook"), "%s has no runbook annotation" % rule["alert"]
        assert annotations.get("runbook_url", "").endswith("#" + rule["alert"].lower()), rule["alert"]
        assert annotations.get("summary"), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]


def test_every_runbook_anchor_exists_in_the_docs():
    with open(os.path.join(HERE, "..", "..", "..", "docs", "monitoring.md")) as handle:
        headings = [line.lstrip("#").strip().lower() for line in handle if line.startswith("#")]
    for rule in rules():
        assert rule["alert"].lower() in headings, "docs/monitoring.md has no section '%s'" % rule["alert"]


def test_every_alert_is_tested_firing_and_not_firing():
    with open(TESTS) as handle:
        cases = [case for test in yaml.safe_load(handle)["tests"] for case in test["alert_rule_test"]]
    for rule in rules():
        mine = [case for case in cases if case["alertname"] == rule["alert"]]
        assert any(case.get("exp_alerts") for case in mine), "%s: no case where it fires" % rule["alert"]
        assert any(not case.get("exp_alerts") for case in mine), "%s: no case where it must not fire" % rule["alert"]


def test_for_durations_come_from_the_role_variables():
    rendered = rules()
    shortened = yaml.safe_load(render_rules({"triton_monitoring_alert_for_down": "7s"}))["groups"][0]["rules"]
    assert [r["for"] for r in rendered if r["alert"] == "TritonDown"] == ["5m"]
    assert [r["for"] for r in shortened if r["alert"] == "TritonDown"] == ["7s"]
