# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks Triton makes when it loads a model configuration, before we write one.

Each rule is ported from triton-inference-server/core (commit 73aad7c, 2026-06):
``src/model_config_utils.cc`` (NormalizeModelConfig, ValidateModelConfig,
ValidateInstanceGroup, ValidateModelIOConfig, ValidateBatchIO, the sequence-control
helpers, ValidateEnsembleSchedulingConfig, ValidateModelMetrics),
``src/ensemble_scheduler/ensemble_utils.cc`` (cross-model ensemble wiring) and
``src/model_repository_manager/model_repository_manager.cc`` (missing models, cycles).
Messages keep Triton's own wording after a path prefix, so the expected messages of
server ``qa/L0_model_config`` are found verbatim in ours.

Backend-dependent checks (a config against the model file: dims, dtypes, tensor
names) cannot be made without the backend and are not attempted.

A config may leave fields to Triton's auto-complete. 'platform'/'backend': Triton fills them at
load from ``default_model_filename`` or the files of the model's first version directory
(AutoCompleteBackendFields, done even under --disable-auto-complete-config); with those files
given (``version_files``) the same choice is made here and checked, without them the choice is
left to Triton and the checks that need a backend are skipped. 'output': the python backend
does not require one (its model.py's auto_complete_config may add them).
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import posixpath

from ansible_collections.aiops.triton.plugins.module_utils.model_config_errors import ModelConfigError

WILDCARD_DIM = -1
ENSEMBLE = "ensemble"
TENSORRT_PLATFORM = "tensorrt_plan"

# core src/model_config_utils.cc AutoCompleteBackendFields / GetBackendTypeFromPlatform /
# GetBackendType: the backend each known platform implies.
PLATFORM_BACKENDS = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "libtorch": "pytorch",
    "torch_aoti": "pytorch",
}
KNOWN_BACKENDS = {"tensorflow": "tensorflow", "tensorrt": "tensorrt", "onnxruntime": "onnxruntime", "pytorch": "pytorch"}
PYTHON_BACKEND = "python"
# AutoCompleteBackendFields: the model file name that makes Triton pick each platform/backend, in the
# order it tries them, as (file, platform, backend).
AUTOFILL_FILES = (
    ("model.savedmodel", "tensorflow_savedmodel", ""),
    ("model.graphdef", "tensorflow_graphdef", ""),
    ("model.plan", TENSORRT_PLATFORM, ""),
    ("model.onnx", "onnxruntime_onnx", ""),
    ("model.pt", "pytorch_libtorch", ""),
    ("model.py", "", PYTHON_BACKEND),
)
_SINK = "\x00sink"
CORRID_TYPES = ("TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING")


def _fail(path, text):
    raise ModelConfigError("%s: %s" % (path, text) if path else text)


def _enum(message, field):
    """Enum field of a proto as its name."""
    descriptor = message.DESCRIPTOR.fields_by_name[field].enum_type
    return descriptor.values_by_number[getattr(message, field)].name


def auto_complete(config, version_files=None):
    """What Triton fills in at load for a config naming neither platform nor backend: a dict with
    'platform' and/or 'backend' ({} when the config names one), None when it depends on files not given.

    ``version_files``: names in the model's first version directory (None: not known here)."""
    if config.platform or config.backend:
        return {}
    wanted = config.default_model_filename
    if not wanted:
        if version_files is None:
            return None
        wanted = next((entry[0] for entry in AUTOFILL_FILES if entry[0] in version_files), "")
    for filename, platform, backend in AUTOFILL_FILES:
        if filename == wanted:
            filled = {"platform": platform} if platform else {}
            filled["backend"] = backend or PLATFORM_BACKENDS[platform]
            return filled
    # Triton 2.51's last try ("attempting autofill of custom backend"): the backend named after the model
    # name's first dot, which a name without a dot does not have.
    if "." not in config.name:
        _fail("platform", "Invalid model name: Could not determine backend for model '%s' with no backend in model "
              "configuration. Expected model name of the form 'model.<backend_name>'." % config.name)
    return {"backend": config.name.split(".", 1)[1]}


