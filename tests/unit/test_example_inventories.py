"""The example production inventory's model sets pass the same checks the role runs on hosts.

Each rollout group's list is merged over the catalog (as the role does) and checked for a GPU host and
a CPU host, since every rollout group there mixes both.
"""

import glob
import os

import pytest
import yaml

from ansible_collections.aiops.triton.plugins.module_utils import fleet, model_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GROUP_VARS = os.path.join(ROOT, "inventories", "production", "group_vars")
HOSTS = {"gpu": [0], "cpu": []}


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


CATALOG = load(os.path.join(GROUP_VARS, "triton_servers", "rollout.yml"))["triton_models_catalog"]


def model_lists():
    for path in sorted(glob.glob(os.path.join(GROUP_VARS, "*", "*.yml"))):
        group = os.path.basename(os.path.dirname(path))
        models = load(path).get("triton_models_list")
        if models is not None:
            for kind in sorted(HOSTS):
                yield pytest.param(group, models, kind, id="%s/%s" % (group, kind))


def test_every_rollout_group_has_a_list():
    groups = load(os.path.join(GROUP_VARS, "triton_servers", "rollout.yml"))["triton_rollout_groups"]
    assert sorted(p.values[0] for p in model_lists() if p.values[2] == "gpu") == sorted(groups)


@pytest.mark.parametrize("group,models,kind", list(model_lists()))
def test_production_model_sets_are_valid(group, models, kind):
    desired = fleet.desired_models(models, CATALOG)
    configs = dict((m["name"], m["config"]) for m in desired)
    for model in desired:
        assert model["config"]["version_policy"] == {"specific": {"versions": model["versions"]}}
        config = model_config.apply_host_overrides(model["config"], HOSTS[kind])
        model_config.validate(config, gpus=HOSTS[kind], models=dict((k, v) for k, v in configs.items() if k != model["name"]))
        text = model_config.render(config)
        assert model_config.parse(text) == model_config.normalize(config)


def test_a_gpu_the_host_lacks_is_refused():
    config = dict(CATALOG["anomaly_detector"]["config"], instance_group=[{"count": 1, "kind": "KIND_GPU", "gpus": [3]}])
    with pytest.raises(model_config.ModelConfigError, match="gpu"):
        model_config.apply_host_overrides(config, [0])
