"""model_config: schema errors with paths, canonical rendering, parsing, host overrides."""

import os
import time

import pytest
import yaml

from ansible_collections.aiops.triton.plugins.module_utils import model_config as mc

SEED = os.path.join(os.path.dirname(__file__), "fixtures", "seed")
SEED_MODELS = ("anomaly_detector", "alert_classifier", "alert_triage")


def load_seed(name):
    with open(os.path.join(SEED, name + ".yml")) as handle:
        return yaml.safe_load(handle)


def golden(name):
    with open(os.path.join(SEED, name + ".pbtxt")) as handle:
        return handle.read()


@pytest.fixture
def seed():
    return dict((name, load_seed(name)) for name in SEED_MODELS)


# -- schema ------------------------------------------------------------------------------------
@pytest.mark.parametrize("config, message", [
    ({"name": "m", "input": [{"name": "x", "data_type": "FP23"}]},
     "input[0].data_type: 'FP23' is not a valid DataType (TYPE_BOOL, TYPE_UINT8, "),
    ({"name": "m", "input": [{"name": "x", "dimz": [1]}]},
     "input[0].dimz: unknown field 'dimz' in ModelInput (did you mean 'dims'?)"),
    ({"name": "m", "max_batch_sise": 8}, "max_batch_sise: unknown field 'max_batch_sise' in ModelConfig (did you mean 'max_batch_size'?)"),
    ({"name": "m", "max_batch_size": "8"}, "max_batch_size: expected an integer, got str '8'"),
    ({"name": "m", "max_batch_size": True}, "max_batch_size: expected an integer, got bool True"),
    ({"name": "m", "input": {"name": "x"}}, "input: expected a list, got dict"),
    ({"name": "m", "input": ["x"]}, "input[0]: expected a mapping for ModelInput, got str"),
    ({"name": "m", "dynamic_batching": {"preserve_ordering": "yes"}}, "dynamic_batching.preserve_ordering: expected true or false, got str 'yes'"),
    ({"name": "m", "parameters": {"EXECUTION_ENV_PATH": {"string_value": 3}}},
     "parameters['EXECUTION_ENV_PATH'].string_value: expected a string, got int 3"),
    ({"name": "m", "instance_group": [{"kind": "GPU"}]}, "instance_group[0].kind: 'GPU' is not a valid Kind (KIND_AUTO, KIND_GPU, KIND_CPU, KIND_MODEL)"),
    ({"name": "m", "instance_group": [{"count": 2 ** 40}]}, "instance_group[0].count: Value out of range"),
    ({"name": "m", "dynamic_batching": {}, "sequence_batching": {}},
     "sequence_batching: only one of dynamic_batching, sequence_batching, ensemble_scheduling may be set"),
    ({"name": "m", "version_policy": {"latest": {"num_versions": 1}, "all": {}}}, "version_policy.all: only one of latest, all, specific may be set"),
    ({"name": 7}, "name: expected a string, got int 7"),
])
def test_schema_errors_name_the_path(config, message):
    with pytest.raises(mc.ModelConfigError) as err:
        mc.to_message(config)
    assert str(err.value).startswith(message)


def test_integer_map_keys_from_json_are_accepted():
    config = {"name": "m", "dynamic_batching": {"priority_levels": 2, "priority_queue_policy": {"2": {"max_queue_size": 5}}}}
    assert mc.normalize(config)["dynamic_batching"]["priority_queue_policy"] == {2: {"max_queue_size": 5}}


def test_empty_mapping_switches_a_feature_on():
    assert mc.normalize({"name": "m", "dynamic_batching": {}}) == {"name": "m", "dynamic_batching": {}}
    assert "dynamic_batching {\n}" in mc.render({"name": "m", "dynamic_batching": {}})