def check(config, gpus=None, models=None, version_files=None):
    """Run every rule on a ModelConfig proto; ``models`` maps name -> ModelConfig proto; ``version_files``
    lists the model's first version directory (see auto_complete). Returns what Triton will fill in."""
    name = config.name
    if not name:
        _fail("name", "model configuration must specify 'name'")
    filled = auto_complete(config, version_files)
    if filled is None:
        backend = None  # Triton picks it from the model's files at load: checks needing it are skipped
    else:
        if filled.get("platform"):
            config = _copy_with(config, platform=filled["platform"])
        backend = filled.get("backend") or _effective_backend(config)
        _check_platform(config, backend)
    _check_runtime(config)
    if config.max_batch_size < 0:
        _fail("max_batch_size", "'max_batch_size' must be non-negative value for " + name)
    _check_version_policy(config)
    if config.HasField("dynamic_batching"):
        _check_dynamic_batching(config)
    if config.HasField("sequence_batching"):
        _check_sequence_batching(config)
    if config.HasField("ensemble_scheduling"):
        _check_ensemble_scheduling(config)
        if models is not None:
            check_ensemble_wiring(config, models)
    elif config.platform == ENSEMBLE:
        _fail("ensemble_scheduling", "ensemble scheduling must be set for ensemble %s whose platform is %s" % (name, ENSEMBLE))
    if config.model_transaction_policy.decoupled and config.response_cache.enable:
        _fail("response_cache.enable", "Response Cache does not currently support model %s with 'decoupled' transaction policy. "
              "Please disable the response cache." % name)
    if config.HasField("model_metrics"):
        _check_model_metrics(config)
    _check_instance_groups(config, gpus)
    _check_io(config, backend)
    _check_warmup(config)
    return filled


def _copy_with(config, **fields):
    copied = type(config)()
    copied.CopyFrom(config)
    for field, value in fields.items():
        setattr(copied, field, value)
    return copied


def _check_runtime(config):
    """TritonModel's backend library lookup: 'runtime' is joined to each directory searched (version,
    model, the backend's own) and must stay inside it; Triton refuses it once found outside, and cannot
    find it otherwise."""
    if not config.runtime:
        return
    if not posixpath.normpath("/searched/" + config.runtime).startswith("/searched/"):
        _fail("runtime", "backend library name '%s' escapes backend directory, for model '%s', check model config runtime "
              "field" % (config.runtime, config.name))


def _effective_backend(config):
    """The backend Triton fills in from the platform (AutoCompleteBackendFields)."""
    if config.backend:
        return config.backend
    return PLATFORM_BACKENDS.get(config.platform, "")


def _check_platform(config, backend):
    name = config.name
    if not config.platform and not backend:
        _fail("platform", "must specify 'platform' or 'backend' for '%s'" % name)
    if not backend and config.platform != ENSEMBLE:
        _fail("platform", "unexpected platform type '%s' for %s" % (config.platform, name))
    if config.backend and config.platform == ENSEMBLE:
        _fail("backend", "Ensemble model '%s' must have platform type '%s' and empty backend type" % (name, config.platform))
    known = KNOWN_BACKENDS.get(config.backend)
    if config.backend and known is not None and known != PLATFORM_BACKENDS.get(config.platform):
        _fail("platform", "unexpected 'platform' and 'backend' pair, got:%s, %s" % (config.platform, config.backend))
    implied = PLATFORM_BACKENDS.get(config.platform)
    if config.backend and implied is not None and config.backend != implied:
        # Our rule: Triton loads this with 'backend' and ignores the platform, so the model file the
        # platform names (model.onnx, model.plan, ...) is never used.
        _fail("backend", "platform '%s' is served by backend '%s', but backend is '%s' for %s: Triton would load it with '%s' "
              "and ignore the platform; drop one of the two" % (config.platform, implied, config.backend, name, config.backend))


def _check_version_policy(config):
    # Triton defaults a missing policy to latest 1 (NormalizeModelConfig); a policy that
    # selects no version fails later in model_lifecycle.cc VersionsToLoad.
    policy = config.version_policy
    which = policy.WhichOneof("policy_choice")
    message = "at least one version must be available under the version policy of model '%s'" % config.name
    if which == "latest" and policy.latest.num_versions < 1:
        _fail("version_policy.latest.num_versions", message)
    if which == "specific":
        if not policy.specific.versions:
            _fail("version_policy.specific.versions", message)
        for index, version in enumerate(policy.specific.versions):
            if version < 0:
                _fail("version_policy.specific.versions[%d]" % index, "version %d is not a version directory name for model '%s'" % (
                    version, config.name))


