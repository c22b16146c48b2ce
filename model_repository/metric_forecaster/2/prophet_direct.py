"""Prophet's own ``predict`` for a MAP-fitted model, evaluated in numpy: no pandas per request.

For a forecaster request (30 rows) Prophet 1.5 spends nearly all its time in pandas around a little
arithmetic. ``Direct`` computes the same numbers, step for step, from the fitted parameters:

- trend (``predict_trend``): piecewise linear, or logistic against a fixed cap, or flat, with the
  fitted changepoints; scaled back by ``y_scale`` and the floor (absmax: 0, minmax: ``y_min``);
- seasonality (``predict_seasonal_components``): every Fourier series (``fourier_series``), additive
  or multiplicative, and the holiday indicator columns, times ``beta``;
- interval (``predict_uncertainty``, ``vectorized=True``, what ``predict`` uses): per future step a
  slope change with the history's changepoint rate per step and a Laplace size
  (``_make_trend_shift_matrix``: the per-step form of ``sample_predictive_trend``'s Poisson
  process; logistic trends through ``_logistic_uncertainty``), plus noise ``sigma_obs``, then
  Prophet's percentiles of ``uncertainty_samples`` paths.

The draws come from ``numpy.random.RandomState(seed)`` in Prophet's order and shapes (uniform,
laplace, normal), so a request gets the numbers ``np.random.seed(seed); model.predict(df)`` gives,
to float rounding, without touching numpy's global RNG. With the seed fixed they depend only on the
request's shape (rows, rows after the training end, rows returned), not on its values or times: each
shape's draws are made once and kept (``CACHE_BYTES``), which is most of the saving.
"""

import collections
import datetime

import numpy as np

NS = 10 ** 9
DAY = 24 * 60 * 60
EPOCH = datetime.date(1970, 1, 1)
# Memory for the draws kept per request shape (uniform, laplace and their shift matrix: samples x
# future rows each; noise: samples x rows returned): 48 h of history and 6 h ahead keep 0.8 MB, the
# largest request (336 h ahead) 11 MB. The least recently used shapes go first.
CACHE_BYTES = 32 * 2 ** 20


class Unsupported(ValueError):
    """The model has a part the direct path does not compute; the message names it."""


def unsupported(model):
    """Why ``model`` cannot be evaluated directly, or None."""
    if model.history is None:
        return "the model is not fitted"
    if model.mcmc_samples or np.asarray(model.params["k"]).shape[0] != 1:
        return "mcmc_samples > 0 (posterior samples, not a MAP fit)"
    if model.extra_regressors:
        return "extra regressors (%s)" % ", ".join(model.extra_regressors)
    conditional = [name for name, props in model.seasonalities.items() if props["condition_name"]]
    if conditional:
        return "conditional seasonalities (%s)" % ", ".join(conditional)
    if not model.uncertainty_samples:
        return "uncertainty_samples is 0 (Prophet gives no interval)"
    if model.growth not in ("linear", "logistic", "flat"):
        return "growth %r" % model.growth
    return None


def _piecewise_linear(t, deltas, k, m, changepoints):
    # Prophet.piecewise_linear, the same operations in the same order
    deltas_t = (changepoints[None, :] <= t[..., None]) * deltas
    k_t = deltas_t.sum(axis=1) + k
    m_t = (deltas_t * -changepoints).sum(axis=1) + m
    return k_t * t + m_t


def _logistic_gammas(deltas, k, m, changepoints):
    # the offset changes of Prophet.piecewise_logistic; they depend on the parameters only
    k_cum = np.concatenate((np.atleast_1d(k), np.cumsum(deltas) + k))
    gammas = np.zeros(len(changepoints))
    for i, t_s in enumerate(changepoints):
        gammas[i] = (t_s - m - np.sum(gammas)) * (1 - k_cum[i] / k_cum[i + 1])
    return gammas


