"""The example production inventory's model configs pass the same checks the role runs on hosts."""

import glob
import os

import pytest
import yaml

from ansible_collections.aiops.triton.plugins.module_utils import model_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GROUP_VARS = os.path.join(ROOT, "inventories", "production", "group_vars")
GPUS = {"triton_gpu_servers": [0], "triton_cpu_servers": []}


def model_lists():
    for path in sorted(glob.glob(os.path.join(GROUP_VARS, "*", "*.yml"))):
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        group = os.path.basename(os.path.dirname(path))
        for model in data.get("triton_models_list", []):
            yield pytest.param(group, model, id="%s/%s" % (group, model["name"]))


@pytest.mark.parametrize("group,model", list(model_lists()))
def test_production_model_configs_are_valid(group, model):
    assert model["config"]["name"] == model["name"]
    assert ("versions" in model) != ("latest" in model)
    config = model_config.apply_host_overrides(model["config"], GPUS[group])
    model_config.validate(config, gpus=GPUS[group])
    text = model_config.render(config)
    assert model_config.parse(text) == model_config.normalize(config)


def test_a_gpu_the_host_lacks_is_refused():
    gpu_models = [p.values[1] for p in model_lists() if p.values[0] == "triton_gpu_servers"]
    config = dict(gpu_models[0]["config"], instance_group=[{"count": 1, "kind": "KIND_GPU", "gpus": [3]}])
    with pytest.raises(model_config.ModelConfigError, match="gpu"):
        model_config.apply_host_overrides(config, [0])
