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
  - Server live and ready; each model and each of its versions C(READY). Without O(models[].versions), the versions
    C(READY) in Triton's repository index are verified (or, when the index is not readable, those in the model's metadata).
  - Golden cases, inputs with expected outputs and tolerances, are sent over HTTP and, when O(grpc_url) is set, over gRPC.
  - Latency budget, p50 and p99 over a number of sequential HTTP requests, when a model sets one.
  - With O(require_gpu), every instance group of each model is C(KIND_GPU); a Triton process (C(tritonserver)
    or one of its backend stubs) uses memory, per C(nvidia-smi --query-compute-apps), on every GPU the model's
    instance groups list (all GPUs when they list none); and every instance whose execution provider the backend
    logs (the collection's python-based onnxruntime backend logs one line per loaded instance in Triton's log,
    read from O(log_file) or the journal of O(log_unit)'s current run) runs on C(CUDAExecutionProvider) on one of
    those GPUs. A backend that logs nothing (Triton's C++ onnxruntime backend) is judged by the process check alone.
  - "Golden-case format (one case): C({name, inputs: {TENSOR: {datatype, shape, data}},
    expected: {TENSOR: {data, atol, rtol, equals}}}). C(data) may be nested or flat. Numbers match when
    C(|got - want| <= atol + rtol * |want|) (defaults O(default_atol), O(default_rtol)); C(equals: true), or a
    BYTES / BOOL tensor, needs an exact match; C(equals: VALUE) compares with VALUE exactly instead of C(data).
    A cases file holds a list of cases or C({cases: [...]})."
