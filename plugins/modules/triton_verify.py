#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_verify
short_description: Prove that a Triton server serves its models correctly, fast enough, and on the GPU when required
description:
  - Checks one Triton server, read-only, and fails with a message a person can act on when any check fails.
  - Server live and ready; each model and each of its versions C(READY).
  - Golden cases, inputs with expected outputs and tolerances, are sent over HTTP and, when O(grpc_url) is set, over gRPC.
  - Latency budget, p50 and p99 over a number of sequential HTTP requests, when a model sets one.
  - With O(require_gpu), every instance group of each model is C(KIND_GPU), and a Triton process
    (C(tritonserver) or one of its backend stubs) holds a GPU context in C(nvidia-smi --query-compute-apps=pid).
  - "Golden-case format (one case): C({name, inputs: {TENSOR: {datatype, shape, data}},
    expected: {TENSOR: {data, atol, rtol, equals}}}). C(data) may be nested or flat. Numbers match when
    C(|got - want| <= atol + rtol * |want|) (defaults O(default_atol), O(default_rtol)); C(equals: true), or a
    BYTES / BOOL tensor, needs an exact match; C(equals: VALUE) compares with VALUE exactly instead of C(data).
    A cases file holds a list of cases or C({cases: [...]})."
version_added: "1.0.0"
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiops.triton.triton_api
author:
  - aiops.triton contributors (@aiops)
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  grpc_url:
    description:
      - Triton's gRPC endpoint as C(host:port). When set, golden cases also run over gRPC (needs C(tritonclient[grpc])).
    type: str
  models:
    description: Models to verify.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Model name.
        type: str
        required: true
      versions:
        description: Versions that must be C(READY). Default, the versions Triton reports as serving (at least one).
        type: list
        elements: int
      golden_cases:
        description: Golden cases inline (format above). Used for every verified version.
        type: list
        elements: dict
      golden_cases_file:
        description: Path on the managed host of a golden-cases JSON file. Used for every verified version.
        type: path
      latency_budget:
        description: Latency budget measured with the first golden case of each version.
        type: dict
        suboptions:
          requests:
            description: Number of sequential HTTP requests measured (after the golden cases warmed the model).
            type: int
            default: 50
          p50_ms:
            description: Largest acceptable median latency in milliseconds.
            type: float
          p99_ms:
            description: Largest acceptable 99th percentile latency in milliseconds.
            type: float
  model_repository:
    description:
      - Model repository path on the managed host. A version without inline cases or O(models[].golden_cases_file)
        uses C(<model_repository>/<name>/<version>/golden_cases.json) when that file exists.
    type: path
  require_golden_cases:
    description: Fail a model version that has no golden case, instead of only checking that it is READY.
    type: bool
    default: true
  require_gpu:
    description: Require GPU placement (instance groups C(KIND_GPU) and a Triton process on a GPU per C(nvidia-smi)).
    type: bool
    default: false
  default_atol:
    description: Absolute tolerance for numeric outputs whose case gives none.
    type: float
    default: 1.0e-6
  default_rtol:
    description: Relative tolerance for numeric outputs whose case gives none.
    type: float
    default: 1.0e-5
  ready_timeout:
    description: Seconds to wait for the server to become ready before failing.
    type: int
    default: 60
  timeout:
    description: Seconds for each HTTP or gRPC request.
    type: int
    default: 30
requirements:
  - tritonclient[grpc] and numpy on the managed host, only when O(grpc_url) is set.
notes:
  - Supports check mode; the module never changes anything.
"""

EXAMPLES = r"""
- name: Verify every model the host serves against its golden cases
  aiops.triton.triton_verify:
    model_repository: /srv/triton/models
    grpc_url: 127.0.0.1:8001
    require_gpu: true
    models:
      - name: metric_anomaly
        latency_budget: {requests: 100, p50_ms: 5, p99_ms: 20}
      - name: log_classifier
        versions: [4]

