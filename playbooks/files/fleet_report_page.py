"""The fleet report's page (fleet_report.py): one self-contained HTML file that leads with what is wrong.

The counts, then the exceptions (each with the command that fixes it), then per rollout group and model an
aggregate across hosts, the latency plots (fleet_report_plot.py), and last every host, collapsed, filterable
and sortable (fleet_report.js, inlined). Host-level facts (GPUs, Triton, load balancer) are a host's row, once;
the models table repeats only the host's name and group."""

import collections
import html
import os

import fleet_report_checks as checks
import fleet_report_plot

HERE = os.path.dirname(os.path.abspath(__file__))
STATE_NAMES = dict(checks.STATES)
SHOWN_HOSTS = 8  # hosts named in an exception's row before the rest fold away
# Host-level facts once per host; the models table repeats only the host's name and group.
HOST_COLUMNS = ("Host", "Rollout group", "State", "Load balancer", "GPU health", "Triton", "GPUs", "GPU memory budget", "Models at pin",
                "Golden cases", "Slowest p99 ms", "Problems")
MODEL_COLUMNS = ("Host", "Rollout group", "Model", "Pinned", "READY", "Golden cases", "p50 ms", "p99 ms", "Drift")


def _asset(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as handle:
        return handle.read()


def _e(text):
    return html.escape(str(text))


def _cell(text, bad=False, sort=None):
    return "<td%s%s>%s</td>" % (' class="bad"' if bad else "", "" if sort is None else ' data-v="%s"' % sort, _e(text))


def _versions(values):
    return ", ".join(str(v) for v in values) or "-"


def _ms(value):
    return "-" if value is None else "%.3g" % value


# -- the header and what is wrong -------------------------------------------------------------------
def _counts(summary):
    gpu = summary["gpu_unhealthy"]
    items = [("hosts", summary["hosts"], False), ("passed", summary["passed"], False),
             ("failed", len(summary["failed"]), bool(summary["failed"])),
             ("drifted", len(summary["drifted"]), bool(summary["drifted"])),
             ("out of traffic", "%d (%d quarantined)" % (len(summary["out_of_traffic"]), len(summary["quarantined"])),
              bool(summary["out_of_traffic"] or summary["quarantined"])),
             ("GPU unhealthy", "not read" if gpu is None else len(gpu), bool(gpu))]
    if summary["not_reported"]:
        items.append(("not reported", len(summary["not_reported"]), True))
    return '<ul class="counts" id="counts">%s</ul>' % "".join(
        '<li class="count%s" data-count="%s"><b>%s</b> %s</li>' % (" bad" if bad else "", _e(name), _e(value), _e(name)) for name, value, bad in items)


def _hosts_cell(hosts):
    head = ", ".join(hosts[:SHOWN_HOSTS])
    rest = hosts[SHOWN_HOSTS:]
    more = "<details><summary>and %d more</summary>%s</details>" % (len(rest), _e(", ".join(rest))) if rest else ""
    return "<td><b>%d</b>: %s%s</td>" % (len(hosts), _e(head), more)


# A reason longer than this (every failed golden case of a host) shows its start; the rest folds out.
SHOWN_REASON = 300


def _reason_cell(reason):
    if len(reason) <= SHOWN_REASON:
        return "<td>%s</td>" % _e(reason)
    head = reason[:SHOWN_REASON].rsplit(" ", 1)[0]
    return "<td>%s <details><summary>the whole reason</summary>%s</details></td>" % (_e(head + " ..."), _e(reason))


def _exceptions(report):
    entries = report["exceptions"]
    parts = ['<section id="exceptions"><h2>Needs a person (%d)</h2>' % len(entries)]
    if not entries:
        parts.append('<p class="ok">Nothing: every host passed its checks, serves what its rollout group pins and takes traffic.</p></section>')
        return "".join(parts)
    parts.append('<div class="scroll"><table class="exceptions"><thead><tr><th>What</th><th>Why</th><th>Hosts</th><th>Run next</th></tr></thead><tbody>')
    for entry in entries:
        parts.append('<tr data-kind="%s"><td class="bad">%s</td>%s%s<td><code>%s</code><br><small>%s</small></td></tr>'
                     % (_e(entry["kind"]), _e(entry["what"]), _reason_cell(entry["reason"]), _hosts_cell(entry["hosts"]),
                        _e(entry["command"]), _e(entry["why"])))
    parts.append("</tbody></table></div></section>")
    return "".join(parts)


def _spread(dist):
    if not dist:
        return _cell("-")
    text = "%s / %s / %s / %s (%s)" % (_ms(dist["min"]), _ms(dist["median"]), _ms(dist["p90"]), _ms(dist["max"]), dist["worst"])
    return _cell(text, sort=dist["median"])


def _aggregates(report):
    parts = ['<section id="groups"><h2>Rollout groups and models</h2><div class="scroll"><table class="aggregate"><thead><tr>'
             "<th>Rollout group</th><th>Model</th><th>Pinned</th><th>Hosts serving the pin</th><th>Golden cases</th>"
             "<th>p50 across hosts, ms<br><small>min / median / p90 / max (slowest)</small></th>"
             "<th>p99 across hosts, ms<br><small>min / median / p90 / max (slowest)</small></th></tr></thead><tbody>"]
    for row in report["aggregates"]:
        serving = ["%s on %d" % (v, n) for v, n in row["serving"].items()] + (["%d unreachable" % row["unreachable"]] if row["unreachable"] else [])
        golden = row["golden"]
        reached = row["hosts"] - row["unreachable"]
        parts.append("<tr>%s%s%s%s%s%s%s</tr>" % (
            _cell(row["group"]), _cell(row["model"]), _cell(" | ".join(_versions(p) for p in row["pinned"])),
            _cell("%d of %d at the pin; READY %s" % (row["at_pin"], row["hosts"], ", ".join(serving)), row["at_pin"] != row["hosts"]),
            _cell("%d of %d hosts passed all (%d/%d cases)" % (golden["hosts_passed"], row["hosts"], golden["passed"], golden["total"]),
                  golden["hosts_passed"] != row["hosts"] or not reached),
            _spread(row["p50"]), _spread(row["p99"])))
    parts.append("</tbody></table></div></section>")
    return "".join(parts)


def _plots(report):
    figures = fleet_report_plot.figures(report)
    body = "".join(f for _n, f in figures) or "<p>No latency was measured (no host answered).</p>"
    return '<section id="latency"><h2>Latency across hosts</h2><div class="plots">%s</div></section>' % body


# -- every host -------------------------------------------------------------------------------------
def _gpus(host):
    # "8 × H100 80GB HBM3": the column says GPUs, the vendor every name starts with is noise (fleet-report.json keeps it)
    names = collections.Counter(str(g["name"]).replace("NVIDIA ", "", 1) for g in host["gpus"])
    return ", ".join("%d \u00d7 %s" % (n, name) for name, n in names.items()) or host["gpu_message"] or "none"


def _health(host):
    health, mark = host["gpu_health"], host["quarantined"]
    text = "not read" if health is None else health["verdict"] + (": " + "; ".join(health["reasons"]) if health["reasons"] else "")
    if mark:
        text = "quarantined%s (%s); %s" % (" since " + mark["since"] if mark["since"] else "", mark["reason"], text)
    return _cell(text, bool(mark) or (health or {}).get("verdict") == "unhealthy")


def _budget(host):
    rows = host.get("gpu_budget")
    if rows is None:
        return _cell("not computed")
    # no row: nothing this host serves has a footprint declared or measured, nor a device whose memory is known
    return _cell("; ".join(r["line"] for r in rows) or "no footprint known", any(r["fits"] is False for r in rows))


def _footprints(report):
    """Where the GPU memory budget's footprints come from (declared, measured and where, unknown; the hosts named), and
    why some measured footprints could not be read; folded, after the hosts. Nothing when the budget was not computed."""
    budget = report.get("gpu_budget")
    if not budget or not (budget["footprints"] or budget["warnings"]):
        return ""
    warnings = "".join('<li class="bad">%s</li>' % _e(w) for w in budget["warnings"])
    sources = "".join("<li>%s</li>" % _e(line) for line in budget["footprints"])
    return ('<details id="footprints"><summary>GPU memory budget: where each footprint comes from (%d model version%s%s)</summary>'
            "%s%s</details>" % (len(budget["footprints"]), "" if len(budget["footprints"]) == 1 else "s",
                                ", %d warning%s" % (len(budget["warnings"]), "" if len(budget["warnings"]) == 1 else "s") if warnings else "",
                                '<ul class="warnings">%s</ul>' % warnings if warnings else "",
                                "<ul>%s</ul>" % sources if sources else ""))


def _row_open(host, models, states):
    return '<tr data-h="%s" data-g="%s" data-m="%s" data-s="%s">' % (
        _e(host["host"]), _e(host["group"] or checks.UNGROUPED), _e(" ".join(models)), " ".join(states))


def _host_row(host):
    models = host["models"]
    at_pin = sum(1 for m in models if m["ready"] == m["pinned"]) if host["reachable"] else 0
    passed, total = sum(m["golden"]["passed"] for m in models), sum(m["golden"]["total"] for m in models)
    slowest = max((m for m in models if m["latency"]), key=lambda m: m["latency"]["p99_ms"], default=None)
    shown = [STATE_NAMES[s] for s in host["states"] if s != "attention"]
    lb = host["lb_state"] + (" (%s)" % host["lb_error"] if host["lb_error"] else "")
    return "%s%s%s%s%s%s%s%s%s%s%s%s%s</tr>" % (
        _row_open(host, [m["name"] for m in models], host["states"]), _cell(host["host"]), _cell(host["group"] or checks.UNGROUPED),
        _cell(", ".join(shown) or "-", "attention" in host["states"]), _cell(lb, host["lb_state"] in checks.OUT_OF_TRAFFIC or bool(host["lb_error"])),
        _health(host), _cell(host["triton_version"] or "unreachable", not host["reachable"]), _cell(_gpus(host)), _budget(host),
        _cell("%d/%d" % (at_pin, len(models)) if models else "none pinned", at_pin != len(models), at_pin - len(models)),
        _cell("%d/%d" % (passed, total), passed != total or not total, passed - total),
        _cell("%s %s" % (_ms(slowest["latency"]["p99_ms"]), slowest["name"]) if slowest else "-", False,
              slowest["latency"]["p99_ms"] if slowest else -1),
        _cell("; ".join(host["failures"] + host["drift"]) or "none", bool(host["failures"] or host["drift"])))


def _model_rows(host):
    rows = []
    others = [s for s in host["states"] if s not in ("failed", "drifted")]
    for model in host["models"]:
        golden, lat = model["golden"], model["latency"] or {}
        drift = [d.split(": ", 1)[1] for d in host["drift"] if d.startswith(model["name"] + ": ")]
        failed = not host["reachable"] or golden["passed"] != golden["total"] or not golden["total"]
        states = others + (["failed"] if failed else []) + (["drifted"] if drift else [])
        diff = "<details><summary>config.pbtxt diff</summary><pre>%s</pre></details>" % _e(model["config_diff"]) if model["config_diff"] else ""
        ready = _versions(model["ready"]) if host["reachable"] else "unknown (Triton does not answer)"
        rows.append("%s%s%s%s%s%s%s%s%s<td%s>%s%s</td></tr>" % (
            _row_open(host, [model["name"]], states), _cell(host["host"]), _cell(host["group"] or checks.UNGROUPED), _cell(model["name"]),
            _cell(_versions(model["pinned"])), _cell(ready, model["ready"] != model["pinned"] or not host["reachable"]),
            _cell("%d/%d" % (golden["passed"], golden["total"]), failed, golden["passed"] - golden["total"]),
            _cell(_ms(lat.get("p50_ms")), sort=lat.get("p50_ms", -1)), _cell(_ms(lat.get("p99_ms")), sort=lat.get("p99_ms", -1)),
            ' class="bad"' if drift else "", _e("; ".join(drift) or "none"), diff))
    return rows


def _options(name, label, values):
    return '<label>%s <select name="%s"><option value="">all</option>%s</select></label>' % (
        label, name, "".join('<option value="%s">%s</option>' % (_e(v), _e(text)) for v, text in values))


def _every_host(report):
    hosts = report["hosts"]
    groups = [g for g in report["rollout_groups"] + [checks.UNGROUPED] if any((h["group"] or checks.UNGROUPED) == g for h in hosts)]
    models = sorted(set(m["name"] for h in hosts for m in h["models"]))
    model_rows = [row for h in hosts for row in _model_rows(h)]
    form = ('<form id="filter" autocomplete="off"><label>Host <input name="host" type="search" placeholder="name contains"></label>%s%s%s'
            '<output id="shown"></output></form>' % (
                _options("group", "Rollout group", [(g, g) for g in groups]), _options("model", "Model", [(m, m) for m in models]),
                _options("state", "State", checks.STATES)))
    host_head = "".join("<th>%s</th>" % h for h in HOST_COLUMNS)
    model_head = "".join("<th>%s</th>" % h for h in MODEL_COLUMNS)
    return ('<section id="hosts"><h2>Every host</h2><p>Filter by host name, rollout group, model or state; click a column to sort.</p>%s'
            '<details id="detail"><summary>%d hosts, %d model rows</summary>'
            '<h3>Hosts</h3><div class="scroll"><table class="detail" id="host-table"><thead><tr>%s</tr></thead><tbody>%s</tbody></table></div>'
            '<h3>Models on each host</h3><div class="scroll"><table class="detail" id="model-table"><thead><tr>%s</tr></thead><tbody>%s</tbody></table></div>'
            "</details>%s</section>" % (form, len(hosts), len(model_rows), host_head, "\n".join(_host_row(h) for h in hosts),
                                        model_head, "\n".join(model_rows), _footprints(report)))


def render(report):
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Triton fleet report</title><style>%s</style></head><body>" % _asset("fleet_report.css"),
        '<header><h1>Triton fleet report</h1><p class="generated">Generated %s.</p>%s</header>' % (_e(report["generated"]), _counts(report["summary"])),
        _exceptions(report), _aggregates(report), _plots(report), _every_host(report),
        "<script>%s</script></body></html>" % _asset("fleet_report.js"), ""])
