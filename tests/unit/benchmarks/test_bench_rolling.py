"""bench_rolling's table: one row per size, per-host seconds, requests answered / failed, the loaded mark."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
import _load  # noqa: E402
import bench_rolling  # noqa: E402

RESULTS = [
    {"kind": "restart", "hosts": 2, "seconds": 60.0, "answered": 900, "failed": 0},
    {"kind": "reboot", "hosts": 2, "seconds": 50.0, "answered": 800, "failed": 0},
    {"kind": "restart", "hosts": 4, "seconds": 160.0, "answered": 2000, "failed": 3},
    {"kind": "reboot", "hosts": 4, "seconds": 120.0, "answered": 1500, "failed": 0},
]


def test_one_row_per_size_with_per_host_time_and_failures():
    text = bench_rolling.table(RESULTS, _load.Load((0.5, 0.5, 0.5), 2, False))
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows == ["| 2 | 60 | 30 | 900 / 0 | 50 | 25 | 800 / 0 |",
                    "| 4 | 160 | 40 | 2000 / 3 | 120 | 30 | 1500 / 0 |"]
    assert "LOADED" not in text


def test_a_loaded_run_is_marked_not_a_result():
    text = bench_rolling.table(RESULTS, _load.Load((5.0, 5.0, 5.0), 2, True))
    assert "LOADED MACHINE (load 5.00 on 2 cores): not a result" in text.splitlines()[0]
