"""Render model.yml's ``config`` to config.pbtxt for the local (build/test) repository.

Uses the collection's own renderer (plugins/module_utils/model_config.py) once it exists,
so the build and the triton_model_config module produce the same text; until then Triton's
ModelConfig proto from tritonclient does it.
"""

import copy
import os
import sys

import yaml

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _collection_renderer():
    sys.path.insert(0, os.path.join(CHECKOUT, ".collection"))
    try:
        from ansible_collections.aiops.triton.plugins.module_utils import model_config
    except ImportError:
        return None
    return model_config


def load_spec(model_dir):
    with open(os.path.join(model_dir, "model.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def pinned(spec):
    """The config serving exactly the spec's built versions, as the triton_models role pins them on hosts."""
    config = copy.deepcopy(spec["config"])
    if config.get("platform") != "ensemble":  # Triton refuses a version policy on an ensemble
        config["version_policy"] = {"specific": {"versions": sorted(spec["versions"])}}
    return config


def cpu_only(config):
    """A host without GPUs runs KIND_GPU instance groups on the CPU instead."""
    config = copy.deepcopy(config)
    for group in config.get("instance_group", []):
        if group.get("kind") == "KIND_GPU":
            group["kind"] = "KIND_CPU"
            group.pop("gpus", None)
    return config


def render(config, gpus=()):
    """config.pbtxt text for a host with GPU indices ``gpus`` (none: CPU instances)."""
    helper = _collection_renderer()
    if helper is not None:
        return helper.render(helper.apply_host_overrides(config, list(gpus)))
    if not gpus:
        config = cpu_only(config)
    from google.protobuf import json_format, text_format
    from tritonclient.grpc import model_config_pb2
    return text_format.MessageToString(json_format.ParseDict(config, model_config_pb2.ModelConfig()))
