"""The fleet report's judgement (fleet_report.py): each host's states, the exceptions with the command that
fixes each, and per rollout group and model an aggregate across hosts. Plain data in, plain data out."""

import shlex

UNGROUPED = "(no rollout group)"
# Load-balancer states in which a host gets no requests.
OUT_OF_TRAFFIC = ("drained", "maint", "down")

# The state filter's values (the page's select), in the order a person reads them.
STATES = (("attention", "needs a person"), ("failed", "failed"), ("drifted", "drifted"), ("out-of-traffic", "out of traffic"),
          ("quarantined", "quarantined"), ("gpu-unhealthy", "GPU unhealthy"), ("gpu-degraded", "GPU degraded"), ("passed", "passed"))

# kind -> (what the page calls it, the playbook that fixes it, whether the command takes --limit <hosts>);
# in the order of severity: a host Triton does not answer on comes first.
KINDS = {
    "unreachable": ("Triton does not answer", "triton_server", True),
    "not-reported": ("No result from verify", "verify", True),
    "failed": ("Checks failed", "models", True),
    "gpu-unhealthy": ("GPU unhealthy", "quarantine", True),
    "quarantined": ("Quarantined (out of traffic on purpose)", "quarantine", True),
    "gpu-driver": ("GPU driver not answering", "gpu_stack", True),
    "gpu-budget": ("GPU memory over budget", "validate", False),
    "drifted": ("Drift", "models", True),
    "out-of-traffic": ("Out of traffic", "undrain", True),
    "lb-down": ("Down on the load balancer", "load_balancer", False),
    "lb-unread": ("Load balancer not read", "load_balancer", False),
}
PLAYBOOK_SAYS = {"triton_server": "sets up and restarts Triton", "verify": "shows why the host was not checked",
                 "models": "converges the model set, verifies it, rolls back what fails",
                 "quarantine": "keeps the host drained and repairs its GPUs (reset, reboot), back only when healthy",
                 "gpu_stack": "installs and pins the NVIDIA driver", "undrain": "verifies the host, then puts it back into traffic",
                 "load_balancer": "renders and reloads HAProxy",
                 "validate": "prints every host's GPU memory budget and refuses a rollout that does not fit, changing nothing"}


def host_states(host):
    """The host's state tags (the page's state filter); several can hold at once."""
    health = host["gpu_health"] or {}
    tags = []
    if host["failures"] or not host["reachable"]:
        tags.append("failed")
    if host["drift"]:
        tags.append("drifted")
    if host["lb_state"] in OUT_OF_TRAFFIC:
        tags.append("out-of-traffic")
    if host["quarantined"]:
        tags.append("quarantined")
    if health.get("verdict") in ("unhealthy", "degraded"):
        tags.append("gpu-" + health["verdict"])
    if host["passed"]:
        tags.append("passed")
    if _problems(host):
        tags.append("attention")
    return tags


def _problems(host):
    """[(kind, reason)] of one host, the reason without the host's name (hosts with the same one are listed together)."""
    problems = []
    health = host["gpu_health"] or {}
    if not host["reachable"] or not host["ready"]:
        problems.extend(("unreachable", f) for f in host["failures"] or ["Triton is live but not ready"])
    else:
        problems.extend(("failed", f) for f in host["failures"])
    problems.extend(("drifted", d) for d in host["drift"])
    if host["quarantined"]:
        problems.append(("quarantined", host["quarantined"]["reason"]))
    elif health.get("verdict") == "unhealthy":
        problems.append(("gpu-unhealthy", "; ".join(health["reasons"]) or "unhealthy"))
    if host.get("gpu_host_kind") == "broken" or (not host.get("gpu_host_kind") and host["gpu_status"] == "no_driver"):
        problems.append(("gpu-driver", host["gpu_message"] or "the PCI bus shows NVIDIA GPUs, nvidia-smi lists none"))
    # a rollout to this host would be refused by the validation play (its model set plus a rollout's peak does not fit)
    problems.extend(("gpu-budget", row["line"]) for row in host.get("gpu_budget") or [] if row["fits"] is False)
    if host["lb_error"]:
        problems.append(("lb-unread", host["lb_error"]))
    elif host["lb_state"] in ("drained", "maint") and not host["quarantined"]:
        problems.append(("out-of-traffic", "%s on the load balancer" % host["lb_state"]))
    elif host["lb_state"] == "down" and host["reachable"] and host["ready"]:
        problems.append(("lb-down", "Triton is ready, but the load balancer's health check fails"))
    return problems


def _limit(hosts, members):
    """--limit for ``hosts``: a rollout group's name where every host of it is named, host names for the rest."""
    left, parts = set(hosts), []
    for group, names in members.items():
        if group != UNGROUPED and len(names) > 1 and set(names) <= left:
            parts.append(group)
            left -= set(names)
    return ",".join(parts + sorted(left))


