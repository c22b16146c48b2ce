"""bench_ab's run order and arithmetic, and its baseline export (a real git archive of this repository)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
import bench_ab  # noqa: E402


def test_order_alternates_collections_and_reverses_every_other_round():
    assert bench_ab.order([8, 24], 2) == [
        (8, "baseline"), (8, "change"), (24, "baseline"), (24, "change"),
        (24, "change"), (24, "baseline"), (8, "change"), (8, "baseline")]
    # every (size, collection) runs once per round
    runs = bench_ab.order([8, 16, 24], 3)
    assert all(runs.count((s, v)) == 3 for s in (8, 16, 24) for v in ("baseline", "change"))


def test_summarize_medians_per_host_and_ratio():
    walls = {(8, "baseline"): [100.0, 104.0], (8, "change"): [90.0, 86.0],
             (24, "baseline"): [300.0, 280.0, 290.0], (24, "change"): [240.0, 250.0, 245.0]}
    rows = bench_ab.summarize(walls, [8, 24])
    assert rows[0]["baseline_s"] == 102.0 and rows[0]["change_s"] == 88.0 and rows[0]["ratio"] == round(88 / 102, 3)
    assert rows[1]["baseline_per_host_s"] == round(290 / 24, 2) and rows[1]["change_per_host_s"] == round(245 / 24, 2)


def test_export_baseline_is_the_ref_with_its_collection_link(tmp_path):
    dest = str(tmp_path / "baseline")
    commit = bench_ab.export_baseline("HEAD", dest)
    assert len(commit) == 40
    link = os.path.join(dest, ".collection", "ansible_collections", "aiops", "triton")
    assert os.path.realpath(link) == os.path.realpath(dest)
    assert os.path.isfile(os.path.join(link, "galaxy.yml")) and os.path.isfile(os.path.join(dest, "site.yml"))
    assert not os.path.exists(os.path.join(dest, ".git"))


def test_summarize_cpu_seconds_when_given():
    walls = {(8, "baseline"): [100.0], (8, "change"): [80.0]}
    cpus = {(8, "baseline"): [200.0, 220.0], (8, "change"): [150.0, 160.0]}
    row = bench_ab.summarize(walls, [8], cpus)[0]
    assert (row["baseline_cpu_s"], row["change_cpu_s"], row["cpu_ratio"]) == (210.0, 155.0, round(155 / 210, 3))
    assert "cpu_ratio" not in bench_ab.summarize(walls, [8])[0]


def test_children_cpu_counts_a_finished_child():
    import subprocess
    before = bench_ab.children_cpu()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3000000))"], check=True)
    assert bench_ab.children_cpu() - before > 0.05


def test_is_no_change_needs_rc_0_no_changed_host_and_exactly_the_limited_hosts():
    import bench_converge
    clean = {"ok": 10, "changed": 0, "unreachable": 0, "failed": 0}
    recap = {"lab-1": clean, "lab-2": clean, "localhost": dict(clean, changed=1)}
    assert bench_converge.recap_problems(recap) == ["localhost"]
    recap["localhost"] = clean
    assert bench_converge.is_no_change(0, recap, ["lab-1", "lab-2"])
    assert not bench_converge.is_no_change(2, recap, ["lab-1", "lab-2"])
    assert not bench_converge.is_no_change(0, recap, ["lab-1", "lab-2", "lab-3"])  # a host missing from the recap
    assert not bench_converge.is_no_change(0, dict(recap, **{"lab-2": dict(clean, failed=1)}), ["lab-1", "lab-2"])
