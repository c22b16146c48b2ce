"""In-process before/after: metric_forecaster version 1 (Prophet's predict) against version 2 (direct numpy path).

    .venv/bin/python tests/benchmarks/bench_forecaster.py [--repository build/model_repository] [--seconds 3] [--allow-loaded]

Both versions' ``forecast.py`` (model_repository/metric_forecaster/<v>/) load the built artifact
(``<repository>/metric_forecaster/<v>/prophet_model.json``; without a build, the build's model is trained
here with the build's seed) as model.py does, and answer the requests a client sends: 48 hourly points,
6 hours ahead (ops_client's question), the history ending at the training end (the golden case) or a
week later (live traffic: every row after the training end), and 336 hours ahead (MAX_HORIZON). Each
request shape is timed with ``forecast.forecast`` one call at a time for ``--seconds`` per version
(median and p90 per call), after checking that the two versions give the same answers. Then:

- version 2's first request of a shape (its draws made, not reused);
- batching: 32 series that share one time grid (a fleet asking about the same hours), 32 calls
  against one ``Forecaster.predict`` plus 32 anchors (what a several-series request could do).

Prints the load average before and after (tests/benchmarks/_load.py: exit 2 on a loaded machine unless
--allow-loaded), a markdown table, and writes build/reports/bench_forecaster.json (``--json``). Runs in one process on
one core; no Triton (the serving numbers are bench_serving.py's).
"""

import argparse
import importlib.util
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import _load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from model_repository._build import forecaster  # noqa: E402

SOURCES = os.path.join(ROOT, "model_repository", "metric_forecaster")
ANCHOR, SEED, TRAINED_HOURS = 24, 0, 24 * 7 * 8


def _module(version):
    spec = importlib.util.spec_from_file_location("forecast_v%d" % version, os.path.join(SOURCES, str(version), "forecast.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _artifact(repository):
    for version in ("2", "1"):  # both versions ship the same artifact
        path = os.path.join(repository, "metric_forecaster", version, "prophet_model.json")
        if os.path.isfile(path):
            return path, "built artifact %s" % path, None
    from prophet.serialize import model_to_json
    logging.getLogger("cmdstanpy").setLevel(logging.WARNING)
    stamps, values = forecaster.series(21)
    model = forecaster.train(stamps[:-forecaster.HOLD_OUT], values[:-forecaster.HOLD_OUT])
    tmp = tempfile.mkdtemp(prefix="bench-forecaster-")
    path = os.path.join(tmp, "prophet_model.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(model_to_json(model))
    return path, "trained here (no build at %s)" % repository, tmp


def timed(call, seconds, at_least=3):
    """Per-call wall times (ms) of ``call()`` repeated for ``seconds``."""
    times, end = [], time.perf_counter() + seconds
    while len(times) < at_least or time.perf_counter() < end:
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def summary(times):
    return {"calls": len(times), "median_ms": statistics.median(times), "p90_ms": float(np.percentile(times, 90))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", default=os.path.join(ROOT, "build", "model_repository"))
    parser.add_argument("--seconds", type=float, default=3.0, help="time per version and request shape (default 3)")
    parser.add_argument("--json", default=os.path.join(ROOT, "build", "reports", "bench_forecaster.json"), help="results file")
    _load.add_argument(parser)
    args = parser.parse_args(argv)
    load = _load.start(allow=args.allow_loaded)
    path, source, tmp = _artifact(args.repository)
    fc1, fc2 = _module(1), _module(2)
    v1, v2 = fc1.load(path), fc2.load(path, SEED)
    if tmp:
        shutil.rmtree(tmp)
    print("model: %s; version 2: %s" % (source, v2.describe()), flush=True)

    stamps, values = forecaster.series(21, weeks=9)
    unix = stamps.as_unit("s").asi8.astype(np.int64)
    values = np.round(values, 1).astype(np.float32)
    shapes = [("48 h ending at the training end, 6 h ahead (golden case)", TRAINED_HOURS, 6),
              ("48 h ending a week after the training end, 6 h ahead (live traffic)", TRAINED_HOURS + 168, 6),
              ("48 h ending a week after the training end, 336 h ahead (MAX_HORIZON)", TRAINED_HOURS + 168, 336)]
    rows = []
    for name, stop, horizon in shapes:
        request = (values[stop - 48:stop], unix[stop - 48:stop], horizon, ANCHOR, SEED)
        for a, b in zip(fc1.forecast(v1, *request), fc2.forecast(v2, *request)):
            np.testing.assert_allclose(b, a, rtol=1e-6, err_msg="versions 1 and 2 differ on %s" % name)
        before = summary(timed(lambda: fc1.forecast(v1, *request), args.seconds))
        after = summary(timed(lambda: fc2.forecast(v2, *request), args.seconds))
        rows.append({"request": name, "v1": before, "v2": after, "speedup": before["median_ms"] / after["median_ms"]})
        print("%-70s v1 %8.2f ms  v2 %7.3f ms  x%.0f" % (name, before["median_ms"], after["median_ms"], rows[-1]["speedup"]),
              flush=True)

    stop = TRAINED_HOURS + 168
    live = (values[stop - 48:stop], unix[stop - 48:stop], 6, ANCHOR, SEED)

    def cold():
        v2.direct._draws.clear()
        fc2.forecast(v2, *live)
    first = summary(timed(cold, args.seconds))

    # 32 hosts' series on one time grid: one call each, or one predict and an anchor per series
    series = values[stop - 48:stop][None, :] + np.arange(32, dtype=np.float32)[:, None] * 25
    grid = unix[stop - 48:stop]

    def one_by_one():
        for row in series:
            fc2.forecast(v2, row, grid, 6, ANCHOR, SEED)

    def shared_grid():
        future = grid[-1] + 3600 * np.arange(1, 7, dtype=np.int64)
        yhat, lower, upper = v2.predict(np.concatenate([grid[-ANCHOR:], future]), SEED, 6)
        offsets = (series[:, -ANCHOR:] - yhat[:ANCHOR]).mean(axis=1, keepdims=True)
        return yhat[ANCHOR:] + offsets, lower + offsets, upper + offsets
    batch = {"one_call_per_series": summary(timed(one_by_one, args.seconds)),
             "one_predict_for_all": summary(timed(shared_grid, args.seconds))}
    _load.finish(load)

    lines = [_load.mark_tables("| request (in-process, one core) | v1 median ms | v1 p90 ms | v2 median ms | v2 p90 ms | v1 / v2 |\n"
                               "|---|---|---|---|---|---|\n" + "\n".join(
                                   "| %s | %.1f | %.1f | %.3f | %.3f | %.0fx |" % (
                                       r["request"], r["v1"]["median_ms"], r["v1"]["p90_ms"], r["v2"]["median_ms"],
                                       r["v2"]["p90_ms"], r["speedup"]) for r in rows), load),
             "",
             "v2, first request of a shape (draws made): median %.3f ms, p90 %.3f ms." % (first["median_ms"], first["p90_ms"]),
             "32 series on one time grid: 32 calls %.2f ms, one predict + 32 anchors %.3f ms (medians)." % (
                 batch["one_call_per_series"]["median_ms"], batch["one_predict_for_all"]["median_ms"]),
             load.describe()]
    print("\n" + "\n".join(lines))
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump({"model": source, "path": v2.describe(), "rows": rows, "first_request_of_a_shape": first,
                   "batch_of_32": batch, "load": load.as_dict()}, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
