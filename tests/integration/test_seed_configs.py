"""The seed article's three configs, rendered by triton_model_config, load in the real Triton.

Acceptance of the config module: rendered from data byte-stably, fitted to this GPU-less host by the
per-host override (KIND_GPU instance groups become KIND_CPU), and served by tritonserver 2.51 with
the collection's trained artifacts. The seed's EXECUTION_ENV_PATH names a directory this machine does
not have; the test points it at this venv (an unpacked environment with bin/activate), which is the
per-host override an operator makes.
"""

import json
import os
import shutil
import sys
import urllib.request

import pytest
import yaml

from triton_fixtures import TritonServer

from ansible_collections.aiops.triton.plugins.module_utils import model_config

SEED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "unit", "plugins", "module_utils", "fixtures", "seed")


def seed(name):
    with open(os.path.join(SEED, name + ".yml")) as handle:
        return yaml.safe_load(handle)


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def seed_repository(built_repository, tmp_path_factory):
    repo = tmp_path_factory.mktemp("seed-repo")
    configs = {name: seed(name) for name in ("anomaly_detector", "alert_classifier", "alert_triage")}
    configs["alert_classifier"]["parameters"]["EXECUTION_ENV_PATH"]["string_value"] = sys.prefix
    for name, config in configs.items():
        fitted = model_config.apply_host_overrides(config, [])
        model_config.validate(fitted, gpus=[], models=configs)
        text = model_config.render(fitted)
        assert text == model_config.render(model_config.parse(text)), "render is not byte-stable"
        os.makedirs(str(repo / name))
        (repo / name / "config.pbtxt").write_text(text)
    for name, versions in (("anomaly_detector", ("1", "2")), ("alert_classifier", ("1",))):
        for version in versions:
            shutil.copytree(os.path.join(built_repository, name, version), str(repo / name / version))
    os.makedirs(str(repo / "alert_triage" / "1"))
    return str(repo)


def test_the_override_turned_gpu_instances_into_cpu(seed_repository):
    text = open(os.path.join(seed_repository, "anomaly_detector", "config.pbtxt")).read()
    assert "KIND_CPU" in text and "KIND_GPU" not in text and "gpus" not in text


def test_a_gpu_this_host_lacks_is_refused():
    with pytest.raises(model_config.ModelConfigError, match="gpu"):
        model_config.apply_host_overrides(seed("anomaly_detector"), [1])


def test_seed_configs_load_and_serve(seed_repository):
    with TritonServer(seed_repository) as server:
        index = post(server.http_url + "/v2/repository/index", {})
        ready = sorted((m["name"], m["version"]) for m in index if m.get("state") == "READY")
        # latest-1 version policy: only anomaly_detector v2 serves
        assert ready == [("alert_classifier", "1"), ("alert_triage", "1"), ("anomaly_detector", "2")], index
        window = [[[float((step * metric) % 7) for metric in range(20)] for step in range(60)]] * 2
        out = post(server.http_url + "/v2/models/alert_triage/infer", {"inputs": [
            {"name": "metrics_input", "datatype": "FP32", "shape": [2, 60, 20], "data": window},
            {"name": "alert_text", "datatype": "BYTES", "shape": [2, 1],
             "data": [["Pod memory usage exceeds 90% threshold"], ["Disk space on /dev/sda1 is 95% full"]]},
        ]})
        outputs = {o["name"]: o for o in out["outputs"]}
        assert outputs["class_label"]["data"] == ["memory", "disk"]
        assert outputs["anomaly_labels"]["shape"] == [2, 20]
        assert all(0.0 <= s <= 1.0 for s in outputs["anomaly_score"]["data"])
