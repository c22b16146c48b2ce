"""metric_forecaster v2: the direct numpy path against Prophet's own predict, and Prophet where it does not apply.

The direct path draws Prophet's own random numbers (RandomState(seed), Prophet's order and shapes),
so yhat and the bounds must match ``np.random.seed(seed); model.predict(df)`` per seed, to float
rounding (TOL x y_scale), not only on average over seeds.
"""

import importlib.util
import logging
import os

import numpy as np
import pandas as pd
import pytest

from model_repository._build import forecaster

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCES = os.path.join(CHECKOUT, "model_repository", "metric_forecaster")
TOL = 1e-9
logging.getLogger("cmdstanpy").setLevel(logging.WARNING)


def _module(version, name):
    spec = importlib.util.spec_from_file_location("forecaster_v%d_%s_under_test" % (version, name),
                                                  os.path.join(SOURCES, str(version), name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fc2():
    return _module(2, "forecast")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The build's model (its seed and series), as the JSON artifact the server loads."""
    from prophet.serialize import model_to_json
    stamps, values = forecaster.series(21)
    model = forecaster.train(stamps[:-forecaster.HOLD_OUT], values[:-forecaster.HOLD_OUT])
    path = tmp_path_factory.mktemp("forecaster") / "prophet_model.json"
    path.write_text(model_to_json(model), encoding="utf-8")
    return str(path)


def _stamps(model):
    stamps = model.history["ds"].to_numpy().astype("datetime64[s]").astype(np.int64)
    return int(stamps[-1]), int(np.median(np.diff(stamps)))


def requests_around(model, extra_ends=(), aheads=(1, 6, 40)):
    """(seconds, tail): 24 history rows + ``ahead`` rows, ending at, after, before the training end."""
    end, step = _stamps(model)
    ends = [end, end + 500 * step, end - 100 * step] + list(extra_ends)
    return [(stop + step * np.arange(-23, ahead + 1, dtype=np.int64), ahead) for stop in ends for ahead in aheads]


def assert_matches_prophet(f, requests, seeds=(0, 7)):
    assert f.path == "direct", f.describe()
    for seconds, tail in requests:
        for seed in seeds:
            got = f.direct.predict(seconds, seed, tail)
            want = f.prophet_predict(seconds, seed, tail)
            for name, a, b in zip(("yhat", "yhat_lower", "yhat_upper"), got, want):
                assert a.shape == b.shape
                np.testing.assert_allclose(a, b, rtol=0, atol=TOL * f.direct.y_scale, err_msg="%s seed %d" % (name, seed))


def test_shipped_model_is_served_directly_and_matches_prophet(fc2, shipped):
    f = fc2.load(shipped, 0)
    assert f.path == "direct" and "agrees with Prophet" in f.describe()
    assert_matches_prophet(f, requests_around(f.model))
    end, step = _stamps(f.model)
    longest = end + 24 * step + step * np.arange(-23, 337, dtype=np.int64)
    assert_matches_prophet(f, [(longest, 336)], seeds=(0,))


def test_version_2_answers_as_version_1(fc2, shipped):
    fc1 = _module(1, "forecast")
    v1, v2 = fc1.load(shipped), fc2.load(shipped, 0)
    stamps, values = forecaster.series(21, weeks=9)
    unix = stamps.as_unit("s").asi8.astype(np.int64)
    for stop, horizon in ((1344, 6), (1344, 3), (1500, 6), (700, 12), (1344, 1)):
        hist_v, hist_t = np.round(values[stop - 48:stop], 1).astype(np.float32), unix[stop - 48:stop]
        for a, b in zip(fc1.forecast(v1, hist_v, hist_t, horizon, 24, 0), fc2.forecast(v2, hist_v, hist_t, horizon, 24, 0)):
            assert a.dtype == b.dtype and a.shape == b.shape == (horizon,)
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=0)
    short = fc2.forecast(v2, np.array([5.0, 6.0], dtype=np.float32), unix[1340:1342], 2, 24, 0)
    np.testing.assert_allclose(short[1], fc1.forecast(v1, np.array([5.0, 6.0]), unix[1340:1342], 2, 24, 0)[1], rtol=1e-6)


def test_identical_requests_get_identical_answers_without_the_global_rng(fc2, shipped):
    f = fc2.load(shipped, 0)
    stamps, values = forecaster.series(21, weeks=9)
    unix = stamps.as_unit("s").asi8.astype(np.int64)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    first = fc2.forecast(f, values[-48:], unix[-48:], 6, 24, 0)
    again = fc2.forecast(f, values[-48:], unix[-48:], 6, 24, 0)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert np.array_equal(np.random.get_state()[1], before)
    other_seed = fc2.forecast(f, values[-48:], unix[-48:], 6, 24, 1)
    assert np.array_equal(first[1], other_seed[1]) and not np.array_equal(first[2], other_seed[2])


# -- models fitted with other settings (a few hundred points each: fits take ~0.05 s) ----------

def _hourly(n=300, seed=1):
    rng = np.random.default_rng(seed)
    hours = np.arange(n)
    y = 100 + 0.2 * hours + 30 * np.sin(2 * np.pi * hours / 24) + rng.normal(0, 5, n)
    return pd.DataFrame({"ds": pd.date_range("2026-01-05", periods=n, freq="h"), "y": y})


def _daily(n=300, seed=2):
    rng = np.random.default_rng(seed)
    days = np.arange(n)
    y = 50 + 0.05 * days + 5 * np.sin(2 * np.pi * days / 7) + rng.normal(0, 1, n)
    y[[33, 34, 35, 206, 207, 208]] += 15  # 2025-07-03..05, 2025-12-24..26
    return pd.DataFrame({"ds": pd.date_range("2025-06-01", periods=n, freq="D"), "y": y})


HOLIDAYS = pd.DataFrame({"holiday": ["launch", "launch", "freeze"],
                         "ds": pd.to_datetime(["2025-07-04", "2026-07-04", "2025-12-24"]),
                         "lower_window": [-1, -1, 0], "upper_window": [1, 1, 2]})
NO_AUTO = dict(weekly_seasonality=False, yearly_seasonality=False)


def _fit(kind):
    from prophet import Prophet
    hourly = dict(daily_seasonality=True, **NO_AUTO)
    if kind == "logistic growth with a cap":
        return Prophet(growth="logistic", **hourly).fit(_hourly().assign(cap=400.0))
    if kind == "logistic growth with cap and floor":
        return Prophet(growth="logistic", **hourly).fit(_hourly().assign(cap=400.0, floor=20.0))
    if kind == "multiplicative seasonality and an extra seasonality":
        return Prophet(seasonality_mode="multiplicative", **hourly).add_seasonality(
            "half_day", period=0.5, fourier_order=3, mode="additive").fit(_hourly())
    if kind == "flat growth, minmax scaling":
        return Prophet(growth="flat", scaling="minmax", **hourly).fit(_hourly())
    if kind == "holidays with windows (multiplicative)":
        return Prophet(holidays=HOLIDAYS, holidays_mode="multiplicative", weekly_seasonality=True, yearly_seasonality=False,
                       daily_seasonality=False).fit(_daily())
    assert kind == "country holidays"
    model = Prophet(weekly_seasonality=True, yearly_seasonality=False, daily_seasonality=False)
    model.add_country_holidays("US")
    return model.fit(_daily())


KINDS = ["logistic growth with a cap", "logistic growth with cap and floor",
         "multiplicative seasonality and an extra seasonality", "flat growth, minmax scaling",
         "holidays with windows (multiplicative)", "country holidays"]


@pytest.mark.parametrize("kind", KINDS)
def test_other_model_settings_match_prophet(fc2, kind):
    f = fc2.Forecaster(_fit(kind), 0)
    extra = ()
    if "holidays" in kind:
        # requests over holidays in and after the training data: 2025-07-04, 2025-12-25, 2026-07-04
        extra = [int(pd.Timestamp(day).timestamp()) for day in ("2025-07-10", "2025-12-30", "2026-07-08")]
        marked = f.direct.features(extra[2] + 86400 * np.arange(-23, 1, dtype=np.int64))[:, f.direct.n_fourier:]
        assert marked.any(), "the request should cover a holiday"
    assert_matches_prophet(f, requests_around(f.model, extra, aheads=(1, 6)), seeds=(3,))


# -- where Prophet answers -----------------------------------------------------------------

def test_mcmc_model_is_served_by_prophet(fc2):
    from prophet import Prophet
    model = Prophet(mcmc_samples=8, uncertainty_samples=40, daily_seasonality=True, **NO_AUTO)
    model.fit(_hourly(200), show_progress=False, chains=1)
    f = fc2.Forecaster(model, 0)
    assert f.path == "prophet" and "mcmc_samples" in f.describe()
    end, step = _stamps(model)
    seconds = end + step * np.arange(-23, 7, dtype=np.int64)
    got = fc2.forecast(f, np.full(24, 100.0), seconds[:24], 6, 24, 0)
    want = f.prophet_predict(seconds, 0, 6)
    assert np.all(got[2] < got[1]) and np.all(got[1] < got[3])
    np.testing.assert_allclose(got[1], (want[0][24:] + np.mean(100.0 - want[0][:24])).astype(np.float32))


def test_extra_regressor_model_is_served_by_prophet(fc2):
    from prophet import Prophet
    frame = _hourly(200)
    load = 50 + 10 * np.sin(2 * np.pi * np.arange(200) / 24)
    few = dict(daily_seasonality=True, uncertainty_samples=50, **NO_AUTO)  # regressor draws run one by one
    model = Prophet(**few).add_regressor("load", regressor_predictor=few)
    model.fit(frame.assign(y=frame["y"] + load, load=load))
    f = fc2.Forecaster(model, 0)
    assert f.path == "prophet" and "extra regressors (load)" in f.describe()
    stamps = frame["ds"].to_numpy().astype("datetime64[s]").astype(np.int64)
    first = fc2.forecast(f, frame["y"].to_numpy()[-48:], stamps[-48:], 6, 24, 0)
    again = fc2.forecast(f, frame["y"].to_numpy()[-48:], stamps[-48:], 6, 24, 0)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and np.all(first[2] < first[3])


def test_conditional_seasonality_is_not_computed_directly(fc2):
    from prophet import Prophet
    frame = _hourly(200)
    model = Prophet(**NO_AUTO, daily_seasonality=False).add_seasonality("busy_daily", 1, 3, condition_name="busy")
    model.fit(frame.assign(busy=frame["ds"].dt.dayofweek < 5))
    f = fc2.Forecaster(model, 0)
    assert f.path == "prophet" and "conditional seasonalities (busy_daily)" in f.describe()


def test_a_direct_path_that_disagrees_at_load_is_not_used(fc2, shipped, monkeypatch):
    direct = fc2.prophet_direct.Direct
    real = direct.predict
    monkeypatch.setattr(direct, "predict", lambda self, *a: tuple(x + 1e-3 for x in real(self, *a)))
    f = fc2.load(shipped, 0)
    assert f.path == "prophet" and f.direct is None and "differs from Prophet" in f.describe()


def test_draws_are_kept_within_their_memory_bound(fc2, shipped):
    f = fc2.load(shipped, 0)
    end, step = _stamps(f.model)
    for ahead in (336, 300, 250, 200, 6, 336):
        seconds = end + 48 * step + step * np.arange(-23, ahead + 1, dtype=np.int64)
        f.predict(seconds, 0, ahead)
        assert f.direct.cached_bytes() <= fc2.prophet_direct.CACHE_BYTES + 12 * 2 ** 20  # the newest is added first
    assert list(f.direct._draws)[-1] == (0, 360, 360, 336) and len(f.direct._draws) < 6
