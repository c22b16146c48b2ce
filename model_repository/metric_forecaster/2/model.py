"""Triton python backend: forecast a metric with a Prophet model stored as JSON (version 2).

Inputs (no batch dimension, one series per request):
  history_values FP32 [n], history_timestamps INT64 [n] (unix seconds), horizon INT32 [1]
Outputs:
  forecast_timestamps INT64 [horizon], yhat / yhat_lower / yhat_upper FP32 [horizon]
Version 1's answers, computed by forecast.py's direct numpy path where it agrees with Prophet at
load (the log says which path serves and why). A bad request (lengths differ, unordered timestamps,
horizon out of range) gets its own error response; every request of an ``execute`` is answered.
"""

import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forecast  # noqa: E402  (lives next to this file in the version dir)

OUTPUTS = ("forecast_timestamps", "yhat", "yhat_lower", "yhat_upper")


def _param(config, key, default):
    return config.get("parameters", {}).get(key, {}).get("string_value", default)


def _log(message):
    logger = getattr(pb_utils, "Logger", None)  # python backend >= 23.04; stderr reaches Triton's log too
    if logger is not None:
        logger.log_info(message)
    else:
        print(message, file=sys.stderr, flush=True)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        self.max_horizon = int(_param(config, "MAX_HORIZON", "336"))
        self.anchor_points = int(_param(config, "ANCHOR_POINTS", "24"))
        self.seed = int(_param(config, "SEED", "0"))
        self.model = forecast.load(os.path.join(version_dir, _param(config, "ARTIFACT", "prophet_model.json")), self.seed)
        _log("%s version %s: %s" % (config.get("name", "metric_forecaster"), args["model_version"], self.model.describe()))

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                values = pb_utils.get_input_tensor_by_name(request, "history_values").as_numpy().reshape(-1)
                stamps = pb_utils.get_input_tensor_by_name(request, "history_timestamps").as_numpy().reshape(-1)
                horizon = int(pb_utils.get_input_tensor_by_name(request, "horizon").as_numpy().reshape(-1)[0])
                result = forecast.forecast(self.model, values, stamps, horizon, self.anchor_points, self.seed,
                                           self.max_horizon)
            except ValueError as exc:
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(exc))))
                continue
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor(name, np.ascontiguousarray(arr)) for name, arr in zip(OUTPUTS, result)]))
        return responses

    def finalize(self):
        self.model = None
