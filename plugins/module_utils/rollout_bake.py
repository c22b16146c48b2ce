# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary bake: judge a rollout batch on the live traffic it served, against limits and the hosts not yet changed.

Pure functions on plain data (the aiops.triton.triton_rollout_bake module does the waiting and the HTTP):

- Triton's Prometheus text (``/metrics``) is parsed into counter samples per (metric, model, version,
  reason); two scrapes of one host give per-model deltas, a counter that went down (Triton restarted in
  the window) counting from 0 again, a series new at the end (a version loaded in the window) from 0.
- A Prometheus server gives the same per-host per-model numbers from ``increase()`` (it handles resets
  itself); the queries are built here.
- Per-host numbers sum into a group's (the changed batch, the baseline); ``judge`` returns the breaches,
  each with a one-sentence message naming the model, metric, value, limit and hosts.

Triton 2.51 counts a request in ``nv_inference_request_success`` or ``nv_inference_request_failure``
(labelled ``reason``: BACKEND, REJECTED, CANCELED, OTHER) only once it reached the model's scheduler: a
request Triton refuses up front (wrong shape or data type, a missing input) is counted by no metric, and
an error response a python model returns counts as a success (only an exception raised from ``execute``
is a BACKEND failure; measured by tests/integration/test_rollout_bake_live.py). The request and queue
durations are summed over successful requests only, so a mean divides by successes.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import math
import re

from ansible_collections.aiops.triton.plugins.module_utils import endpoint

# Triton's counters the bake reads; the keys name them in the numbers this module returns.
COUNTERS = {
    "nv_inference_request_success": "successes",
    "nv_inference_request_failure": "failures",
    "nv_inference_count": "inferences",
    "nv_inference_request_duration_us": "duration_us",
    "nv_inference_queue_duration_us": "queue_us",
}
FIELDS = ("successes", "failures", "inferences", "duration_us", "queue_us")
DEFAULT_LIMITS = {"max_failure_ratio": 0.0, "max_latency_ms": None, "max_latency_ratio": 1.5, "min_requests": 0}

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
# RE2 (Prometheus) metacharacters, escaped so a label value matches literally in =~.
_RE2_SPECIAL = set("\\.+*?()|[]{}^$")


class BakeError(Exception):
    """The bake could not be judged (metrics unreadable, bad input); not a verdict on the batch."""


# -- Triton's /metrics ---------------------------------------------------------------------------------------
def parse_labels(text):
    labels, pos = {}, 0
    text = text or ""
    while pos < len(text.rstrip()):
        match = _LABEL.match(text, pos)
        if not match:
            raise BakeError("unreadable labels in metrics line: {%s}" % text)
        labels[match.group(1)] = re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], match.group(2))
        pos = match.end()
    return labels


def parse_metrics(text):
    """Triton's counters in Prometheus text format -> {(metric, model, version, reason): value}.

    Only the metrics in COUNTERS are kept; ``reason`` is "" on every counter but the failures.
    """
    samples = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            raise BakeError("unreadable metrics line: %r" % line[:200])
        name = match.group(1)
        if name not in COUNTERS:
            continue
        labels = parse_labels(match.group(2))
        try:
            value = float(match.group(3))
        except ValueError:
            raise BakeError("unreadable value in metrics line: %r" % line[:200])
        key = (name, labels.get("model", ""), labels.get("version", ""), labels.get("reason", ""))
        samples[key] = samples.get(key, 0.0) + value
    return samples


def counter_delta(start, end):
    """What a counter counted between two reads; a drop means it restarted from 0 in between."""
    return end - start if end >= start else end


def empty_numbers():
    numbers = dict((field, 0.0) for field in FIELDS)
    numbers["failures_by_reason"] = {}
    return numbers


