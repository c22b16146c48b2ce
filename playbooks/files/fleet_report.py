"""The fleet report: what every Triton host serves against what its rollout group pins.

playbooks/verify.yml collects, read-only, per host: triton_verify's result (server version, each
model's versions and states in Triton's index, golden cases, a short latency burst), nvidia_gpu_info's
result, and triton_model_config run in check mode (config drift). This turns that raw file into

    fleet-report.json   per host: Triton version, load-balancer state, per model pinned vs READY versions,
                        golden cases, p50/p99, GPUs, drift sentences
    fleet-report.html   one self-contained page: a table per rollout group and, per model, a latency
                        plot across hosts (matplotlib, embedded as base64 PNG)

and prints where they are.  Usage: fleet_report.py --raw fleet-raw.json --out DIR
"""

import argparse
import base64
import datetime
import difflib
import html
import io
import json
import os
import sys

UNGROUPED = "(no rollout group)"
# Load-balancer states in which a host gets no requests.
OUT_OF_TRAFFIC = ("drained", "maint", "down")


# -- the report as data -----------------------------------------------------------------------------
def _ready_versions(model):
    """READY versions from Triton's index when verify could read it, else the versions it found ready."""
    states = model.get("states")
    if states is not None:
        return sorted(int(v) for v, state in states.items() if state == "READY")
    return sorted(v["version"] for v in model.get("versions", []) if v.get("ready"))


def _config_drift(result):
    """(drifted, unified diff, error) from one triton_model_config check-mode result."""
    if result.get("failed"):
        return True, "", result.get("msg") or "triton_model_config failed"
    if not result.get("changed"):
        return False, "", ""
    diff = result.get("diff") or {}
    if isinstance(diff, list):
        diff = diff[0] if diff else {}
    lines = difflib.unified_diff(str(diff.get("before", "")).splitlines(), str(diff.get("after", "")).splitlines(),
                                 "config.pbtxt on the host", "config.pbtxt rendered from the inventory", lineterm="")
    return True, "\n".join(lines), ""


def host_report(raw, rollout_groups):
    verify = raw.get("verify") or {}
    gpu = raw.get("gpu") or {}
    server = verify.get("server") or {}
    group = next((g for g in rollout_groups if g in raw.get("groups", [])), None)
    by_name = dict((m["name"], m) for m in verify.get("models", []))
    configs = dict(((c.get("item") or {}).get("name"), c) for c in raw.get("configs", []))
    entry = {"host": raw["host"], "group": group, "groups": raw.get("groups", []),
             "reachable": bool(server.get("live")), "ready": bool(server.get("ready")),
             "triton_version": server.get("version"),
             "gpu_status": gpu.get("status"), "gpu_message": gpu.get("message"),
             "gpus": [dict((k, g.get(k)) for k in ("index", "name", "uuid", "memory_total_mib", "driver_version"))
                      for g in gpu.get("gpus", [])],
             "models": [], "drift": [], "failures": list(verify.get("failures", [])),
             # roles/triton_lb status: up, drained, down, maint; unknown without a load balancer or when unread
             "lb_state": raw.get("lb_state") or "unknown", "lb_error": raw.get("lb_error") or ""}
    if not server:
        entry["failures"] = [verify.get("msg") or "triton_verify returned nothing"]
    for pin in raw.get("pinned", []):
        name = pin["name"]
        seen = by_name.get(name, {})
        cases = [c for v in seen.get("versions", []) for c in v.get("cases", [])]
        latency = [dict(v["latency"], version=v["version"]) for v in seen.get("versions", []) if v.get("latency")]
        drifted, diff, error = _config_drift(configs.get(name, {}))
        model = {"name": name, "pinned": sorted(pin.get("versions") or []), "ready": _ready_versions(seen),
                 "states": seen.get("states"),
                 "golden": {"passed": sum(1 for c in cases if c.get("passed")), "total": len(cases),
                            "failures": ["%s over %s: %s" % (c["name"], c["protocol"], c["message"]) for c in cases if not c.get("passed")]},
                 "latency": latency[-1] if latency else None,
                 "config_drift": drifted, "config_diff": diff, "config_error": error}
        entry["models"].append(model)
        if entry["reachable"] and model["ready"] != model["pinned"]:
            entry["drift"].append("%s: READY versions %s, pinned %s" % (name, model["ready"], model["pinned"]))
        if error:
            entry["drift"].append("%s: config.pbtxt cannot be checked: %s" % (name, error))
        elif drifted:
            entry["drift"].append("%s: config.pbtxt on the host differs from the one the inventory renders" % name)
    entry["passed"] = entry["reachable"] and entry["ready"] and not entry["drift"] and not entry["failures"]
    return entry


