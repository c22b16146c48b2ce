# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Python-based Triton backend named ``onnxruntime``.

Triton builds without the native onnxruntime backend (the PyPI ``nvidia-pytriton`` server)
load a model whose config says ``platform: "onnxruntime_onnx"`` through this file when it is
installed as ``<backend-directory>/onnxruntime/model.py``; model configs stay unchanged.

- Model file: ``<model>/<version>/<default_model_filename or model.onnx>``.
- Device: CUDAExecutionProvider on ``model_instance_device_id`` when the instance kind is GPU
  and onnxruntime-gpu provides CUDA; CPUExecutionProvider otherwise.
- Batching: with ``max_batch_size > 0`` the requests of one ``execute`` call are concatenated
  along the batch dimension, run once and split back; a failed batch is retried request by
  request so that only the bad request gets an error.
- Inputs are cast to the dtype the ONNX graph declares; outputs are cast to the dtype of the
  model config and only the outputs the config lists are returned.
- Same knobs as the native backend: ``optimization.graph.level`` (-1 basic, 1 extended,
  otherwise all) and the ``intra_op_thread_count`` / ``inter_op_thread_count`` parameters.
- Placement report: each instance logs, once loaded, the execution provider onnxruntime really runs
  it on (after any fallback to CPU) in one line of Triton's log, ``PLACEMENT_FORMAT``;
  ``triton_verify`` with ``require_gpu`` reads it (Triton 2.51's python backend has no response parameters).
"""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils

_ORT_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32, "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_, "tensor(string)": np.object_,
}


def _param(config, key):
    return config.get("parameters", {}).get(key, {}).get("string_value")


def session_options(ort, config):
    opts = ort.SessionOptions()
    level = int(config.get("optimization", {}).get("graph", {}).get("level", 0))
    opts.graph_optimization_level = {
        -1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        1: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    }.get(level, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    for key, attr in (("intra_op_thread_count", "intra_op_num_threads"), ("inter_op_thread_count", "inter_op_num_threads")):
        value = _param(config, key)
        if value:
            setattr(opts, attr, int(value))
    return opts


def providers(ort, kind, device_id):
    if kind == "GPU" and "CUDAExecutionProvider" in ort.get_available_providers():
        return [("CUDAExecutionProvider", {"device_id": int(device_id)}), "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


# triton_verification.PLACEMENT_RE parses this line; keep the two in step.
PLACEMENT_FORMAT = "aiops onnxruntime placement: model=%s version=%s instance=%s provider=%s device=%d"


def placement(session):
    """(provider, device id) the session really runs on: CUDA may have fallen back to CPU at load."""
    provider = session.get_providers()[0]
    if provider != "CUDAExecutionProvider":
        return provider, -1
    return provider, int(session.get_provider_options().get(provider, {}).get("device_id", 0))


class TritonPythonModel:
    def initialize(self, args):
        import onnxruntime as ort  # imported here so a missing package fails the load with its own message

        config = json.loads(args["model_config"])
        self.batched = int(config.get("max_batch_size", 0)) > 0
        filename = config.get("default_model_filename") or "model.onnx"
        path = os.path.join(args["model_repository"], args["model_version"], filename)
        if not os.path.isfile(path):
            raise pb_utils.TritonModelException("ONNX model file not found: %s" % path)
        self.session = ort.InferenceSession(
            path, sess_options=session_options(ort, config),
            providers=providers(ort, args.get("model_instance_kind"), args.get("model_instance_device_id", 0)))
        graph_inputs = {i.name: _ORT_TYPES.get(i.type, np.float32) for i in self.session.get_inputs()}
        graph_outputs = {o.name for o in self.session.get_outputs()}
        self.inputs = []
        for item in config.get("input", []):
            if item["name"] not in graph_inputs:
                raise pb_utils.TritonModelException("config input %r is not an input of %s" % (item["name"], path))
            self.inputs.append((item["name"], graph_inputs[item["name"]]))
        self.outputs = []
        for item in config.get("output", []):
            if item["name"] not in graph_outputs:
                raise pb_utils.TritonModelException("config output %r is not an output of %s" % (item["name"], path))
            self.outputs.append((item["name"], pb_utils.triton_string_to_numpy(item["data_type"])))
        self.output_names = [name for name, _dtype in self.outputs]
        pb_utils.Logger.log_info(PLACEMENT_FORMAT % ((args["model_name"], args["model_version"], args["model_instance_name"])
                                                     + placement(self.session)))

    def _feeds(self, request):
        feeds = {}
        for name, dtype in self.inputs:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is None:
                raise ValueError("missing input %r" % name)
            array = tensor.as_numpy()
            feeds[name] = array if array.dtype == dtype else array.astype(dtype)
        return feeds

    def _respond(self, results):
        tensors = [pb_utils.Tensor(name, np.ascontiguousarray(value.astype(dtype, copy=False)))
                   for (name, dtype), value in zip(self.outputs, results)]
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def _error(self, exc):
        return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(exc)))

    def _one_by_one(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(self._respond(self.session.run(self.output_names, self._feeds(request))))
            except Exception as exc:  # noqa: BLE001 - every failure becomes this request's error
                responses.append(self._error(exc))
        return responses

    def execute(self, requests):
        if not self.batched or len(requests) == 1:
            return self._one_by_one(requests)
        try:
            feeds = [self._feeds(request) for request in requests]
            sizes = [next(iter(f.values())).shape[0] for f in feeds]
            merged = {name: np.concatenate([f[name] for f in feeds], axis=0) for name, _dtype in self.inputs}
            results = self.session.run(self.output_names, merged)
        except Exception:  # noqa: BLE001 - find the culprit request by request
            return self._one_by_one(requests)
        bounds = np.cumsum([0] + sizes)
        return [self._respond([r[lo:hi] for r in results]) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def finalize(self):
        self.session = None
