"""The Grafana dashboard: regenerated from tools/monitoring_dashboard.py equals the committed JSON, and
every query (panels and variables) parses as PromQL once Grafana's variables are substituted."""

import json
import os
import re
import sys

import promql_parser
import pytest

from monitoring_render import ROLE, ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import monitoring_dashboard  # noqa: E402

DASHBOARD = os.path.join(ROLE, "files", "grafana", "aiops-triton-dashboard.json")
# What Grafana substitutes before a query reaches Prometheus (all selected: the allValue).
SUBSTITUTIONS = {"$__rate_interval": "1m", "$rollout_group": ".*", "$host": ".*", "$model": ".*"}


def load():
    with open(DASHBOARD) as handle:
        return json.load(handle)


def substitute(expr):
    for name, value in SUBSTITUTIONS.items():
        expr = expr.replace(name, value)
    assert "$" not in expr, "unknown Grafana variable in %s" % expr
    return expr


def panel_queries(board=None):
    board = board or load()
    return [(panel["title"], target["expr"]) for panel in board["panels"] for target in panel.get("targets", [])]


def variable_queries(board=None):
    """label_values(<selector>, label) is Grafana's; the selector inside is PromQL."""
    board = board or load()
    out = []
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            match = re.match(r"^label_values\((.*), *(\w+)\)$", var["query"])
            assert match, "%s: expected label_values(selector, label)" % var["name"]
            out.append((var["name"], match.group(1)))
    return out


def test_committed_json_is_what_the_generator_builds():
    with open(DASHBOARD) as handle:
        assert handle.read() == monitoring_dashboard.render(), "run: python tools/monitoring_dashboard.py"


def test_generator_check_mode_reports_a_stale_file(tmp_path):
    stale = tmp_path / "d.json"
    stale.write_text("{}")
    assert monitoring_dashboard.main(["--check", "--output", str(stale)]) == 1
    assert monitoring_dashboard.main(["--check"]) == 0


@pytest.mark.parametrize("title, expr", panel_queries() + variable_queries())
def test_every_query_parses(title, expr):
    ast = promql_parser.parse(substitute(expr))
    assert ast is not None, title


def test_unparseable_promql_is_caught():
    with pytest.raises(Exception):
        promql_parser.parse("sum by (model) (rate(nv_inference_count[5m])")


def test_dashboard_covers_the_issue():
    exprs = " ".join(expr for _title, expr in panel_queries())
    for metric in ("nv_inference_request_success", "nv_inference_request_failure", "nv_inference_queue_summary_us",
                   "nv_inference_compute_infer_summary_us", "nv_gpu_utilization", "nv_gpu_memory_used_bytes",
                   "nv_inference_count", "aiops_triton_model_version", "nv_inference_pending_request_count"):
        assert metric in exprs, metric
    assert "sum by (rollout_group)" in exprs
    names = [var["name"] for var in load()["templating"]["list"]]
    assert names == ["datasource", "rollout_group", "host", "model"]


def test_every_panel_uses_the_datasource_variable():
    for panel in load()["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