def build(raw):
    groups = list(raw.get("rollout_groups") or [])
    hosts = [host_report(h, groups) for h in raw.get("hosts", [])]
    return {"schema": 1, "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "rollout_groups": groups, "hosts": hosts,
            "summary": {"hosts": len(hosts), "passed": sum(1 for h in hosts if h["passed"]),
                        "drifted": sorted(h["host"] for h in hosts if h["drift"]),
                        "failed": sorted(h["host"] for h in hosts if h["failures"]),
                        "out_of_traffic": sorted(h["host"] for h in hosts if h["lb_state"] in OUT_OF_TRAFFIC)}}


# -- the page ---------------------------------------------------------------------------------------
def latency_plots(report):
    """{model: base64 PNG}: p50 and p99 per host, one bar pair per host."""
    import matplotlib
    matplotlib.use("Agg")  # no display on a controller
    from matplotlib import pyplot

    names = sorted(set(m["name"] for h in report["hosts"] for m in h["models"] if m["latency"]))
    plots = {}
    for name in names:
        rows = [(h["host"], m["latency"]) for h in report["hosts"] for m in h["models"] if m["name"] == name and m["latency"]]
        fig, axis = pyplot.subplots(figsize=(max(4.0, 1.2 * len(rows) + 2), 3.0), dpi=96)
        positions = list(range(len(rows)))
        axis.bar([p - 0.2 for p in positions], [r[1]["p50_ms"] for r in rows], width=0.4, label="p50")
        axis.bar([p + 0.2 for p in positions], [r[1]["p99_ms"] for r in rows], width=0.4, label="p99")
        axis.set_xticks(positions)
        axis.set_xticklabels([r[0] for r in rows])
        axis.set_ylabel("ms")
        axis.set_title("%s: latency over %d requests per host" % (name, rows[0][1]["requests"]))
        axis.legend()
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        pyplot.close(fig)
        plots[name] = base64.b64encode(buf.getvalue()).decode("ascii")
    return plots


def _cell(text, bad=False):
    return '<td class="%s">%s</td>' % ("bad" if bad else "", html.escape(str(text)))


def _versions(values):
    return ", ".join(str(v) for v in values) or "-"


def _lb_cell(host):
    text = host["lb_state"] + (" (%s)" % host["lb_error"] if host["lb_error"] else "")
    return _cell(text, host["lb_state"] in OUT_OF_TRAFFIC or bool(host["lb_error"]))


