"""The fleet report in a real browser (Debian's headless Chromium), at the lab's 24 hosts and at 1,000: nothing
wider than the window, the exceptions first, every plot's title and legend on screen, a filter that works.

Runs in `make test`'s unit stage. Chromium missing is a failure, not a skip: without it nothing here is shown.
"""

import html
import json
import os
import re

import pytest

import fleet_synth
import headless

fleet_report = fleet_synth.load_report()

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fleet_report_probe.js")
MODELS = sorted(fleet_synth.MODELS)


def probe(tmp_path, hosts, typed, width=1280, height=2000):
    """What the probe script found in the report of a synthetic fleet of ``hosts``, after typing ``typed``."""
    if not headless.binary():
        pytest.fail("chromium is not installed: " + headless.INSTALL)
    _report, _json, page = fleet_report.write(fleet_synth.raw_fleet(hosts), str(tmp_path / str(hosts)), ["inventories/lab"])
    with open(page, encoding="utf-8") as handle, open(PROBE, encoding="utf-8") as script:
        text = handle.read().replace("</body>", "<script>%s</script></body>" % script.read().replace("__HOST__", typed))
    probed = tmp_path / ("probed-%d-%d.html" % (hosts, width))
    probed.write_text(text, encoding="utf-8")
    dom = headless.dump_dom(str(probed), width, height)
    match = re.search(r'<pre id="probe-result">(.*?)</pre>', dom, re.S)
    assert match, "the probe wrote no result; the page's script failed? " + dom[-2000:]
    return json.loads(html.unescape(match.group(1)))


def check(found, width, typed):
    assert found["innerWidth"] == width
    # no horizontal scrolling, with the per-host tables closed and open
    assert found["scrollWidth"] <= width and found["scrollWidthOpen"] <= width and found["filtered"]["scrollWidth"] <= width
    assert found["firstAfterHeader"] == "exceptions" and found["sections"][0] == "exceptions"
    assert found["sections"] == ["exceptions", "groups", "latency", "hosts"]
    assert [p["model"] for p in found["plots"]] == MODELS
    for plot in found["plots"]:
        assert plot["captionVisible"] and plot["legendVisible"] and plot["svgVisible"], plot
        assert plot["clipped"] == [], plot
        assert plot["svg"]["right"] <= width
    # the per-host detail starts folded; typing a host name opens it and leaves that host's rows only
    assert found["detailOpenBefore"] is False
    assert found["filtered"]["detailOpen"] is True
    assert found["filtered"]["hosts"] == [typed]
    assert found["filtered"]["models"] == [typed] * len(MODELS)
    assert found["allShownAgain"] == found["hostRows"]
    assert found["sortedP99"] == sorted(found["sortedP99"], reverse=True) and found["sortedP99"][0] > 0


def test_24_hosts_in_a_browser(tmp_path):
    found = probe(tmp_path, 24, "lab-17")
    check(found, 1280, "lab-17")
    assert found["hostRows"] == 23  # lab-20 has no result: it is an exception, not a row
    assert sorted(found["attention"]) == ["lab-10", "lab-12", "lab-14", "lab-17", "lab-6", "lab-8"]
    assert found["counts"][0] == "23 hosts"


def test_24_hosts_in_a_narrow_window(tmp_path):
    check(probe(tmp_path, 24, "lab-3", width=760, height=1400), 760, "lab-3")


def test_1000_hosts_in_a_browser(tmp_path):
    typed = "triton-0421.dc1.example.com"
    found = probe(tmp_path, 1000, typed)
    check(found, 1280, typed)
    assert found["hostRows"] == 996
    # a box per rollout group and percentile, never one mark per host
    for plot in found["plots"]:
        assert plot["boxes"] == 6 and plot["dots"] <= 3 * 2 * fleet_report.fleet_report_page.fleet_report_plot.MAX_DOTS, plot
