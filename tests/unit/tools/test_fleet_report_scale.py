"""The fleet report at 1,000 hosts (a synthetic fleet-raw.json in verify.yml's schema, fleet_synth.py): rendered in
a few seconds, a page of bounded size, and what is wrong stays a handful of lines however big the fleet."""

import json
import re
import time

import fleet_synth

fleet_report = fleet_synth.load_report()

MAX_SECONDS = 5.0
MAX_BYTES = 3 * 1024 * 1024


def test_1000_hosts_render_fast_and_small(tmp_path):
    raw = fleet_synth.raw_fleet(1000)
    start = time.monotonic()
    report, json_path, html_path = fleet_report.write(raw, str(tmp_path), ["inventories/production"])
    seconds = time.monotonic() - start
    page = open(html_path, encoding="utf-8").read()
    assert seconds < MAX_SECONDS, "rendering 1,000 hosts took %.1f s" % seconds
    assert len(page.encode("utf-8")) < MAX_BYTES, "the page is %d bytes" % len(page.encode("utf-8"))
    assert json.load(open(json_path, encoding="utf-8"))["summary"] == report["summary"]
    summary = report["summary"]
    assert (summary["hosts"], len(summary["not_reported"]), len(summary["quarantined"])) == (996, 4, 4)
    # each kind of problem is one entry naming its four hosts, whatever the fleet's size
    assert len(report["exceptions"]) == 7 and all(len(e["hosts"]) == 4 for e in report["exceptions"])
    # host-level columns once per host, model rows without them: 996 host rows, 4 models on each
    assert page.count("<tr data-h=") == 996 + 996 * 4
    assert page.count("8 \u00d7 H100 80GB HBM3") == 996
    # plots: one per model, a box per rollout group and percentile
    assert page.count('<figure class="plot"') == 4 and page.count("<rect ") == 4 * 3 * 2
    # self-contained: nothing is fetched (the reasons may quote Triton's URL as text)
    assert "<img" not in page and "<link" not in page and not re.search(r'(src|href)="', page)


def test_the_terminal_summary_stays_short_at_1000_hosts():
    report = fleet_report.build(fleet_synth.raw_fleet(1000), ["inventories/production"])
    lines = fleet_report.summary_lines(report)
    assert lines[0] == ("fleet report: 996 hosts, 984 passed, 8 failed, 4 drifted, 12 out of traffic (4 quarantined), "
                        "8 GPU unhealthy, 4 not reported")
    assert len(lines) == 1 + len(report["exceptions"]) <= 1 + fleet_report.TERMINAL_EXCEPTIONS


def test_a_long_reason_is_cut_in_the_terminal_and_whole_in_the_report():
    """Every failed golden case of a host (HTTP and gRPC) once made one terminal line of about 2,500 characters
    (the 24-host lab, one host serving another version's graph)."""
    report = fleet_report.build(fleet_synth.raw_fleet(1000), ["inventories/production"])
    long_reason = "; ".join("anomaly_detector: version 2: golden case %d over http: output anomaly_score[0] is 0.08, "
                            "expected 0.004 within atol=0.0001" % i for i in range(20))
    report["exceptions"][0]["reason"] = long_reason
    line = fleet_report.summary_lines(report)[1]
    reason = line.split(": ", 2)[2].split(" (triton-")[0]
    assert len(reason) <= fleet_report.TERMINAL_REASON + 30 and reason.count("golden case") <= 3, reason
    assert "(whole in the report)" in line and " -> ansible-playbook " in line
    assert report["exceptions"][0]["reason"] == long_reason


def test_a_long_reason_folds_on_the_page():
    report = fleet_report.build(fleet_synth.raw_fleet(24), ["inventories/lab"])
    report["exceptions"][0]["reason"] = "golden case failed; " * 60
    page = fleet_report.render_html(report)
    assert page.count("<summary>the whole reason</summary>") == 1
    assert ("golden case failed; " * 60).strip() in page  # whole, inside the fold
