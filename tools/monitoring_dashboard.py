"""Build the aiops.triton Grafana dashboard with grafana-foundation-sdk.

    python tools/monitoring_dashboard.py            write roles/triton_monitoring/files/grafana/aiops-triton-dashboard.json
    python tools/monitoring_dashboard.py --check    exit 1 when the committed JSON differs from what this builds

The JSON is committed so the role can install it without the SDK on the controller; the unit tests
regenerate it, compare, and parse every query (tests/unit/monitoring/test_dashboard.py).
"""

import argparse
import json
import os
import sys

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "roles", "triton_monitoring", "files", "grafana", "aiops-triton-dashboard.json")
UID = "aiops-triton"
TRITON_JOB = "aiops-triton"  # the role's scrape job (roles/triton_monitoring/vars/main.yml)
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
# Every series the role scrapes carries host and rollout_group (file_sd labels); these narrow panels.
SEL = 'host=~"$host", rollout_group=~"$rollout_group"'
MSEL = SEL + ', model=~"$model"'


def query(expr, legend, ref, instant=False):
    target = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)
    if instant:
        target = target.instant().format(PromQueryFormat.TABLE)
    return target


def series(title, description, unit, *targets):
    panel = timeseries.Panel().title(title).description(description).unit(unit).datasource(DATASOURCE).height(8).span(12)
    for target in targets:
        panel = panel.with_target(target)
    return panel


def rate(metric, selector=MSEL):
    return "rate(%s{%s}[$__rate_interval])" % (metric, selector)


def quantile(metric, q):
    return 'max by (model) (%s{%s, quantile="%s"}) / 1000' % (metric, MSEL, q)


def variable(name, label, expr):
    return (dash.QueryVariable(name).label(label).query(expr).datasource(DATASOURCE)
            .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED).multi(True).include_all(True).all_value(".*")
            .current(model.VariableOption(selected=True, text="All", value="$__all")))


