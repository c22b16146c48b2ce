"""The fleet report: what every Triton host serves against what its rollout group pins.

playbooks/verify.yml collects, read-only, per host: triton_verify's result (server version, each
model's versions and states in Triton's index, golden cases, a short latency burst), nvidia_gpu_info's
result, triton_model_config run in check mode (config drift), the load-balancer state, where the GPU-health
read ran the triton_gpu_health fact and, computed on the controller, the GPU memory budget (the
aiops.triton.gpu_memory_budget filter the validation play runs, with the footprints measured on canaries that the
aiops.triton.model_footprints lookup read from S3, and that lookup's warnings). This turns that raw file into

    fleet-report.json   per host: Triton version, load-balancer state, GPU health, GPU memory budget (with where each
                        model's footprint comes from: declared, measured and where, or unknown), per model pinned vs
                        READY versions, golden cases, p50/p99, GPUs, drift sentences; the exceptions (each with the
                        command that fixes it), per rollout group and model an aggregate, and the fleet's footprint
                        sources and the warnings of reading them
    fleet-report.html   one self-contained page that leads with what is wrong (fleet_report_page.py)

and prints where they are.  Usage: fleet_report.py --raw fleet-raw.json --out DIR [--inventory SRC ...]
"""

import argparse
import datetime
import difflib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the siblings, however this file is loaded

# pylint: disable=wrong-import-position
import fleet_report_checks  # noqa: E402
import fleet_report_page  # noqa: E402

UNGROUPED = fleet_report_checks.UNGROUPED
OUT_OF_TRAFFIC = fleet_report_checks.OUT_OF_TRAFFIC
TERMINAL_EXCEPTIONS = 20  # lines verify.yml prints; the page lists every one


# -- one host ---------------------------------------------------------------------------------------
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


def _gpu_health(health):
    """What the page shows of a triton_gpu_health fact; None when the host's GPU health was not read."""
    if not isinstance(health, dict) or not health.get("verdict"):
        return None
    return {"verdict": health["verdict"], "reasons": list(health.get("reasons") or []),
            "gpus": [dict((k, g.get(k)) for k in ("index", "bus_id", "name", "verdict", "reasons")) for g in health.get("gpus") or []],
            "xid_events": len(health.get("xid_events") or [])}


def _quarantine(health):
    """{reason, since} when the host is quarantined (out of traffic on purpose), else None. nvidia_gpu_health returns
    quarantined (bool) and quarantine (its record); a record in quarantined itself is read too."""
    if not isinstance(health, dict) or not health.get("quarantined"):
        return None
    mark = health.get("quarantine") or health["quarantined"]
    mark = mark if isinstance(mark, dict) else {}
    return {"reason": mark.get("reason") or "by an operator", "since": mark.get("since") or ""}


def _mib(value):
    return "?" if value is None else "{:,}".format(value)


KNOWN_SOURCES = ("declared", "measured")  # unknown ones are the row's own "unknown", with their instance counts


def _footprint_sources(row, measured):
    """Where the footprint of each model version a budget row adds up comes from: [{model, version, source, location,
    measured_on, measured_at}] from the filter's ``sources``; ``measured``: the host's measured footprints (model ->
    version -> the lookup's entry)."""
    found = []
    for counted in row.get("sources") or []:
        entry = dict(counted, location=None, measured_on=None, measured_at=None)
        if entry["source"] == "measured":
            where = ((measured or {}).get(entry["model"]) or {}).get(entry["version"]) or {}
            entry.update(location=where.get("location"), measured_on=where.get("host"), measured_at=where.get("measured"))
        if entry not in found:
            found.append(entry)
    return found


def _sources_text(sources):
    """The known footprints' sources in words: '; footprint declared: a v1; footprint measured: b v2 (s3://...)'."""
    text = ""
    for source in KNOWN_SOURCES:
        named = []
        for entry in sources:
            if entry["source"] != source:
                continue
            label = "%s %s" % (entry["model"], "v%s" % entry["version"] if str(entry["version"]).isdigit() else "(%s)" % entry["version"])
            if source == "measured":
                label += " (%s)" % (entry["location"] or "where not recorded")
            named.append(label)
        if named:
            text += "; footprint %s: %s" % (source, ", ".join(named))
    return text