- name: Inline golden case
  aiops.triton.triton_verify:
    models:
      - name: add_sub
        golden_cases:
          - name: small
            inputs:
              INPUT0: {datatype: FP32, shape: [4], data: [1, 2, 3, 4]}
              INPUT1: {datatype: FP32, shape: [4], data: [1, 1, 1, 1]}
            expected:
              OUTPUT0: {data: [2, 3, 4, 5]}
"""

RETURN = r"""
server:
  description: Server health and identity.
  returned: always
  type: dict
  sample: {"live": true, "ready": true, "version": "2.51.0"}
models:
  description: One result per model.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Model name.
      type: str
    passed:
      description: Whether every check of the model passed.
      type: bool
    failures:
      description: What failed, one sentence each.
      type: list
      elements: str
    versions:
      description: Per version, C(ready), the golden C(cases) (name, protocol, passed, message) and C(latency).
      type: list
      elements: dict
    gpu:
      description: GPU placement check (only with O(require_gpu)), instance kinds and Triton PIDs seen on GPUs.
      type: dict
  sample: [{"name": "add_sub", "passed": true, "failures": [], "gpu": {},
            "versions": [{"version": 2, "ready": true,
                          "cases": [{"name": "small", "protocol": "http", "passed": true, "message": ""}],
                          "latency": {"requests": 50, "p50_ms": 1.2, "p99_ms": 3.4, "passed": true}}]}]
failures:
  description: All failures of all models, each prefixed with the model and version.
  returned: always
  type: list
  elements: str