class Direct(object):
    """``predict(seconds, seed, tail)``: Prophet's yhat for every row and its bounds for the last rows."""

    def __init__(self, model, cap=None, floor=None):
        why = unsupported(model)
        if why:
            raise Unsupported(why)
        params = model.params
        self.growth = model.growth
        self.changepoints = np.asarray(model.changepoints_t, dtype=np.float64)
        # point estimates as predict_trend takes them (nanmean over the one MAP draw) ...
        self.k = float(np.nanmean(params["k"]))
        self.m = float(np.nanmean(params["m"]))
        self.deltas = np.nanmean(params["delta"], axis=0)
        # ... and draw 0 in the shapes the sampling code indexes them with
        self.k0, self.m0, self.delta0 = params["k"][0], params["m"][0], params["delta"][0]
        self.sigma0 = params["sigma_obs"][0]
        beta = np.asarray(params["beta"], dtype=np.float64)
        cols = model.train_component_cols
        s_a, s_m = cols["additive_terms"].to_numpy(), cols["multiplicative_terms"].to_numpy()
        self.beta_a, self.beta_m = beta * s_a, beta * s_m          # (1, F): predict_seasonal_components
        self.beta0_a, self.beta0_m = beta[0] * s_a, beta[0] * s_m  # (F,): sample_model_vectorized
        self.y_scale = float(model.y_scale)
        self.start_ns = int(model.start.value)
        self.t_scale_ns = int(model.t_scale.value)
        self.history_diff = np.diff(model.history["t"].to_numpy()).mean()
        self.samples = int(model.uncertainty_samples)
        self.lower_p = 100 * (1.0 - model.interval_width) / 2
        self.upper_p = 100 * (1.0 + model.interval_width) / 2
        self.mean_delta = np.mean(np.abs(self.delta0)) + 1e-8
        if model.logistic_floor:
            self.floor = float(floor)
        else:
            self.floor = 0.0 if model.scaling == "absmax" else float(model.y_min)
        if self.growth == "logistic":
            self.cap_scaled = (float(cap) - self.floor) / self.y_scale
            self.gammas = _logistic_gammas(self.deltas, self.k, self.m, self.changepoints)
        self._fourier(model)
        self._holidays(model)
        if self.beta_a.shape[1] != self.n_fourier + len(self.holiday_columns):
            raise Unsupported("feature layout: %d coefficients, %d features"
                              % (self.beta_a.shape[1], self.n_fourier + len(self.holiday_columns)))
        self._draws = collections.OrderedDict()

    # -- features ----------------------------------------------------------------------------

    def _fourier(self, model):
        freqs = []
        for props in model.seasonalities.values():
            freqs += [(i + 1) / props["period"] for i in range(props["fourier_order"])]
        self.freqs = np.asarray(freqs, dtype=np.float64)
        self.n_fourier = 2 * len(freqs)

    def _holidays(self, model):
        """Holiday columns (Prophet's names, in its order) and the dates each is 1 on, per year set."""
        self.model = model
        self.holiday_columns = []
        if model.holidays is None and model.country_holidays is None:
            return
        try:
            names = list(model.make_all_seasonality_features(model.history)[0].columns)
        except Exception as exc:  # noqa: BLE001 - whatever Prophet objects to, the direct path does not serve
            raise Unsupported("holiday features: %s" % exc)
        self.holiday_columns = names[self.n_fourier:]
        self._holiday_days = {}

    def _holiday_map(self, years):
        """{day number: [column indices]} for requests in ``years``; None where Prophet's columns would differ."""
        if years not in self._holiday_days:
            import pandas as pd
            table = self.model.construct_holiday_dataframe(pd.Series(pd.to_datetime(["%d-06-30" % y for y in years])))
            index = {name: i for i, name in enumerate(self.holiday_columns)}
            days, seen = {}, set()
            for row in table.itertuples():
                # make_holiday_features: the windows, a missing or NaN window is 0
                try:
                    lower, upper = int(getattr(row, "lower_window", 0)), int(getattr(row, "upper_window", 0))
                except ValueError:
                    lower = upper = 0
                for offset in range(lower, upper + 1):
                    key = "%s_delim_%s%d" % (row.holiday, "+" if offset >= 0 else "-", abs(offset))
                    seen.add(key)
                    if key in index and not pd.isna(row.ds):
                        day = (row.ds.date() - EPOCH).days + offset
                        days.setdefault(day, []).append(index[key])
            self._holiday_days[years] = days if seen == set(index) else None
        return self._holiday_days[years]

    def features(self, seconds):
        """Prophet's seasonal feature matrix for these times (rows x features), or None."""
        x_t = np.pi * 2 * (seconds.astype(np.float64) / DAY)
        angles = x_t[:, None] * self.freqs[None, :]
        features = np.zeros((seconds.size, self.n_fourier + len(self.holiday_columns)))
        features[:, 0:self.n_fourier:2] = np.sin(angles)
        features[:, 1:self.n_fourier:2] = np.cos(angles)
        if self.holiday_columns:
            days = np.floor_divide(seconds, DAY)
            first, last = (EPOCH + datetime.timedelta(days=int(d)) for d in (days[0], days[-1]))
            marks = self._holiday_map(tuple(range(first.year, last.year + 1)))
            if marks is None:
                return None
            for day in np.unique(days):
                for col in marks.get(int(day), ()):
                    features[days == day, self.n_fourier + col] = 1.0
        return features

    # -- trend -------------------------------------------------------------------------------

    def _trend(self, t):
        """The point trend on Prophet's scaled axis (before y_scale and floor)."""
        if self.growth == "linear":
            return _piecewise_linear(t, self.deltas, self.k, self.m, self.changepoints)
        if self.growth == "flat":
            return self.m * np.ones_like(t)
        k_t, m_t = self.k * np.ones_like(t), self.m * np.ones_like(t)
        for s, t_s in enumerate(self.changepoints):
            later = t >= t_s
            k_t[later] += self.deltas[s]
            m_t[later] += self.gammas[s]
        return self.cap_scaled / (1 + np.exp(-k_t * (t - m_t)))

    # -- interval ----------------------------------------------------------------------------

    def _shape_draws(self, seed, rows, future, tail):
        """Prophet's draws for a request shape, in its order (uniform and laplace for the future
        steps, then normal), kept step-major (steps x samples: the per-step sums and the
        percentiles then run along contiguous rows)."""
        key = (seed, rows, future, tail)
        draws = self._draws.get(key)
        if draws is None:
            rng = np.random.RandomState(seed)
            draws = {}
            if future and self.growth != "flat":
                draws["uniform"] = np.ascontiguousarray(rng.uniform(size=(self.samples, future)).T)
                draws["laplace"] = np.ascontiguousarray(rng.laplace(0, self.mean_delta, size=(self.samples, future)).T)
            noise = rng.normal(0, self.sigma0, (self.samples, rows))[:, rows - tail:] * self.y_scale
            draws["noise"] = np.ascontiguousarray(noise.T)
            self._draws[key] = draws
            while len(self._draws) > 1 and self.cached_bytes() > CACHE_BYTES:
                self._draws.popitem(last=False)
        else:
            self._draws.move_to_end(key)
        return draws

    def cached_bytes(self):
        return sum(d["shift"][2].nbytes if k == "shift" else d[k].nbytes for d in self._draws.values() for k in d)

    def _shift_matrix(self, draws, likelihood):
        """_make_trend_shift_matrix from the kept draws (for linear growth, already summed twice).

        It changes with the likelihood only where a uniform draw lies between the old and the new
        one, so it is kept with that interval: requests of one shape and step reuse it, bit for bit.
        """
        kept = draws.get("shift")
        if kept is not None and kept[0] < likelihood <= kept[1]:
            return kept[2]
        uniform = draws["uniform"]
        change = uniform < likelihood
        mat = draws["laplace"] * change
        shifted = np.vstack([np.zeros((1, mat.shape[1])), mat])[:-1]
        mat = (shifted + mat) / 2
        if self.growth == "linear":
            mat = mat.cumsum(axis=0).cumsum(axis=0)
        below = uniform[change].max() if change.any() else -np.inf
        above = uniform[~change].min() if not change.all() else np.inf
        draws["shift"] = (below, above, mat)
        return mat

    def _trend_changes(self, t, future, draws, tail):
        """_sample_uncertainty for the last ``tail`` of the future rows: tail x samples, scaled axis."""
        if self.growth == "flat":
            return np.zeros((tail, self.samples))
        single_diff = np.diff(t[t.size - future:]).mean() if future > 1 else self.history_diff
        mat = self._shift_matrix(draws, len(self.changepoints) * single_diff)
        if self.growth == "linear":
            return mat[future - tail:] * single_diff
        return self._logistic_changes(mat, t[t.size - future:], single_diff)[future - tail:]

    def _logistic_changes(self, mat, t_future, single_diff):
        """Prophet._logistic_uncertainty; the history part is the same for every sample, so it runs once."""
        k, m = float(self.k0[0]), float(self.m0[0])
        prev_time = np.arange(0, 1 + single_diff, single_diff)
        prev_deltas = np.zeros(len(prev_time))
        prev_deltas[[np.where(prev_time > c)[0][0] for c in self.changepoints]] = self.delta0
        # history steps: a slope change only where a fitted changepoint is; elsewhere gamma is 0
        cum = np.cumsum(prev_deltas)
        k_before, offset = k, 0.0
        for i in np.flatnonzero(prev_deltas):
            k_after = cum[i] + k if cum[i] + k != 0 else k_before
            offset = offset + (prev_time[i] - m - offset) * (1 - k_before / k_after)
            k_before = k_after
        # future steps: per sample
        n = mat.shape[1]
        slope = np.cumsum(np.vstack([np.full((1, n), cum[-1]), mat]), axis=0)[1:] + k
        k_before, offset = np.full(n, k_before), np.full(n, offset)
        m_t = np.empty_like(mat)
        for j in range(mat.shape[0]):
            value = np.where(mat[j] != 0, slope[j], 0.0)
            k_after = np.where(value != 0, value, k_before)
            offset = offset + (t_future[j] - m - offset) * (1 - k_before / k_after)
            m_t[j] = offset + m
            k_before = k_after
        trends = self.cap_scaled / (1 + np.exp(-slope * (t_future[:, None] - m_t)))
        return trends - trends.mean(axis=1, keepdims=True)

    # -- the request -------------------------------------------------------------------------

    def predict(self, seconds, seed, tail):
        """(yhat [rows], yhat_lower [tail], yhat_upper [tail]) for increasing unix ``seconds``, or None.

        None: this request needs something the direct path does not compute (holiday columns that
        differ from the training's); Prophet answers it.
        """
        seconds = np.asarray(seconds, dtype=np.int64)
        features = self.features(seconds)
        if features is None:
            return None
        t = (seconds * NS - self.start_ns).astype(np.float64) / self.t_scale_ns
        trend = self._trend(t)
        point = trend * self.y_scale + self.floor
        additive = (features @ self.beta_a.T)[:, 0] * self.y_scale
        multiplicative = (features @ self.beta_m.T)[:, 0]
        yhat = point * (1 + multiplicative) + additive

        rows = seconds.size
        future = int(np.count_nonzero(t > 1)) if t[-1] > 1 else 0
        draws = self._shape_draws(int(seed), rows, future, tail)
        paths = np.zeros((tail, self.samples))  # the sampled trend changes, then the sampled yhat, in place
        if future:
            take = min(tail, future)
            paths[tail - take:] = self._trend_changes(t, future, draws, take)
        last = slice(rows - tail, rows)
        x_a = (features[last] @ self.beta0_a) * self.y_scale
        x_m = features[last] @ self.beta0_m
        # sample_model_vectorized: ((trend + change) * y_scale + floor) * (1 + Xb_m) + Xb_a + noise
        paths += trend[last, None]
        paths *= self.y_scale
        paths += self.floor
        paths *= (1 + x_m)[:, None]
        paths += x_a[:, None]
        paths += draws["noise"]
        bounds = np.percentile(paths, [self.lower_p, self.upper_p], axis=1)
        nan_rows = np.isnan(bounds).any(axis=0)
        if nan_rows.any():  # Prophet's percentile: nanpercentile where a path is NaN
            bounds[:, nan_rows] = np.nanpercentile(paths[nan_rows], [self.lower_p, self.upper_p], axis=1)
        return yhat, bounds[0], bounds[1]
