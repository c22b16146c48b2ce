"""metric_forecaster v2's model.py under a stand-in for Triton's python backend module."""

import importlib.util
import json
import logging
import os
import shutil
import sys
import types

import numpy as np
import pytest
import yaml

from model_repository._build import forecaster

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCES = os.path.join(CHECKOUT, "model_repository", "metric_forecaster")
logging.getLogger("cmdstanpy").setLevel(logging.WARNING)


def _pb_utils(logged):
    """What model.py uses of triton_python_backend_utils; a request is a dict of arrays."""
    pb = types.ModuleType("triton_python_backend_utils")

    class Tensor(object):
        def __init__(self, name, array):
            self.name, self.array = name, array

        def as_numpy(self):
            return self.array

    class InferenceResponse(object):
        def __init__(self, output_tensors, error=None):
            self.outputs, self.error = {t.name: t.array for t in output_tensors}, error

    class Logger(object):
        log_info = staticmethod(logged.append)

    pb.Tensor, pb.InferenceResponse, pb.Logger = Tensor, InferenceResponse, Logger
    pb.TritonError = lambda message: message
    pb.get_input_tensor_by_name = lambda request, name: Tensor(name, request[name])
    return pb


@pytest.fixture()
def served(tmp_path, monkeypatch):
    from prophet.serialize import model_to_json
    stamps, values = forecaster.series(21)
    model = forecaster.train(stamps[:-forecaster.HOLD_OUT], values[:-forecaster.HOLD_OUT])
    vdir = tmp_path / "metric_forecaster" / "2"
    shutil.copytree(os.path.join(SOURCES, "2"), str(vdir), ignore=shutil.ignore_patterns("__pycache__"))
    (vdir / "prophet_model.json").write_text(model_to_json(model), encoding="utf-8")
    logged = []
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _pb_utils(logged))
    for name in ("forecast", "prophet_direct"):  # model.py imports them by name from its own dir
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    spec = importlib.util.spec_from_file_location("forecaster_model_py_under_test", str(vdir / "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(SOURCES, "model.yml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)["config"]
    instance = module.TritonPythonModel()
    instance.initialize({"model_config": json.dumps(config), "model_repository": str(vdir.parent), "model_version": "2"})
    yield instance, logged, stamps.as_unit("s").asi8.astype(np.int64), values
    for name in ("forecast", "prophet_direct"):
        sys.modules.pop(name, None)


def test_logs_the_path_and_answers_every_request_of_an_execute(served):
    instance, logged, unix, values = served
    assert len(logged) == 1
    assert logged[0].startswith("metric_forecaster version 2: direct path serves: agrees with Prophet's predict")

    def request(stop, horizon):
        return {"history_values": values[stop - 48:stop].astype(np.float32), "history_timestamps": unix[stop - 48:stop],
                "horizon": np.array([horizon], dtype=np.int32)}
    bad = dict(request(1344, 6), horizon=np.array([0], dtype=np.int32))
    responses = instance.execute([request(1344, 6), bad, request(1000, 3)])
    assert [r.error for r in responses] == [None, "horizon must be between 1 and 336, got 0", None]
    assert responses[0].outputs["yhat"].shape == (6,) and responses[2].outputs["yhat_upper"].shape == (3,)
    assert responses[0].outputs["forecast_timestamps"][0] == unix[1343] + 3600
    again = instance.execute([request(1344, 6)])[0]
    assert all(np.array_equal(again.outputs[k], v) for k, v in responses[0].outputs.items())