def _budget_line(row, sources=None):
    """One device of the budget in words: used / capacity / over, or unknown, and where each footprint comes from."""
    where = row["device"] + (" (%s)" % row["name"] if row.get("name") else "")
    if row.get("fits") is None:
        text = "%s: peak %s MiB, capacity unknown" % (where, _mib(row["peak_mib"]))
    else:
        text = "%s: peak %s of %s MiB available (%s less %s headroom)%s" % (
            where, _mib(row["peak_mib"]), _mib(row["available_mib"]), _mib(row["capacity_mib"]), _mib(row["headroom_mib"]),
            "" if row["fits"] else ": over by %s MiB" % _mib(row["over_mib"]))
    text += _sources_text(_footprint_sources(row, None) if sources is None else sources)
    if row.get("unknown"):  # the filter's own words: each version with its instance count
        text += "; footprint unknown: %s" % ", ".join(row["unknown"])
    return text


def _gpu_budget(rows, measured=None):
    """What the report keeps of a host's budget rows; None when the raw file has no budget (not computed).
    ``measured``: the host's measured footprints as the aiops.triton.model_footprints lookup read them."""
    if rows is None:
        return None
    kept = []
    for row in rows:
        sources = _footprint_sources(row, measured)
        entry = dict((k, row.get(k)) for k in ("device", "name", "capacity_mib", "available_mib", "serving_mib", "peak_mib",
                                               "fits", "over_mib", "unknown", "terms"))
        entry.update(footprints=sources, line=_budget_line(row, sources))
        kept.append(entry)
    return kept