def _check_dynamic_batching(config):
    name = config.name
    batching = config.dynamic_batching
    for index, size in enumerate(batching.preferred_batch_size):
        path = "dynamic_batching.preferred_batch_size[%d]" % index
        if size <= 0:
            _fail(path, "dynamic batching preferred size must be positive for " + name)
        if size > config.max_batch_size:
            _fail(path, "dynamic batching preferred size must be <= max batch size for " + name)
    levels = batching.priority_levels
    if levels != 0:
        if batching.default_priority_level == 0 or batching.default_priority_level > levels:
            _fail("dynamic_batching.default_priority_level", "default priority level must be in range [1, %d] for %s" % (levels, name))
        for level in sorted(batching.priority_queue_policy):
            if level == 0 or level > levels:
                _fail("dynamic_batching.priority_queue_policy[%d]" % level,
                      "priority queue policy must have priority level in range [1, %d] for %s" % (levels, name))
    if batching.preserve_ordering:
        if levels > 1:
            _fail("dynamic_batching.preserve_ordering", "Only one priority level is allowed when 'preserve_ordering' is true for " + name)
        policies = [("dynamic_batching.default_queue_policy", batching.default_queue_policy)]
        policies += [("dynamic_batching.priority_queue_policy[%d]" % k, batching.priority_queue_policy[k]) for k in sorted(batching.priority_queue_policy)]
        for path, policy in policies:
            if policy.default_timeout_microseconds != 0 and _enum(policy, "timeout_action") == "DELAY":
                _fail(path, "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for " + name)


def _control_properties(batcher, name, kind, typed):
    """Port of Get{Boolean,Typed}SequenceControlProperties: returns (tensor, dtype)."""
    seen_tensors = set()
    found = None
    for index, control_input in enumerate(batcher.control_input):
        path = "sequence_batching.control_input[%d]" % index
        if not control_input.name:
            _fail(path + ".name", "sequence batching control tensor must have a name for " + name)
        if control_input.name in seen_tensors:
            _fail(path + ".name", "sequence batching control tensor '%s' is specified for multiple control kinds for %s" % (control_input.name, name))
        seen_tensors.add(control_input.name)
        for cindex, control in enumerate(control_input.control):
            if _enum(control, "kind") != kind:
                continue
            cpath = "%s.control[%d]" % (path, cindex)
            if found is not None:
                _fail(cpath, "sequence batching specifies multiple %s tensors for %s" % (kind, name))
            counts = [("int32_false_true", len(control.int32_false_true)), ("fp32_false_true", len(control.fp32_false_true)),
                      ("bool_false_true", len(control.bool_false_true))]
            given = [(field, n) for field, n in counts if n]
            if typed:
                if given:
                    _fail(cpath, "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for %s for %s" % (
                        kind, name))
                found = (control_input.name, _enum(control, "data_type"))
                continue
            if not given:
                _fail(cpath, "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for %s for %s" % (
                    kind, name))
            if len(given) > 1:
                _fail(cpath, "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for %s for %s" % (
                    kind, name))
            field, count = given[0]
            if count != 2:
                _fail("%s.%s" % (cpath, field), "sequence batching control '%s' must have exactly 2 entries for %s for %s" % (field, kind, name))
            found = (control_input.name, {"int32_false_true": "TYPE_INT32", "fp32_false_true": "TYPE_FP32", "bool_false_true": "TYPE_BOOL"}[field])
    return found


def _check_sequence_batching(config):
    name = config.name
    if config.response_cache.enable:
        _fail("response_cache.enable", "Response Cache does not currently support model %s with sequence batching scheduler. "
              "Please disable the response cache." % name)
    batcher = config.sequence_batching
    for kind in ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY"):
        _control_properties(batcher, name, kind, typed=False)
    corrid = _control_properties(batcher, name, "CONTROL_SEQUENCE_CORRID", typed=True)
    if corrid is not None and corrid[1] not in CORRID_TYPES:
        _fail("sequence_batching.control_input", "unexpected data type for control CONTROL_SEQUENCE_CORRID for %s. "
              "Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING" % name)
    if batcher.HasField("oldest"):
        for index, size in enumerate(batcher.oldest.preferred_batch_size):
            path = "sequence_batching.oldest.preferred_batch_size[%d]" % index
            if size <= 0:
                _fail(path, "sequence batching preferred batch size must be positive for " + name)
            if size > config.max_batch_size:
                _fail(path, "sequence batching preferred batch size must be <= max batch size for " + name)
    if batcher.HasField("direct"):
        utilization = batcher.direct.minimum_slot_utilization
        if utilization < 0.0 or utilization > 1.0:
            _fail("sequence_batching.direct.minimum_slot_utilization",
                  "sequence batching minimum slot utilization must be in range (0.0, 1.0] for " + name)


