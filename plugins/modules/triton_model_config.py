#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_model_config
short_description: Write a model's config.pbtxt from data, checked against Triton's own schema and load-time rules
description:
  - Takes a model configuration as data whose keys are the field names of Triton's C(ModelConfig) protobuf
    (enum values by name, for example C(TYPE_FP32), C(KIND_GPU)) and writes C(<repository>/<name>/config.pbtxt).
  - "The configuration is checked against the C(ModelConfig) message shipped in C(tritonclient.grpc.model_config_pb2);
    an unknown field, a wrong type or an unknown enum name fails with a message that names its path,
    for example C(input[0].data_type: 'FP23' is not a valid DataType (TYPE_BOOL, ...))."
  - Then the checks Triton itself makes when it loads a model run (ported from Triton core's C(model_config_utils.cc)
    and C(ensemble_utils.cc)), including instance groups against O(gpus), ensemble wiring against O(models), and each
    C(model_warmup) sample (batch size within C(max_batch_size), or 1 without batching; every required input given,
    with its data type, fixed dims and a data source).
    Checks that depend on the model file (tensor names, dims and types the backend reads from the model) are not made.
  - "Fields left to Triton's auto-complete are accepted as Triton accepts them. With neither C(platform) nor C(backend),
    Triton picks one at load from C(default_model_filename) or the files of the model's first version directory
    (C(model.py) is the python backend, C(model.onnx) C(onnxruntime_onnx), C(model.plan), C(model.pt),
    C(model.savedmodel), C(model.graphdef)), also under C(--disable-auto-complete-config). Where that directory is
    there to read (O(repository) given, on the host) the module makes the same choice and checks the result, refusing
    a model it gives nothing with Triton's C(Could not determine backend for model ...) (Triton 2.51 then takes the
    backend from the part of the model name after its first dot); elsewhere (no O(repository), the
    controller's validation) the choice is left to Triton and the checks that need a backend are skipped.
    RV(auto_complete) says which. The python backend needs no C(output): its C(model.py) C(auto_complete_config) adds
    them when Triton runs with auto-complete on; C(triton_server) runs it with C(--disable-auto-complete-config), so
    there such a model serves without declared outputs."
  - "A C(runtime) that leaves the directories Triton looks it up in (the version, model and backend directories),
    such as C(../dummy_runtime/libtriton_identity.so), is refused with Triton's words
    C(backend library name ... escapes backend directory)."
  - "Some rules are stricter than Triton: at least one C(output) is required for backends other than python
    (whether they fill outputs in depends on the model file); tensor names must be unique (Triton keeps the first silently); an instance group
    C(count) below 0 is refused (Triton treats it as unset); a known C(platform) together with a different C(backend)
    is refused (for example C(onnxruntime_onnx) with C(python): Triton loads the python backend and ignores the platform);
    and the model name rules listed under O(name)."
  - Nothing is written unless every check passes. The file is written atomically (temporary file in the same
    directory, fsync, rename), and only when its bytes change.
  - The text is canonical (fields in protobuf field-number order, map entries sorted by key, lists in Triton's
    C([ ... ]) style), so the same data always gives the same bytes and C(--diff) shows only real changes.
version_added: "0.2.0"
author:
  - aiops.triton contributors (@aiops)
options:
  repository:
    description:
      - Model repository directory. The model directory C(<repository>/<name>) is created when missing.
      - Required unless O(validate_only=true).
    type: path
  name:
    description:
      - Model name, which is also the model's directory name.
      - When the configuration has no C(name) this one is used; when it has one, both must agree.
      - "Checked before anything else, by the same rule every module of this collection applies to a model name:
        it must not be empty, C(.) or C(..), contain C(/), a NUL byte or a control character (newline, tab, ...),
        start with C(.), start or end with whitespace, or be longer than 255 bytes. Triton itself refuses the
        empty name, C(..) and C(/); the other rules are stricter than Triton."
      - Required unless O(validate_only=true) or O(batch) is given; with O(validate_only=true) it defaults to the
        configuration's C(name), or else to the name of the directory that holds O(src).
    type: str
  config:
    description:
      - The model configuration, keyed by C(ModelConfig) field names.
      - Exactly one of O(config), O(src) and O(batch) is required.
    type: dict
  src:
    description:
      - Path, on the host that runs the module, of an existing C(config.pbtxt) to check (and, unless O(validate_only=true),
        write in canonical form) instead of O(config).
      - For a file on the controller, pass O(config) with the P(aiops.triton.model_config_from_pbtxt#filter) filter instead.
      - Exactly one of O(config), O(src) and O(batch) is required.
    type: path
  validate_only:
    description:
      - Only run the checks and return the canonical text and data; nothing is written, O(repository) is not needed
        and the result is never changed.
      - Check mode is unchanged by this option; with O(validate_only=false) it still reports what would be written.
    type: bool
    default: false
  overrides:
    description:
      - Per-host changes merged over the configuration before anything else. Mappings merge key by key;
        any other value, lists included (for example C(instance_group)), replaces the one in the configuration.
    type: dict
    default: {}
  gpus:
    description:
      - GPU indexes this host has (for example from M(aiops.triton.nvidia_gpu_info)). An empty list means a host without GPUs.
      - When given, instance groups are checked against them, and with O(host_override) fitted to them.
      - When omitted, no host check is made and instance groups are written as given.
    type: list
    elements: int
  host_override:
    description:
      - With O(gpus) given, fit instance groups to the host. On a host without GPUs, C(KIND_GPU) and C(KIND_AUTO)
        groups become C(KIND_CPU) (their C(gpus) dropped) so the model still loads; on a GPU host a group naming
        a GPU index the host lacks is refused.
      - When false, such a configuration fails the Triton checks instead (Triton resolves a C(KIND_AUTO) group that
        lists C(gpus) on a host without those GPUs to C(KIND_CPU) and then refuses it for listing GPUs).
      - Every group moved to C(KIND_CPU) is listed in RV(host_overrides).
    type: bool
    default: true
  pci_gpus:
    description:
      - NVIDIA GPUs the host's PCI bus shows, driver or not (the C(gpus) list of RV(aiops.triton.nvidia_gpu_info#module:pci)).
      - When non-empty while O(gpus) is empty, the driver is broken, and a C(KIND_GPU) or C(KIND_AUTO) group is
        refused instead of being moved to C(KIND_CPU), so such a host never serves a GPU model on CPU in silence.
    type: list
    elements: str
    default: []
  batch:
    description:
      - Several models in one call (one module start-up on the host instead of one task per model), each
        element a O(name) and its O(config), over the other options.
      - Every element is checked (and, unless in check mode or with O(validate_only=true), written), even after one
        failed, as a loop would; the task then fails naming each failed model. The per-model return values are in
        RV(results), in the order given.
    type: list
    elements: dict
    version_added: 0.2.0
    suboptions:
      name:
        description: As O(name).
        type: str
        required: true
      config:
        description: As O(config).
        type: dict
        required: true
  models:
    description:
      - Configurations of the other models in the repository, keyed by model name. When given and the configuration is
        an ensemble, its steps are checked against them (models exist, tensors mapped, data types and shapes agree, no cycles).
      - When omitted, an ensemble gets only the checks that need no other model (its own data flow).
    type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
requirements:
  - tritonclient (C(model_config_pb2)) and protobuf on the host that runs the module
notes:
  - The rendered file starts with a comment that says it is managed; edits by hand are overwritten on the next run.
  - Use the P(aiops.triton.model_config_from_pbtxt#filter) filter to read an existing C(config.pbtxt) back into data.
seealso:
  - name: Triton model configuration
    description: Triton's documentation of every ModelConfig field.
    link: https://docs.nvidia.com/deeplearning/triton-inference-server/user-guide/docs/user_guide/model_configuration.html
"""

EXAMPLES = r"""
- name: Write the anomaly detector's config, fitted to this host's GPUs
  aiops.triton.triton_model_config:
    repository: /var/lib/triton/models
    name: anomaly_detector
    config:
      platform: onnxruntime_onnx
      max_batch_size: 32
      input:
        - {name: metrics_input, data_type: TYPE_FP32, dims: [60, 20]}
      output:
        - {name: anomaly_score, data_type: TYPE_FP32, dims: [1]}
        - {name: anomaly_labels, data_type: TYPE_INT32, dims: [20]}
      dynamic_batching:
        preferred_batch_size: [4, 8, 16, 32]
        max_queue_delay_microseconds: 100000
      instance_group:
        - {count: 2, kind: KIND_GPU, gpus: [0]}
      version_policy: {latest: {num_versions: 1}}
      optimization: {graph: {level: 1}}
    gpus: "{{ nvidia_gpus | map(attribute='index') | list }}"
    owner: triton
    group: triton
    mode: "0644"

- name: Write an ensemble and check its wiring against the member models
  aiops.triton.triton_model_config:
    repository: /var/lib/triton/models
    name: alert_triage
    config: "{{ triton_models.alert_triage }}"
    models: "{{ triton_models }}"

- name: Write every model's config in one call, each ensemble checked against the others
  aiops.triton.triton_model_config:
    repository: /var/lib/triton/models
    batch: "{{ triton_models | dict2items(key_name='name', value_name='config') }}"
    models: "{{ triton_models }}"

- name: Check a config.pbtxt that is already on the host, without writing anything
  aiops.triton.triton_model_config:
    src: /srv/incoming/anomaly_detector/config.pbtxt
    validate_only: true
    gpus: "{{ nvidia_gpus | map(attribute='index') | list }}"
  register: checked

- name: Install a hand-written config.pbtxt in canonical form, checked first
  aiops.triton.triton_model_config:
    repository: /var/lib/triton/models
    name: anomaly_detector
    src: /srv/incoming/anomaly_detector/config.pbtxt

- name: Read a config back for a drift report
  ansible.builtin.set_fact:
    live_config: "{{ lookup('ansible.builtin.file', '/var/lib/triton/models/anomaly_detector/config.pbtxt') | aiops.triton.model_config_from_pbtxt }}"
"""

RETURN = r"""
results:
  description:
    - With O(batch), one result per element, in order, with the return values below (those of the element's model)
      and C(item), the element; a failed one has C(failed) and C(msg). Without O(batch) the values below are
      returned at the top level.
  returned: with O(batch)
  type: list
  elements: dict
  sample: [{"item": {"name": "anomaly_detector", "config": {"platform": "onnxruntime_onnx"}}, "changed": false,
            "path": "/var/lib/triton/models/anomaly_detector/config.pbtxt"}]
  version_added: 0.2.0
path:
  description: Path of the configuration file.
  returned: unless O(validate_only=true)
  type: str
  sample: /var/lib/triton/models/anomaly_detector/config.pbtxt
content:
  description: The rendered C(config.pbtxt) text (what is, or in check mode would be, on disk; with O(validate_only=true), what would be written).
  returned: always (with O(batch), in each element of RV(results))
  type: str
  sample: "# Rendered by aiops.triton.triton_model_config; edits by hand are overwritten.\nname: \"anomaly_detector\"\n"
config:
  description: The configuration that was rendered, after O(overrides) and the host override, in canonical form (unset fields dropped).
  returned: always (with O(batch), in each element of RV(results))
  type: dict
  sample: {"name": "anomaly_detector", "platform": "onnxruntime_onnx", "max_batch_size": 32}
auto_complete:
  description:
    - For a configuration with neither C(platform) nor C(backend), what Triton fills in at load from the model's first
      version directory (C(platform) and/or C(backend)), as the module worked it out from that directory.
    - Null when it could not be worked out here (no O(repository), or no version directory yet) and is left to Triton;
      empty when the configuration names its platform or backend.
  returned: always (with O(batch), in each element of RV(results))
  type: dict
  sample: {"backend": "python"}
host_overrides:
  description: Instance groups O(host_override) moved to C(KIND_CPU) on this host without NVIDIA GPUs, one sentence each.
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: str
  sample: ["instance_group[0]: KIND_GPU -> KIND_CPU (this host has no NVIDIA GPU)"]
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.aiops.triton.plugins.module_utils import batch, fs
from ansible_collections.aiops.triton.plugins.module_utils.model_config import (
    HAS_MODEL_CONFIG_PB2,
    IMPORT_ERROR,
    ModelConfigError,
    apply_host_overrides,
    deep_merge,
    first_version_files,
    normalize,
    parse,
    render,
    validate,
)
from ansible_collections.aiops.triton.plugins.module_utils.model_name import ModelNameError, check_model_name

CONFIG_FILE = "config.pbtxt"


def load_source(params):
    """The configuration as data: O(config), or O(src) parsed. Raises ModelConfigError naming the file."""
    if params["src"] is None:
        return params["config"]
    src = params["src"]
    try:
        with open(src, "rb") as handle:
            text = handle.read().decode("utf-8")
    except (IOError, OSError, UnicodeDecodeError) as exc:
        raise ModelConfigError("src: cannot read %s: %s" % (src, to_native(exc)))
    try:
        return parse(text)
    except ModelConfigError as exc:
        raise ModelConfigError("src: %s: %s" % (src, to_native(exc)))


def resolve_name(params, config):
    """The model name: the option, else (validate-only) the config's own, else the directory holding O(src)."""
    name = params["name"]
    if name is None:
        name = config.get("name") if isinstance(config.get("name"), str) and config.get("name") else None
    if name is None and params["src"] is not None:
        name = os.path.basename(os.path.dirname(os.path.abspath(params["src"])))
    if name is None:
        raise ModelConfigError("name: give name, or a config that has one")
    return check_model_name(name, "name")


def build(params, name=None, source=None, changes=None, filled=None):
    """Merge, fit to the host and check; return (canonical dict, text). Raises ModelConfigError.

    ``name`` and ``source`` default to params' name and config (tests/benchmarks/bench_render_configs.py calls it so);
    host overrides are appended to ``changes``; what Triton will auto-complete is stored in ``filled['auto_complete']``.
    """
    name = params["name"] if name is None else name
    source = params["config"] if source is None else source
    config = deep_merge(source, params["overrides"])
    if config.setdefault("name", name) != name:
        raise ModelConfigError("name: config name %r does not match the model directory name %r" % (config["name"], name))
    gpus = params["gpus"]
    if gpus is not None and params["host_override"]:
        config = apply_host_overrides(config, gpus, pci_gpus=params.get("pci_gpus"), changes=changes)
    version_files = None
    if params.get("repository"):
        version_files = first_version_files(os.path.join(params["repository"], name))
    auto_complete = validate(config, gpus=gpus, models=params["models"], version_files=version_files)
    if filled is not None:
        filled["auto_complete"] = auto_complete
    return normalize(config), render(config)


def write_atomic(module, path, data, file_args):
    """Atomic replace (module_utils.fs) with the requested owner/group/mode set before the rename."""
    def prepare(tmp):
        tmp_args = dict(file_args, path=tmp)
        if tmp_args.get("mode") is None:
            tmp_args["mode"] = "0644"  # mkstemp makes 0600; a model config is not secret
        module.set_fs_attributes_if_different(tmp_args, False)
    fs.write_atomic(path, data, ".%s." % CONFIG_FILE, prepare)


def run(module, name, source, params):
    overrides = []
    filled = {}
    canonical, text = build(params, name, source, changes=overrides, filled=filled)
    if params["validate_only"]:
        return {"changed": False, "content": text, "config": canonical, "host_overrides": overrides,
                "auto_complete": filled["auto_complete"]}
    data = to_bytes(text)
    model_dir = os.path.join(params["repository"], name)
    path = os.path.join(model_dir, CONFIG_FILE)
    before = None
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            before = handle.read()
    changed = before != data
    result = {"changed": changed, "path": path, "content": text, "config": canonical, "host_overrides": overrides,
              "auto_complete": filled["auto_complete"]}
    if module._diff:
        result["diff"] = {"before": to_native(before) if before is not None else "", "after": text,
                          "before_header": path if before is not None else "%s (absent)" % path, "after_header": path}
    file_args = module.load_file_common_arguments(params, path=path)
    if changed and not module.check_mode:
        if not os.path.isdir(model_dir):
            os.makedirs(model_dir)
        write_atomic(module, path, data, file_args)
    if before is not None or not module.check_mode:
        result["changed"] = module.set_fs_attributes_if_different(file_args, changed, diff=None)
    return result


def runner(module):
    """``run_one(params)``: one model's checks and render, every failure as a batch.ItemFailed naming the model."""
    def run_one(params):
        label = params["name"]  # None until known: a src that cannot be read is named by the message itself
        if label is not None and params["repository"] is not None:
            label = "%s/%s" % (params["repository"], label)
        try:
            if params["name"] is not None:
                check_model_name(params["name"], "name")
            source = load_source(params)
            name = resolve_name(params, source)
            label = name if params["repository"] is None else "%s/%s" % (params["repository"], name)
            return run(module, name, source, params)
        except ModelNameError as exc:
            raise batch.ItemFailed(to_native(exc))
        except ModelConfigError as exc:
            raise batch.ItemFailed("%s: %s" % (label, to_native(exc)) if label else to_native(exc))
        except (IOError, OSError) as exc:
            raise batch.ItemFailed("cannot write %s config: %s" % (label, to_native(exc)), exception=traceback.format_exc())
    return run_one


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repository=dict(type="path"),
            name=dict(type="str"),
            config=dict(type="dict"),
            src=dict(type="path"),
            validate_only=dict(type="bool", default=False),
            overrides=dict(type="dict", default={}),
            gpus=dict(type="list", elements="int"),
            host_override=dict(type="bool", default=True),
            pci_gpus=dict(type="list", elements="str", default=[]),
            models=dict(type="dict"),
            batch=dict(type="list", elements="dict", options=dict(name=dict(type="str", required=True),
                                                                  config=dict(type="dict", required=True))),
        ),
        mutually_exclusive=[("config", "src", "batch"), ("name", "batch")],
        required_one_of=[("config", "src", "batch")],
        add_file_common_args=True,
        supports_check_mode=True,
    )
    params = module.params
    # required_if, by hand: with batch, each element names its model
    missing = [key for key in ("repository", "name") if params[key] is None and not (key == "name" and params["batch"] is not None)]
    if not params["validate_only"] and missing:
        module.fail_json(msg="validate_only is False but all of the following are missing: %s" % ", ".join(missing))
    if params["name"] is not None:
        # The name becomes a path: refuse a bad one before anything else happens.
        try:
            check_model_name(params["name"], "name")
        except ModelNameError as exc:
            module.fail_json(msg=to_native(exc))
    if not HAS_MODEL_CONFIG_PB2:
        module.fail_json(msg=missing_required_lib("tritonclient[grpc]"), exception=to_native(IMPORT_ERROR))
    run_one = runner(module)
    if params["batch"] is not None:
        batch.answer(module, batch.run(params, run_one))
    batch.answer_one(module, params, run_one)


if __name__ == "__main__":
    main()
