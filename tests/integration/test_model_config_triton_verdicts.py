"""Triton 2.51's own verdict on the configs issue 11 names, next to ours.

Every case is rendered by model_config.render (the text triton_model_config writes) into one repository
of small python-backend models, and the real tritonserver (PyPI nvidia-pytriton, a GPU build that finds
no GPU on this host) is asked to load each. Its repository index gives each model's state and reason; the test
asserts that verdict and what model_config.validate says with this host's facts (gpus=[]):

- Triton refuses it at load, and so do we (warmup batch over max_batch_size, warmup without batching
  and batch 2, warmup missing a required input / wrong data type / variable dims / no data source,
  KIND_AUTO listing a GPU on a host without it);
- Triton loads it, and so do we (the boundary cases);
- Triton loads it, we refuse it on purpose (count -1, platform onnxruntime_onnx with backend python);
- fields left to auto-complete (issue 22 item 6): no platform/backend (Triton picks python from model.py, or
  refuses a version directory without a model file), no output (model.py's auto_complete_config adds it), and a
  runtime escaping the backend directory. Ours is asked with the version directory's files, as the module on
  the host does. The three autofill configs also load under --disable-auto-complete-config, as the role runs
  Triton (test_autofill_configs_load_as_the_role_runs_triton), there without the outputs model.py would add.

Recorded when written (2026-12-02, tritonserver 2.51.0, CPU host), reasons as Triton gave them:
  warmup_batch_over: failed to run warmup sample 'w': batch size 8 for 'warmup_batch_over_0_0', max allowed is 4
  warmup_nobatch_2: failed to run warmup sample 'w': batch size 2 for 'warmup_nobatch_2_0_0', max allowed is 0
  (the name is the model instance's: group warmup_..._0, instance 0)
  warmup_missing_input: expected 2 inputs but got 1 inputs for model '...'. Got input(s) ['X'],
    but missing required input(s) ['Z']
  warmup_wrong_type: inference input 'X' data-type is 'INT32', but model '...' expects 'FP32'
  warmup_wildcard: warmup setting expects all variable-size dimensions are specified for input 'X'
  warmup_no_data: warmup setting expects input 'X' to have input_data_type set
  auto_gpus: instance group auto_gpus_0 of model auto_gpus has kind KIND_CPU but specifies one or more GPUs
  count_negative, onnx_platform_python_backend: READY
Recorded 2026-12-03 (same build), with auto-complete on and off:
  autofill_no_backend, autofill_no_output, autofill_no_backend_no_output: READY, backend python (outputs from
    auto_complete_config only with auto-complete on)
  no_backend_no_model_file: failed to poll from model repository (log: Invalid model name: Could not determine
    backend for model 'no_backend_no_model_file' with no backend in model configuration. Expected model name of the
    form 'model.<backend_name>'.)
  runtime_escape: backend library name '../dummy_runtime/libtriton_identity.so' escapes backend directory
    '<backends>/python', for model 'runtime_escape', check model config runtime field (once that file exists;
    before, "unable to find backend library")
Loading warmup_batch_over also crashed tritonserver (SIGSEGV) in 3 runs of 6: see MAY_CRASH_TRITON.
"""

import copy
import json
import os
import shutil
import signal
import threading
import time
import urllib.error
import urllib.request

import pytest

from triton_fixtures import TritonServer

from ansible_collections.aiops.triton.plugins.module_utils import model_config as mc

HOST_GPUS = []  # what nvidia_gpu_info reports here, and what Triton finds

MODEL = """\
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())])
                for r in requests]
"""

# A python model that leaves its outputs to Triton's auto-complete (the python backend calls this at load).
AUTOFILL_MODEL = MODEL + """
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        if not auto_complete_model_config.as_dict()["output"]:
            auto_complete_model_config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [2]})
        return auto_complete_model_config
"""

BASE = {
    "backend": "python",
    "max_batch_size": 4,
    "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [2]}, {"name": "Z", "data_type": "TYPE_FP32", "dims": [2]}],
    "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [2]}],
    "instance_group": [{"kind": "KIND_CPU", "count": 1}],
}


def feed(data_type="TYPE_FP32", dims=(2,), **source):
    entry = {"data_type": data_type, "dims": list(dims)}
    entry.update(source or {"zero_data": True})
    return entry


def warmup(batch_size=1, **inputs):
    return [{"name": "w", "batch_size": batch_size, "inputs": inputs or {"X": feed(), "Z": feed()}}]


def case(name, **changes):
    config = copy.deepcopy(BASE)
    config["name"] = name
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


