"""bench_fleet's arithmetic: the rollout batches per size, medians per size and transport, the targets line,
the rollout table and the loaded mark (no lab: runs given as data)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
import _load  # noqa: E402
import bench_fleet  # noqa: E402


def _run(hosts, transport, seconds, cpu, pss=300):
    return {"hosts": hosts, "transport": transport, "seconds": seconds, "controller_cpu_s": cpu, "peak_pss_mib": pss}


RUNS = [_run(8, "lab_podman", 80.0, 150.0), _run(8, "ssh", 90.0, 60.0, 400), _run(24, "lab_podman", 216.0, 430.0),
        _run(24, "ssh", 240.0, 170.0, 900), _run(24, "lab_podman", 240.0, 460.0), _run(8, "lab_podman", 88.0, 160.0)]
ROLLOUTS = [{"hosts": 8, "seconds": 300.0, "batches": bench_fleet.plan(8), "answered": 5000, "failed": 0,
             "versions_answered": {"2": 1000, "70": 4000}, "all_upgraded": True}]


def test_every_size_has_the_same_number_of_batches_in_three_groups():
    for size in (8, 16, 24):
        batches = bench_fleet.plan(size)
        assert list(batches) == ["triton_canary", "triton_wave_1", "triton_wave_2"]
        assert batches["triton_canary"] == [1] and sum(len(b) for b in batches.values()) == 6
        assert sum(sum(b) for b in batches.values()) == size
    assert bench_fleet.plan(24)["triton_wave_1"] == [6, 6]


def test_medians_per_size_and_transport():
    rows = bench_fleet.summarise(RUNS, [8, 24])
    lab24 = next(r for r in rows if r["hosts"] == 24 and r["transport"] == "lab_podman")
    assert (lab24["median_s"], lab24["per_host_s"], lab24["runs"]) == (228.0, 9.5, [216.0, 240.0])
    ssh8 = next(r for r in rows if r["hosts"] == 8 and r["transport"] == "ssh")
    assert (ssh8["controller_cpu_per_host_s"], ssh8["peak_pss_mib"]) == (7.5, 400)


def test_tables_state_the_targets_and_the_rollout():
    text = bench_fleet.tables(bench_fleet.summarise(RUNS, [8, 24]), ROLLOUTS, [8, 24], _load.Load((0.5, 0.5, 0.5), 2, False))
    # per host at 24: 228 / 24 = 9.5; at 8: median(80, 88) / 8 = 10.5
    assert "Per-host cost at 24 hosts / at 8 hosts (lab transport): **0.90** (target <= 1.2)" in text
    assert "at 24 hosts: **9.50 s per host** (target <= 6)" in text
    assert "| 8 | 300 | 1; 2, 2; 1, 1, 1 | 5000 / 0 | v2: 1000, v70: 4000 | True |" in text
    assert "LOADED" not in text


def test_a_loaded_run_is_marked_not_a_result():
    text = bench_fleet.tables(bench_fleet.summarise(RUNS, [8, 24]), [], [8, 24], _load.Load((5.0, 5.0, 5.0), 2, True))
    assert text.splitlines()[0] == "**LOADED MACHINE (load 5.00 on 2 cores): not a result**"
