"""Alertmanager (issue 34): the rendered alertmanager.yml passes amtool check-config, the EDA alerts reach the
rulebook's webhook (aiops-eda) and people, every other alert only people, TritonRemediationFailed never the
rulebook; prometheus.yml names the Alertmanager only when enabled and still passes promtool check config.

amtool and promtool come from Debian's prometheus-alertmanager and prometheus packages (make setup installs both):
without them these tests fail rather than skip."""

import re
import shutil
import subprocess

import pytest
import yaml

from monitoring_render import render_alertmanager, render_prometheus, render_rules, role_file

EDA_URL = "http://10.0.0.5:5050/alerts"
TOKEN_FILE = "/etc/prometheus/aiops-eda.token"
PEOPLE_URL = "http://127.0.0.1:9099/page"
EDA = {"triton_monitoring_alertmanager_enabled": True, "triton_monitoring_alertmanager_eda_url": EDA_URL,
       "triton_monitoring_alertmanager_eda_token_file": TOKEN_FILE,
       "triton_monitoring_alertmanager_receiver_url": PEOPLE_URL}
EDA_ALERTS = role_file("defaults", "main.yml")["triton_monitoring_alertmanager_eda_alerts"]
RULE_ALERTS = [rule["alert"] for rule in yaml.safe_load(render_rules())["groups"][0]["rules"]]


def tool(name):
    path = shutil.which(name)
    assert path, "%s is not installed (Debian packages prometheus-alertmanager, prometheus); make setup installs it" % name
    return path


def amtool(*args):
    return subprocess.run([tool("amtool")] + list(args), capture_output=True, text=True, check=False)


def write(tmp_path, overrides, name="alertmanager.yml"):
    path = tmp_path / name
    path.write_text(render_alertmanager(overrides))
    return str(path)


def receivers(config, alertname):
    proc = amtool("config", "routes", "test", "--config.file=%s" % config, "alertname=%s" % alertname, "host=x")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip().split(",")


@pytest.mark.parametrize("overrides", [
    EDA,
    dict(EDA, triton_monitoring_alertmanager_eda_token_file=""),
    {"triton_monitoring_alertmanager_enabled": True},
    {"triton_monitoring_alertmanager_enabled": True, "triton_monitoring_alertmanager_receiver_url": PEOPLE_URL},
], ids=["eda-token-people", "eda-no-token", "defaults", "people-only"])
def test_amtool_checks_the_config(tmp_path, overrides):
    proc = amtool("check-config", write(tmp_path, overrides))
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr


def test_the_default_eda_alerts_are_alerts_of_the_rules():
    assert EDA_ALERTS and not set(EDA_ALERTS) - set(RULE_ALERTS), set(EDA_ALERTS) - set(RULE_ALERTS)


@pytest.mark.parametrize("alertname", EDA_ALERTS)
def test_an_eda_alert_reaches_the_rulebook_and_people(tmp_path, alertname):
    config = write(tmp_path, EDA)
    assert receivers(config, alertname) == ["aiops-eda", "people"]
    proc = amtool("config", "routes", "test", "--config.file=%s" % config, "--verify.receivers=aiops-eda,people",
                  "alertname=%s" % alertname, "host=x")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("alertname", sorted(set(RULE_ALERTS) - set(EDA_ALERTS)) + ["TritonRemediationFailed"])
def test_any_other_alert_reaches_only_people(tmp_path, alertname):
    assert receivers(write(tmp_path, EDA), alertname) == ["people"]


def test_remediation_failed_never_reaches_the_rulebook_even_when_listed(tmp_path):
    # preflight refuses it in the list; the route's own matcher holds even so
    overrides = dict(EDA, triton_monitoring_alertmanager_eda_alerts=EDA_ALERTS + ["TritonRemediationFailed"])
    config = write(tmp_path, overrides)
    assert receivers(config, "TritonRemediationFailed") == ["people"]
    assert receivers(config, EDA_ALERTS[0]) == ["aiops-eda", "people"]


