"""bench_mitogen's run order, the environment of each variant and its arithmetic."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
import bench_mitogen  # noqa: E402


def test_order_alternates_variants_and_reverses_every_other_round():
    assert bench_mitogen.order([8], 3) == [(8, "ssh"), (8, "mitogen"), (8, "mitogen"), (8, "ssh"), (8, "ssh"),
                                           (8, "mitogen")]
    runs = bench_mitogen.order([8, 24], 2)
    assert all(runs.count((s, v)) == 2 for s in (8, 24) for v in ("ssh", "mitogen"))


def test_only_the_mitogen_variant_gets_mitogens_strategy():
    base = {"PATH": "/bin", "ANSIBLE_STRATEGY": "free"}
    mitogen = bench_mitogen.variant_env(base, "mitogen", "/x/strategy")
    assert mitogen["ANSIBLE_STRATEGY"] == "mitogen_linear" and mitogen["ANSIBLE_STRATEGY_PLUGINS"] == "/x/strategy"
    ssh = bench_mitogen.variant_env(base, "ssh", "/x/strategy")
    assert "ANSIBLE_STRATEGY" not in ssh and "ANSIBLE_STRATEGY_PLUGINS" not in ssh
    assert base["ANSIBLE_STRATEGY"] == "free"  # the caller's environment is left as it was


def test_summarise_medians_per_host_and_ratios():
    runs = [{"hosts": 8, "variant": "ssh", "seconds": s, "controller_cpu_s": c, "machine_cpu_s": c + 40}
            for s, c in ((48.0, 70.0), (50.0, 72.0), (52.0, 74.0))]
    runs += [{"hosts": 8, "variant": "mitogen", "seconds": s, "controller_cpu_s": c, "machine_cpu_s": c + 10}
             for s, c in ((20.0, 30.0), (24.0, 36.0))]
    row = bench_mitogen.summarise(runs, [8])[0]
    assert row["ssh"]["median_s"] == 50.0 and row["mitogen"]["median_s"] == 22.0
    assert row["ssh"]["per_host_s"] == 6.25 and row["mitogen"]["controller_cpu_per_host_s"] == round(33 / 8, 2)
    assert row["wall_ratio"] == round(22 / 50, 3) and row["cpu_ratio"] == round(33 / 72, 3)
    assert row["ssh"]["hosts_cpu_s"] == 40 and row["mitogen"]["hosts_cpu_s"] == 10 and row["hosts_cpu_ratio"] == 0.25


def test_machine_cpu_is_busy_time_without_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    busy = tuple(x * tick for x in (10, 1, 5, 1000, 50, 1, 2, 1))
    stat.write_text("cpu  %d %d %d %d %d %d %d %d 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n" % busy)
    assert bench_mitogen.machine_cpu(str(stat)) == 20


def test_no_mitogen_means_no_strategy_dir():
    assert bench_mitogen.mitogen_strategy_dir(python="/bin/false") is None