def _check_model_metrics(config):
    for index, control in enumerate(config.model_metrics.metric_control):
        path = "model_metrics.metric_control[%d]" % index
        if not control.HasField("metric_identifier"):
            _fail(path, "metric control must specify 'metric_identifier'")
        if not control.metric_identifier.family:
            _fail(path + ".metric_identifier.family", "metric identifier must specify non-empty 'family'")
        if not control.HasField("histogram_options"):
            _fail(path, "metric control must specify 'histogram_options'")
        if not control.histogram_options.buckets:
            _fail(path + ".histogram_options.buckets", "histogram options must specify non-empty 'buckets'")


def _check_instance_groups(config, gpus):
    """ValidateInstanceGroup after NormalizeInstanceGroup; ``gpus`` None skips host checks."""
    if config.HasField("ensemble_scheduling"):
        return
    host = None if gpus is None else set(gpus)
    for index, group in enumerate(config.instance_group):
        path = "instance_group[%d]" % index
        label = group.name or "%s_%d" % (config.name, index)  # Triton's default group name
        kind = _enum(group, "kind")
        if group.count < 0:
            # Our rule: Triton treats any count below 1 as unset and starts its default number of instances.
            _fail(path + ".count", "instance group %s of model %s has count %d; give a count >= 1, or leave it unset (0) "
                  "for Triton's default" % (label, config.name, group.count))
        if kind == "KIND_AUTO":
            # NormalizeInstanceGroup: AUTO is GPU when the host has GPUs and every listed one exists,
            # else CPU with its gpus kept, which ValidateInstanceGroup then refuses.
            if host is None:
                continue
            kind = "KIND_GPU" if host and all(g in host for g in group.gpus) else "KIND_CPU"
        if kind in ("KIND_MODEL", "KIND_CPU") and group.gpus:
            _fail(path + ".gpus", "instance group %s of model %s has kind %s but specifies one or more GPU%s" % (
                label, config.name, kind, "s" if kind == "KIND_MODEL" else ""))
        if kind == "KIND_GPU":
            if host is not None and not host:
                _fail(path + ".kind", "instance group %s of model %s has kind KIND_GPU but no GPUs are available" % (label, config.name))
            for gid in group.gpus:
                if gid < 0 or (host is not None and gid not in host):
                    _fail(path + ".gpus", "instance group %s of model %s specifies invalid or unsupported gpu id %d. "
                          "GPUs with at least the minimum required CUDA compute compatibility are: %s" % (
                              label, config.name, gid, ", ".join(str(g) for g in sorted(host or []))))
        if group.profile:
            if config.platform != TENSORRT_PLATFORM:
                _fail(path + ".profile", "instance group %s of model %s and platform %sspecifies profile field which is only supported for TensorRT models" % (
                    label, config.name, config.platform))
            for profile in group.profile:
                if not profile.isdigit():
                    _fail(path + ".profile", "instance group %s of model %s and platform %s specifies invalid profile %s. "
                          "The field should contain the string representation of a non-negative integer." % (label, config.name, config.platform, profile))


def _element_count(dims):
    count = 1
    for dim in dims:
        if dim == WILDCARD_DIM:
            return WILDCARD_DIM
        count *= dim
    return count


def _chunks(dims):
    """Element counts of the runs between variable-size dimensions."""
    counts, current = [], 1
    for dim in dims:
        if dim == WILDCARD_DIM:
            counts.append(current)
            current = 1
        else:
            current *= dim
    counts.append(current)
    return counts


