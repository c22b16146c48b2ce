"""bench_serving's metric_forecaster rows: issue 37's targets, and version 1 measured at c=1 only."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
pytest.importorskip("numpy")
bench_serving = pytest.importorskip("bench_serving")
_load = pytest.importorskip("_load")


def cell(p50, throughput, p99=1.0):
    return {"p50": p50, "throughput": throughput, "p99": p99, "p95": p99, "errors": 0, "server_cpu": 1.0, "gen_cpu": 0.5}


RESULTS = {"metric_forecaster": {
    "Triton gRPC": {1: cell(1.4, 700), 32: cell(20.0, 1500)},
    "Triton HTTP": {1: cell(1.2, 800), 32: cell(25.0, 1300)},
    "FastAPI binary 2w": {1: cell(1.0, 900), 32: cell(30.0, 1100)},
    bench_serving.V1: {1: cell(450.0, 2.2)},
}}


def test_forecaster_targets_p50_and_throughput_against_version_1():
    rows = bench_serving.forecaster_targets(RESULTS)
    (_m1, what1, p50, _t1, met1), (_m2, what2, ratio, _t2, met2) = rows
    assert "Triton HTTP" in what1 and p50 == pytest.approx(1.2) and met1
    assert "Triton gRPC" in what2 and ratio == pytest.approx(1500 / 2.2) and met2
    slow = dict(RESULTS["metric_forecaster"])
    slow.update({"Triton gRPC": {1: cell(12.0, 80), 32: cell(90.0, 60)}, "Triton HTTP": {1: cell(11.0, 85), 32: cell(95.0, 50)}})
    slow = {"metric_forecaster": slow}
    assert [r[4] for r in bench_serving.forecaster_targets(slow)] == [False, False]


def test_version_1_is_left_out_of_the_fastapi_comparison_and_shown_at_c1():
    rows, _ok, errors = bench_serving.check_targets(RESULTS)
    assert errors == 0
    assert not any(bench_serving.V1 in what for _m, what, _r, _t, _met in rows if "FastAPI" in what)
    settings = {"workers": 2, "concurrency": [1, 32], "warmup": 1.0, "duration": 2.0, "rounds": 3, "v1_duration": 10.0}
    load = _load.Load((0.5, 0.5, 0.5), 2, False)
    text = bench_serving.markdown(RESULTS, settings, 100.0, {"cpus": 2, "cpu": "x", "mem_gib": 1, "kernel": "k", "python": "3",
                                                             "triton": "t", "onnxruntime": "o", "tritonclient": "c",
                                                             "fastapi": "f", "uvicorn": "u", "date": "d"},
                                  load, rows, errors)
    v1_rows = [line for line in text.splitlines() if line.startswith("| %s |" % bench_serving.V1)]
    assert len(v1_rows) == 1 and v1_rows[0].startswith("| %s | 1 |" % bench_serving.V1)
    assert "| metric_forecaster | c=1: Triton HTTP p50 ms (version 2) | 1.20 | < 10 ms | yes |" in text


def test_latency_plot_skips_a_variant_missing_a_concurrency(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(bench_serving, "IMG", str(tmp_path))
    bench_serving.plots(RESULTS, {"concurrency": [1, 32], "rounds": 3}, _load.Load((0.5, 0.5, 0.5), 2, False))
    assert sorted(os.listdir(str(tmp_path))) == ["bench_serving_latency.png", "bench_serving_throughput.png"]