def restarted_versions(start, end):
    """The (model, version) pairs any of whose counters went down: Triton restarted, or reloaded that version.

    Triton keeps one set of counters per model version; they all start from 0 again together, so one
    that went down says all did (a failure counter back at 3 from 2 still counted only since the restart).
    """
    return set((key[1], key[2]) for key, value in end.items() if key in start and value < start[key])


def scrape_deltas(start, end, models):
    """Two parsed scrapes of one host -> {model: numbers} for ``models``.

    A series new at the end (a version loaded in the window) counts from 0; a model version any of whose
    counters went down counts all of them from 0 (``restarted_versions``); one gone at the end (a version
    unloaded) adds nothing.
    """
    result = dict((model, empty_numbers()) for model in models)
    restarted = restarted_versions(start, end)
    for key, end_value in end.items():
        name, model, version, reason = key
        if model not in result:
            continue
        delta = end_value if (model, version) in restarted else counter_delta(start.get(key, 0.0), end_value)
        field = COUNTERS[name]
        result[model][field] += delta
        if field == "failures" and delta:
            by_reason = result[model]["failures_by_reason"]
            by_reason[reason or "OTHER"] = by_reason.get(reason or "OTHER", 0.0) + delta
    return result


def has_models(samples):
    """The model names a parsed scrape holds counters for."""
    return set(key[1] for key in samples)


# -- Prometheus ----------------------------------------------------------------------------------------------
def re2_literal(value):
    """``value`` as an RE2 pattern that matches only itself."""
    return "".join("\\" + char if char in _RE2_SPECIAL else char for char in value)


def promql_string(value):
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def promql_queries(host_label, label_values, models, window_seconds, job=None):
    """One PromQL query per counter: its increase over the window, per model and host (and reason)."""
    if not _LABEL_NAME.match(host_label or ""):
        raise BakeError("prometheus_host_label must be a Prometheus label name, got %r" % (host_label,))
    matchers = ["%s=~%s" % (host_label, promql_string("|".join(re2_literal(v) for v in sorted(label_values)))),
                "model=~%s" % promql_string("|".join(re2_literal(m) for m in sorted(models)))]
    if job:
        matchers.insert(0, "job=%s" % promql_string(job))
    window = "%ds" % max(1, int(round(window_seconds)))
    queries = {}
    for name in sorted(COUNTERS):
        by = "model, %s" % host_label + (", reason" if COUNTERS[name] == "failures" else "")
        queries[name] = "sum by (%s) (increase(%s{%s}[%s]))" % (by, name, ", ".join(matchers), window)
    return queries


def prometheus_numbers(results, host_label, hosts_by_value, models):
    """Prometheus answers to ``promql_queries`` -> ({host: {model: numbers}}, {(host, model) with a series}).

    ``results``: counter name -> the ``data.result`` list of an instant query; ``hosts_by_value``: the
    value of ``host_label`` -> host name.
    """
    per_host = dict((host, dict((m, empty_numbers()) for m in models)) for host in hosts_by_value.values())
    seen = set()
    for name, series_list in results.items():
        field = COUNTERS[name]
        for series in series_list or []:
            labels = series.get("metric", {})
            host = hosts_by_value.get(labels.get(host_label))
            model = labels.get("model")
            if host is None or model not in models:
                continue
            seen.add((host, model))
            try:
                value = float(series["value"][1])
            except (KeyError, IndexError, TypeError, ValueError):
                raise BakeError("unreadable Prometheus sample for %s: %r" % (name, series))
            if math.isnan(value):  # no samples in the window for this series
                continue
            value = max(0.0, value)
            per_host[host][model][field] += value
            if field == "failures" and value:
                reason = labels.get("reason") or "OTHER"
                by_reason = per_host[host][model]["failures_by_reason"]
                by_reason[reason] = by_reason.get(reason, 0.0) + value
    return per_host, seen


# -- groups and verdicts ---------------------------------------------------------------------------------
def _rounded(value, digits=3):
    return None if value is None else round(value, digits)