def command(kind, hosts, members, inventory):
    playbook, limited = KINDS[kind][1], KINDS[kind][2]
    sources = " ".join("-i %s" % shlex.quote(s) for s in inventory) if inventory else "-i <inventory>"
    text = "ansible-playbook %s aiops.triton.%s" % (sources, playbook)
    return text + (" --limit %s" % _limit(hosts, members) if limited else "")


def exceptions(report, inventory=None):
    """Every problem once, with the hosts that have it and what to run next, most severe first."""
    members = {}
    for host in report["hosts"]:
        members.setdefault(host["group"] or UNGROUPED, []).append(host["host"])
    found = {}
    for host in report["hosts"]:
        for kind, reason in _problems(host):
            found.setdefault((kind, reason), []).append(host["host"])
    for host in report["summary"]["not_reported"]:
        found.setdefault(("not-reported", "in the inventory, but verify.yml has no result for it (unreachable over SSH, or its play failed)"),
                         []).append(host)
    # one entry per kind and set of hosts: a host's two drift sentences are one thing to fix
    merged = {}
    for (kind, reason), hosts in found.items():
        merged.setdefault((kind, tuple(sorted(hosts))), []).append(reason)
    order = list(KINDS)
    entries = []
    for (kind, hosts), reasons in sorted(merged.items(), key=lambda item: (order.index(item[0][0]), -len(item[0][1]), item[1])):
        entries.append({"kind": kind, "what": KINDS[kind][0], "reason": "; ".join(reasons), "hosts": list(hosts),
                        "command": command(kind, hosts, members, inventory), "why": PLAYBOOK_SAYS[KINDS[kind][1]]})
    return entries


# -- aggregates -------------------------------------------------------------------------------------
def quantile(values, q):
    """Linear-interpolated quantile of sorted ``values`` (q in 0..1)."""
    if not values:
        return None
    pos = (len(values) - 1) * q
    low = int(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


def distribution(pairs):
    """{hosts, min, median, p90, max, worst} over [(host, ms)]; None without any."""
    if not pairs:
        return None
    values = sorted(v for _h, v in pairs)
    worst = max(pairs, key=lambda p: (p[1], p[0]))
    return {"hosts": len(values), "min": values[0], "median": quantile(values, 0.5), "p90": quantile(values, 0.9),
            "max": values[-1], "worst": worst[0]}


def aggregates(report):
    """Per rollout group and model: hosts serving each READY version set, golden cases, p50/p99 across hosts."""
    rows = {}
    order = report["rollout_groups"] + [UNGROUPED]
    hosts = sorted(report["hosts"], key=lambda h: order.index(h["group"] or UNGROUPED))
    for host in hosts:
        for model in host["models"]:
            key = (host["group"] or UNGROUPED, model["name"])
            row = rows.setdefault(key, {"group": key[0], "model": key[1], "pinned": [], "hosts": 0, "unreachable": 0, "serving": {},
                                        "at_pin": 0, "golden": {"passed": 0, "total": 0, "hosts_passed": 0}, "p50": [], "p99": []})
            row["hosts"] += 1
            if model["pinned"] not in row["pinned"]:
                row["pinned"].append(model["pinned"])
            if not host["reachable"]:
                row["unreachable"] += 1
                continue
            served = ",".join(str(v) for v in model["ready"]) or "none"
            row["serving"][served] = row["serving"].get(served, 0) + 1
            row["at_pin"] += model["ready"] == model["pinned"]
            golden = model["golden"]
            row["golden"]["passed"] += golden["passed"]
            row["golden"]["total"] += golden["total"]
            row["golden"]["hosts_passed"] += bool(golden["total"]) and golden["passed"] == golden["total"]
            if model["latency"]:
                row["p50"].append((host["host"], model["latency"]["p50_ms"]))
                row["p99"].append((host["host"], model["latency"]["p99_ms"]))
    for row in rows.values():
        row["p50"], row["p99"] = distribution(row["p50"]), distribution(row["p99"])
        row["serving"] = dict(sorted(row["serving"].items(), key=lambda item: -item[1]))
    return list(rows.values())


# -- text -------------------------------------------------------------------------------------------
def hosts_text(hosts, shown=5):
    names = ", ".join(hosts[:shown])
    return names + (" and %d more" % (len(hosts) - shown) if len(hosts) > shown else "")


def counts_text(summary):
    gpu = summary["gpu_unhealthy"]
    parts = ["%d hosts" % summary["hosts"], "%d passed" % summary["passed"], "%d failed" % len(summary["failed"]),
             "%d drifted" % len(summary["drifted"]),
             "%d out of traffic (%d quarantined)" % (len(summary["out_of_traffic"]), len(summary["quarantined"])),
             "GPU unhealthy: not read" if gpu is None else "%d GPU unhealthy" % len(gpu)]
    if summary["not_reported"]:
        parts.append("%d not reported" % len(summary["not_reported"]))
    return ", ".join(parts)
