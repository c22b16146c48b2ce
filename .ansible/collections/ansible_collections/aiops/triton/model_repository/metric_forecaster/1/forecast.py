"""Forecast a metric from its recent history with a fitted Prophet model (no Triton imports).

The Prophet model carries the metric's trend and daily/weekly seasonality.  A request brings
the latest history of the metric; the model's prediction is re-anchored to it: the mean
residual (history - model) over the last ``anchor_points`` points is added to the forecast
and its bounds, so a host whose level differs from the training series still gets a
forecast that starts where its data is.  Prophet draws its uncertainty interval by Monte
Carlo; the global numpy RNG is seeded per call so identical requests get identical answers.

Shared by model.py (served) and the build (golden cases).
"""

import numpy as np
import pandas as pd
from prophet.serialize import model_from_json


def load(path):
    with open(path, "r", encoding="utf-8") as handle:
        return model_from_json(handle.read())


def validate(values, timestamps, horizon, max_horizon):
    """Raise ValueError (message for the caller) unless the request is usable; return step."""
    if values.ndim != 1 or timestamps.ndim != 1 or values.shape != timestamps.shape:
        raise ValueError("history_values and history_timestamps must be 1-D and the same length")
    if values.size < 2:
        raise ValueError("history needs at least 2 points")
    if not np.all(np.isfinite(values)):
        raise ValueError("history_values contains NaN or infinity")
    steps = np.diff(timestamps)
    if np.any(steps <= 0):
        raise ValueError("history_timestamps must be strictly increasing")
    if not 1 <= horizon <= max_horizon:
        raise ValueError("horizon must be between 1 and %d, got %d" % (max_horizon, horizon))
    return int(np.median(steps))


def forecast(model, values, timestamps, horizon, anchor_points, seed, max_horizon=336):
    """Return (forecast_timestamps int64, yhat, yhat_lower, yhat_upper float32), each [horizon]."""
    values = np.asarray(values, dtype=np.float64)
    timestamps = np.asarray(timestamps, dtype=np.int64)
    step = validate(values, timestamps, int(horizon), max_horizon)
    future = timestamps[-1] + step * np.arange(1, int(horizon) + 1, dtype=np.int64)
    recent = slice(max(0, values.size - anchor_points), values.size)
    dates = pd.to_datetime(np.concatenate([timestamps[recent], future]), unit="s")
    np.random.seed(seed)
    pred = model.predict(pd.DataFrame({"ds": dates}))
    n_recent = values[recent].size
    offset = float(np.mean(values[recent] - pred["yhat"].to_numpy()[:n_recent]))
    out = [pred[col].to_numpy()[n_recent:] + offset for col in ("yhat", "yhat_lower", "yhat_upper")]
    return (future,) + tuple(o.astype(np.float32) for o in out)