def summarize(numbers):
    """Raw counter sums -> the figures a person reads (requests = successes + failures)."""
    successes = int(round(numbers["successes"]))
    failures = int(round(numbers["failures"]))
    requests = successes + failures
    return {
        "requests": requests,
        "successes": successes,
        "failures": failures,
        "inferences": int(round(numbers["inferences"])),
        "failures_by_reason": dict((k, int(round(v))) for k, v in sorted(numbers["failures_by_reason"].items()) if round(v)),
        "failure_ratio": _rounded(failures / float(requests), 4) if requests else None,
        "mean_latency_ms": _rounded(numbers["duration_us"] / 1000.0 / successes) if successes else None,
        "mean_queue_ms": _rounded(numbers["queue_us"] / 1000.0 / successes) if successes else None,
    }


def group_numbers(per_host, hosts, models):
    """{model: summary of the group over ``hosts``, plus ``hosts``: each host's own summary}."""
    result = {}
    for model in models:
        total = empty_numbers()
        own = {}
        for host in hosts:
            numbers = per_host.get(host, {}).get(model) or empty_numbers()
            for field in FIELDS:
                total[field] += numbers[field]
            for reason, value in numbers["failures_by_reason"].items():
                total["failures_by_reason"][reason] = total["failures_by_reason"].get(reason, 0.0) + value
            own[host] = summarize(numbers)
        result[model] = summarize(total)
        result[model]["hosts"] = own
    return result


def _format(value):
    if isinstance(value, float):
        return ("%.4f" % value).rstrip("0").rstrip(".") if value != int(value) else "%.1f" % value
    return str(value)


def breach_message(breach, group):
    """One sentence: model, metric, value, where, limit."""
    hosts = ", ".join(breach["hosts"])
    where = "%s (%s)" % (group, hosts) if hosts else group
    relation = "<" if breach["metric"] == "requests" else ">"
    word = "minimum" if breach["metric"] == "requests" else "limit"
    text = "bake: %s %s %s on %s %s %s %s" % (breach["model"], breach["metric"], _format(breach["value"]), where,
                                              relation, word, _format(breach["limit"]))
    if breach.get("baseline") is not None:
        text += " (baseline mean_latency_ms %s)" % _format(breach["baseline"])
    return text


def _hosts_over(numbers, key, limit):
    return sorted(h for h, own in numbers["hosts"].items() if own[key] is not None and own[key] > limit)


def check_limits(limits):
    """Refuse limits that cannot be met or make no sense, before any waiting."""
    problems = []
    ratio = limits.get("max_failure_ratio")
    if ratio is None or not 0.0 <= ratio <= 1.0:
        problems.append("max_failure_ratio must be between 0 and 1, got %r" % (ratio,))
    if limits.get("max_latency_ms") is not None and limits["max_latency_ms"] <= 0:
        problems.append("max_latency_ms must be positive, got %r" % (limits["max_latency_ms"],))
    if limits.get("max_latency_ratio") is not None and limits["max_latency_ratio"] <= 0:
        problems.append("max_latency_ratio must be positive, got %r" % (limits["max_latency_ratio"],))
    if limits.get("min_requests") is None or limits["min_requests"] < 0:
        problems.append("min_requests must be 0 or more, got %r" % (limits.get("min_requests"),))
    return problems


