# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks behind ``triton_verify``: golden cases over HTTP/gRPC, latency, GPU placement.

The module only orchestrates; the comparison itself is ``golden_cases`` (shared with the
model build), the index is read through ``TritonClient.model_index`` and nvidia-smi is run
only through ``nvidia_smi``.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import math
import os
import re
import time
import traceback

from ansible_collections.aiops.triton.plugins.module_utils import golden_cases as gc
from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError

GRPC_IMPORT_ERROR = None
try:
    import numpy as np
    import tritonclient.grpc as grpcclient
except ImportError:
    GRPC_IMPORT_ERROR = traceback.format_exc()

_NP_TYPES = {}
if GRPC_IMPORT_ERROR is None:
    _NP_TYPES = {"BOOL": np.bool_, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
                 "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
                 "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}


class TritonVerifyError(Exception):
    """The verification could not run at all (as opposed to a check that failed)."""


# -- golden cases -----------------------------------------------------------------
class HttpRunner(object):
    """Golden cases over Triton's JSON API (the stdlib client)."""

    protocol = "http"

    def __init__(self, client):
        self.client = client

    def infer(self, name, version, inputs, outputs):
        return self.client.infer(name, inputs, version=version, outputs=outputs)


class GrpcRunner(object):
    """Golden cases over gRPC with tritonclient (guarded import)."""

    protocol = "grpc"

    def __init__(self, url, headers, timeout):
        self.client = grpcclient.InferenceServerClient(url=url)
        self.headers = headers or None
        self.timeout = timeout

    def infer(self, name, version, inputs, outputs):
        tensors = []
        for tensor, spec in sorted(inputs.items()):
            dtype = spec["datatype"]
            if dtype == "BYTES":
                array = np.array([v.encode("utf-8") if isinstance(v, str) else v for v in gc.flatten(spec["data"])], dtype=np.object_)
            else:
                array = np.array(gc.flatten(spec["data"]), dtype=_NP_TYPES[dtype])
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


def run_case(runner, name, version, case, atol, rtol):
    """One golden case on one protocol: ``{name, protocol, passed, message}``."""
    label = case.get("name", "case") if isinstance(case, dict) else "case"
    outcome = {"name": label, "protocol": runner.protocol, "passed": False, "message": gc.case_problem(case)}
    if outcome["message"]:
        return outcome
    try:
        outputs = runner.infer(name, version, case["inputs"], sorted(case["expected"]))
    except Exception as exc:  # TritonApiError, or tritonclient's InferenceServerException
        outcome["message"] = "inference failed: %s" % exc
        return outcome
    outcome["message"] = "; ".join(gc.check_outputs(outputs, case["expected"], atol, rtol))
    outcome["passed"] = not outcome["message"]
    return outcome


def cases_for(spec, version, model_repository):
    """(cases, where they came from) for one model version; ([], None) when it has none."""
    try:
        if spec.get("golden_cases") is not None:
            return spec["golden_cases"], "inline"
        if spec.get("golden_cases_file"):
            return gc.load_cases_file(spec["golden_cases_file"]), spec["golden_cases_file"]
        if model_repository:
            path = os.path.join(model_repository, spec["name"], str(version), gc.GOLDEN_FILE)
            if os.path.isfile(path):
                return gc.load_cases_file(path), path
    except gc.GoldenCaseError as exc:
        raise TritonVerifyError(str(exc))
    return [], None


# -- latency ----------------------------------------------------------------------
def percentile(samples, pct):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(samples)
    rank = max(1, int(math.ceil(pct / 100.0 * len(ordered))))
    return ordered[rank - 1]


def measure_latency(client, name, version, case, budget):
    """p50/p99 over ``budget['requests']`` sequential HTTP requests; (result, sentences over budget)."""
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


# The line the collection's python-based onnxruntime backend logs per loaded instance (its model.py PLACEMENT_FORMAT).
PLACEMENT_RE = re.compile(r"aiops onnxruntime placement: model=(\S+) version=(\d+) instance=(\S+) provider=(\S+) device=(-?\d+)")


def triton_apps(apps, gpus):
    """The compute apps (nvidia-smi) that are Triton processes: each with ``triton_pid`` and its GPU ``index``."""
    index_of = dict((gpu["uuid"], gpu["index"]) for gpu in gpus)
    found = []
    for app in apps:
        triton = triton_pid_of(app["pid"])
        if triton:
            found.append(dict(app, triton_pid=triton, index=index_of.get(app["gpu_uuid"])))
    return found


def expected_devices(config, gpus):
    """GPU indexes a model's instances must be on: those its groups list, else every GPU of the host."""
    listed = sorted(set(gid for group in config.get("instance_group", []) for gid in group.get("gpus", [])))
    return listed or sorted(gpu["index"] for gpu in gpus)


def parse_placements(log_text):
    """Placement lines in Triton's log -> {model: {"<version>/<instance>": {version, instance, provider, device_id}}}; the
    last line of an instance wins (a reload logs it again)."""
    found = {}
    for match in PLACEMENT_RE.finditer(log_text or ""):
        model, version, instance, provider, device = match.groups()
        found.setdefault(model, {})["%s/%s" % (version, instance)] = {
            "version": int(version), "instance": instance, "provider": provider, "device_id": int(device)}
    return found


def check_gpu(client, name, gpu_state, placements=None, versions=None):
    """GPU placement of one model; (result, failures).

    ``gpu_state``: {gpus, apps} from nvidia-smi. ``placements``: this model's instances as the backend logged
    them (``parse_placements``), of which those of ``versions`` count; none logged means a backend that does not
    report (Triton's C++ onnxruntime backend runs inside tritonserver itself), judged by the process check alone.
    """
    failures = []
    config = {}
    try:
        config = client.model_config(name)
    except TritonApiError as exc:
        failures.append("cannot read the model configuration to check GPU placement: %s" % exc)
    kinds = [group.get("kind", "KIND_AUTO") for group in config.get("instance_group", [])]
    if not kinds or [k for k in kinds if k != "KIND_GPU"]:
        failures.append("instance_group kinds are %s, not KIND_GPU: set instance_group [{kind: KIND_GPU}] in config.pbtxt "
                        "(KIND_AUTO resolves to CPU when Triton sees no GPU)" % (kinds or "empty"))
    expected = expected_devices(config, gpu_state["gpus"])
    on_gpu = triton_apps(gpu_state["apps"], gpu_state["gpus"])
    # Memory nvidia-smi cannot read (None, under MIG) still shows the process holds a context there.
    used = sorted(set(app["index"] for app in on_gpu if app["used_memory_mib"] is None or app["used_memory_mib"] > 0))
    missing = [index for index in expected if index not in used]
    if not on_gpu:
        failures.append("no Triton process holds a GPU context (nvidia-smi compute apps: %s): check that the service "
                        "gets the GPU (DeviceAllow= for native, CDI/--gpus for containers) and the backend uses CUDA"
                        % (["%s %s" % (a["pid"], a["process_name"]) for a in gpu_state["apps"]] or "none"))
    elif missing:
        failures.append("no Triton process uses memory on GPU %s, where the instances must run (Triton uses GPU %s)"
                        % (", ".join(str(i) for i in missing), ", ".join(str(i) for i in used) or "none"))
    instances = dict((instance, p) for instance, p in sorted((placements or {}).items())
                     if versions is None or p["version"] in versions)
    for where in instances.values():
        if where["provider"] != "CUDAExecutionProvider" or where["device_id"] not in expected:
            failures.append("version %s instance %s runs on %s (device %s), not on CUDA GPU %s: onnxruntime fell back "
                            "to CPU (is onnxruntime-gpu installed and are the CUDA libraries found? see Triton's log)"
                            % (where["version"], where["instance"], where["provider"], where["device_id"],
                               ", ".join(str(i) for i in expected)))
    return {"required": True, "instance_kinds": kinds, "expected_gpus": expected,
            "triton_processes": [dict((k, a[k]) for k in ("pid", "process_name", "triton_pid", "index", "used_memory_mib"))
                                 for a in on_gpu],
            "execution_providers": instances or None, "passed": not failures}, failures


# -- server -----------------------------------------------------------------------
def wait_server(client, timeout):
    """(live, ready, last error) once ready or after ``timeout`` seconds."""
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


def read_index(client):
    """The repository index (``{model: {version: (state, reason)}}``), or None where the key does not allow it."""
    try:
        return client.model_index()
    except TritonApiError as exc:
        if exc.status is None:
            raise
        return None