"""

import json
import math
import os
import struct
import time
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import (
    CONNECTION_ARGSPEC, TritonApiError, TritonClient)

GRPC_IMPORT_ERROR = None
try:
    import numpy as np
    import tritonclient.grpc as grpcclient
except ImportError:
    GRPC_IMPORT_ERROR = traceback.format_exc()

GOLDEN_FILE = "golden_cases.json"
_EXACT_TYPES = ("BYTES", "BOOL")


class TritonVerifyError(Exception):
    """The verification could not run at all (as opposed to a check that failed)."""


# -- golden cases -----------------------------------------------------------------
def load_cases_file(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        raise TritonVerifyError("cannot read golden cases %s: %s" % (path, exc))
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise TritonVerifyError("golden cases %s: expected a list of cases or {\"cases\": [...]}" % path)
    return cases


def flatten(data):
    if isinstance(data, (list, tuple)):
        out = []
        for item in data:
            out.extend(flatten(item))
        return out
    return [data]


def _as_text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _as_fp32(value):
    """Round to float32, so an exact match does not depend on how many digits JSON printed."""
    try:
        return struct.unpack("f", struct.pack("f", float(value)))[0]
    except (TypeError, ValueError, OverflowError):
        return value


def compare(tensor, got, want, atol, rtol):
    """Return '' when ``got`` ({datatype, shape, data}) matches ``want``, else why not."""
    if got is None:
        return "output %s missing from the response" % tensor
    if "shape" in want and list(want["shape"]) != list(got["shape"]):
        return "output %s has shape %s, expected %s" % (tensor, got["shape"], want["shape"])
    equals = want.get("equals")
    exact = equals is True or got.get("datatype") in _EXACT_TYPES
    expected = want.get("data") if equals is None or isinstance(equals, bool) else equals
    if equals is not None and not isinstance(equals, bool):
        exact = True
    got_flat = [_as_text(v) for v in flatten(got["data"])]
    want_flat = flatten(expected)
    if len(got_flat) != len(want_flat):
        return "output %s has %d values, expected %d" % (tensor, len(got_flat), len(want_flat))
    atol = want.get("atol", atol)
    rtol = want.get("rtol", rtol)
    single = got.get("datatype") in ("FP32", "FP16")
    for pos, (have, need) in enumerate(zip(got_flat, want_flat)):
        if isinstance(need, str) or isinstance(have, str):
            ok = have == need
        elif exact:
            ok = (_as_fp32(have) == _as_fp32(need)) if single else have == need
        elif isinstance(need, float) and math.isnan(need):
            ok = isinstance(have, float) and math.isnan(have)
        else:
            ok = abs(float(have) - float(need)) <= atol + rtol * abs(float(need))
        if not ok:
            how = "exactly" if exact else "within atol=%g rtol=%g" % (atol, rtol)
            return "output %s[%d] is %r, expected %r %s" % (tensor, pos, have, need, how)
    return ""


def check_outputs(outputs, expected, atol, rtol):
    problems = [compare(t, outputs.get(t), want, atol, rtol) for t, want in sorted(expected.items())]
    return "; ".join(p for p in problems if p)


class GrpcRunner(object):
    """Golden cases over gRPC with tritonclient (guarded import)."""

    def __init__(self, url, headers, timeout):
        self.client = grpcclient.InferenceServerClient(url=url)
        self.headers = headers or None
        self.timeout = timeout

    def infer(self, name, version, inputs, outputs):
        tensors = []
        for tensor, spec in sorted(inputs.items()):
            dtype = spec["datatype"]
            if dtype == "BYTES":
                array = np.array([v.encode("utf-8") if isinstance(v, str) else v for v in flatten(spec["data"])], dtype=np.object_)
            else:
                array = np.array(flatten(spec["data"]), dtype=_NP_TYPES[dtype])
            array = array.reshape(spec["shape"])
            item = grpcclient.InferInput(tensor, list(spec["shape"]), dtype)
            item.set_data_from_numpy(array)
            tensors.append(item)
        requested = [grpcclient.InferRequestedOutput(o) for o in outputs]
        result = self.client.infer(name, tensors, model_version=str(version), outputs=requested,
                                   headers=self.headers, client_timeout=self.timeout)
        answer = {}
        for out in outputs:
            array = result.as_numpy(out)
            if array is not None:
                answer[out] = {"datatype": result.get_output(out).datatype, "shape": list(array.shape),
                               "data": array.flatten().tolist()}
        return answer


_NP_TYPES = {}
if GRPC_IMPORT_ERROR is None:
    _NP_TYPES = {"BOOL": np.bool_, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
                 "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
                 "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}


def run_case(runner, protocol, name, version, case, params):
    label = case.get("name", "case")
    inputs, expected = case.get("inputs"), case.get("expected")
    if not isinstance(inputs, dict) or not isinstance(expected, dict) or not expected:
        return {"name": label, "protocol": protocol, "passed": False,
                "message": "golden case %r needs 'inputs' and 'expected' maps" % label}
    try:
        if protocol == "http":
            outputs = runner.infer(name, inputs, version=version, outputs=sorted(expected))
        else:
            outputs = runner.infer(name, version, inputs, sorted(expected))
    except TritonApiError as exc:
        return {"name": label, "protocol": protocol, "passed": False, "message": "inference failed: %s" % exc}
    except Exception as exc:  # tritonclient raises its own InferenceServerException
        return {"name": label, "protocol": protocol, "passed": False, "message": "inference failed: %s" % exc}
    problem = check_outputs(outputs, expected, params["default_atol"], params["default_rtol"])
    return {"name": label, "protocol": protocol, "passed": not problem, "message": problem}


# -- latency ----------------------------------------------------------------------
def percentile(samples, pct):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(samples)
    rank = max(1, int(math.ceil(pct / 100.0 * len(ordered))))
    return ordered[rank - 1]


def measure_latency(client, name, version, case, budget):
    samples = []
    for _dummy in range(budget["requests"]):
        start = time.time()
        client.infer(name, case["inputs"], version=version, outputs=sorted(case["expected"]))
        samples.append((time.time() - start) * 1000.0)
    result = {"requests": len(samples), "p50_ms": round(percentile(samples, 50), 3),
              "p99_ms": round(percentile(samples, 99), 3), "p50_budget_ms": budget.get("p50_ms"),
              "p99_budget_ms": budget.get("p99_ms")}
    over = []
    for key in ("p50", "p99"):
        limit = budget.get(key + "_ms")
        if limit is not None and result[key + "_ms"] > limit:
            over.append("%s latency %.1f ms exceeds the budget of %s ms over %d requests"
                        % (key, result[key + "_ms"], limit, len(samples)))
    result["passed"] = not over
    return result, over


# -- GPU placement ----------------------------------------------------------------
def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return ""


def _parent(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (IOError, OSError, ValueError, IndexError):
        return 0


def triton_pid_of(pid):
    """The tritonserver PID that is ``pid`` or an ancestor of it (stubs are its children); 0 if none."""
    seen = 0
    while pid > 1 and seen < 64:
        if _comm(pid) == "tritonserver":
            return pid
        pid = _parent(pid)
        seen += 1
    return 0


def gpu_pids(module):
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        raise TritonVerifyError("require_gpu is set but nvidia-smi is not on this host's PATH: install the NVIDIA driver utilities")
    rc, out, err = module.run_command([smi, "--query-compute-apps=pid", "--format=csv,noheader"])
    if rc != 0:
        raise TritonVerifyError("nvidia-smi failed (rc=%s): %s" % (rc, (err or out).strip()))
    pids = []
    for line in out.splitlines():
        line = line.strip()
        if line.isdigit():
            pids.append(int(line))
    return pids


def check_gpu(client, name, smi_pids):
    failures = []
    kinds = []
    try:
        config = client.model_config(name)
        kinds = [group.get("kind", "KIND_AUTO") for group in config.get("instance_group", [])]
    except TritonApiError as exc:
        failures.append("cannot read the model configuration to check GPU placement: %s" % exc)
    not_gpu = [k for k in kinds if k != "KIND_GPU"]
    if not kinds or not_gpu:
        failures.append("instance_group kinds are %s, not KIND_GPU: set instance_group [{kind: KIND_GPU}] in config.pbtxt "
                        "(KIND_AUTO resolves to CPU when Triton sees no GPU)" % (kinds or "empty"))
    triton_on_gpu = sorted(set(p for p in (triton_pid_of(pid) for pid in smi_pids) if p))
    if not triton_on_gpu:
        failures.append("no Triton process holds a GPU context (nvidia-smi compute apps: %s): check that the service "
                        "gets the GPU (CDI/--gpus for containers, CUDA_VISIBLE_DEVICES) and the backend uses CUDA" % (smi_pids or "none"))
    return {"required": True, "instance_kinds": kinds, "gpu_pids": smi_pids, "triton_pids_on_gpu": triton_on_gpu,
            "passed": not failures}, failures


# -- per model --------------------------------------------------------------------
def cases_for(spec, version, params):
    if spec.get("golden_cases") is not None:
        return spec["golden_cases"], "inline"
    if spec.get("golden_cases_file"):
        return load_cases_file(spec["golden_cases_file"]), spec["golden_cases_file"]
    if params["model_repository"]:
        path = os.path.join(params["model_repository"], spec["name"], str(version), GOLDEN_FILE)
        if os.path.isfile(path):
            return load_cases_file(path), path
    return [], None


def verify_model(client, grpc_runner, spec, params, smi_pids):
    name = spec["name"]
    failures = []
    versions = spec.get("versions")
    if not versions:
        try:
            versions = sorted(int(v) for v in client.model_metadata(name).get("versions", []))
        except TritonApiError as exc:
            versions = []
            failures.append("model is not serving: %s. Load it (aiops.triton.triton_model) and check Triton's log" % exc)
    results = []
    for version in versions:
        entry = {"version": version, "ready": client.model_ready(name, version), "cases": [], "latency": None}
        results.append(entry)
        where = "version %s: " % version
        if not entry["ready"]:
            failures.append(where + "not READY: load it with aiops.triton.triton_model and check Triton's log for the reason")
            continue
        cases, source = cases_for(spec, version, params)
        entry["cases_source"] = source
        if not cases and params["require_golden_cases"]:
            failures.append(where + "no golden cases: give models[].golden_cases(_file) or put %s in the version directory" % GOLDEN_FILE)
        runners = [("http", client)] + ([("grpc", grpc_runner)] if grpc_runner else [])
        for case in cases:
            for protocol, runner in runners:
                outcome = run_case(runner, protocol, name, version, case, params)
                entry["cases"].append(outcome)
                if not outcome["passed"]:
                    failures.append(where + "golden case %r over %s: %s" % (outcome["name"], protocol, outcome["message"]))
        budget = spec.get("latency_budget")
        if budget:
            if not cases:
                failures.append(where + "a latency budget needs a golden case to send")
            else:
                try:
                    entry["latency"], over = measure_latency(client, name, version, cases[0], budget)
                    failures.extend(where + text for text in over)
                except TritonApiError as exc:
                    failures.append(where + "latency measurement failed: %s" % exc)
    if not versions and not failures:
        failures.append("Triton reports no serving version")
    gpu = {}
    if params["require_gpu"]:
        gpu, gpu_failures = check_gpu(client, name, smi_pids)
        failures.extend(gpu_failures)
    return {"name": name, "passed": not failures, "failures": failures, "versions": results, "gpu": gpu}


def wait_server(client, timeout):
    deadline = time.time() + timeout
    while True:
        try:
            live, ready = client.live(), client.ready()
        except TritonApiError as exc:
            live, ready, error = False, False, str(exc)
        else:
            error = ""
        if ready or time.time() >= deadline:
            return live, ready, error
        time.sleep(0.5)


def verify(module, params):
    headers = {params["api_key_header"]: params["api_key"]} if params["api_key"] else {}
    client = TritonClient(params["url"], api_key=params["api_key"], api_key_header=params["api_key_header"],
                          timeout=params["timeout"])
    live, ready, error = wait_server(client, params["ready_timeout"])
    server = {"live": live, "ready": ready, "version": None}
    if not live:
        raise TritonVerifyError("Triton at %s is not live after %ss (%s): check the service (systemctl status tritonserver)"
                                % (params["url"], params["ready_timeout"], error or "not live"))
    try:
        server["version"] = client.server_metadata().get("version")
    except TritonApiError:
        pass
    failures = []
    if not ready:
        failures.append("server: live but not ready after %ss; with --strict-readiness a model that failed to load "
                        "keeps the server unready: see the models below and Triton's log" % params["ready_timeout"])
    grpc_runner = GrpcRunner(params["grpc_url"], headers, params["timeout"]) if params["grpc_url"] else None
    smi_pids = gpu_pids(module) if params["require_gpu"] else []
    results = []
    for spec in params["models"]:
        outcome = verify_model(client, grpc_runner, spec, params, smi_pids)
        results.append(outcome)
        failures.extend("%s: %s" % (spec["name"], text) for text in outcome["failures"])
    return server, results, failures


def main():
    module = AnsibleModule(
        argument_spec=dict(
            CONNECTION_ARGSPEC,
            grpc_url=dict(type="str"),
            models=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True),
                versions=dict(type="list", elements="int"),
                golden_cases=dict(type="list", elements="dict"),
                golden_cases_file=dict(type="path"),
                latency_budget=dict(type="dict", options=dict(
                    requests=dict(type="int", default=50),
                    p50_ms=dict(type="float"),
                    p99_ms=dict(type="float"),
                )),
            ), mutually_exclusive=[("golden_cases", "golden_cases_file")]),
            model_repository=dict(type="path"),
            require_golden_cases=dict(type="bool", default=True),
            require_gpu=dict(type="bool", default=False),
            default_atol=dict(type="float", default=1.0e-6),
            default_rtol=dict(type="float", default=1.0e-5),
            ready_timeout=dict(type="int", default=60),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["grpc_url"] and GRPC_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("tritonclient[grpc] and numpy (for grpc_url)"), exception=GRPC_IMPORT_ERROR)
    try:
        server, results, failures = verify(module, params)
    except TritonVerifyError as exc:
        module.fail_json(msg=str(exc), failures=[str(exc)], models=[], server={})
    result = dict(changed=False, server=server, models=results, failures=failures)
    if failures:
        module.fail_json(msg="Triton verification failed at %s: %s" % (params["url"], " | ".join(failures)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
