"""Every model.yml is a valid Triton ModelConfig for CPU and GPU hosts, and its sources exist."""

import os

import pytest
import yaml

from ansible_collections.aiops.triton.plugins.module_utils import model_config
from model_repository import publish

SOURCES = os.path.dirname(os.path.abspath(publish.__file__))
MODELS = ("anomaly_detector", "alert_classifier", "metric_forecaster", "ops_pipeline")


def _specs():
    specs = {}
    for model in MODELS:
        with open(os.path.join(SOURCES, model, "model.yml"), encoding="utf-8") as handle:
            specs[model] = yaml.safe_load(handle)
    return specs


@pytest.mark.parametrize("gpus", [[0], []], ids=["gpu-host", "cpu-host"])
@pytest.mark.parametrize("model", MODELS)
def test_spec_validates_as_triton_would(model, gpus):
    specs = _specs()
    configs = {name: model_config.apply_host_overrides(spec["config"], gpus) for name, spec in specs.items()}
    assert specs[model]["name"] == specs[model]["config"]["name"] == model
    model_config.validate(configs[model], gpus=gpus, models=configs)


def test_cpu_host_runs_the_gpu_model_on_cpu():
    config = model_config.apply_host_overrides(_specs()["anomaly_detector"]["config"], [])
    assert [g["kind"] for g in config["instance_group"]] == ["KIND_CPU"]
    assert 'kind: KIND_CPU' in model_config.render(config)


@pytest.mark.parametrize("model", ["alert_classifier", "metric_forecaster"])
def test_python_models_ship_their_code_for_every_version(model):
    spec = _specs()[model]
    for version in spec["versions"]:
        assert os.path.isfile(os.path.join(SOURCES, model, str(version), "model.py"))


def test_required_files_follow_the_config():
    specs = _specs()
    assert publish.required_files(specs["anomaly_detector"]["config"]) == ["golden_cases.json", "model.onnx"]
    assert publish.required_files(specs["alert_classifier"]["config"]) == ["golden_cases.json", "model.py", "classifier.skops"]
    assert publish.required_files(specs["metric_forecaster"]["config"]) == ["golden_cases.json", "model.py", "prophet_model.json"]
    assert publish.required_files(specs["ops_pipeline"]["config"]) == ["golden_cases.json"]


def test_ensemble_wires_existing_tensors():
    specs = _specs()
    steps = specs["ops_pipeline"]["config"]["ensemble_scheduling"]["step"]
    for step in steps:
        target = specs[step["model_name"]]["config"]
        assert set(step["input_map"]) == {t["name"] for t in target["input"]}
        assert set(step["output_map"]) == {t["name"] for t in target["output"]}