def host_report(raw, rollout_groups, gpu_health=None, gpu_budget=None, measured=None):
    """One host's entry; ``gpu_health``: its triton_gpu_health fact when the raw file keeps those apart; ``gpu_budget``:
    its rows of the GPU memory budget (None: not computed); ``measured``: its measured footprints (model -> version)."""
    verify = raw.get("verify") or {}
    gpu = raw.get("gpu") or {}
    server = verify.get("server") or {}
    health = raw.get("gpu_health") or gpu_health
    group = next((g for g in rollout_groups if g in raw.get("groups", [])), None)
    by_name = dict((m["name"], m) for m in verify.get("models", []))
    configs = dict(((c.get("item") or {}).get("name"), c) for c in raw.get("configs", []))
    entry = {"host": raw["host"], "group": group, "groups": raw.get("groups", []),
             "reachable": bool(server.get("live")), "ready": bool(server.get("ready")),
             "triton_version": server.get("version"),
             "gpu_status": gpu.get("status"), "gpu_message": gpu.get("message"), "gpu_host_kind": gpu.get("host_kind"),
             "gpus": [dict((k, g.get(k)) for k in ("index", "name", "uuid", "memory_total_mib", "driver_version"))
                      for g in gpu.get("gpus", [])],
             "gpu_health": _gpu_health(health), "quarantined": _quarantine(health), "gpu_budget": _gpu_budget(gpu_budget, measured),
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
    entry["states"] = fleet_report_checks.host_states(entry)
    return entry


# -- the fleet --------------------------------------------------------------------------------------
def build(raw, inventory=None):
    """The report. ``inventory``: the inventory sources, for the commands the exceptions name."""
    groups = list(raw.get("rollout_groups") or [])
    health = raw.get("gpu_health") or {}
    budget, fleet_budget = None, None
    measured = raw.get("measured_footprints") or {}  # host -> model -> version -> where it was measured (S3)
    if isinstance(raw.get("gpu_budget"), dict):  # absent from a raw file verify.yml wrote before the budget
        budget = {}
        for row in raw["gpu_budget"].get("rows") or []:
            budget.setdefault(row["host"], []).append(row)
        # the fleet's footprint sources (one line per model version: declared, measured and where, or unknown; the
        # hosts named) and why some measured footprints could not be read
        fleet_budget = {"footprints": list(raw["gpu_budget"].get("footprints") or []),
                        "warnings": list(raw.get("footprint_warnings") or []),
                        "declared": bool(raw["gpu_budget"].get("declared")), "measured": bool(raw["gpu_budget"].get("measured"))}
    hosts = [host_report(h, groups, health.get(h["host"]), None if budget is None else budget.get(h["host"], []),
                         measured.get(h["host"]))
             for h in raw.get("hosts", [])]
    seen = set(h["host"] for h in hosts)
    # hosts of the inventory verify.yml has no result for (unreachable over SSH, or their play failed)
    missing = [h for h in raw.get("inventory_hosts") or [] if h not in seen]
    read = [h for h in hosts if h["gpu_health"] is not None]
    report = {"schema": 2, "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "rollout_groups": groups, "hosts": hosts, "gpu_budget": fleet_budget,
              "summary": {"hosts": len(hosts), "passed": sum(1 for h in hosts if h["passed"]),
                          "drifted": sorted(h["host"] for h in hosts if h["drift"]),
                          "failed": sorted(h["host"] for h in hosts if h["failures"]),
                          "out_of_traffic": sorted(h["host"] for h in hosts if h["lb_state"] in OUT_OF_TRAFFIC),
                          # null: no host's GPU health was read (the page says "not read")
                          "gpu_unhealthy": sorted(h["host"] for h in read if h["gpu_health"]["verdict"] == "unhealthy") if read else None,
                          "quarantined": sorted(h["host"] for h in hosts if h["quarantined"]),
                          "not_reported": sorted(missing)}}
    report["exceptions"] = fleet_report_checks.exceptions(report, inventory)
    report["aggregates"] = fleet_report_checks.aggregates(report)
    return report


def render_html(report):
    return fleet_report_page.render(report)


def write(raw, out_dir, inventory=None):
    report = build(raw, inventory)
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "fleet-report.json")
    html_path = os.path.join(out_dir, "fleet-report.html")
    with open(json_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1, sort_keys=True)
        handle.write("\n")
    with open(html_path, "w", encoding="utf-8") as handle:
        handle.write(render_html(report))
    return report, json_path, html_path


# A reason longer than this (every failed golden case of a host, over HTTP and gRPC) is cut in the terminal;
# the report holds it whole.
TERMINAL_REASON = 240


def _terminal_reason(reason):
    if len(reason) <= TERMINAL_REASON:
        return reason
    return reason[:TERMINAL_REASON].rsplit(" ", 1)[0] + " ... (whole in the report)"


def summary_lines(report):
    """The counts, then one line per exception: a 1,000-host fleet prints what needs a person, not every host."""
    summary = report["summary"]
    lines = ["fleet report: %s" % fleet_report_checks.counts_text(summary)]
    shown = report["exceptions"][:TERMINAL_EXCEPTIONS]
    lines.extend("needs a person: %s: %s (%s) -> %s"
                 % (e["what"], _terminal_reason(e["reason"]), fleet_report_checks.hosts_text(e["hosts"]), e["command"])
                 for e in shown)
    if len(report["exceptions"]) > len(shown):
        lines.append("needs a person: %d more in the report" % (len(report["exceptions"]) - len(shown)))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--raw", required=True, help="what playbooks/verify.yml collected (fleet-raw.json)")
    parser.add_argument("--out", required=True, help="directory for fleet-report.json and fleet-report.html")
    parser.add_argument("--inventory", action="append", default=[], help="an inventory source, for the commands the report names")
    args = parser.parse_args(argv)
    try:
        with open(args.raw, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError) as exc:
        parser.error("cannot read %s: %s" % (args.raw, exc))
    report, json_path, html_path = write(raw, args.out, args.inventory)
    for line in summary_lines(report):
        print(line)
    print("fleet report JSON: %s" % os.path.abspath(json_path))
    print("fleet report HTML: %s" % os.path.abspath(html_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