def test_the_eda_route_is_grouped_by_alert_and_host_and_the_list_is_anchored():
    route = yaml.safe_load(render_alertmanager(EDA))["route"]
    eda = route["routes"][0]
    assert eda["receiver"] == "aiops-eda" and eda["continue"] is True
    assert eda["group_by"] == ["alertname", "host"]
    assert eda["matchers"][0] == 'alertname=~"^(%s)$"' % "|".join(EDA_ALERTS)
    assert route["routes"][1] == {"receiver": "people"}
    assert route["group_wait"] == "10s" and route["repeat_interval"] == "4h"


def test_the_rulebook_webhook_sends_the_token_from_its_file_and_resolutions():
    config = yaml.safe_load(render_alertmanager(EDA))
    eda = dict((r["name"], r) for r in config["receivers"])["aiops-eda"]
    assert eda["webhook_configs"] == [{"url": EDA_URL, "send_resolved": True, "http_config": {
        "authorization": {"type": "Bearer", "credentials_file": TOKEN_FILE}}}]
    no_token = yaml.safe_load(render_alertmanager(dict(EDA, triton_monitoring_alertmanager_eda_token_file="")))
    assert "http_config" not in dict((r["name"], r) for r in no_token["receivers"])["aiops-eda"]["webhook_configs"][0]


def test_without_an_eda_url_there_is_no_rulebook_receiver(tmp_path):
    overrides = {"triton_monitoring_alertmanager_enabled": True, "triton_monitoring_alertmanager_receiver_url": PEOPLE_URL}
    text = render_alertmanager(overrides)
    config = yaml.safe_load(text)
    assert [r["name"] for r in config["receivers"]] == ["people"] and "routes" not in config["route"]
    assert "aiops-eda" not in yaml.safe_dump(config)
    for alertname in EDA_ALERTS + ["TritonLBDown"]:
        assert receivers(write(tmp_path, overrides), alertname) == ["people"]


def test_people_without_a_url_is_a_receiver_with_no_integration():
    config = yaml.safe_load(render_alertmanager({"triton_monitoring_alertmanager_enabled": True}))
    assert config["receivers"] == [{"name": "people"}]


def prometheus_config(tmp_path, overrides):
    rules = tmp_path / "aiops-triton.rules.yml"
    rules.write_text(render_rules())
    (tmp_path / "file_sd").mkdir(exist_ok=True)
    context = {"_triton_monitoring_rules_file": str(rules), "triton_monitoring_file_sd_dir": str(tmp_path / "file_sd")}
    context.update(overrides)
    path = tmp_path / "prometheus.yml"
    path.write_text(render_prometheus(context))
    return path


@pytest.mark.parametrize("enabled", [True, False])
def test_prometheus_names_the_alertmanager_only_when_enabled_and_passes_promtool(tmp_path, enabled):
    path = prometheus_config(tmp_path, {"triton_monitoring_alertmanager_enabled": enabled,
                                        "triton_monitoring_alertmanager_address": "am.example:9093"})
    config = yaml.safe_load(path.read_text())
    if enabled:
        assert config["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["am.example:9093"]}]}]}
    else:
        assert "alerting" not in config
    proc = subprocess.run([tool("promtool"), "check", "config", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_config_task_checks_with_amtool_and_keeps_urls_from_other_users():
    tasks = role_file("tasks", "alertmanager.yml")
    write_task = [t for t in tasks if t.get("ansible.builtin.template", {}).get("src") == "alertmanager.yml.j2"]
    assert len(write_task) == 1, tasks
    args = write_task[0]["ansible.builtin.template"]
    assert re.match(r"^\{\{ triton_monitoring_amtool \}\} check-config %s$", args["validate"])
    assert args["mode"] == "0640" and args["owner"] == "root"
