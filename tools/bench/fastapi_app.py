"""The naive deployment Triton is compared with: FastAPI + uvicorn, models loaded in the web process.

Same artifacts as Triton serves (``$BENCH_MODEL_REPOSITORY``, default build/model_repository):
anomaly_detector's latest version (model.onnx, onnxruntime, the one ops_pipeline pins),
alert_classifier (classifier.skops through the model's own ``classify.py``) and metric_forecaster's
latest version (prophet_model.json through that version's own ``forecast.py``).  Run with::

    BENCH_MODEL_REPOSITORY=build/model_repository uvicorn tools.bench.fastapi_app:app --workers 2

Endpoints, batch 1 per request, each in two encodings of the input:

- ``POST /anomaly_detector``       JSON ``{"metrics_input": [[60 x 20 floats]]}`` (pydantic-checked)
- ``POST /anomaly_detector/npy``   body = ``numpy.save`` of a float32 [60, 20] array
- ``POST /alert_classifier``       JSON ``{"alert_text": "..."}``
- ``POST /alert_classifier/text``  body = the UTF-8 text (a string has no tensor encoding)
- ``POST /metric_forecaster``      JSON ``{"history_values": [...], "history_timestamps": [...], "horizon": 6}``
- ``POST /metric_forecaster/npz``  body = ``numpy.savez`` of the three arrays (Triton's three tensors)

Every answer is small JSON.  The handlers are ``async def`` and run the model inline: for
sub-millisecond models this is the faster FastAPI choice (a ``def`` handler adds a thread-pool
hop per request), so the baseline is the best a single FastAPI process does, not a strawman.
"""

import io
import os
import sys
from typing import List

import numpy as np
import onnxruntime as ort
from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel, Field

REPO = os.path.abspath(os.environ.get("BENCH_MODEL_REPOSITORY", os.path.join("build", "model_repository")))
WINDOW = (60, 20)


def _latest(model):
    versions = [int(v) for v in os.listdir(os.path.join(REPO, model)) if v.isdigit()]
    if not versions:
        raise RuntimeError("no version of %s under %s" % (model, REPO))
    return os.path.join(REPO, model, str(max(versions)))


def _anomaly_session():
    opts = ort.SessionOptions()
    # one thread per session: the web workers are the parallelism (as with Triton's tuned default)
    opts.intra_op_num_threads = int(os.environ.get("BENCH_ORT_THREADS", "1"))
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(os.path.join(_latest("anomaly_detector"), "model.onnx"), sess_options=opts,
                                providers=["CPUExecutionProvider"])


def _classifier():
    version_dir = _latest("alert_classifier")
    sys.path.insert(0, version_dir)
    import classify  # noqa: E402  (the served model's own loader, next to its model.py)
    return classify, classify.load(os.path.join(version_dir, "classifier.skops"))


def _forecaster():
    version_dir = _latest("metric_forecaster")
    sys.path.insert(0, version_dir)
    import forecast  # noqa: E402  (the served model's own code, next to its model.py)
    return forecast, forecast.load(os.path.join(version_dir, "prophet_model.json"))


SESSION = _anomaly_session()
CLASSIFY, PIPELINE = _classifier()
FORECAST, FORECASTER = _forecaster()
MIN_CONFIDENCE = 0.5
# metric_forecaster's parameters in model.yml (ANCHOR_POINTS, SEED, MAX_HORIZON)
ANCHOR_POINTS, SEED, MAX_HORIZON = 24, 0, 336
app = FastAPI(title="aiops.triton bench baseline")


class MetricsWindow(BaseModel):
    metrics_input: List[List[float]] = Field(min_length=WINDOW[0], max_length=WINDOW[0])


class AlertText(BaseModel):
    alert_text: str = Field(min_length=1)


class History(BaseModel):
    history_values: List[float] = Field(min_length=2)
    history_timestamps: List[int] = Field(min_length=2)
    horizon: int


def _forecast(values, stamps, horizon):
    try:
        stamps_out, yhat, lower, upper = FORECAST.forecast(FORECASTER, values, stamps, horizon, ANCHOR_POINTS, SEED, MAX_HORIZON)
    except ValueError as exc:
        raise HTTPException(422, str(exc))
    return {"forecast_timestamps": stamps_out.tolist(), "yhat": yhat.tolist(), "yhat_lower": lower.tolist(),
            "yhat_upper": upper.tolist()}


def _detect(window):
    if window.shape != WINDOW:
        raise HTTPException(422, "metrics_input must be %dx%d, got %s" % (WINDOW + (list(window.shape),)))
    score, labels = SESSION.run(["anomaly_score", "anomaly_labels"], {"metrics_input": window[None, ...]})
    return {"anomaly_score": float(score.reshape(-1)[0]), "anomaly_labels": labels.reshape(-1).astype(int).tolist()}


def _classify(text):
    labels, confidence = CLASSIFY.classify(PIPELINE, [text], MIN_CONFIDENCE)
    return {"class_label": str(labels[0]), "confidence": float(confidence[0])}


@app.post("/anomaly_detector")
async def anomaly_json(body: MetricsWindow):
    return _detect(np.asarray(body.metrics_input, dtype=np.float32))


@app.post("/anomaly_detector/npy")
async def anomaly_npy(request: Request):
    try:
        window = np.load(io.BytesIO(await request.body()), allow_pickle=False)
    except ValueError as exc:
        raise HTTPException(400, "body is not a .npy array: %s" % exc)
    return _detect(window.astype(np.float32, copy=False))


@app.post("/alert_classifier")
async def alert_json(body: AlertText):
    return _classify(body.alert_text)


@app.post("/alert_classifier/text")
async def alert_text(request: Request):
    text = (await request.body()).decode("utf-8", "replace")
    if not text.strip():
        raise HTTPException(400, "empty alert text")
    return _classify(text)


@app.post("/metric_forecaster")
async def forecast_json(body: History):
    return _forecast(np.asarray(body.history_values, dtype=np.float32), np.asarray(body.history_timestamps, dtype=np.int64),
                     body.horizon)


@app.post("/metric_forecaster/npz")
async def forecast_npz(request: Request):
    try:
        with np.load(io.BytesIO(await request.body()), allow_pickle=False) as arrays:
            values, stamps, horizon = arrays["history_values"], arrays["history_timestamps"], arrays["horizon"]
    except (ValueError, KeyError, OSError) as exc:
        raise HTTPException(400, "body is not an .npz of history_values, history_timestamps, horizon: %s" % exc)
    return _forecast(values.astype(np.float32, copy=False), stamps.astype(np.int64, copy=False), int(horizon.reshape(-1)[0]))


@app.get("/health")
async def health():
    return {"ready": True}
