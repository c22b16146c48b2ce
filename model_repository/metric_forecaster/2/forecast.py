"""Forecast a metric from its recent history with a fitted Prophet model (no Triton imports).

Version 1's forecast, computed without Prophet's per-call pandas: the Prophet model carries the
metric's trend and seasonality; a request's forecast is re-anchored to its history (the mean
residual of the last ``anchor_points`` points is added to the forecast and its bounds), and the
interval is drawn with ``seed``, so identical requests get identical answers.

``load`` returns a ``Forecaster``: the model plus ``prophet_direct.Direct``, the same prediction in
numpy, used only when the model is one it computes (a MAP fit; no extra regressors or conditional
seasonalities) and when it agrees with Prophet's own ``predict`` on probe requests at load. Otherwise
Prophet answers, as in version 1. ``Forecaster.path`` and ``.reason`` say which serves and why.

Shared by model.py (served) and the build (golden cases).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prophet_direct  # noqa: E402  (lives next to this file in the version dir)

# Probe requests checked at load: history rows + rows ahead, placed against the training end.
PROBES = ((24, 6, "ends at the training end"), (24, 6, "a week after the training end"),
          (24, 1, "one step past the training end"), (30, 6, "inside the training history"))
# Direct and Prophet must agree to this, relative to the model's y_scale (float rounding only:
# the draws are the same numbers), on every probe's yhat and bounds.
PROBE_RTOL = 1e-9


def load(path, seed=0):
    from prophet.serialize import model_from_json
    with open(path, "r", encoding="utf-8") as handle:
        return Forecaster(model_from_json(handle.read()), seed)


class Forecaster(object):
    """``predict(seconds, seed, tail)`` by the direct path where it applies, by Prophet otherwise."""

    def __init__(self, model, seed=0, check=True):
        self.model = model
        history = model.history
        # the interface has no cap/floor inputs: a logistic model forecasts against its training's last
        self.cap = float(history["cap"].iloc[-1]) if "cap" in history else None
        self.floor = float(history["floor"].iloc[-1]) if model.logistic_floor else None
        self.direct, self.path, self.reason = None, "prophet", ""
        try:
            direct = prophet_direct.Direct(model, self.cap, self.floor)
        except prophet_direct.Unsupported as exc:
            self.reason = "the model has %s" % exc
            return
        self.direct, self.path = direct, "direct"
        if check:
            try:
                worst = self.check(seed)
            except Exception as exc:  # noqa: BLE001 - a probe Prophet or the direct path cannot answer: Prophet serves
                self.direct, self.path = None, "prophet"
                self.reason = "the check at load failed: %s: %s" % (type(exc).__name__, exc)
                return
            if worst > PROBE_RTOL:
                self.direct, self.path = None, "prophet"
                self.reason = "direct path differs from Prophet's predict on the probes by %.3g x y_scale" % worst
            else:
                self.reason = "agrees with Prophet's predict on %d probe requests (max diff %.2g x y_scale)" % (
                    len(PROBES), worst)

    def describe(self):
        return "%s path serves: %s" % (self.path, self.reason)

    def probe_requests(self):
        """(unix seconds, tail) per probe, from the training history's end and step."""
        stamps = self.model.history["ds"].to_numpy().astype("datetime64[s]").astype(np.int64)
        step, end = int(np.median(np.diff(stamps))), int(stamps[-1])
        ends = {"ends at the training end": end, "a week after the training end": end + 7 * 86400,
                "one step past the training end": end, "inside the training history": int(stamps[len(stamps) // 2])}
        return [(ends[where] + step * np.arange(-rows + 1, ahead + 1, dtype=np.int64), ahead) for rows, ahead, where in PROBES]

    def check(self, seed):
        """Largest |direct - Prophet| over the probes' yhat and bounds, relative to y_scale (inf: NaN on one side only)."""
        worst = 0.0
        for seconds, tail in self.probe_requests():
            got = self.direct.predict(seconds, seed, tail)
            if got is None:
                return float("inf")
            for a, b in zip(got, self.prophet_predict(seconds, seed, tail)):
                diff = np.abs(a - b)[~(np.isnan(a) & np.isnan(b))]
                if not np.all(np.isfinite(diff)):
                    return float("inf")
                worst = max(worst, float(diff.max(initial=0.0)) / self.direct.y_scale)
        return worst

    def prophet_predict(self, seconds, seed, tail):
        """Prophet's own predict, seeded as version 1 seeds it (Prophet draws from numpy's global RNG)."""
        import pandas as pd
        frame = pd.DataFrame({"ds": pd.to_datetime(seconds, unit="s")})
        if self.cap is not None:
            frame["cap"] = self.cap
        if self.floor is not None:
            frame["floor"] = self.floor
        np.random.seed(seed)
        pred = self.model.predict(frame)
        return (pred["yhat"].to_numpy(), pred["yhat_lower"].to_numpy()[-tail:], pred["yhat_upper"].to_numpy()[-tail:])

    def predict(self, seconds, seed, tail):
        """(yhat for every row, yhat_lower and yhat_upper for the last ``tail`` rows), float64."""
        if self.direct is not None:
            got = self.direct.predict(seconds, seed, tail)
            if got is not None:
                return got
        return self.prophet_predict(seconds, seed, tail)


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
    """Return (forecast_timestamps int64, yhat, yhat_lower, yhat_upper float32), each [horizon].

    ``model``: what ``load`` returns.
    """
    values = np.asarray(values, dtype=np.float64)
    timestamps = np.asarray(timestamps, dtype=np.int64)
    horizon = int(horizon)
    step = validate(values, timestamps, horizon, max_horizon)
    future = timestamps[-1] + step * np.arange(1, horizon + 1, dtype=np.int64)
    recent = slice(max(0, values.size - anchor_points), values.size)
    yhat, lower, upper = model.predict(np.concatenate([timestamps[recent], future]), seed, horizon)
    n_recent = values[recent].size
    offset = float(np.mean(values[recent] - yhat[:n_recent]))
    out = (yhat[n_recent:] + offset, lower + offset, upper + offset)
    return (future,) + tuple(o.astype(np.float32) for o in out)