def judge(changed, baseline, models, limits, group):
    """Breaches of ``limits`` by the changed group, and notes on what could not be judged.

    ``changed`` / ``baseline``: ``group_numbers`` results.  Returns (breaches, notes); each breach is
    {model, metric, value, limit, hosts, msg} (latency ratio breaches also carry ``baseline``).
    """
    breaches, notes = [], []
    for model in models:
        mine = changed[model]
        if mine["requests"] < limits["min_requests"]:
            breaches.append({"model": model, "metric": "requests", "value": mine["requests"],
                             "limit": limits["min_requests"],
                             "hosts": sorted(h for h, own in mine["hosts"].items() if own["requests"] < limits["min_requests"])})
        if not mine["requests"]:
            notes.append("%s: no requests on %s in the window, nothing to judge" % (model, group))
            continue
        if mine["failure_ratio"] > limits["max_failure_ratio"]:
            breaches.append({"model": model, "metric": "failure_ratio", "value": mine["failure_ratio"],
                             "limit": limits["max_failure_ratio"], "hosts": _hosts_over(mine, "failure_ratio", limits["max_failure_ratio"])})
        latency = mine["mean_latency_ms"]
        if latency is None:
            notes.append("%s: no successful request on %s in the window, latency not judged" % (model, group))
            continue
        if limits.get("max_latency_ms") is not None and latency > limits["max_latency_ms"]:
            breaches.append({"model": model, "metric": "mean_latency_ms", "value": latency,
                             "limit": limits["max_latency_ms"], "hosts": _hosts_over(mine, "mean_latency_ms", limits["max_latency_ms"])})
        if limits.get("max_latency_ratio") is None:
            continue
        base = (baseline or {}).get(model)
        needed = max(1, limits["min_requests"])
        if not base or base["successes"] < needed or not base["mean_latency_ms"]:
            notes.append("%s: the baseline served %d successful request(s) in the window (needs %d), latency ratio "
                         "not judged" % (model, base["successes"] if base else 0, needed))
            continue
        ratio = round(latency / base["mean_latency_ms"], 3)
        if ratio > limits["max_latency_ratio"]:
            threshold = base["mean_latency_ms"] * limits["max_latency_ratio"]
            breaches.append({"model": model, "metric": "mean_latency_ratio", "value": ratio,
                             "limit": limits["max_latency_ratio"], "baseline": base["mean_latency_ms"],
                             "hosts": _hosts_over(mine, "mean_latency_ms", threshold)})
    for breach in breaches:
        if not breach["hosts"]:
            # the group as a whole breached, no host on its own: name them all
            breach["hosts"] = sorted(h for h, own in changed[breach["model"]]["hosts"].items() if own["requests"]) \
                or sorted(changed[breach["model"]]["hosts"])
        breach["msg"] = breach_message(breach, group)
    return breaches, notes


def latency_ratios(changed, baseline, models):
    """Per model: the changed group's mean latency over the baseline's (None when either has none)."""
    ratios = {}
    for model in models:
        mine, base = changed[model]["mean_latency_ms"], (baseline.get(model) or {}).get("mean_latency_ms")
        ratios[model] = round(mine / base, 3) if mine is not None and base else None
    return ratios


# -- one bake, end to end (the module passes in how to fetch a URL and how to wait) ------------------------
def _host_entries(hosts, what):
    entries = []
    for index, host in enumerate(hosts or []):
        if not isinstance(host, dict) or not isinstance(host.get("name"), str) or not host["name"]:
            raise BakeError("%s[%d] needs a name (a string), got %r" % (what, index, host))
        entries.append(dict(host))
    names = [h["name"] for h in entries]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise BakeError("%s names host(s) twice: %s" % (what, ", ".join(twice)))
    return entries


def prometheus_label_value(host, host_label):
    """The value of ``host_label`` Prometheus gives this host's Triton series.

    The entry's own ``prometheus_label_value``; else, for ``instance``, the host:port of its metrics_url
    (what Prometheus puts there for a target it scrapes); else the host's name.
    """
    if host.get("prometheus_label_value"):
        return str(host["prometheus_label_value"])
    if host_label == "instance":
        url = host.get("metrics_url") or ""
        match = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#@]+@)?([^/?#]+)", url)
        if not match:
            raise BakeError("host %s: no prometheus_label_value and no metrics_url to take its instance "
                            "(host:port) from" % host["name"])
        return match.group(2)
    return host["name"]