def _group_table(hosts):
    rows = ["<table>", "<tr><th>Host</th><th>Load balancer</th><th>Triton</th><th>GPUs</th><th>Model</th><th>Pinned</th><th>READY</th>"
            "<th>Golden cases</th><th>p50 ms</th><th>p99 ms</th><th>Drift</th></tr>"]
    for host in hosts:
        gpus = ", ".join("%s %s" % (g["index"], g["name"]) for g in host["gpus"]) or (host["gpu_message"] or "none")
        if not host["models"] or not host["reachable"]:
            rows.append("<tr>%s%s%s%s<td colspan=7 class=bad>%s</td></tr>" % (
                _cell(host["host"]), _lb_cell(host), _cell(host["triton_version"] or "unreachable", not host["reachable"]), _cell(gpus),
                html.escape("; ".join(host["failures"] + host["drift"]) or "no models pinned")))
            continue
        for model in host["models"]:
            golden = model["golden"]
            lat = model["latency"] or {}
            drift = [d.split(": ", 1)[1] for d in host["drift"] if d.startswith(model["name"] + ": ")]
            rows.append("<tr>%s%s%s%s%s%s%s%s%s%s%s</tr>" % (
                _cell(host["host"]), _lb_cell(host), _cell(host["triton_version"]), _cell(gpus), _cell(model["name"]),
                _cell(_versions(model["pinned"])), _cell(_versions(model["ready"]), model["ready"] != model["pinned"]),
                _cell("%d/%d" % (golden["passed"], golden["total"]), golden["passed"] != golden["total"] or not golden["total"]),
                _cell(lat.get("p50_ms", "-")), _cell(lat.get("p99_ms", "-")), _cell("; ".join(drift) or "none", bool(drift))))
            if model["config_diff"]:
                rows.append('<tr><td colspan=11><pre>%s</pre></td></tr>' % html.escape(model["config_diff"]))
    rows.append("</table>")
    return "\n".join(rows)


def render_html(report, plots):
    groups = report["rollout_groups"] + ([UNGROUPED] if any(h["group"] is None for h in report["hosts"]) else [])
    parts = ["<!DOCTYPE html>", "<html><head><meta charset=utf-8><title>Triton fleet report</title>",
             "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:1.5em}"
             "td,th{border:1px solid #bbb;padding:3px 8px;text-align:left}th{background:#eee}"
             "td.bad{background:#fdd}pre{margin:0;font-size:85%}</style></head><body>",
             "<h1>Triton fleet report</h1>",
             "<p>Generated %s: %d hosts, %d passed; drift on %s; out of traffic on the load balancer: %s.</p>" % (
                 html.escape(report["generated"]), report["summary"]["hosts"], report["summary"]["passed"],
                 html.escape(", ".join(report["summary"]["drifted"]) or "none"),
                 html.escape(", ".join(report["summary"]["out_of_traffic"]) or "none"))]
    for group in groups:
        members = [h for h in report["hosts"] if (h["group"] or UNGROUPED) == group]
        if members:
            parts.append('<h2>Rollout group %s</h2>' % html.escape(group))
            parts.append(_group_table(members))
    if plots:
        parts.append("<h2>Latency per model across hosts</h2>")
    for name, png in sorted(plots.items()):
        parts.append('<h3>%s</h3><img alt="latency of %s" src="data:image/png;base64,%s">' % (html.escape(name), html.escape(name), png))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write(raw, out_dir):
    report = build(raw)
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "fleet-report.json")
    html_path = os.path.join(out_dir, "fleet-report.html")
    with open(json_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1, sort_keys=True)
        handle.write("\n")
    with open(html_path, "w", encoding="utf-8") as handle:
        handle.write(render_html(report, latency_plots(report)))
    return report, json_path, html_path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--raw", required=True, help="what playbooks/verify.yml collected (fleet-raw.json)")
    parser.add_argument("--out", required=True, help="directory for fleet-report.json and fleet-report.html")
    args = parser.parse_args(argv)
    try:
        with open(args.raw, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError) as exc:
        parser.error("cannot read %s: %s" % (args.raw, exc))
    report, json_path, html_path = write(raw, args.out)
    summary = report["summary"]
    print("fleet report: %d hosts, %d passed, drift on: %s, failures on: %s, out of traffic: %s" % (
        summary["hosts"], summary["passed"], ", ".join(summary["drifted"]) or "none", ", ".join(summary["failed"]) or "none",
        ", ".join(summary["out_of_traffic"]) or "none"))
    print("fleet report JSON: %s" % os.path.abspath(json_path))
    print("fleet report HTML: %s" % os.path.abspath(html_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