# name -> (config, Triton's verdict: None = READY, else words of its reason, our message or None = we accept)
CASES = {
    "warmup_batch_over": (case("warmup_batch_over", model_warmup=warmup(8)),
                          "batch size 8 for 'warmup_batch_over_0_0', max allowed is 4",
                          "model_warmup[0].batch_size: failed to run warmup sample 'w': batch size 8 for 'warmup_batch_over', max allowed is 4"),
    "warmup_batch_at_max": (case("warmup_batch_at_max", model_warmup=warmup(4)), None, None),
    "warmup_nobatch_2": (case("warmup_nobatch_2", max_batch_size=0, model_warmup=warmup(2)),
                         "batch size 2 for 'warmup_nobatch_2_0_0', max allowed is 0",
                         "model_warmup[0].batch_size: failed to run warmup sample 'w': batch size 2 for 'warmup_nobatch_2', max allowed is 0"),
    "warmup_nobatch_1": (case("warmup_nobatch_1", max_batch_size=0, model_warmup=warmup(1)), None, None),
    "warmup_missing_input": (case("warmup_missing_input", model_warmup=warmup(X=feed())),
                             "but missing required input(s) ['Z']",
                             "model_warmup[0].inputs: warmup sample 'w' for model 'warmup_missing_input' is missing required input(s) ['Z']"),
    "warmup_batch0_missing_input": (case("warmup_batch0_missing_input", model_warmup=warmup(0, X=feed())), None, None),
    "warmup_wrong_type": (case("warmup_wrong_type", model_warmup=warmup(X=feed("TYPE_INT32"), Z=feed())),
                          "inference input 'X' data-type is 'INT32', but model 'warmup_wrong_type' expects 'FP32'",
                          "model_warmup[0].inputs['X'].data_type: inference input 'X' data-type is 'TYPE_INT32'"),
    "warmup_wildcard": (case("warmup_wildcard", model_warmup=warmup(X=feed(dims=(-1,)), Z=feed())),
                        "warmup setting expects all variable-size dimensions are specified for input 'X'",
                        "model_warmup[0].inputs['X'].dims: warmup setting expects all variable-size dimensions are specified for input 'X'"),
    "warmup_no_data": (case("warmup_no_data", model_warmup=warmup(X={"data_type": "TYPE_FP32", "dims": [2]}, Z=feed())),
                       "warmup setting expects input 'X' to have input_data_type set",
                       "model_warmup[0].inputs['X']: warmup setting expects input 'X' to have input_data_type set"),
    "auto_gpus": (case("auto_gpus", instance_group=[{"kind": "KIND_AUTO", "count": 1, "gpus": [0]}]),
                  "instance group auto_gpus_0 of model auto_gpus has kind KIND_CPU but specifies one or more GPUs",
                  "instance_group[0].gpus: instance group auto_gpus_0 of model auto_gpus has kind KIND_CPU but specifies one or more GPU"),
    "auto_no_gpus": (case("auto_no_gpus", instance_group=[{"kind": "KIND_AUTO", "count": 1}]), None, None),
    # Beyond Triton: it loads these; we refuse them
    "count_negative": (case("count_negative", instance_group=[{"kind": "KIND_CPU", "count": -1}]), None,
                       "instance_group[0].count: instance group count_negative_0 of model count_negative has count -1"),
    "onnx_platform_python_backend": (case("onnx_platform_python_backend", platform="onnxruntime_onnx"), None,
                                     "backend: platform 'onnxruntime_onnx' is served by backend 'onnxruntime', but backend is 'python'"),
    # Left to auto-complete: Triton accepts these three, and so do we
    "autofill_no_backend": (case("autofill_no_backend", backend=None), None, None),
    "autofill_no_output": (case("autofill_no_output", output=None), None, None),
    "autofill_no_backend_no_output": (case("autofill_no_backend_no_output", backend=None, output=None), None, None),
    # ... and refuses these, as we do
    "no_backend_no_model_file": (case("no_backend_no_model_file", backend=None),
                                 "_model_file' with no backend in model configuration. Expected model name of the form "
                                 "'model.<backend_name>'.",
                                 "platform: Invalid model name: Could not determine backend for model 'no_backend_no_model_file' "
                                 "with no backend in model configuration. Expected model name of the form 'model.<backend_name>'."),
    "runtime_escape": (case("runtime_escape", runtime="../dummy_runtime/libtriton_identity.so"),
                       "backend library name '../dummy_runtime/libtriton_identity.so' escapes backend directory",
                       "runtime: backend library name '../dummy_runtime/libtriton_identity.so' escapes backend directory, "
                       "for model 'runtime_escape', check model config runtime field"),
}
AUTOFILL = ("autofill_no_backend", "autofill_no_output", "autofill_no_backend_no_output")
# version 1's files per case (default: model.py = MODEL)
VERSION_FILES = {
    "autofill_no_output": {"model.py": AUTOFILL_MODEL},
    "autofill_no_backend_no_output": {"model.py": AUTOFILL_MODEL},
    "no_backend_no_model_file": {"model.bin": "not a model"},
}


def write_case(repo, name, config):
    os.makedirs(str(repo / name / "1"))
    (repo / name / "config.pbtxt").write_text(mc.render(config))
    for filename, text in VERSION_FILES.get(name, {"model.py": MODEL}).items():
        (repo / name / "1" / filename).write_text(text)


