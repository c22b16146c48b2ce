"""playbooks/verify.yml and playbooks/files/fleet_report.py from a real run: a real Triton serving the built model set.

Two inventory hosts (local connection) share one real Triton whose config.pbtxt files were rendered by
triton_model_config from the canary's pins: the canary (fleet-a) matches, the wave host (fleet-b) pins
anomaly_detector version 1, so its report must show READY [2] vs pinned [1] and a config.pbtxt diff.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import urllib.request

import pytest
import yaml

from triton_fixtures import CHECKOUT, COLLECTIONS_PATH, TritonServer, run_module

pytestmark = pytest.mark.integration

MODELS = ["anomaly_detector", "alert_classifier", "metric_forecaster", "ops_pipeline"]
CANARY_PINS = [{"name": "anomaly_detector", "versions": [2]}, {"name": "alert_classifier", "versions": [1]},
               {"name": "metric_forecaster", "versions": [1]}, {"name": "ops_pipeline", "versions": [1]}]
WAVE_PINS = [dict(p, versions=[1]) if p["name"] == "anomaly_detector" else p for p in CANARY_PINS]


def _catalog():
    catalog = {}
    for name in MODELS:
        with open(os.path.join(CHECKOUT, "model_repository", name, "model.yml"), encoding="utf-8") as handle:
            catalog[name] = {"config": yaml.safe_load(handle)["config"]}
    return catalog


def _get(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def _post(url):
    req = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _digests(repo):
    return dict((name, hashlib.sha256(open(os.path.join(repo, name, "config.pbtxt"), "rb").read()).hexdigest()) for name in MODELS)


@pytest.fixture(scope="module")
def fleet(built_repository, tmp_path_factory):
    from ansible_collections.aiops.triton.plugins.module_utils import fleet as fleet_utils
    repo = str(tmp_path_factory.mktemp("fleet") / "models")
    shutil.copytree(built_repository, repo)
    catalog = _catalog()
    desired = fleet_utils.desired_models(CANARY_PINS, catalog)
    configs = dict((m["name"], m["config"]) for m in desired)
    for model in desired:
        result = run_module("triton_model_config", {"repository": repo, "name": model["name"], "config": model["config"],
                                                    "gpus": [], "models": configs})
        assert result.get("failed") is not True, result.get("msg")
    with TritonServer(repo) as server:
        yield server, repo, catalog


def run_verify(server, repo, catalog, out_dir, tmp_path):
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
              "triton_server_http_port": server.http_port, "triton_server_grpc_port": int(server.grpc_url.rsplit(":", 1)[1]),
              "triton_server_model_repository": repo,
              "triton_server_tools_venv": os.path.dirname(os.path.dirname(sys.executable)),
              "triton_rollout_groups": ["triton_canary", "triton_wave_1"], "triton_models_catalog": catalog}
    inventory = {"triton_servers": {"vars": common, "children": {
        "triton_canary": {"hosts": {"fleet-a": {"triton_models_list": CANARY_PINS}}},
        "triton_wave_1": {"hosts": {"fleet-b": {"triton_models_list": WAVE_PINS}}}}}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    return subprocess.run(["ansible-playbook", "-i", str(path), os.path.join(CHECKOUT, "playbooks", "verify.yml"),
                           "-e", "aiops_fleet_report_dir=%s" % out_dir, "-e", "aiops_fleet_latency_requests=10"],
                          capture_output=True, text=True, env=env, cwd=CHECKOUT, timeout=900, check=False)


def test_report_matches_the_real_fleet_and_changes_nothing(fleet, tmp_path):
    server, repo, catalog = fleet
    before = _digests(repo)
    index_before = _post(server.http_url + "/v2/repository/index")
    out_dir = str(tmp_path / "report")
    proc = run_verify(server, repo, catalog, out_dir, tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    html_path = os.path.join(out_dir, "fleet-report.html")
    assert "fleet report HTML: %s" % html_path in proc.stdout
    assert "changed=0" in proc.stdout.split("PLAY RECAP")[1]
    # read-only: the files and what Triton serves are as they were
    assert _digests(repo) == before
    assert _post(server.http_url + "/v2/repository/index") == index_before

    with open(os.path.join(out_dir, "fleet-report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    ready = dict((m, sorted(int(e["version"]) for e in index_before if e["name"] == m and e.get("state") == "READY")) for m in MODELS)
    version = _get(server.http_url + "/v2")["version"]
    hosts = dict((h["host"], h) for h in report["hosts"])
    assert sorted(hosts) == ["fleet-a", "fleet-b"] and report["rollout_groups"] == ["triton_canary", "triton_wave_1"]
    assert (hosts["fleet-a"]["group"], hosts["fleet-b"]["group"]) == ("triton_canary", "triton_wave_1")
    no_smi = shutil.which("nvidia-smi") is None
    for host in hosts.values():
        assert host["triton_version"] == version and host["reachable"] and host["ready"]
        assert [m["name"] for m in host["models"]] == MODELS
        if no_smi:
            assert host["gpus"] == [] and host["gpu_status"] == "not_installed"
        for model in host["models"]:
            assert model["ready"] == ready[model["name"]]
            assert model["golden"]["total"] > 0 and model["golden"]["passed"] == model["golden"]["total"], model["golden"]
            assert model["latency"]["requests"] == 10 and 0 < model["latency"]["p50_ms"] <= model["latency"]["p99_ms"]
    canary, wave = hosts["fleet-a"], hosts["fleet-b"]
    assert canary["drift"] == [] and canary["passed"] is True
    assert all(m["config_drift"] is False for m in canary["models"])
    assert wave["drift"] == ["anomaly_detector: READY versions [2], pinned [1]",
                             "anomaly_detector: config.pbtxt on the host differs from the one the inventory renders"]
    (anomaly,) = [m for m in wave["models"] if m["name"] == "anomaly_detector"]
    assert "-    versions: [ 2 ]" in anomaly["config_diff"] and "+    versions: [ 1 ]" in anomaly["config_diff"]
    assert wave["passed"] is False
    assert report["summary"] == {"hosts": 2, "passed": 1, "drifted": ["fleet-b"], "failed": [], "out_of_traffic": [],
                                 "gpu_unhealthy": [], "quarantined": [], "not_reported": []}
    # verify.yml read each host's GPU health (no nvidia-smi on this machine: a CPU host, healthy, not quarantined)
    assert all(host["gpu_health"] == {"verdict": "healthy", "reasons": [], "gpus": [], "xid_events": 0}
               and host["quarantined"] is None for host in hosts.values()), hosts
    # the one thing wrong, with the command that fixes it (verify.yml passes its inventory along)
    (drift,) = report["exceptions"]
    assert (drift["kind"], drift["hosts"]) == ("drifted", ["fleet-b"])
    assert drift["command"] == "ansible-playbook -i %s aiops.triton.models --limit fleet-b" % (tmp_path / "hosts.yml")
    assert "needs a person: Drift: anomaly_detector: READY versions [2], pinned [1]" in proc.stdout

    with open(html_path, encoding="utf-8") as handle:
        page = handle.read()
    assert page.index('<section id="exceptions">') < page.index('<section id="groups">') < page.index('<section id="hosts">')
    assert "<td>triton_canary</td>" in page and "<td>triton_wave_1</td>" in page
    assert page.count('<table class="detail"') == 2 and page.count('<tr data-h="fleet-') == 2 + 2 * len(MODELS)
    assert "<td class=\"bad\">READY versions [2], pinned [1]; config.pbtxt on the host differs" in page
    for name in MODELS:  # a latency plot per model, drawn into the page
        figure = page.split('<figure class="plot" data-model="%s">' % name, 1)[1].split("</figure>", 1)[0]
        assert "<svg viewBox=" in figure and figure.count("<rect ") == 4  # p50 and p99 boxes of both groups
    # self-contained: nothing fetched, the script inline
    assert "http://" not in page and "<link" not in page and "<script src" not in page