def build():
    board = (
        dash.Dashboard("aiops.triton - Triton fleet").uid(UID).tags(["aiops-triton", "triton"])
        .description("Per-model traffic, failures, latency and GPU use of the Triton fleet, by host and rollout group.")
        .refresh("30s").time("now-1h", "now").timezone("browser").editable()
        .with_variable(dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_variable(variable("rollout_group", "Rollout group", 'label_values(up{job="%s"}, rollout_group)' % TRITON_JOB))
        .with_variable(variable("host", "Host", 'label_values(up{job="%s", rollout_group=~"$rollout_group"}, host)' % TRITON_JOB))
        .with_variable(variable("model", "Model", 'label_values(nv_inference_count{%s}, model)' % SEL))
    )
    board = (
        board.with_row(dash.Row("Fleet"))
        .with_panel(stat.Panel().title("Triton up").description("1 when Prometheus scrapes the host's Triton metrics port.")
                    .datasource(DATASOURCE).height(6).span(8)
                    .with_target(query('up{job="%s", %s}' % (TRITON_JOB, SEL), "{{host}}", "A")))
        .with_panel(stat.Panel().title("Triton ready").description("1 when /v2/health/ready answers 200 (drift reporter).")
                    .datasource(DATASOURCE).height(6).span(8)
                    .with_target(query("aiops_triton_server_ready{%s}" % SEL, "{{host}}", "A")))
        .with_panel(stat.Panel().title("Hosts serving an unpinned version").datasource(DATASOURCE).height(6).span(8)
                    .description("Hosts whose Triton serves a model version their inventory does not pin.")
                    .with_target(query('count(max by (host) (aiops_triton_model_version{%s, served="true", pinned="false"})) or vector(0)'
                                       % SEL, "drifted hosts", "A")))
        .with_panel(series("Request rate per rollout group", "Successful inferences per second, summed over each rollout group.", "reqps",
                           query("sum by (rollout_group) (%s)" % rate("nv_inference_request_success"), "{{rollout_group}}", "A")))
        .with_panel(series("Request rate per host", "Successful inferences per second on each host.", "reqps",
                           query("sum by (host) (%s)" % rate("nv_inference_request_success"), "{{host}}", "A")))
        .with_panel(table.Panel().title("Loaded versions per host").datasource(DATASOURCE).height(8).span(12)
                    .description("Model versions Triton has loaded (from its per-version metrics).")
                    .with_target(query("count by (rollout_group, host, model, version) (nv_inference_count{%s})" % MSEL, "", "A", instant=True)))
        .with_panel(table.Panel().title("Served vs pinned versions").datasource(DATASOURCE).height(8).span(12)
                    .description("The drift reporter: served=true pinned=false is drift, served=false pinned=true a missing version.")
                    .with_target(query("max by (rollout_group, host, model, version, served, pinned) (aiops_triton_model_version{%s, model=~\"$model\"})"
                                       % SEL, "", "A", instant=True)))
    )
    board = (
        board.with_row(dash.Row("Per model"))
        .with_panel(series("Request rate per model", "Successful inferences per second.", "reqps",
                           query("sum by (model) (%s)" % rate("nv_inference_request_success"), "{{model}}", "A")))
        .with_panel(series("Failure ratio per model", "Failed / all requests.", "percentunit",
                           query("sum by (model) (%s) / (sum by (model) (%s) + sum by (model) (%s))"
                                 % (rate("nv_inference_request_failure"), rate("nv_inference_request_success"),
                                    rate("nv_inference_request_failure")), "{{model}}", "A")))
        .with_panel(series("Queue time p50 / p99", "Time requests wait for an instance (Triton summaries: --metrics-config=summary_latencies=true).",
                           "ms",
                           query(quantile("nv_inference_queue_summary_us", "0.5"), "{{model}} p50", "A"),
                           query(quantile("nv_inference_queue_summary_us", "0.99"), "{{model}} p99", "B")))
        .with_panel(series("Compute time p50 / p99", "Model execution time per request (Triton summaries).", "ms",
                           query(quantile("nv_inference_compute_infer_summary_us", "0.5"), "{{model}} p50", "A"),
                           query(quantile("nv_inference_compute_infer_summary_us", "0.99"), "{{model}} p99", "B")))
        .with_panel(series("Mean request latency", "End-to-end mean from Triton's cumulative counters (needs no summaries).", "ms",
                           query("sum by (model) (%s) / sum by (model) (%s) / 1000"
                                 % (rate("nv_inference_request_duration_us"), rate("nv_inference_request_success")), "{{model}}", "A")))
        .with_panel(series("Pending requests", "Requests received and not yet executed, per host and model.", "short",
                           query("sum by (host, model) (nv_inference_pending_request_count{%s})" % MSEL, "{{host}} {{model}}", "A")))
    )
    board = (
        board.with_row(dash.Row("GPU"))
        .with_panel(series("GPU utilisation", "Per GPU, from Triton's nv_gpu_* metrics.", "percentunit",
                           query("max by (host, gpu_uuid) (nv_gpu_utilization{%s})" % SEL, "{{host}} {{gpu_uuid}}", "A")))
        .with_panel(series("GPU memory used", "Used / total memory per GPU.", "percentunit",
                           query("max by (host, gpu_uuid) (nv_gpu_memory_used_bytes{%s}) / max by (host, gpu_uuid) (nv_gpu_memory_total_bytes{%s})"
                                 % (SEL, SEL), "{{host}} {{gpu_uuid}}", "A")))
    )
    # The triton_gpu_health reporter (node_exporter textfile): 0 healthy, 1 degraded, 2 unhealthy.
    board = (
        board.with_row(dash.Row("GPU health"))
        .with_panel(stat.Panel().title("GPU health per host").datasource(DATASOURCE).height(6).span(8)
                    .description("The host's GPU verdict from the triton_gpu_health reporter: 0 healthy, 1 degraded (serve, "
                                 "report), 2 unhealthy (never serve).")
                    .with_target(query("max by (host) (aiops_gpu_host_health{%s})" % SEL, "{{host}}", "A")))
        .with_panel(table.Panel().title("GPU health per GPU").datasource(DATASOURCE).height(6).span(16)
                    .description("Each GPU's verdict (0 healthy, 1 degraded, 2 unhealthy), row remap pending and uncorrectable "
                                 "ECC errors since the driver loaded.")
                    .with_target(query("max by (host, gpu, bus_id) (aiops_gpu_health_verdict{%s})" % SEL, "", "A", instant=True))
                    .with_target(query("max by (host, gpu, bus_id) (aiops_gpu_row_remap_pending{%s})" % SEL, "", "B", instant=True))
                    .with_target(query("max by (host, gpu, bus_id) (aiops_gpu_ecc_uncorrectable_volatile{%s})" % SEL, "", "C",
                                       instant=True)))
        .with_panel(table.Panel().title("GPU health reasons").datasource(DATASOURCE).height(8).span(12)
                    .description("Why a host is not healthy, one row per reason (unhealthy first in the reporter's order).")
                    .with_target(query("max by (host, severity, reason) (aiops_gpu_health_reason{%s})" % SEL, "", "A", instant=True)))
        .with_panel(series("Hardware Xid events", "Xid events NVIDIA's catalogue classes as hardware faults, since boot or the "
                           "last GPU reset, per host and Xid.", "short",
                           query('sum by (host, xid) (aiops_gpu_xid_events_total{%s, class="hardware"})' % SEL, "{{host}} Xid {{xid}}", "A")))
    )
    return board.build()


def render():
    return json.dumps(build(), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the aiops.triton Grafana dashboard.")
    parser.add_argument("--check", action="store_true", help="compare with the committed JSON instead of writing it")
    parser.add_argument("--output", default=OUTPUT)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        with open(args.output) as handle:
            if handle.read() != text:
                print("%s is stale: run python tools/monitoring_dashboard.py" % args.output, file=sys.stderr)
                return 1
        return 0
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