def _check_io_shape(io, max_batch_size, what, path, name):
    """ValidateIOShape; ``what`` is 'model input ' or 'model output '."""
    suffix = " for " + name
    if not io.name:
        _fail(path + ".name", what + "must specify 'name'" + suffix)
    prefix = "%s'%s' " % (what, io.name)
    if _enum(io, "data_type") == "TYPE_INVALID":
        _fail(path + ".data_type", prefix + "must specify 'data_type'" + suffix)
    if not io.dims:
        _fail(path + ".dims", prefix + "must specify 'dims'" + suffix)
    has_reshape = io.HasField("reshape")
    if has_reshape and not io.reshape.shape and max_batch_size == 0:
        _fail(path + ".reshape", prefix + "cannot have empty reshape for non-batching model as scalar tensors are not supported" + suffix)
    for dim in io.dims:
        if dim < 1 and dim != WILDCARD_DIM:
            _fail(path + ".dims", prefix + "dimension must be integer >= 1, or -1 to indicate a variable-size dimension" + suffix)
    if not has_reshape:
        return
    for dim in io.reshape.shape:
        if dim < 1 and dim != WILDCARD_DIM:
            _fail(path + ".reshape", prefix + "reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension" + suffix)
    dims_size = _element_count(io.dims)
    reshape_size = _element_count(io.reshape.shape) if io.reshape.shape else 0
    if dims_size != reshape_size and (reshape_size != 0 or dims_size != 1):
        _fail(path + ".reshape", prefix + "has different size for dims and reshape" + suffix)
    if dims_size == WILDCARD_DIM:
        left, right = _chunks(io.dims), _chunks(io.reshape.shape)
        if len(left) != len(right):
            _fail(path + ".reshape", prefix + "has different number of variable-size dimensions for dims and reshape" + suffix)
        if left != right:
            _fail(path + ".reshape", prefix + "has different size for dims and reshape" + suffix)


def _check_io(config, backend):
    """ValidateModelIOConfig plus duplicate names (Triton keeps the first silently)."""
    name = config.name
    if not config.output and config.platform != ENSEMBLE and backend not in (None, PYTHON_BACKEND):
        # Our rule for backends other than python (which needs none, and whose model.py may add them):
        # whether they fill outputs in depends on the model file (pytorch: "must contain at least one output").
        _fail("output", "model configuration must contain at least one output, none were specified for " + name)
    for field, what in (("input", "model input "), ("output", "model output ")):
        seen = {}
        for index, io in enumerate(getattr(config, field)):
            path = "%s[%d]" % (field, index)
            _check_io_shape(io, config.max_batch_size, what, path, name)
            if io.name in seen:
                _fail(path + ".name", "%s'%s' is also %s[%d]; tensor names must be unique for %s" % (what, io.name, field, seen[io.name], name))
            seen[io.name] = index
            if field == "input" and _enum(io, "format") in ("FORMAT_NHWC", "FORMAT_NCHW") and len(io.dims) != 3:
                _fail(path + ".format", "model input NHWC/NCHW require 3 dims for " + name)
            if io.is_shape_tensor and config.platform != TENSORRT_PLATFORM:
                _fail(path + ".is_shape_tensor", "shape tensors are only supported for TensorRT platform for " + name)
            if io.is_non_linear_format_io:
                if config.platform != TENSORRT_PLATFORM:
                    _fail(path + ".is_non_linear_format_io", "Non-linear IO format is only supported for the TensorRT platform for " + name)
                if len(io.dims) != 3:
                    _fail(path + ".dims", "Non-linear IO format %s requires 3 dims for %s" % (field, name))
    _check_batch_io(config)


def _check_batch_io(config):
    suffix = " for " + config.name
    inputs = set(io.name for io in config.input)
    outputs = set(io.name for io in config.output)
    for index, batch in enumerate(config.batch_input):
        path = "batch_input[%d]" % index
        kind = _enum(batch, "kind")
        if len(batch.source_input) != 1:
            _fail(path + ".source_input", "batch input kind '%s' expects 1 source input, got %d%s" % (kind, len(batch.source_input), suffix))
        if _enum(batch, "data_type") not in ("TYPE_INT32", "TYPE_FP32"):
            _fail(path + ".data_type", "batch input data type must be TYPE_INT32 or TYPE_FP32" + suffix)
        for source in batch.source_input:
            if source not in inputs:
                _fail(path + ".source_input", "unknown source input name '%s'%s" % (source, suffix))
    for index, batch in enumerate(config.batch_output):
        path = "batch_output[%d]" % index
        if len(batch.source_input) != 1:
            _fail(path + ".source_input", "batch output kind '%s' expects 1 source input, got %d%s" % (
                _enum(batch, "kind"), len(batch.source_input), suffix))
        for source in batch.source_input:
            if source not in inputs:
                _fail(path + ".source_input", "unknown source input name '%s'%s" % (source, suffix))
        targets = set()
        for target in batch.target_name:
            if target not in outputs:
                _fail(path + ".target_name", "unknown target output name '%s'%s" % (target, suffix))
            if target in targets:
                _fail(path + ".target_name", "target output name '%s' can only be specified once%s" % (target, suffix))
            targets.add(target)


