"""One test per Triton load-time rule: each broken config is refused with Triton's words and the field's path."""

import copy

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import model_config as mc

BASE = {
    "name": "m",
    "backend": "python",
    "max_batch_size": 8,
    "input": [{"name": "INPUT", "data_type": "TYPE_FP32", "dims": [4, 4]}],
    "output": [{"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [16]}],
}


def variant(**changes):
    config = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def io(name="INPUT", **fields):
    entry = {"name": name, "data_type": "TYPE_FP32", "dims": [4, 4]}
    entry.update(fields)
    return entry


def seq(*controls):
    return {"control_input": [{"name": name, "control": [control]} for name, control in controls]}


CASES = {
    "name_required": (variant(name=""), "name: model configuration must specify 'name'"),
    "unknown_platform": (variant(backend=None, platform="onnxruntime"), "platform: unexpected platform type 'onnxruntime' for m"),
    "platform_backend_pair": (variant(backend="onnxruntime", platform="onnxruntim"),
                              "platform: unexpected 'platform' and 'backend' pair, got:onnxruntim, onnxruntime"),
    "ensemble_has_backend": (variant(platform="ensemble"), "backend: Ensemble model 'm' must have platform type 'ensemble' and empty backend type"),
    "max_batch_size_negative": (variant(max_batch_size=-1), "max_batch_size: 'max_batch_size' must be non-negative value for m"),
    "latest_zero_versions": (variant(version_policy={"latest": {}}),
                             "version_policy.latest.num_versions: at least one version must be available under the version policy of model 'm'"),
    "specific_no_versions": (variant(version_policy={"specific": {}}),
                             "version_policy.specific.versions: at least one version must be available"),
    "specific_negative_version": (variant(version_policy={"specific": {"versions": [1, -2]}}),
                                  "version_policy.specific.versions[1]: version -2 is not a version directory name"),
    "preferred_size_positive": (variant(dynamic_batching={"preferred_batch_size": [0]}),
                                "dynamic_batching.preferred_batch_size[0]: dynamic batching preferred size must be positive for m"),
    "preferred_size_le_max": (variant(dynamic_batching={"preferred_batch_size": [4, 16]}),
                              "dynamic_batching.preferred_batch_size[1]: dynamic batching preferred size must be <= max batch size for m"),
    "default_priority_level": (variant(dynamic_batching={"priority_levels": 3}),
                               "dynamic_batching.default_priority_level: default priority level must be in range [1, 3] for m"),
    "priority_queue_policy_level": (variant(dynamic_batching={"priority_levels": 2, "default_priority_level": 1, "priority_queue_policy": {3: {}}}),
                                    "dynamic_batching.priority_queue_policy[3]: priority queue policy must have priority level in range [1, 2] for m"),
    "preserve_ordering_levels": (variant(dynamic_batching={"preserve_ordering": True, "priority_levels": 2, "default_priority_level": 1}),
                                 "dynamic_batching.preserve_ordering: Only one priority level is allowed when 'preserve_ordering' is true for m"),
    "preserve_ordering_delay": (variant(dynamic_batching={"preserve_ordering": True, "default_queue_policy": {
        "timeout_action": "DELAY", "default_timeout_microseconds": 10}}),
        "dynamic_batching.default_queue_policy: Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for m"),
    "sequence_response_cache": (variant(sequence_batching={}, response_cache={"enable": True}),
                                "response_cache.enable: Response Cache does not currently support model m with sequence batching scheduler"),
    "control_tensor_name": (variant(sequence_batching={"control_input": [{"control": [{"kind": "CONTROL_SEQUENCE_START"}]}]}),
                            "sequence_batching.control_input[0].name: sequence batching control tensor must have a name for m"),
    "control_tensor_multiple_kinds": (variant(sequence_batching=seq(("S", {"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [0, 1]}),
                                                                    ("S", {"kind": "CONTROL_SEQUENCE_END", "int32_false_true": [0, 1]}))),
                                      "sequence_batching.control_input[1].name: sequence batching control tensor 'S' "
                                      "is specified for multiple control kinds for m"),
    "control_kind_multiple": (variant(sequence_batching=seq(("S", {"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [0, 1]}),
                                                            ("T", {"kind": "CONTROL_SEQUENCE_START", "int32_false_true": [0, 1]}))),
                              "sequence_batching.control_input[1].control[0]: sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m"),
    "control_no_value": (variant(sequence_batching=seq(("R", {"kind": "CONTROL_SEQUENCE_READY"}))),
                         "control[0]: sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' "
                         "for CONTROL_SEQUENCE_READY for m"),
    "control_two_values": (variant(sequence_batching=seq(("R", {"kind": "CONTROL_SEQUENCE_READY", "int32_false_true": [0, 1],
                                                                "fp32_false_true": [0, 1]}))),
                           "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true'"),
    "control_two_entries": (variant(sequence_batching=seq(("E", {"kind": "CONTROL_SEQUENCE_END", "bool_false_true": [True]}))),
                            "control[0].bool_false_true: sequence batching control 'bool_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_END"),
    "corrid_no_values": (variant(sequence_batching=seq(("C", {"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_UINT64",
                                                              "int32_false_true": [0, 1]}))),
                         "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID"),
    "corrid_type": (variant(sequence_batching=seq(("C", {"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "TYPE_FP32"}))),
                    "sequence_batching.control_input: unexpected data type for control CONTROL_SEQUENCE_CORRID for m"),
    "oldest_preferred_size": (variant(sequence_batching={"oldest": {"preferred_batch_size": [9]}}),
                              "sequence_batching.oldest.preferred_batch_size[0]: sequence batching preferred batch size must be <= max batch size for m"),
    "direct_slot_utilization": (variant(sequence_batching={"direct": {"minimum_slot_utilization": 1.5}}),
                                "sequence_batching.direct.minimum_slot_utilization: sequence batching minimum slot utilization must be in range (0.0, 1.0]"),
    "ensemble_scheduling_on_model": (variant(ensemble_scheduling={}),
                                     "ensemble_scheduling: ensemble scheduling cannot be set for model 'm' whose platform is not ensemble"),
    "decoupled_response_cache": (variant(model_transaction_policy={"decoupled": True}, response_cache={"enable": True}),
                                 "response_cache.enable: Response Cache does not currently support model m with 'decoupled' transaction policy"),
    "metric_identifier": (variant(model_metrics={"metric_control": [{"histogram_options": {"buckets": [1.0]}}]}),
                          "model_metrics.metric_control[0]: metric control must specify 'metric_identifier'"),
    "metric_buckets": (variant(model_metrics={"metric_control": [{"metric_identifier": {"family": "f"}, "histogram_options": {}}]}),
                       "model_metrics.metric_control[0].histogram_options.buckets: histogram options must specify non-empty 'buckets'"),
    "cpu_group_with_gpus": (variant(instance_group=[{"kind": "KIND_CPU", "gpus": [0]}]),
                            "instance_group[0].gpus: instance group m_0 of model m has kind KIND_CPU but specifies one or more GPU"),
    "model_group_with_gpus": (variant(instance_group=[{"name": "g", "kind": "KIND_MODEL", "gpus": [0]}]),
                              "instance_group[0].gpus: instance group g of model m has kind KIND_MODEL but specifies one or more GPUs"),
    "negative_gpu": (variant(instance_group=[{"kind": "KIND_GPU", "gpus": [-1]}]),
                     "instance_group[0].gpus: instance group m_0 of model m specifies invalid or unsupported gpu id -1"),
    "profile_not_tensorrt": (variant(instance_group=[{"kind": "KIND_CPU", "profile": ["0"]}]),
                             "instance_group[0].profile: instance group m_0 of model m and platform specifies profile field which is only supported"),
    "output_required": (variant(backend=None, platform="pytorch_libtorch", output=None),
                        "output: model configuration must contain at least one output, none were specified for m"),
    "io_name": (variant(input=[io(name="")]), "input[0].name: model input must specify 'name' for m"),
    "io_data_type": (variant(input=[io(data_type="TYPE_INVALID")]), "input[0].data_type: model input 'INPUT' must specify 'data_type' for m"),
    "io_dims": (variant(output=[{"name": "OUTPUT", "data_type": "TYPE_FP32"}]), "output[0].dims: model output 'OUTPUT' must specify 'dims' for m"),
    "io_zero_dim": (variant(input=[io(dims=[4, 0])]),
                    "input[0].dims: model input 'INPUT' dimension must be integer >= 1, or -1 to indicate a variable-size dimension for m"),
    "io_empty_reshape_nobatch": (variant(max_batch_size=0, input=[io(dims=[1], reshape={})]),
                                 "input[0].reshape: model input 'INPUT' cannot have empty reshape for non-batching model"),
    "io_reshape_zero": (variant(input=[io(reshape={"shape": [0, 16]})]),
                        "input[0].reshape: model input 'INPUT' reshape dimensions must be integer >= 1"),
    "io_reshape_count": (variant(input=[io(reshape={"shape": [15]})]), "input[0].reshape: model input 'INPUT' has different size for dims and reshape for m"),
    "io_reshape_variable_count": (variant(output=[io("OUTPUT", dims=[2, -1, 3], reshape={"shape": [2, -1, 3, -1]})]),
                                  "output[0].reshape: model output 'OUTPUT' has different number of variable-size dimensions for dims and reshape"),
    "io_reshape_variable_chunks": (variant(output=[io("OUTPUT", dims=[2, -1, 3], reshape={"shape": [3, -1, 2]})]),
                                   "output[0].reshape: model output 'OUTPUT' has different size for dims and reshape for m"),
    "io_duplicate_name": (variant(input=[io(), io()]), "input[1].name: model input 'INPUT' is also input[0]; tensor names must be unique for m"),
    "io_nchw_dims": (variant(input=[io(format="FORMAT_NCHW")]), "input[0].format: model input NHWC/NCHW require 3 dims for m"),
    "io_shape_tensor": (variant(output=[io("OUTPUT", is_shape_tensor=True)]),
                        "output[0].is_shape_tensor: shape tensors are only supported for TensorRT platform for m"),
    "io_non_linear": (variant(input=[io(is_non_linear_format_io=True)]),
                      "input[0].is_non_linear_format_io: Non-linear IO format is only supported for the TensorRT platform for m"),
    "batch_input_sources": (variant(batch_input=[{"kind": "BATCH_ELEMENT_COUNT", "target_name": ["B"], "data_type": "TYPE_INT32"}]),
                            "batch_input[0].source_input: batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0 for m"),
    "batch_input_type": (variant(batch_input=[{"kind": "BATCH_ELEMENT_COUNT", "source_input": ["INPUT"], "data_type": "TYPE_FP16"}]),
                         "batch_input[0].data_type: batch input data type must be TYPE_INT32 or TYPE_FP32 for m"),
    "batch_input_unknown_source": (variant(batch_input=[{"kind": "BATCH_ITEM_SHAPE", "source_input": ["X"], "data_type": "TYPE_INT32"}]),
                                   "batch_input[0].source_input: unknown source input name 'X' for m"),
    "batch_output_unknown_target": (variant(batch_output=[{"target_name": ["Y"], "source_input": ["INPUT"]}]),
                                    "batch_output[0].target_name: unknown target output name 'Y' for m"),
    "batch_output_target_twice": (variant(batch_output=[{"target_name": ["OUTPUT", "OUTPUT"], "source_input": ["INPUT"]}]),
                                  "batch_output[0].target_name: target output name 'OUTPUT' can only be specified once for m"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule(case):
    config, message = CASES[case]
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config)
    assert message in str(err.value)


def test_base_config_is_valid():
    mc.validate(BASE)
    mc.validate(BASE, gpus=[], models={})


@pytest.mark.parametrize("config, gpus, message", [
    (variant(instance_group=[{"kind": "KIND_GPU", "gpus": [1]}]), [0],
     "instance_group[0].gpus: instance group m_0 of model m specifies invalid or unsupported gpu id 1. "
     "GPUs with at least the minimum required CUDA compute compatibility are: 0"),
    (variant(instance_group=[{"kind": "KIND_GPU"}]), [],
     "instance_group[0].kind: instance group m_0 of model m has kind KIND_GPU but no GPUs are available"),
])
def test_instance_groups_against_host_gpus(config, gpus, message):
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config, gpus=gpus)
    assert str(err.value) == message


def test_gpu_checks_need_host_facts():
    mc.validate(variant(instance_group=[{"kind": "KIND_GPU", "gpus": [3]}]))  # gpus=None: no host check
    mc.validate(variant(instance_group=[{"kind": "KIND_AUTO", "gpus": [3]}]))  # no host facts: AUTO is not resolved
    mc.validate(variant(instance_group=[{"kind": "KIND_AUTO"}]), gpus=[])  # AUTO without gpus falls back to CPU and loads
    mc.validate(variant(instance_group=[{"kind": "KIND_AUTO", "gpus": [0]}]), gpus=[0, 1])  # resolves to GPU 0


# -- rules added for issue 11; Triton 2.51's own verdict on each is recorded in
# tests/integration/test_model_config_triton_verdicts.py, which runs the real tritonserver ----------
def warmup(batch_size=1, **inputs):
    sample = {"name": "w", "batch_size": batch_size}
    sample["inputs"] = inputs if inputs else {"INPUT": {"data_type": "TYPE_FP32", "dims": [4, 4], "zero_data": True}}
    return [sample]


def feed(data_type="TYPE_FP32", dims=(4, 4), **source):
    entry = {"data_type": data_type, "dims": list(dims)}
    entry.update(source or {"zero_data": True})
    return entry


NEW_RULES = {
    # Triton: "failed to run warmup sample 'w': batch size 9 for 'm_0', max allowed is 8" (model fails to load)
    "warmup_batch_over_max": (variant(model_warmup=warmup(9)),
                              "model_warmup[0].batch_size: failed to run warmup sample 'w': batch size 9 for 'm', max allowed is 8"),
    # Triton: "batch size 2 for 'm_0', max allowed is 0": a model without batching takes one request per warmup execution
    "warmup_batch_without_batching": (variant(max_batch_size=0, model_warmup=warmup(2)),
                                      "model_warmup[0].batch_size: failed to run warmup sample 'w': batch size 2 for 'm', max allowed is 0"),
    # Triton: "expected 2 inputs but got 1 inputs ... missing required input(s) ['B']"
    "warmup_missing_input": (variant(input=[io("INPUT"), io("B")], model_warmup=warmup()),
                             "model_warmup[0].inputs: warmup sample 'w' for model 'm' is missing required input(s) ['B']. "
                             "Please provide all required input(s)."),
    "warmup_wrong_data_type": (variant(model_warmup=warmup(INPUT=feed("TYPE_INT32"))),
                               "model_warmup[0].inputs['INPUT'].data_type: inference input 'INPUT' data-type is 'TYPE_INT32', "
                               "but model 'm' expects 'TYPE_FP32'"),
    "warmup_variable_dims": (variant(model_warmup=warmup(INPUT=feed(dims=(4, -1)))),
                             "model_warmup[0].inputs['INPUT'].dims: warmup setting expects all variable-size dimensions are specified "
                             "for input 'INPUT'"),
    "warmup_no_data_source": (variant(model_warmup=warmup(INPUT={"data_type": "TYPE_FP32", "dims": [4, 4]})),
                              "model_warmup[0].inputs['INPUT']: warmup setting expects input 'INPUT' to have input_data_type set"),
    # NormalizeInstanceGroup resolves AUTO to CPU (gpus kept) on a host lacking a listed GPU; ValidateInstanceGroup refuses it
    "auto_with_gpus_on_cpu_host": ((variant(instance_group=[{"kind": "KIND_AUTO", "gpus": [0]}]), []),
                                   "instance_group[0].gpus: instance group m_0 of model m has kind KIND_CPU but specifies one or more GPU"),
    "auto_with_missing_gpu": ((variant(instance_group=[{"kind": "KIND_AUTO", "gpus": [3]}]), [0]),
                              "instance_group[0].gpus: instance group m_0 of model m has kind KIND_CPU but specifies one or more GPU"),
    # Beyond Triton (it loads these): a negative count and a platform served by another backend
    "negative_count": (variant(instance_group=[{"kind": "KIND_CPU", "count": -1}]),
                       "instance_group[0].count: instance group m_0 of model m has count -1; give a count >= 1, or leave it unset (0) "
                       "for Triton's default"),
    "platform_with_other_backend": (variant(platform="onnxruntime_onnx"),
                                    "backend: platform 'onnxruntime_onnx' is served by backend 'onnxruntime', but backend is 'python' for m"),
}


@pytest.mark.parametrize("case", sorted(NEW_RULES))
def test_new_rules_refuse_with_path_and_reason(case):
    config, message = NEW_RULES[case]
    gpus = None
    if isinstance(config, tuple):
        config, gpus = config
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config, gpus=gpus)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize("config", [
    variant(model_warmup=warmup(8)),                                             # batch size up to max_batch_size
    variant(max_batch_size=0, model_warmup=warmup(1)),
    variant(model_warmup=warmup(0, B=feed())),                                   # batch 0: Triton skips the sample
    variant(input=[io("INPUT"), io("B", optional=True)], model_warmup=warmup()),  # optional input may be left out
    variant(model_warmup=warmup(INPUT=feed(random_data=True))),
    variant(model_warmup=warmup(INPUT=feed(input_data_file="raw"))),
    variant(instance_group=[{"kind": "KIND_CPU", "count": 0}]),                 # 0: Triton's default count
    variant(platform="onnxruntime_onnx", backend="onnxruntime"),
    variant(platform="pytorch_libtorch", backend="pytorch"),
], ids=["batch_eq_max", "nobatch_1", "batch_0", "optional_input", "random_data", "data_file", "count_0", "onnx_onnxruntime",
        "libtorch_pytorch"])
def test_new_rules_accept_what_triton_loads(config):
    mc.validate(config, gpus=[])


def test_variable_reshape_with_matching_chunks_is_valid():
    mc.validate(variant(output=[io("OUTPUT", dims=[2, 4, -1, 6], reshape={"shape": [8, -1, 1, 6]})]))


# -- ensembles ---------------------------------------------------------------------------------
def member(name, inputs, outputs, max_batch_size=8, decoupled=False):
    config = {"name": name, "backend": "identity", "max_batch_size": max_batch_size,
              "input": [io(n, dims=[16]) for n in inputs], "output": [io(n, dims=[16]) for n in outputs]}
    if decoupled:
        config["model_transaction_policy"] = {"decoupled": True}
    return config


def ensemble(steps, inputs=("IN",), outputs=("OUT",), max_batch_size=8, **extra):
    config = {"name": "ens", "platform": "ensemble", "max_batch_size": max_batch_size,
              "input": [io(n, dims=[16]) for n in inputs], "output": [io(n, dims=[16]) for n in outputs],
              "ensemble_scheduling": {"step": [{"model_name": m, "input_map": i, "output_map": o} for m, i, o in steps]}}
    config.update(extra)
    return config


CHAIN = [("a", {"X": "IN"}, {"Y": "mid"}), ("b", {"X": "mid"}, {"Y": "OUT"})]
MODELS = {"a": member("a", ["X"], ["Y"]), "b": member("b", ["X"], ["Y"])}

ENSEMBLE_CASES = {
    "ensemble_scheduling_missing": (dict(ensemble(CHAIN), ensemble_scheduling=None), None,
                                    "ensemble_scheduling: ensemble scheduling must be set for ensemble ens whose platform is ensemble"),
    "instance_group_set": (ensemble(CHAIN, instance_group=[{"kind": "KIND_CPU"}]), None,
                           "instance_group: instance group should not be specified for ensemble 'ens'"),
    "optimization_set": (ensemble(CHAIN, optimization={"graph": {"level": 1}}), None, "optimization should not be specified for ensemble 'ens'"),
    "model_warmup_set": (ensemble(CHAIN, model_warmup=[{"name": "w"}]), None, "model_warmup can not be specified for ensemble 'ens'"),
    "no_step": (dict(ensemble(CHAIN), ensemble_scheduling={}), None, "ensemble_scheduling.step: must specify 'step' for ensemble 'ens'"),
    "no_model_name": (ensemble([("", {"X": "IN"}, {"Y": "OUT"})]), None,
                      "ensemble_scheduling.step[0].model_name: must specify 'model_name' in step 0 of ensemble 'ens'"),
    "no_input_map": (ensemble([("a", {}, {"Y": "OUT"})]), None, "must specify 'input_map' in step 0 of ensemble 'ens'"),
    "output_overmapped": (ensemble([("a", {"X": "IN"}, {"Y": "OUT"}), ("b", {"X": "IN"}, {"Y": "OUT"})]), None,
                          "ensemble tensor 'OUT' can appear in an output map only once for ensemble 'ens' step 1"),
    "input_unused": (ensemble(CHAIN, inputs=("IN", "IN2")), None, "input[1]: ensemble input 'IN2' for ensemble ens' is not used"),
    "output_not_written": (ensemble([("a", {"X": "IN"}, {"Y": "OUT"}), ("b", {"X": "loose"}, {"Y": "OUT2"})], outputs=("OUT", "OUT2")), None,
                           "output[1]: output 'OUT2' for ensemble 'ens' is not written: at least one of its depending tensors, 'loose', is not connected"),
    "tensor_unused": (ensemble([("a", {"X": "IN"}, {"Y": "OUT"}), ("b", {"X": "IN"}, {"Y": "dangling"})]), None,
                      "ensemble tensor 'dangling' is unused in ensemble 'ens'"),
    "missing_model": (ensemble(CHAIN), {"a": MODELS["a"]}, "ensemble ens contains models that are not available or ambiguous: b"),
    "circular": (ensemble([("inner", {"IN": "IN"}, {"OUT": "OUT"})]),
                 {"inner": dict(ensemble([("ens", {"IN": "IN"}, {"OUT": "OUT"})]), name="inner")},
                 "circular dependency between ensembles: ens -> ... -> inner -> ens"),
    "batch_size": (ensemble(CHAIN, max_batch_size=16), MODELS,
                   "ensemble ens allows maximum batch size 16, but it contains model a which only allows maximum batch size to be 8"),
    "non_existing_input": (ensemble([("a", {"X": "IN", "Z": "IN"}, {"Y": "mid"}), CHAIN[1]]), MODELS,
                           "in ensemble ens, ensemble tensor IN is mapping to non-existing input Z in model a"),
    "unmapped_input": (ensemble([("c", {"X": "IN"}, {"Y": "OUT"})]), {"c": member("c", ["X", "W"], ["Y"])},
                       "in ensemble ens, input W in model c is not mapped to any ensemble tensors"),
    "non_existing_output": (ensemble([("a", {"X": "IN"}, {"Q": "OUT"})]), MODELS,
                            "in ensemble ens, ensemble tensor OUT is mapped from non-existing output Q in model a"),
    "inconsistent_type": (ensemble(CHAIN), {"a": MODELS["a"], "b": dict(member("b", [], ["Y"]), input=[io("X", dims=[16], data_type="TYPE_INT32")])},
                          "in ensemble ens, ensemble tensor mid: inconsistent data type: TYPE_FP32 is inferred from model a while TYPE_INT32"),
    "inconsistent_shape": (ensemble(CHAIN), {"a": MODELS["a"], "b": dict(member("b", [], ["Y"]), input=[io("X", dims=[4])])},
                           "in ensemble ens, ensemble tensor mid: inconsistent shape: [-1,16] is inferred from model a while [-1,4] is inferred from model b"),
    "decoupled_branching": (ensemble([("a", {"X": "IN"}, {"Y": "m1"}), ("d", {"X": "IN"}, {"Y": "m2"}), ("j", {"X": "m1", "W": "m2"}, {"Y": "m3"}),
                                      ("b", {"X": "m3"}, {"Y": "OUT"})]),
                            {"a": MODELS["a"], "b": MODELS["b"], "d": member("d", ["X"], ["Y"], decoupled=True), "j": member("j", ["X", "W"], ["Y"])},
                            "in ensemble ens, step of model 'j' receives inputs originated from different decoupled models"),
}


@pytest.mark.parametrize("case", sorted(ENSEMBLE_CASES))
def test_ensemble_rule(case):
    config, models, message = ENSEMBLE_CASES[case]
    config = dict((k, v) for k, v in config.items() if v is not None)
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config, models=models)
    assert message in str(err.value)


def test_valid_chain_passes_wiring_checks():
    mc.validate(ensemble(CHAIN), models=MODELS)


def test_nonbatching_member_with_expanded_shape_is_consistent():
    # ensemble_utils.cc: [-1,16] of a non-batching model matches [16] of a batching one.
    nobatch = dict(member("b", [], ["Y"], max_batch_size=0), input=[io("X", dims=[-1, 16])])
    mc.validate(ensemble(CHAIN), models={"a": MODELS["a"], "b": nobatch})


def test_invalid_member_config_is_reported_under_models():
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(ensemble(CHAIN), models={"a": {"name": "a", "bogus": 1}})
    assert str(err.value).startswith("models['a'].bogus: unknown field 'bogus'")


# -- fields left to Triton's auto-complete (issue 22 item 6; verdicts: tests/integration/test_model_config_triton_verdicts.py)
@pytest.mark.parametrize("files, filled", [
    (["model.py"], {"backend": "python"}),
    (["model.onnx", "model.py"], {"platform": "onnxruntime_onnx", "backend": "onnxruntime"}),
    (["model.plan"], {"platform": "tensorrt_plan", "backend": "tensorrt"}),
    (["model.savedmodel"], {"platform": "tensorflow_savedmodel", "backend": "tensorflow"}),
])
def test_no_platform_nor_backend_is_filled_from_the_first_version_directory(files, filled):
    assert mc.validate(variant(backend=None), version_files=files) == filled


def test_no_platform_nor_backend_and_no_model_file_is_refused_with_tritons_words():
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(variant(backend=None), version_files=["weights.bin"])
    assert str(err.value) == ("platform: Invalid model name: Could not determine backend for model 'm' with no backend in model "
                              "configuration. Expected model name of the form 'model.<backend_name>'.")


def test_no_platform_nor_backend_and_no_model_file_takes_the_backend_after_the_names_dot():
    assert mc.validate(variant(name="m.identity", backend=None), version_files=["weights.bin"]) == {"backend": "identity"}


def test_no_platform_nor_backend_without_the_files_is_left_to_triton():
    assert mc.validate(variant(backend=None)) is None
    assert mc.validate(variant(backend=None, output=None)) is None
    assert mc.validate(variant(backend=None, default_model_filename="model.py", output=None)) == {"backend": "python"}
    assert mc.validate(BASE) == {}


def test_python_backend_needs_no_output_others_do():
    mc.validate(variant(output=None))
    mc.validate(variant(backend=None, output=None), version_files=["model.py"])
    with pytest.raises(mc.ModelConfigError, match="^output: model configuration must contain at least one output"):
        mc.validate(variant(backend=None, output=None), version_files=["model.onnx"])


@pytest.mark.parametrize("runtime", ["../dummy_runtime/libtriton_identity.so", "..", "a/../../x.so", "/../x.so"])
def test_runtime_escaping_the_backend_directory_is_refused_with_tritons_words(runtime):
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(variant(runtime=runtime))
    assert str(err.value) == ("runtime: backend library name '%s' escapes backend directory, for model 'm', check model config "
                              "runtime field" % runtime)


@pytest.mark.parametrize("runtime", ["libtriton_python.so", "./libtriton_python.so", "sub/../libtriton_python.so", "/abs/x.so", "model.py"])
def test_runtime_inside_the_backend_directory_is_accepted(runtime):
    mc.validate(variant(runtime=runtime))