version_added: "0.2.0"
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiops.triton.attributes.actiongroup_triton_api
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
        description:
          - Model name.
          - Refused before Triton is contacted when it cannot be a model directory name
            (see M(aiops.triton.triton_model_config)'s O(aiops.triton.triton_model_config#module:name)).
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
    description: Require GPU placement (instance groups C(KIND_GPU), a Triton process on a GPU per C(nvidia-smi), CUDA per the backend's log).
    type: bool
    default: false
  log_unit:
    description:
      - With O(require_gpu), the systemd unit whose journal (its current run only) holds Triton's log.
      - No placement line is read when the unit has no current run.
    type: str
    default: tritonserver.service
  log_file:
    description: With O(require_gpu), a file holding Triton's log, read instead of the journal of O(log_unit).
    type: path
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
  require_server_ready:
    description:
      - Fail unless the server itself reports ready. With C(--strict-readiness), Triton 2.51 keeps the server
        unready after a version failed to load, even once the model serves its previous versions again (the
        failed version keeps its error state until the model loads cleanly or is unloaded); a rollback
        verifies its models with V(false) and reports the server state in RV(server).
    type: bool
    default: true
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
      description:
        - GPU placement check (only with O(require_gpu)) with C(instance_kinds), C(expected_gpus), C(triton_processes)
          (nvidia-smi compute apps that are Triton, with GPU index and used memory) and C(execution_providers)
          (per instance of the verified versions, C({version, instance, provider, device_id}) as the backend logged it; null when
          it logged none).
      type: dict
    states:
      description:
        - Every version of the model in Triton's repository index and its state (C(READY), C(UNAVAILABLE), ...),
          keyed by version; null when the index could not be read (the repository API needs O(api_key)).
      type: dict
  sample: [{"name": "add_sub", "passed": true, "failures": [], "gpu": {}, "states": {"1": "UNAVAILABLE", "2": "READY"},
            "versions": [{"version": 2, "ready": true,
                          "cases": [{"name": "small", "protocol": "http", "passed": true, "message": ""}],
                          "latency": {"requests": 50, "p50_ms": 1.2, "p99_ms": 3.4, "passed": true}}]}]
failures:
  description: All failures of all models, each prefixed with the model and version.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.aiops.triton.plugins.module_utils import golden_cases as gc
from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi
from ansible_collections.aiops.triton.plugins.module_utils import triton_verification as tv
from ansible_collections.aiops.triton.plugins.module_utils.model_name import ModelNameError, check_model_name
from ansible_collections.aiops.triton.plugins.module_utils.triton_api import (
    CONNECTION_ARGSPEC, TritonApiError, TritonClient)


def serving_versions(client, name, index):
    """Versions Triton serves: READY in the index when it could be read, else the model's metadata."""
    if index is not None:
        ready = sorted(v for v, (state, _reason) in index.get(name, {}).items() if state == "READY")
        if ready:
            return ready
        raise TritonApiError("Triton's repository index has no READY version of %r (states: %s)"
                             % (name, dict((v, s) for v, (s, _r) in sorted(index.get(name, {}).items())) or "none"))
    return sorted(int(v) for v in client.model_metadata(name).get("versions", []))


def verify_version(client, runners, spec, version, params):
    """Readiness, golden cases and latency of one version: (entry, failures)."""
    entry = {"version": version, "ready": client.model_ready(name=spec["name"], version=version), "cases": [], "latency": None}
    failures = []
    if not entry["ready"]:
        return entry, ["not READY: load it with aiops.triton.triton_model and check Triton's log for the reason"]
    cases, entry["cases_source"] = tv.cases_for(spec, version, params["model_repository"])
    if not cases and params["require_golden_cases"]:
        failures.append("no golden cases: give models[].golden_cases(_file) or put %s in the version directory" % gc.GOLDEN_FILE)
    for case in cases:
        for runner in runners:
            outcome = tv.run_case(runner, spec["name"], version, case, params["default_atol"], params["default_rtol"])
            entry["cases"].append(outcome)
            if not outcome["passed"]:
                failures.append("golden case %r over %s: %s" % (outcome["name"], outcome["protocol"], outcome["message"]))
    budget = spec.get("latency_budget")
    if budget and not cases:
        failures.append("a latency budget needs a golden case to send")
    elif budget:
        try:
            entry["latency"], over = tv.measure_latency(client, spec["name"], version, cases[0], budget)
            failures.extend(over)
        except TritonApiError as exc:
            failures.append("latency measurement failed: %s" % exc)
    return entry, failures


def verify_model(client, runners, spec, params, index, host_gpus):
    name = spec["name"]
    failures = []
    versions = spec.get("versions")
    if not versions:
        try:
            versions = serving_versions(client, name, index)
        except TritonApiError as exc:
            versions = []
            failures.append("model is not serving: %s. Load it (aiops.triton.triton_model) and check Triton's log" % exc)
    results = []
    for version in versions:
        entry, version_failures = verify_version(client, runners, spec, version, params)
        results.append(entry)
        failures.extend("version %s: %s" % (version, text) for text in version_failures)
    if not versions and not failures:
        failures.append("Triton reports no serving version")
    gpu = {}
    if params["require_gpu"]:
        gpu, gpu_failures = tv.check_gpu(client, name, host_gpus, host_gpus["placements"].get(name), versions)
        failures.extend(gpu_failures)
    states = dict((str(v), s) for v, (s, _r) in sorted((index or {}).get(name, {}).items())) if index is not None else None
    return {"name": name, "passed": not failures, "failures": failures, "versions": results, "gpu": gpu, "states": states}


def gpu_state(module):
    """The host's GPUs and the processes using them, from nvidia-smi: {gpus, apps}."""
    binary = smi.find(module)
    if not binary:
        raise tv.TritonVerifyError("require_gpu is set but nvidia-smi is not on this host's PATH: install the NVIDIA driver utilities")
    try:
        state = {"gpus": smi.gpus(module, binary), "apps": smi.compute_apps(module, binary)}
    except smi.NvidiaSmiError as exc:
        raise tv.TritonVerifyError("require_gpu: %s" % exc)
    if not state["gpus"]:
        raise tv.TritonVerifyError("require_gpu is set but nvidia-smi lists no GPU on this host")
    state["placements"] = tv.parse_placements(triton_log(module))
    return state


def triton_log(module):
    """Triton's log: O(log_file), else the journal of O(log_unit)'s current run ('' when it has none)."""
    params = module.params
    if params["log_file"]:
        try:
            with open(params["log_file"]) as handle:
                return handle.read()
        except (IOError, OSError) as exc:
            raise tv.TritonVerifyError("cannot read Triton's log %s: %s" % (params["log_file"], exc))
    systemctl = module.get_bin_path("systemctl")
    journalctl = module.get_bin_path("journalctl")
    if not systemctl or not journalctl:
        return ""
    rc, out, _err = module.run_command([systemctl, "show", "--property=InvocationID", "--value", params["log_unit"]])
    if rc != 0 or not out.strip():
        return ""
    rc, out, err = module.run_command([journalctl, "--no-pager", "--output=cat", "_SYSTEMD_INVOCATION_ID=" + out.strip()])
    if rc != 0:
        raise tv.TritonVerifyError("cannot read the journal of %s: %s" % (params["log_unit"], (err or out).strip()))
    return out


def verify(module, params):
    headers = {params["api_key_header"]: params["api_key"]} if params["api_key"] else {}
    client = TritonClient(params["url"], api_key=params["api_key"], api_key_header=params["api_key_header"],
                          timeout=params["timeout"])
    live, ready, error = tv.wait_server(client, params["ready_timeout"] if params["require_server_ready"] else 0)
    server = {"live": live, "ready": ready, "version": None}
    if not live:
        raise tv.TritonVerifyError("Triton at %s is not live after %ss (%s): check the service (systemctl status tritonserver)"
                                   % (params["url"], params["ready_timeout"], error or "not live"))
    try:
        server["version"] = client.server_metadata().get("version")
    except TritonApiError:
        pass
    failures = []
    if not ready and params["require_server_ready"]:
        failures.append("server: live but not ready after %ss; with --strict-readiness a model that failed to load "
                        "keeps the server unready: see the models below and Triton's log" % params["ready_timeout"])
    runners = [tv.HttpRunner(client)]
    if params["grpc_url"]:
        runners.append(tv.GrpcRunner(params["grpc_url"], headers, params["timeout"]))
    state = gpu_state(module) if params["require_gpu"] else None
    index = tv.read_index(client)
    results = []
    for spec in params["models"]:
        outcome = verify_model(client, runners, spec, params, index, state)
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
            log_unit=dict(type="str", default="tritonserver.service"),
            log_file=dict(type="path"),
            default_atol=dict(type="float", default=gc.DEFAULT_ATOL),
            default_rtol=dict(type="float", default=gc.DEFAULT_RTOL),
            ready_timeout=dict(type="int", default=60),
            require_server_ready=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        for index, spec in enumerate(params["models"]):
            check_model_name(spec["name"], "models[%d].name" % index)
    except ModelNameError as exc:
        module.fail_json(msg=str(exc), failures=[str(exc)], models=[], server={}, url=params["url"])
    if params["grpc_url"] and tv.GRPC_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("tritonclient[grpc] and numpy (for grpc_url)"), exception=tv.GRPC_IMPORT_ERROR)
    try:
        server, results, failures = verify(module, params)
    except tv.TritonVerifyError as exc:
        module.fail_json(msg=str(exc), failures=[str(exc)], models=[], server={}, url=params["url"])
    except TritonApiError as exc:
        # Triton went away mid-run (or answered something unexpected): one failure naming the URL, no traceback
        msg = "Triton verification could not complete at %s: %s" % (params["url"], exc)
        module.fail_json(msg=msg, failures=[msg], models=[], server={}, url=params["url"])
    result = dict(changed=False, server=server, models=results, failures=failures)
    if failures:
        module.fail_json(msg="Triton verification failed at %s: %s" % (params["url"], " | ".join(failures)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