def _scrape(hosts, fetch):
    """{name: parsed samples} and {name: error text} for one round of scrapes."""
    samples, errors = {}, {}
    for host, outcome in fetch([h["metrics_url"] for h in hosts], hosts):
        if isinstance(outcome, Exception):
            errors[host["name"]] = "cannot read %s: %s" % (host["metrics_url"], outcome)
            continue
        try:
            samples[host["name"]] = parse_metrics(outcome)
        except BakeError as exc:
            errors[host["name"]] = "%s: %s" % (host["metrics_url"], exc)
    return samples, errors


def run_bake(params, fetch_many, fetch_json, sleep, clock):
    """Wait ``bake_seconds``, read the window's traffic and judge it.

    ``fetch_many(urls, hosts)`` yields (host, text or Exception) for each URL; ``fetch_json(url, query)``
    returns Prometheus's decoded answer; ``sleep`` / ``clock`` are time.sleep / time.time.  Returns the
    module's result (``passed``, ``models``, ``breaches``, ``notes``, ``warnings``); raises BakeError
    when the bake cannot be judged.
    """
    limits = dict((k, params.get(k, v)) for k, v in DEFAULT_LIMITS.items())
    problems = check_limits(limits)
    if params.get("bake_seconds") is None or params["bake_seconds"] < 0:
        problems.append("bake_seconds must be 0 or more, got %r" % (params.get("bake_seconds"),))
    if params.get("prometheus_url") and not _LABEL_NAME.match(params.get("prometheus_host_label") or ""):
        problems.append("prometheus_host_label must be a Prometheus label name, got %r" % (params.get("prometheus_host_label"),))
    if problems:
        raise BakeError("; ".join(problems))
    changed_hosts = _host_entries(params.get("changed_hosts"), "changed_hosts")
    baseline_hosts = _host_entries(params.get("baseline_hosts"), "baseline_hosts")
    both = sorted(set(h["name"] for h in changed_hosts) & set(h["name"] for h in baseline_hosts))
    if both:
        raise BakeError("host(s) %s are in both changed_hosts and baseline_hosts" % ", ".join(both))
    models = sorted(set(params.get("models") or []))
    group = params.get("group") or "the changed hosts"
    prometheus = params.get("prometheus_url")
    result = {"passed": True, "group": group, "source": "prometheus" if prometheus else "metrics",
              "limits": limits, "models": {}, "breaches": [], "notes": [], "warnings": [],
              "hosts": {"changed": [h["name"] for h in changed_hosts], "baseline": []}}
    if not models or not changed_hosts:
        result["notes"].append("nothing to bake: no %s" % ("models" if not models else "changed hosts"))
        result["window"] = {"seconds": 0}
        return result

    if prometheus:
        per_host, baseline_names, start, end = _bake_prometheus(params, changed_hosts, baseline_hosts, models,
                                                                fetch_json, sleep, clock, result["warnings"])
    else:
        for host in changed_hosts + baseline_hosts:
            if not host.get("metrics_url"):
                raise BakeError("host %s has no metrics_url (needed when no prometheus_url is given)" % host["name"])
        per_host, baseline_names, start, end = _bake_scrape(params, changed_hosts, baseline_hosts, models,
                                                            fetch_many, sleep, clock, result["warnings"])

    result["window"] = {"start": start, "end": end, "seconds": round(end - start, 3)}
    result["hosts"]["baseline"] = baseline_names
    changed = group_numbers(per_host, [h["name"] for h in changed_hosts], models)
    baseline = group_numbers(per_host, baseline_names, models) if baseline_names else {}
    ratios = latency_ratios(changed, baseline, models)
    for model in models:
        result["models"][model] = {"changed": changed[model], "baseline": baseline.get(model), "latency_ratio": ratios[model]}
    breaches, notes = judge(changed, baseline, models, limits, group)
    result["breaches"], result["notes"] = breaches, notes
    result["passed"] = not breaches
    return result