def _check_warmup(config):
    """Port of TritonModelInstance::GenerateWarmupData and the request checks each sample goes through.

    A sample with batch_size 0 is skipped by Triton, so nothing else about it is checked.
    """
    name = config.name
    inputs = dict((io.name, io) for io in config.input)
    for index, sample in enumerate(config.model_warmup):
        path = "model_warmup[%d]" % index
        if sample.batch_size == 0:
            continue
        # Triton sends batch_size requests of batch 1 in one execution; the backend refuses more than
        # max_batch_size (a model without batching takes one), and the model then fails to load.
        allowed = config.max_batch_size if config.max_batch_size > 0 else 1
        if sample.batch_size > allowed:
            _fail(path + ".batch_size", "failed to run warmup sample '%s': batch size %d for '%s', max allowed is %d" % (
                sample.name, sample.batch_size, name, config.max_batch_size))
        for key in sorted(sample.inputs):
            value = sample.inputs[key]
            ipath = "%s.inputs[%r]" % (path, key)
            if value.WhichOneof("input_data_type") is None:
                _fail(ipath, "warmup setting expects input '%s' to have input_data_type set" % key)
            if any(dim == WILDCARD_DIM for dim in value.dims):
                _fail(ipath + ".dims", "warmup setting expects all variable-size dimensions are specified for input '%s'" % key)
            expected = inputs.get(key)
            if expected is not None and value.data_type != expected.data_type:
                _fail(ipath + ".data_type", "inference input '%s' data-type is '%s', but model '%s' expects '%s'" % (
                    key, _enum(value, "data_type"), name, _enum(expected, "data_type")))
        missing = [io.name for io in config.input if not io.optional and io.name not in sample.inputs]
        if missing:
            _fail(path + ".inputs", "warmup sample '%s' for model '%s' is missing required input(s) [%s]. "
                  "Please provide all required input(s)." % (sample.name, name, ",".join("'%s'" % m for m in missing)))


def _check_ensemble_scheduling(config):
    """ValidateEnsembleSchedulingConfig: config-only data-flow checks."""
    name = config.name
    if config.platform != ENSEMBLE:
        _fail("ensemble_scheduling", "ensemble scheduling cannot be set for model '%s' whose platform is not %s" % (name, ENSEMBLE))
    if config.instance_group:
        _fail("instance_group", "instance group should not be specified for ensemble '%s'" % name)
    if config.HasField("optimization"):
        _fail("optimization", "optimization should not be specified for ensemble '%s'" % name)
    if config.model_warmup:
        _fail("model_warmup", "model_warmup can not be specified for ensemble '%s'" % name)
    steps = config.ensemble_scheduling.step
    if not steps:
        _fail("ensemble_scheduling.step", "must specify 'step' for ensemble '%s'" % name)
    # BuildEnsembleGraph: nodes are ensemble tensors, edges run from a step's inputs to its outputs.
    nodes = {}

    def node(tensor):
        return nodes.setdefault(tensor, {"is_output": False, "ready": False, "prev": [], "next": []})

    for index, step in enumerate(steps):
        path = "ensemble_scheduling.step[%d]" % index
        for field in ("model_name", "input_map", "output_map"):
            if not getattr(step, field):
                _fail("%s.%s" % (path, field), "must specify '%s' in step %d of ensemble '%s'" % (field, index, name))
        produced = []
        for key in sorted(step.output_map):
            tensor = step.output_map[key]
            entry = node(tensor)
            if entry["is_output"]:
                _fail(path + ".output_map", "ensemble tensor '%s' can appear in an output map only once for ensemble '%s' step %d" % (tensor, name, index))
            entry["is_output"] = True
            produced.append(tensor)
        for key in sorted(step.input_map):
            tensor = step.input_map[key]
            node(tensor)
            for out in produced:
                nodes[out]["prev"].append(tensor)
                nodes[tensor]["next"].append(out)
    queue = []
    for index, io in enumerate(config.input):
        if io.name not in nodes:
            _fail("input[%d]" % index, "ensemble input '%s' for ensemble %s' is not used" % (io.name, name))
        nodes[io.name]["ready"] = True
        queue.append(io.name)
    while queue:
        current = queue.pop(0)
        for nxt in nodes[current]["next"]:
            if nodes[nxt]["ready"]:
                continue
            if all(nodes[p]["ready"] for p in nodes[nxt]["prev"]):
                nodes[nxt]["ready"] = True
                queue.append(nxt)
    outputs = set()
    for index, io in enumerate(config.output):
        path = "output[%d]" % index
        if io.name not in nodes:
            _fail(path, "ensemble output '%s' for ensemble %s' is not used" % (io.name, name))
        if not nodes[io.name]["ready"]:
            message = "output '%s' for ensemble '%s' is not written" % (io.name, name)
            last, seen, prev = io.name, set(), nodes[io.name]["prev"]
            while prev:
                candidates, prev = prev, []
                for tensor in candidates:
                    if not nodes[tensor]["ready"] and tensor not in seen:
                        seen.add(tensor)
                        last, prev = tensor, nodes[tensor]["prev"]
                        break
            if last != io.name:
                message += ": at least one of its depending tensors, '%s', is not connected" % last
            _fail(path, message)
        outputs.add(io.name)
    for tensor in sorted(nodes):
        if tensor in outputs:
            continue
        if not nodes[tensor]["ready"] or not nodes[tensor]["next"]:
            _fail("ensemble_scheduling.step", "ensemble tensor '%s' is unused in ensemble '%s'" % (tensor, name))