# Triton 2.51 here sometimes dies (SIGSEGV) while tearing down an instance whose warmup failed for its
# batch size, instead of marking the model UNAVAILABLE (seen in 3 runs of 6 for warmup_batch_over). For these
# cases a crash of the server on loading them is Triton's refusal too, only a rougher one.
MAY_CRASH_TRITON = {"warmup_batch_over", "warmup_nobatch_2"}


def _post_load(server, name, answer):
    request = urllib.request.Request("%s/v2/repository/models/%s/load" % (server.http_url, name), data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120):
            answer.append(("READY", ""))
    except urllib.error.HTTPError as exc:
        answer.append(("UNAVAILABLE", json.load(exc).get("error", "")))
    except (urllib.error.URLError, OSError) as exc:
        answer.append(("NO ANSWER", str(exc)))


def load(server, name):
    """Ask Triton to load one model: ('READY', ''), ('UNAVAILABLE', its error) or ('CRASHED', its log)."""
    answer = []
    call = threading.Thread(target=_post_load, args=(server, name, answer), daemon=True)
    call.start()
    deadline = time.monotonic() + 150
    while call.is_alive() and time.monotonic() < deadline:
        call.join(0.5)
        if server.proc.poll() is not None:
            # A crashed server's python stubs keep its sockets open: end them, so the call returns.
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            call.join(30)
            return "CRASHED", "tritonserver exited with %s; log tail:\n%s" % (server.proc.returncode, server.log_tail(15))
    assert answer and answer[0][0] != "NO ANSWER", "loading %s: %s; log tail:\n%s" % (name, answer or "no answer", server.log_tail())
    if answer[0][0] == "UNAVAILABLE":
        # some refusals say why only in the log ("failed to poll from model repository")
        return answer[0][0], "%s\nlog tail:\n%s" % (answer[0][1], server.log_tail(10))
    return answer[0]


@pytest.fixture(scope="module")
def triton_index(tmp_path_factory):
    """{model: (state, reason)}: tritonserver's answer to loading each case, one at a time."""
    verdicts = {}
    server = None
    try:
        for name, (config, _triton, _ours) in sorted(CASES.items()):
            if server is None:
                # an empty repository at start (nothing for --load-model=* to load), cases added one by one
                repo = tmp_path_factory.mktemp("verdicts")
                server = TritonServer(str(repo), extra_args=["--strict-readiness=false", "--exit-on-error=false"]).start()
                # the runtime runtime_escape names, where Triton finds it from the python backend's directory
                os.makedirs(os.path.join(server.backend_dir, "dummy_runtime"))
                shutil.copy2(os.path.join(server.backend_dir, "python", "libtriton_python.so"),
                             os.path.join(server.backend_dir, "dummy_runtime", "libtriton_identity.so"))
            write_case(repo, name, config)
            verdicts[name] = load(server, name)
            if verdicts[name][0] == "CRASHED":
                server.stop()
                server = None
    finally:
        if server is not None:
            server.stop()
    return verdicts


@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_verdict_and_ours(triton_index, name):
    config, triton_words, our_message = CASES[name]
    state, reason = triton_index[name]
    if triton_words is None:
        assert (state, reason) == ("READY", ""), reason
    elif state == "CRASHED" and name in MAY_CRASH_TRITON:
        assert reason.startswith("tritonserver exited with -11;"), reason  # SIGSEGV
    else:
        assert state == "UNAVAILABLE" and triton_words in reason, (state, reason)
    files = sorted(VERSION_FILES.get(name, {"model.py": MODEL}))  # what the module reads on the host
    if our_message is None:
        mc.validate(config, gpus=HOST_GPUS, version_files=files)
    else:
        with pytest.raises(mc.ModelConfigError) as err:
            mc.validate(config, gpus=HOST_GPUS, version_files=files)
        assert str(err.value).startswith(our_message), str(err.value)


def test_every_case_was_loaded(triton_index):
    assert sorted(triton_index) == sorted(CASES)


def test_autofill_configs_load_as_the_role_runs_triton(tmp_path):
    """Under --disable-auto-complete-config (roles/triton_server) Triton still picks the python backend from
    model.py, and loads a python model without outputs; model.py's auto_complete_config is not called there."""
    with TritonServer(str(tmp_path), extra_args=["--strict-readiness=false", "--exit-on-error=false",
                                                 "--disable-auto-complete-config"]) as server:
        served = {}
        for name in AUTOFILL:
            write_case(tmp_path, name, CASES[name][0])
            assert load(server, name) == ("READY", ""), name
            with urllib.request.urlopen("%s/v2/models/%s/config" % (server.http_url, name), timeout=30) as answer:
                served[name] = json.load(answer)
    assert [served[name]["backend"] for name in AUTOFILL] == ["python"] * 3
    assert [[o["name"] for o in served[name].get("output", [])] for name in AUTOFILL] == [["Y"], [], []]
