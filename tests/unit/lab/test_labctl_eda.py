"""labctl eda (make eda): the rulebook's command line, vars and environment; the lab services' start and stop with
real processes on loopback (a service that exits before it listens is reported with its log, one that listens is
stopped by down's stop_services); the lab's secrets gain the rulebook's token without losing the ones a running lab
already uses."""

import json
import os
import re
import socket
import sys

import pytest
import yaml

from labctl_lib import common, eda, services  # lab/, put on sys.path by conftest.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RULEBOOK = os.path.join(ROOT, "extensions", "eda", "rulebooks", "alertmanager_remediation.yml")


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "STATE", str(tmp_path / "state"))
    monkeypatch.setattr(common, "GATEWAY", "127.0.0.1")
    return tmp_path / "state"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_rulebook_vars_are_the_ones_the_rulebook_reads():
    got = eda.rulebook_vars(True, "10.89.77.3")
    assert got["aiops_eda_listen_host"] == common.GATEWAY and got["aiops_eda_listen_port"] == eda.PORT
    assert got["aiops_eda_dry_run"] is True and eda.rulebook_vars(False, "x")["aiops_eda_dry_run"] is False
    assert got["aiops_eda_alertmanager_url"] == "http://10.89.77.3:9093"
    assert got["aiops_eda_state_dir"].startswith(os.path.join(ROOT, "lab", ".state"))
    with open(RULEBOOK) as handle:
        used = set(re.findall(r"\b(aiops_eda_[a-z_]+)\b", handle.read()))
    assert set(got) <= used, "vars the rulebook never reads: %s" % sorted(set(got) - used)


def test_webhook_url_is_where_the_rulebook_listens():
    got = eda.rulebook_vars(False, "10.89.77.3")
    assert eda.webhook_url() == "http://%s:%d/alerts" % (got["aiops_eda_listen_host"], got["aiops_eda_listen_port"])


def test_command_runs_the_collections_rulebook_on_the_lab_inventory_with_the_token_from_the_environment():
    argv = eda.command()
    assert os.path.basename(argv[0]) == "ansible-rulebook" and os.path.dirname(argv[0]) == os.path.dirname(sys.executable)
    assert argv[argv.index("--rulebook") + 1] == "aiops.triton.alertmanager_remediation"
    assert argv[argv.index("-i") + 1] == os.path.join(ROOT, "inventories", "lab")
    assert argv[argv.index("--vars") + 1] == eda.VARS
    assert argv[argv.index("-E") + 1] == "AIOPS_EDA_TOKEN"


def test_environment_carries_the_labs_token_and_the_checkouts_ansible_settings(state):
    env = eda.environment({"PATH": "/usr/bin", "JAVA_HOME": "/opt/java"})
    assert env["AIOPS_EDA_TOKEN"] == services.credentials()["AIOPS_EDA_TOKEN"] and len(env["AIOPS_EDA_TOKEN"]) == 40
    assert env["ANSIBLE_CONFIG"] == os.path.join(ROOT, "ansible.cfg")
    assert env["JAVA_HOME"] == "/opt/java", "an operator's JAVA_HOME wins"
    assert eda.environment({})["JAVA_HOME"] == eda.JAVA_HOME


def test_credentials_gain_the_token_and_keep_a_running_labs_secrets(state):
    os.makedirs(str(state))
    path = state / "s3-credentials.json"
    old = {"AWS_ACCESS_KEY_ID": "labold", "AWS_SECRET_ACCESS_KEY": "s" * 40, "AIOPS_LAB_TRITON_API_KEY": "k" * 32}
    path.write_text(json.dumps(old))
    os.chmod(str(path), 0o600)
    creds = services.credentials()
    assert dict((key, creds[key]) for key in old) == old
    assert len(creds["AIOPS_EDA_TOKEN"]) == 40
    assert services.credentials() == creds, "generated once"
    assert oct(os.stat(str(path)).st_mode & 0o777) == "0o600"


def test_start_refuses_without_a_lab(state, monkeypatch):
    monkeypatch.setattr(common, "INVENTORY", str(state / "nowhere" / "hosts.yml"))
    with pytest.raises(common.LabError, match="make lab first"):
        eda.start()


def test_a_service_that_exits_before_it_listens_is_reported_with_its_log(state):
    with pytest.raises(common.LabError, match=r"eda did not start: it exited \(3\) .*log: .*eda\.log"):
        services.start_service("eda", [sys.executable, "-c", "print('no java'); raise SystemExit(3)"], free_port(), timeout=20)
    assert "no java" in (state / "eda.log").read_text()


def test_a_service_that_listens_is_started_once_and_stopped_by_stop_services(state):
    port = free_port()
    cmd = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    services.start_service("eda", cmd, port, timeout=20)
    pid = services.service_pid("eda")
    assert pid and services.pid_alive(pid)
    services.start_service("eda", cmd, port, timeout=20)
    assert services.service_pid("eda") == pid, "a running service is not started twice"
    services.stop_services()
    # (not "nothing listens on the port": a connect to a free ephemeral port can connect to itself on Linux)
    assert not services.pid_alive(pid) and services.service_pid("eda") is None


def test_lab_monitoring_routes_to_the_rulebook_labctl_starts():
    with open(os.path.join(ROOT, "inventories", "lab-monitoring", "group_vars", "triton_monitoring.yml")) as handle:
        lab = yaml.safe_load(handle)
    assert lab["triton_monitoring_alertmanager_enabled"] is True
    assert "AIOPS_LAB_EDA_URL" in lab["triton_monitoring_alertmanager_eda_url"]
    assert "AIOPS_EDA_TOKEN" in lab["triton_monitoring_alertmanager_eda_token"]
    assert lab["triton_monitoring_alertmanager_eda_token_file"].startswith("/")