def test_normalize_drops_defaults_and_keeps_enum_names():
    assert mc.normalize({"name": "m", "max_batch_size": 0, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}]}) == {
        "name": "m", "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [2]}]}


# -- rendering ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SEED_MODELS)
def test_seed_configs_render_to_golden_bytes_and_validate(seed, name):
    mc.validate(seed[name], gpus=[0], models=seed)
    text = mc.render(seed[name])
    assert text == golden(name)
    assert mc.render(load_seed(name)) == text  # byte-stable across calls
    assert mc.parse(text) == mc.normalize(seed[name])


def test_render_is_independent_of_key_order(seed):
    config = seed["alert_classifier"]
    shuffled = dict(reversed(list(config.items())))
    shuffled["parameters"] = {"B": {"string_value": "2"}, "A": {"string_value": "1"}}
    config["parameters"] = {"A": {"string_value": "1"}, "B": {"string_value": "2"}}
    assert mc.render(shuffled) == mc.render(config)


def test_render_escapes_strings_and_shortens_floats():
    config = {"name": "m", "parameters": {"k": {"string_value": 'a "quoted"\nline \u4e2d'}},
              "sequence_batching": {"direct": {"minimum_slot_utilization": 0.1}}}
    text = mc.render(config)
    assert 'string_value: "a \\"quoted\\"\\nline \u4e2d"' in text
    assert "minimum_slot_utilization: 0.1\n" in text
    assert mc.parse(text) == mc.normalize(config)


def test_parse_reports_syntax_errors():
    with pytest.raises(mc.ModelConfigError) as err:
        mc.parse('name: "m"\ninput [ { name: "x" data_type: TYPE_FP23 } ]')
    assert str(err.value).startswith("config.pbtxt: 2:")
    assert "TYPE_FP23" in str(err.value)


def test_parse_reads_triton_documentation_style():
    text = """
    name: "m"  # comment
    backend: "python"
    input [ { name: "x", data_type: TYPE_FP32, dims: [ -1, 3 ] } ]
    output: { name: "y" data_type: TYPE_FP32 dims: 1 dims: 3 }
    version_policy: { specific: { versions: [1, 3] } }
    """
    assert mc.parse(text) == {
        "name": "m", "backend": "python", "version_policy": {"specific": {"versions": [1, 3]}},
        "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [-1, 3]}],
        "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1, 3]}],
    }


def test_rendering_100_configs_takes_well_under_a_second(seed):
    configs = []
    for index in range(100):
        config = dict(seed[SEED_MODELS[index % 3]])
        config["name"] = "model_%03d" % index
        configs.append(config)
    started = time.perf_counter()
    texts = [mc.render(config) for config in configs]
    elapsed = time.perf_counter() - started
    assert len(set(texts)) == 100
    assert elapsed < 0.5, "rendering 100 configs took %.3fs" % elapsed


# -- host overrides ----------------------------------------------------------------------------
def test_host_without_gpus_gets_cpu_instances(seed):
    config = mc.apply_host_overrides(seed["anomaly_detector"], [])
    assert config["instance_group"] == [{"count": 2, "kind": "KIND_CPU"}]
    mc.validate(config, gpus=[])
    assert mc.render(config) == golden("anomaly_detector.cpu")


def test_kind_auto_becomes_cpu_without_gpus():
    config = {"name": "m", "instance_group": [{"count": 1}, {"kind": "KIND_AUTO", "gpus": [1]}, {"kind": "KIND_MODEL"}]}
    assert mc.apply_host_overrides(config, [])["instance_group"] == [
        {"count": 1, "kind": "KIND_CPU"}, {"kind": "KIND_CPU"}, {"kind": "KIND_MODEL"}]


def test_cpu_moves_are_reported():
    changes = []
    config = {"name": "m", "instance_group": [{"count": 1}, {"kind": "KIND_GPU", "gpus": [0]}, {"kind": "KIND_CPU"}]}
    mc.apply_host_overrides(config, [], changes=changes)
    assert changes == ["instance_group[0]: KIND_AUTO -> KIND_CPU (this host has no NVIDIA GPU)",
                       "instance_group[1]: KIND_GPU -> KIND_CPU (this host has no NVIDIA GPU)"]


def test_broken_driver_host_is_refused_not_moved_to_cpu(seed):
    # nvidia-smi lists no GPU while the PCI bus shows two: never served on CPU in silence.
    changes = []
    with pytest.raises(mc.ModelConfigError) as err:
        mc.apply_host_overrides(seed["anomaly_detector"], [], pci_gpus=["0000:1b:00.0", "0000:43:00.0"], changes=changes)
    assert str(err.value) == ("instance_group[0].kind: KIND_GPU, and the PCI bus shows NVIDIA GPU(s) 0000:1b:00.0, 0000:43:00.0 "
                              "that the driver does not list: refusing to run this model on CPU. Fix the driver (nvidia-smi must "
                              "list the GPUs)")
    assert changes == []
    # a CPU model on such a host is left as it is
    cpu = {"name": "m", "instance_group": [{"kind": "KIND_CPU", "count": 1}]}
    assert mc.apply_host_overrides(cpu, [], pci_gpus=["0000:1b:00.0"]) == mc.normalize(cpu)


def test_gpu_the_host_lacks_is_refused(seed):
    with pytest.raises(mc.ModelConfigError) as err:
        mc.apply_host_overrides(seed["anomaly_detector"], [1, 2])
    assert str(err.value) == "instance_group[0].gpus: GPU 0 requested but this host has GPUs [1, 2]"


def test_gpu_host_keeps_gpu_groups(seed):
    config = mc.apply_host_overrides(seed["anomaly_detector"], [0, 1])
    assert config["instance_group"] == [{"count": 2, "gpus": [0], "kind": "KIND_GPU"}]


def test_ensemble_is_left_alone(seed):
    assert mc.apply_host_overrides(seed["alert_triage"], []) == mc.normalize(seed["alert_triage"])


def test_deep_merge_merges_mappings_and_replaces_lists():
    base = {"dynamic_batching": {"max_queue_delay_microseconds": 100, "preferred_batch_size": [4]}, "instance_group": [{"count": 2}]}
    merged = mc.deep_merge(base, {"dynamic_batching": {"preferred_batch_size": [8]}, "instance_group": [{"count": 1, "kind": "KIND_CPU"}]})
    assert merged == {"dynamic_batching": {"max_queue_delay_microseconds": 100, "preferred_batch_size": [8]},
                      "instance_group": [{"count": 1, "kind": "KIND_CPU"}]}
    assert base["dynamic_batching"]["preferred_batch_size"] == [4]