def _full_dims(batching, dims):
    return ([WILDCARD_DIM] if batching else []) + list(dims)


def _dims_match(left, right):
    # triton common CompareDimsWithWildcard
    return len(left) == len(right) and all(a == b or WILDCARD_DIM in (a, b) for a, b in zip(left, right))


def _dims_text(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"


def _consistent(existing, incoming, prefix):
    """ensemble_utils.cc ValidateTensorConsistency."""
    if existing["type"] != incoming["type"]:
        _fail("ensemble_scheduling.step", "%sinconsistent data type: %s is inferred from model %s while %s is inferred from model %s" % (
            prefix, existing["type"], existing["model"], incoming["type"], incoming["model"]))
    if not _dims_match(existing["dims"], incoming["dims"]) and not _dims_match(existing["full"], incoming["full"]):
        _fail("ensemble_scheduling.step", "%sinconsistent shape: %s is inferred from model %s while %s is inferred from model %s" % (
            prefix, _dims_text(existing["full"]), existing["model"], _dims_text(incoming["full"]), incoming["model"]))


def _tensor(model, batching, io, use_reshape=False):
    dims = list(io.reshape.shape) if use_reshape and io.HasField("reshape") else list(io.dims)
    return {"model": model, "type": _enum(io, "data_type"), "dims": dims, "full": _full_dims(batching, dims),
            "prev": [], "next": [], "decoupled": False, "label": 0, "visited": False, "sibling": None}


def _check_cycles(config, graph):
    """model_repository_manager.cc CircularDependencyCheck, walking upstream from this ensemble."""
    start = config.name

    def upstreams(model):
        cfg = graph.get(model)
        if cfg is None or not cfg.HasField("ensemble_scheduling"):
            return []
        return sorted(set(step.model_name for step in cfg.ensemble_scheduling.step))

    def walk(current, seen):
        for upstream in upstreams(current):
            if upstream == start:
                _fail("ensemble_scheduling.step", "circular dependency between ensembles: %s -> ... -> %s -> %s" % (start, current, start))
            if upstream not in seen:
                seen.add(upstream)
                walk(upstream, seen)

    walk(start, set([start]))


def check_ensemble_wiring(config, models):
    """Cross-model checks for an ensemble: ``models`` maps name -> ModelConfig proto."""
    name = config.name
    graph = dict(models)
    graph[name] = config
    steps = config.ensemble_scheduling.step
    missing = sorted(set(s.model_name for s in steps if s.model_name not in graph))
    if missing:
        _fail("ensemble_scheduling.step", "ensemble %s contains models that are not available or ambiguous: %s" % (name, ", ".join(missing)))
    _check_cycles(config, graph)
    batching = config.max_batch_size > 0
    tensors = {}
    for io in config.input:
        tensors[io.name] = _tensor(name, batching, io, use_reshape=True)
    # Triton links every ensemble output to a sink node named after the ensemble, so the
    # decoupled check below also covers outputs that join different decoupled branches.
    sink = tensors[_SINK] = {"model": name, "prev": [], "next": [], "decoupled": False, "label": 0, "visited": False, "sibling": None}
    for io in config.output:
        entry = tensors.setdefault(io.name, _tensor(name, batching, io, use_reshape=True))
        sink["prev"].append(io.name)
        entry["next"].append(_SINK)
    for index, step in enumerate(steps):
        path = "ensemble_scheduling.step[%d]" % index
        member = graph[step.model_name]
        if member.max_batch_size != 0 and member.max_batch_size < config.max_batch_size:
            _fail(path, "ensemble %s allows maximum batch size %d, but it contains model %s which only allows maximum batch size to be %d" % (
                name, config.max_batch_size, step.model_name, member.max_batch_size))
        _check_step_mapping(name, step, member, tensors, path)
    _check_decoupled(config, tensors)


def _check_step_mapping(name, step, member, tensors, path):
    """ensemble_utils.cc ValidateTensorMapping."""
    batching = member.max_batch_size > 0
    inputs = dict((io.name, io) for io in member.input)
    for key in sorted(step.input_map):
        if key not in inputs:
            _fail(path + ".input_map", "in ensemble %s, ensemble tensor %s is mapping to non-existing input %s in model %s" % (
                name, step.input_map[key], key, step.model_name))
    for io in member.input:
        if io.name not in step.input_map:
            if io.optional:
                continue
            _fail(path + ".input_map", "in ensemble %s, input %s in model %s is not mapped to any ensemble tensors" % (name, io.name, step.model_name))
        tensor = step.input_map[io.name]
        incoming = _tensor(step.model_name, batching, io)
        if tensor in tensors:
            _consistent(tensors[tensor], incoming, "in ensemble %s, ensemble tensor %s: " % (name, tensor))
        else:
            tensors[tensor] = incoming
    outputs = dict((io.name, io) for io in member.output)
    for key in sorted(step.output_map):
        if key not in outputs:
            _fail(path + ".output_map", "in ensemble %s, ensemble tensor %s is mapped from non-existing output %s in model %s" % (
                name, step.output_map[key], key, step.model_name))
    sibling = {"label": 0, "visited": False}
    for key in sorted(step.output_map):
        tensor = step.output_map[key]
        incoming = _tensor(step.model_name, batching, outputs[key])
        if tensor in tensors:
            _consistent(tensors[tensor], incoming, "in ensemble %s, ensemble tensor %s: " % (name, tensor))
        else:
            tensors[tensor] = incoming
        tensors[tensor]["sibling"] = sibling
    decoupled = member.model_transaction_policy.decoupled
    for key in sorted(step.output_map):
        entry = tensors[step.output_map[key]]
        entry["decoupled"] = decoupled
        for in_key in sorted(step.input_map):
            entry["prev"].append(step.input_map[in_key])
            tensors[step.input_map[in_key]]["next"].append(step.output_map[key])


def _check_decoupled(config, tensors):
    """ensemble_utils.cc: a step may not join tensors that come from different decoupled models."""
    label = 0
    queue = []
    for io in config.input:
        tensors[io.name]["visited"] = True
        queue.append(io.name)
    while queue:
        current = queue.pop(0)
        for nxt in tensors[current]["next"]:
            if tensors[nxt]["visited"]:
                continue
            entry = tensors[nxt]
            if not all(tensors[p]["visited"] for p in entry["prev"]):
                continue
            prev_label = tensors[entry["prev"][0]]["label"]
            if any(tensors[p]["label"] != prev_label for p in entry["prev"]):
                _fail("ensemble_scheduling.step", "in ensemble %s, step of model '%s' receives inputs originated from different decoupled models" % (
                    config.name, entry["model"]))
            sibling = entry["sibling"]
            if sibling is not None and sibling["visited"]:
                entry["label"] = sibling["label"]
            else:
                if entry["decoupled"]:
                    label += 1
                    entry["label"] = label
                else:
                    entry["label"] = prev_label
                if sibling is not None:
                    sibling["label"] = entry["label"]
                    sibling["visited"] = True
            entry["visited"] = True
            queue.append(nxt)