def _bake_scrape(params, changed_hosts, baseline_hosts, models, fetch_many, sleep, clock, warnings):
    hosts = changed_hosts + baseline_hosts
    start = clock()
    first, errors = _scrape(hosts, fetch_many)
    _refuse_changed(errors, changed_hosts, "before the bake")
    for host in changed_hosts:
        absent = sorted(set(models) - has_models(first[host["name"]]))
        if absent:
            raise BakeError("host %s reports no counters for %s in %s: Triton does not serve %s there"
                            % (host["name"], ", ".join(absent), host["metrics_url"], "it" if len(absent) == 1 else "them"))
    baseline = [h for h in baseline_hosts if h["name"] in first]
    warnings.extend("baseline host %s left out: %s" % (n, e) for n, e in sorted(errors.items()))
    sleep(params["bake_seconds"])
    second, errors = _scrape(changed_hosts + baseline, fetch_many)
    end = clock()
    _refuse_changed(errors, changed_hosts, "at the end of the bake")
    warnings.extend("baseline host %s left out: %s" % (n, e) for n, e in sorted(errors.items()))
    per_host = {}
    for host in changed_hosts + baseline:
        if host["name"] in second:
            per_host[host["name"]] = scrape_deltas(first[host["name"]], second[host["name"]], models)
    # a baseline host counts only for the models it serves
    baseline_names = [h["name"] for h in baseline if h["name"] in second and has_models(second[h["name"]]) & set(models)]
    return per_host, baseline_names, start, end


def _refuse_changed(errors, changed_hosts, when):
    failed = [h["name"] for h in changed_hosts if h["name"] in errors]
    if failed:
        raise BakeError("metrics of changed host(s) unreadable %s: %s" % (when, "; ".join(
            "%s: %s" % (n, errors[n]) for n in failed)))


def _bake_prometheus(params, changed_hosts, baseline_hosts, models, fetch_json, sleep, clock, warnings):
    label = params.get("prometheus_host_label") or "instance"
    by_value = {}
    for host in changed_hosts + baseline_hosts:
        value = prometheus_label_value(host, label)
        if value in by_value:
            raise BakeError("hosts %s and %s have the same %s %r in Prometheus" % (by_value[value], host["name"], label, value))
        by_value[value] = host["name"]
    start = clock()
    sleep(params["bake_seconds"])
    end = clock()
    queries = promql_queries(label, list(by_value), models, end - start, params.get("prometheus_job"))
    answers = {}
    url = params["prometheus_url"].rstrip("/") + "/api/v1/query"
    for name, query in sorted(queries.items()):
        answer = fetch_json(url, {"query": query, "time": "%.3f" % end})
        if not isinstance(answer, dict) or answer.get("status") != "success":
            raise BakeError("Prometheus at %s refused %s: %s" % (params["prometheus_url"], query,
                                                                 (answer or {}).get("error", answer) if isinstance(answer, dict) else answer))
        answers[name] = (answer.get("data") or {}).get("result") or []
    per_host, seen = prometheus_numbers(answers, label, by_value, models)
    lost = ["%s (%s)" % (h["name"], ", ".join(m for m in models if (h["name"], m) not in seen))
            for h in changed_hosts if any((h["name"], m) not in seen for m in models)]
    if lost:
        raise BakeError("Prometheus at %s has no Triton series in the last %ds for changed host(s) %s: is it scraping "
                        "them, do their series carry %s=%s, and do they serve those models?" % (
                            params["prometheus_url"], int(round(end - start)), "; ".join(lost), label,
                            ", ".join(repr(prometheus_label_value(h, label)) for h in changed_hosts)))
    served = set(host for host, _model in seen)
    warnings.extend("baseline host %s left out: Prometheus has no Triton series of these models for it (%s=%r)"
                    % (h["name"], label, prometheus_label_value(h, label)) for h in baseline_hosts if h["name"] not in served)
    baseline_names = [h["name"] for h in baseline_hosts if h["name"] in served]
    return per_host, baseline_names, start, end


