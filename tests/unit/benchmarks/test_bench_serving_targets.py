"""bench_serving's target check: Triton's better variant of each cell against the best FastAPI variant."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
pytest.importorskip("numpy")
bench_serving = pytest.importorskip("bench_serving")


def cell(p50, throughput, p99, errors=0):
    return {"p50": p50, "throughput": throughput, "p99": p99, "errors": errors}


RESULTS = {"anomaly_detector": {
    "Triton gRPC": {1: cell(0.50, 2000, 0.9), 32: cell(4.0, 8000, 12.0)},
    "Triton HTTP http.client": {1: cell(0.36, 2700, 0.6), 32: cell(5.0, 6000, 20.0)},
    "FastAPI binary 1w": {1: cell(0.34, 2800, 0.5), 32: cell(6.0, 5000, 12.5)},
    "FastAPI JSON 2w": {1: cell(0.50, 1800, 0.9), 32: cell(9.0, 3000, 20.0)},
}}


def test_better_triton_variant_per_cell_against_best_fastapi():
    rows, ok, errors = bench_serving.check_targets(RESULTS)
    assert errors == 0 and not ok
    by_measure = {what.split(":")[0]: (what, ratio, met) for _m, what, ratio, _t, met in rows}
    what, ratio, met = by_measure["c=1"]
    assert "Triton HTTP http.client" in what and "FastAPI binary 1w" in what
    assert ratio == pytest.approx(0.36 / 0.34) and met
    req = [r for r in rows if "req/s" in r[1]][0]
    assert "Triton gRPC" in req[1] and req[2] == pytest.approx(8000 / 5000) and not req[4]
    p99 = [r for r in rows if "p99" in r[1]][0]
    assert p99[2] == pytest.approx(12.0 / 12.5) and p99[4]


def test_missing_concurrency_gives_no_row():
    cells = {"m": {"Triton gRPC": {8: cell(1, 1, 1)}, "FastAPI JSON 1w": {8: cell(1, 1, 1)}}}
    rows, ok, _errors = bench_serving.check_targets(cells)
    assert rows == [] and ok
