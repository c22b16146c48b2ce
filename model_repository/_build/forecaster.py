"""metric_forecaster: a Prophet model fitted on a seeded, hourly request-rate series.

The series has a daily cycle, a weekend dip, a slow upward trend and noise: 8 weeks to fit,
the following 2 days held out.  Quality is MAPE on the held-out days against two naive
seasonal baselines (same hour yesterday, same hour last week).
"""

import logging

import numpy as np
import pandas as pd

HOLD_OUT = 48
START = "2026-09-07"   # a Monday


def series(seed, weeks=8):
    rng = np.random.default_rng(seed)
    n = 24 * 7 * weeks + HOLD_OUT
    stamps = pd.date_range(START, periods=n, freq="h")
    hours = np.arange(n)
    daily = np.sin(2 * np.pi * (hours % 24 - 8) / 24)
    weekend = np.where(stamps.dayofweek >= 5, -0.25, 0.0)
    values = 1500 * (1 + 0.45 * daily + weekend) + 0.4 * hours + rng.normal(0, 60, n)
    return stamps, values


def train(stamps, values):
    from prophet import Prophet
    logging.getLogger("cmdstanpy").setLevel(logging.WARNING)
    model = Prophet(daily_seasonality=True, weekly_seasonality=True, yearly_seasonality=False)
    model.fit(pd.DataFrame({"ds": stamps, "y": values}))
    return model


def _mape(pred, truth):
    return round(float(np.mean(np.abs(pred - truth) / np.abs(truth))), 4)


def evaluate(forecast_fn, stamps, values):
    """forecast_fn(history_values, history_unix_seconds, horizon) -> yhat; MAPE vs baselines."""
    unix = stamps.as_unit("s").asi8.astype(np.int64)
    hist_v, hist_t, truth = values[:-HOLD_OUT], unix[:-HOLD_OUT], values[-HOLD_OUT:]
    yhat = forecast_fn(hist_v, hist_t, HOLD_OUT)
    return {
        "held_out_points": HOLD_OUT,
        "mape_prophet": _mape(yhat, truth),
        "mape_naive_daily": _mape(values[-HOLD_OUT - 24:-24], truth),
        "mape_naive_weekly": _mape(values[-HOLD_OUT - 168:-168], truth),
    }