# -- the rollout's side: which hosts to bake and compare, and where their metrics are --------------------------
def metrics_url(name, host_vars):
    """Triton's /metrics URL of one host as the controller reaches it.

    ``triton_rollout_bake_metrics_url`` when the host sets it; else the address and port of the host's
    ``triton_server_endpoint`` fact by the one rule every reader on another host uses (module_utils/endpoint.py:
    the bound metrics address unless a wildcard, then ``ansible_host``, then the inventory name).
    """
    own = host_vars.get("triton_rollout_bake_metrics_url")
    if own:
        return str(own)
    where = endpoint.target(name, host_vars, "metrics")
    return "http://%s:%s/metrics" % (where["address"], where["port"])


def bake_hosts(hostvars, names):
    """[{name, metrics_url}] for ``names``, in order, for the module's changed_hosts / baseline_hosts."""
    return [{"name": name, "metrics_url": metrics_url(name, hostvars[name])} for name in names]


def baseline_names(plan, batch):
    """The hosts the rollout has not reached yet: those after the current batch in the plan's order."""
    order = list(plan.get("order") or [])
    positions = [order.index(h) for h in batch if h in order]
    if not positions:
        return []
    return order[max(positions) + 1:]


# The rollout's variables for the bake (fleet-wide, like triton_rollout_groups) -> this module's options.
SETTINGS = {
    "triton_rollout_bake_seconds": "bake_seconds",
    "triton_rollout_bake_max_failure_ratio": "max_failure_ratio",
    "triton_rollout_bake_max_latency_ms": "max_latency_ms",
    "triton_rollout_bake_max_latency_ratio": "max_latency_ratio",
    "triton_rollout_bake_min_requests": "min_requests",
    "triton_rollout_bake_prometheus_url": "prometheus_url",
    "triton_rollout_bake_prometheus_host_label": "prometheus_host_label",
    "triton_rollout_bake_prometheus_job": "prometheus_job",
}


def _as_number(value, kind=float):
    """``value`` as the module would take it (a number, or a string of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and (kind is float or isinstance(value, int)):
        return value
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            return None
    return None


def settings_problems(settings):
    """Problems with the rollout's bake variables (name -> value; unset ones absent or None), for the
    validation play: found before any host changes, not when the first batch is baked."""
    problems = []
    for name, value in sorted((settings or {}).items()):
        if name not in SETTINGS:
            problems.append("%s is not a bake setting (known: %s)" % (name, ", ".join(sorted(SETTINGS))))
            continue
        if value is None or value == "":
            continue
        option = SETTINGS[name]
        if option in ("prometheus_url", "prometheus_host_label", "prometheus_job"):
            if not isinstance(value, str):
                problems.append("%s must be a string, got %r" % (name, value))
            elif option == "prometheus_url" and not re.match(r"^https?://[^/\s]+", value):
                problems.append("%s must be an http(s) URL, got %r" % (name, value))
            elif option == "prometheus_host_label" and not _LABEL_NAME.match(value):
                problems.append("%s must be a Prometheus label name, got %r" % (name, value))
            continue
        if option == "min_requests":
            count = _as_number(value, int)
            if count is None or count < 0:
                problems.append("%s must be an integer of 0 or more, got %r" % (name, value))
            continue
        number = _as_number(value)
        if number is None or math.isnan(number):
            problems.append("%s must be a number, got %r" % (name, value))
        elif option == "bake_seconds" and number < 0:
            problems.append("%s must be 0 or more (0: no bake), got %r" % (name, value))
        elif option == "max_failure_ratio" and not 0.0 <= number <= 1.0:
            problems.append("%s must be between 0 and 1, got %r" % (name, value))
        elif option in ("max_latency_ms", "max_latency_ratio") and number <= 0:
            problems.append("%s must be positive, got %r" % (name, value))
    return problems
