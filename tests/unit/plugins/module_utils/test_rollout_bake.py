"""rollout_bake: Triton's counters parsed, deltas across resets, group numbers, limits, breaches and messages."""

import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import rollout_bake as rb

# The nv_inference_* lines of a real Triton 2.51 /metrics (nvidia-pytriton 0.7.0) after 3 requests to add_sub.
REAL_SCRAPE = os.path.join(os.path.dirname(__file__), "fixtures", "triton_2_51_metrics_add_sub.txt")
LIMITS = dict(rb.DEFAULT_LIMITS)


def metrics(model="m", version="1", success=0, failure=None, count=None, duration_us=0, queue_us=0):
    """Triton's /metrics text for one model version; ``failure``: {reason: n}."""
    lines = ['nv_inference_request_success{model="%s",version="%s"} %s' % (model, version, success),
             'nv_inference_count{model="%s",version="%s"} %s' % (model, version, success if count is None else count),
             'nv_inference_request_duration_us{model="%s",version="%s"} %s' % (model, version, duration_us),
             'nv_inference_queue_duration_us{model="%s",version="%s"} %s' % (model, version, queue_us)]
    for reason in ("OTHER", "BACKEND", "CANCELED", "REJECTED"):
        lines.append('nv_inference_request_failure{model="%s",reason="%s",version="%s"} %s'
                     % (model, reason, version, (failure or {}).get(reason, 0)))
    return "\n".join(lines) + "\n"


# -- parsing ----------------------------------------------------------------------------------------------
def test_parse_real_triton_scrape():
    with open(REAL_SCRAPE) as handle:
        samples = rb.parse_metrics(handle.read())
    assert samples[("nv_inference_request_success", "add_sub", "1", "")] == 3
    assert samples[("nv_inference_request_duration_us", "add_sub", "1", "")] == 100966
    assert samples[("nv_inference_request_failure", "add_sub", "1", "BACKEND")] == 0
    # exec count, compute durations and the pending gauge are not read
    assert sorted(set(k[0] for k in samples)) == sorted(rb.COUNTERS)
    assert len([k for k in samples if k[0] == "nv_inference_request_failure"]) == 4


def test_parse_other_metrics_timestamps_and_escaped_labels():
    text = ('# HELP nv_gpu_utilization GPU utilization\nnv_gpu_utilization{gpu_uuid="GPU-1"} 0.5\n'
            'nv_inference_request_success{model="we\\"ird,name",version="2"} 7 1700000000000\n'
            'nv_inference_request_success { model = "spaced" , version="1" } 1e3\n')
    samples = rb.parse_metrics(text)
    assert samples == {("nv_inference_request_success", 'we"ird,name', "2", ""): 7.0,
                       ("nv_inference_request_success", "spaced", "1", ""): 1000.0}


@pytest.mark.parametrize("line", ["nv_inference_count{model=\"m\"", "nv_inference_count{model=m} 3",
                                  "nv_inference_count{model=\"m\"} three"])
def test_parse_refuses_garbage(line):
    with pytest.raises(rb.BakeError, match="unreadable"):
        rb.parse_metrics(line + "\n")


# -- deltas -------------------------------------------------------------------------------------------------
def test_counter_delta_counts_a_drop_from_zero():
    assert rb.counter_delta(10, 25) == 15
    assert rb.counter_delta(10, 10) == 0
    assert rb.counter_delta(500, 7) == 7  # restarted: 7 since the restart, never -493


def deltas(start, end, models=("m",)):
    return rb.scrape_deltas(rb.parse_metrics(start), rb.parse_metrics(end), list(models))


def test_scrape_deltas_plain_window():
    got = deltas(metrics(success=100, failure={"BACKEND": 1}, duration_us=50000, queue_us=1000),
                 metrics(success=160, failure={"BACKEND": 4, "CANCELED": 1}, duration_us=80000, queue_us=1600))["m"]
    assert (got["successes"], got["failures"], got["duration_us"], got["queue_us"]) == (60, 4, 30000, 600)
    assert got["failures_by_reason"] == {"BACKEND": 3, "CANCELED": 1}


def test_scrape_deltas_triton_restarted_in_the_window():
    # every counter of the version starts from 0 again, even the failures that are already past their old value
    got = deltas(metrics(success=1000, failure={"BACKEND": 2}, duration_us=900000),
                 metrics(success=40, failure={"BACKEND": 3}, duration_us=36000))["m"]
    assert (got["successes"], got["failures"], got["duration_us"]) == (40, 3, 36000)
    assert all(got[f] >= 0 for f in rb.FIELDS)


def test_scrape_deltas_one_version_reloaded_others_count_on():
    start = metrics("m", version="1", success=500) + metrics("n", success=70, failure={"BACKEND": 1})
    end = metrics("m", version="1", success=20) + metrics("n", success=90, failure={"BACKEND": 1})
    got = deltas(start, end, ["m", "n"])
    assert (got["m"]["successes"], got["n"]["successes"], got["n"]["failures"]) == (20, 20, 0)


def test_scrape_deltas_version_swapped_in_the_window():
    # v1 served 500 before, was unloaded; v2 loaded in the window and served 30 (its series new at the end)
    got = deltas(metrics(version="1", success=500, duration_us=5e5),
                 metrics(version="2", success=30, failure={"BACKEND": 2}, duration_us=3e4))["m"]
    assert (got["successes"], got["failures"], got["duration_us"]) == (30, 2, 3e4)


def test_scrape_deltas_only_the_models_asked_for():
    start = metrics("m", success=1) + metrics("other", success=1)
    end = metrics("m", success=3) + metrics("other", success=90)
    assert list(deltas(start, end)) == ["m"]
    assert deltas(start, end, ["m", "absent"])["absent"]["successes"] == 0


# -- numbers and verdicts ---------------------------------------------------------------------------------
def numbers(successes=0, failures=0, duration_ms=0.0, reason="BACKEND"):
    result = rb.empty_numbers()
    result.update(successes=successes, failures=failures, inferences=successes, duration_us=duration_ms * 1000.0,
                  queue_us=0.0)
    if failures:
        result["failures_by_reason"] = {reason: failures}
    return result


def test_summarize_and_no_traffic():
    got = rb.summarize(numbers(successes=88, failures=12, duration_ms=88 * 2.5))
    assert got == {"requests": 100, "successes": 88, "failures": 12, "inferences": 88, "failures_by_reason": {"BACKEND": 12},
                   "failure_ratio": 0.12, "mean_latency_ms": 2.5, "mean_queue_ms": 0.0}
    empty = rb.summarize(rb.empty_numbers())
    assert (empty["requests"], empty["failure_ratio"], empty["mean_latency_ms"]) == (0, None, None)
    # only failures: a ratio, no latency (Triton adds no duration for a failed request)
    assert rb.summarize(numbers(failures=3))["failure_ratio"] == 1.0
    assert rb.summarize(numbers(failures=3))["mean_latency_ms"] is None


def test_group_numbers_sum_hosts_and_keep_each():
    per_host = {"a": {"m": numbers(50, 0, 100.0)}, "b": {"m": numbers(50, 10, 300.0)}}
    got = rb.group_numbers(per_host, ["a", "b", "c"], ["m"])["m"]
    assert (got["requests"], got["failures"], got["mean_latency_ms"]) == (110, 10, 4.0)
    assert got["hosts"]["b"]["failure_ratio"] == round(10 / 60.0, 4)
    assert got["hosts"]["c"]["requests"] == 0  # a changed host without its numbers shows as 0, not missing


def verdict(changed, baseline=None, limits=None, group="triton_canary"):
    models = sorted(changed)
    hosts = sorted(set(h for per in changed.values() for h in per))
    per_host = {}
    for model, per in list(changed.items()) + list((baseline or {}).items()):
        for host, nums in per.items():
            per_host.setdefault(host, {})[model] = nums
    base_hosts = sorted(set(h for per in (baseline or {}).values() for h in per))
    changed_numbers = rb.group_numbers(per_host, hosts, models)
    baseline_numbers = rb.group_numbers(per_host, base_hosts, models) if base_hosts else {}
    merged = dict(LIMITS)
    merged.update(limits or {})
    return rb.judge(changed_numbers, baseline_numbers, models, merged, group)


def test_failure_ratio_breach_message_names_metric_value_hosts_limit():
    breaches, notes = verdict({"anomaly_detector": {"lab-1": numbers(88, 12, 88.0)}})
    assert [b["metric"] for b in breaches] == ["failure_ratio"]
    assert breaches[0]["msg"] == "bake: anomaly_detector failure_ratio 0.12 on triton_canary (lab-1) > limit 0.0"
    assert (breaches[0]["value"], breaches[0]["limit"], breaches[0]["hosts"]) == (0.12, 0.0, ["lab-1"])
    assert notes == ["anomaly_detector: the baseline served 0 successful request(s) in the window (needs 1), "
                     "latency ratio not judged"]


def test_failure_ratio_at_the_limit_passes_and_only_failing_hosts_are_named():
    changed = {"m": {"a": numbers(99, 1, 99.0), "b": numbers(100, 0, 100.0)}}
    assert verdict(changed, limits={"max_failure_ratio": 0.01})[0] == []  # 1/100 on a, 1/200 overall
    breaches = verdict(changed)[0]
    assert breaches[0]["hosts"] == ["a"] and breaches[0]["value"] == 0.005


def test_clean_traffic_passes():
    breaches, notes = verdict({"m": {"a": numbers(500, 0, 500.0)}}, {"m": {"z": numbers(400, 0, 400.0)}},
                              limits={"max_latency_ms": 5.0, "min_requests": 100})
    assert breaches == [] and notes == []


def test_absolute_latency_breach():
    breaches = verdict({"m": {"a": numbers(10, 0, 10 * 80.0), "b": numbers(10, 0, 10 * 20.0)}},
                       limits={"max_latency_ms": 40.0})[0]
    assert [(b["metric"], b["value"], b["hosts"]) for b in breaches] == [("mean_latency_ms", 50.0, ["a"])]
    assert breaches[0]["msg"] == "bake: m mean_latency_ms 50.0 on triton_canary (a) > limit 40.0"


def test_latency_ratio_breach_against_the_baseline():
    breaches = verdict({"m": {"a": numbers(100, 0, 100 * 9.0)}}, {"m": {"z": numbers(100, 0, 100 * 3.0)}})[0]
    assert [(b["metric"], b["value"], b["limit"], b["baseline"]) for b in breaches] == [("mean_latency_ratio", 3.0, 1.5, 3.0)]
    assert breaches[0]["msg"] == ("bake: m mean_latency_ratio 3.0 on triton_canary (a) > limit 1.5 "
                                  "(baseline mean_latency_ms 3.0)")
    # at most 1.5 times slower passes; the comparison switched off passes anything
    assert verdict({"m": {"a": numbers(100, 0, 450.0)}}, {"m": {"z": numbers(100, 0, 300.0)}})[0] == []
    assert verdict({"m": {"a": numbers(100, 0, 900.0)}}, {"m": {"z": numbers(100, 0, 300.0)}},
                   limits={"max_latency_ratio": None})[0] == []


def test_latency_ratio_needs_enough_baseline_traffic():
    changed = {"m": {"a": numbers(100, 0, 100 * 9.0)}}
    breaches, notes = verdict(changed, {"m": {"z": numbers(5, 0, 5 * 3.0)}}, limits={"min_requests": 10})
    assert breaches == []
    assert notes == ["m: the baseline served 5 successful request(s) in the window (needs 10), latency ratio not judged"]
    breaches, notes = verdict(changed)  # no baseline at all (the last group, or a new model)
    assert breaches == [] and "latency ratio not judged" in notes[0]


def test_no_traffic_passes_with_a_note_unless_min_requests():
    breaches, notes = verdict({"m": {"a": rb.empty_numbers()}})
    assert breaches == [] and notes == ["m: no requests on triton_canary in the window, nothing to judge"]
    breaches, _notes = verdict({"m": {"a": numbers(3, 0, 3.0), "b": rb.empty_numbers()}}, limits={"min_requests": 10})
    assert [(b["metric"], b["value"], b["limit"], b["hosts"]) for b in breaches] == [("requests", 3, 10, ["a", "b"])]
    assert breaches[0]["msg"] == "bake: m requests 3 on triton_canary (a, b) < minimum 10"


def test_several_breaches_each_with_its_sentence():
    breaches = verdict({"m": {"a": numbers(90, 10, 90 * 100.0)}, "n": {"a": numbers(10, 0, 10.0)}},
                       {"m": {"z": numbers(100, 0, 100.0)}}, limits={"max_latency_ms": 50})[0]
    assert [(b["model"], b["metric"]) for b in breaches] == [("m", "failure_ratio"), ("m", "mean_latency_ms"),
                                                             ("m", "mean_latency_ratio")]


@pytest.mark.parametrize("limits, problem", [
    ({"max_failure_ratio": -0.1}, "max_failure_ratio must be between 0 and 1"),
    ({"max_failure_ratio": 2}, "max_failure_ratio must be between 0 and 1"),
    ({"max_latency_ms": 0}, "max_latency_ms must be positive"),
    ({"max_latency_ratio": 0}, "max_latency_ratio must be positive"),
    ({"min_requests": -1}, "min_requests must be 0 or more"),
])
def test_check_limits(limits, problem):
    merged = dict(LIMITS)
    merged.update(limits)
    assert [p for p in rb.check_limits(merged) if p.startswith(problem)]
    assert rb.check_limits(LIMITS) == []


# -- Prometheus ---------------------------------------------------------------------------------------------
def test_promql_queries_escape_values_and_group_by_host_label():
    queries = rb.promql_queries("instance", ["10.0.0.2:8002", "lab-1:8002"], ["anomaly_detector", "ops_pipeline"], 59.6,
                                job="aiops-triton")
    assert queries["nv_inference_request_success"] == (
        'sum by (model, instance) (increase(nv_inference_request_success{job="aiops-triton", '
        'instance=~"10\\\\.0\\\\.0\\\\.2:8002|lab-1:8002", model=~"anomaly_detector|ops_pipeline"}[60s]))')
    assert queries["nv_inference_request_failure"].startswith("sum by (model, instance, reason) (increase(")
    assert sorted(queries) == sorted(rb.COUNTERS)
    with pytest.raises(rb.BakeError, match="label name"):
        rb.promql_queries("not a label", ["x"], ["m"], 10)


def test_re2_literal():
    assert rb.re2_literal("a.b+c|d") == "a\\.b\\+c\\|d"
    assert rb.promql_string('x"y\\z') == '"x\\"y\\\\z"'


def series(metric_name, host, model, value, reason=None):
    labels = {"instance": host, "model": model}
    if reason:
        labels["reason"] = reason
    return {"metric": labels, "value": [1700000000.0, str(value)]}


def test_prometheus_numbers_per_host():
    results = {
        "nv_inference_request_success": [series("s", "h1:8002", "m", 99.6), series("s", "h2:8002", "m", 10),
                                         series("s", "other:8002", "m", 5000)],
        "nv_inference_request_failure": [series("f", "h1:8002", "m", 2.2, "BACKEND"), series("f", "h1:8002", "m", "NaN", "OTHER")],
        "nv_inference_request_duration_us": [series("d", "h1:8002", "m", 199200.0)],
    }
    per_host, seen = rb.prometheus_numbers(results, "instance", {"h1:8002": "h1", "h2:8002": "h2", "h3:8002": "h3"}, ["m"])
    assert seen == {("h1", "m"), ("h2", "m")}
    got = rb.summarize(per_host["h1"]["m"])
    assert (got["successes"], got["failures"], got["failures_by_reason"], got["mean_latency_ms"]) == (100, 2, {"BACKEND": 2}, 1.992)
    assert per_host["h3"]["m"]["successes"] == 0


def test_prometheus_label_value():
    assert rb.prometheus_label_value({"name": "h", "metrics_url": "http://10.0.0.2:8002/metrics"}, "instance") == "10.0.0.2:8002"
    assert rb.prometheus_label_value({"name": "h", "metrics_url": "https://u@h.example:9/m"}, "instance") == "h.example:9"
    assert rb.prometheus_label_value({"name": "h"}, "host") == "h"
    assert rb.prometheus_label_value({"name": "h", "prometheus_label_value": "x:1"}, "instance") == "x:1"
    with pytest.raises(rb.BakeError, match="host h: no prometheus_label_value and no metrics_url"):
        rb.prometheus_label_value({"name": "h"}, "instance")


# -- run_bake with the fetching and the clock handed in -------------------------------------------------------
class Clock(object):
    """time.time / time.sleep for run_bake: sleeping moves the clock; what was slept is kept."""

    def __init__(self):
        self.now, self.slept = 1000.0, []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def scraper(rounds):
    """fetch_many over ``rounds``: a list (one per scrape round) of {url: text or Exception}."""
    calls = []

    def fetch_many(urls, hosts):
        answers = rounds[len(calls)]
        calls.append(list(urls))
        return [(host, answers[url]) for host, url in zip(hosts, urls)]
    fetch_many.calls = calls
    return fetch_many


def no_prometheus(url, query):
    raise AssertionError("Prometheus asked without a prometheus_url")


def params(**kwargs):
    base = {"changed_hosts": [{"name": "lab-1", "metrics_url": "http://c/metrics"}],
            "baseline_hosts": [{"name": "lab-2", "metrics_url": "http://b/metrics"}],
            "models": ["m"], "group": "triton_canary", "bake_seconds": 30, "prometheus_url": None,
            "prometheus_host_label": "instance", "prometheus_job": None}
    base.update(LIMITS)
    base.update(kwargs)
    return base


def test_run_bake_scrapes_start_and_end_and_judges():
    clock = Clock()
    fetch = scraper([{"http://c/metrics": metrics(success=1000, duration_us=1e6), "http://b/metrics": metrics(success=5, duration_us=5e3)},
                     # lab-1 restarted in the window and served 40 requests, 8 failed; lab-2 served 50 at 1 ms
                     {"http://c/metrics": metrics(success=32, failure={"BACKEND": 8}, duration_us=32e3),
                      "http://b/metrics": metrics(success=55, duration_us=55e3)}])
    result = rb.run_bake(params(), fetch, no_prometheus, clock.sleep, clock.time)
    assert clock.slept == [30]
    assert result["passed"] is False
    assert result["window"] == {"start": 1000.0, "end": 1030.0, "seconds": 30.0}
    changed = result["models"]["m"]["changed"]
    assert (changed["requests"], changed["failures"], changed["failure_ratio"], changed["mean_latency_ms"]) == (40, 8, 0.2, 1.0)
    assert result["models"]["m"]["baseline"]["requests"] == 50
    assert result["models"]["m"]["latency_ratio"] == 1.0
    assert [b["msg"] for b in result["breaches"]] == ["bake: m failure_ratio 0.2 on triton_canary (lab-1) > limit 0.0"]


def test_run_bake_changed_host_unreadable_is_no_verdict():
    clock = Clock()
    fetch = scraper([{"http://c/metrics": metrics(), "http://b/metrics": metrics()},
                     {"http://c/metrics": IOError("Connection refused"), "http://b/metrics": metrics()}])
    with pytest.raises(rb.BakeError, match=r"changed host\(s\) unreadable at the end of the bake: lab-1: cannot read "
                                           r"http://c/metrics: Connection refused"):
        rb.run_bake(params(), fetch, no_prometheus, clock.sleep, clock.time)


def test_run_bake_baseline_host_unreadable_is_left_out():
    clock = Clock()
    fetch = scraper([{"http://c/metrics": metrics(success=1, duration_us=1e3), "http://b/metrics": IOError("timed out")},
                     {"http://c/metrics": metrics(success=11, duration_us=11e3)}])
    result = rb.run_bake(params(), fetch, no_prometheus, clock.sleep, clock.time)
    assert fetch.calls[1] == ["http://c/metrics"]
    assert result["passed"] and result["hosts"]["baseline"] == []
    assert result["warnings"] == ["baseline host lab-2 left out: cannot read http://b/metrics: timed out"]
    assert result["models"]["m"]["baseline"] is None and result["models"]["m"]["latency_ratio"] is None


def test_run_bake_refuses_a_model_the_changed_host_does_not_serve_before_waiting():
    clock = Clock()
    fetch = scraper([{"http://c/metrics": metrics("other"), "http://b/metrics": metrics()}])
    with pytest.raises(rb.BakeError, match="host lab-1 reports no counters for m in http://c/metrics"):
        rb.run_bake(params(), fetch, no_prometheus, clock.sleep, clock.time)
    assert clock.slept == []


@pytest.mark.parametrize("bad, problem", [
    ({"max_failure_ratio": 1.5}, "max_failure_ratio must be between 0 and 1"),
    ({"bake_seconds": -1}, "bake_seconds must be 0 or more"),
    ({"baseline_hosts": [{"name": "lab-1", "metrics_url": "http://c/metrics"}]}, "lab-1 are in both"),
    ({"changed_hosts": [{"metrics_url": "http://c/metrics"}]}, r"changed_hosts\[0\] needs a name"),
    ({"changed_hosts": [{"name": "lab-1"}]}, "host lab-1 has no metrics_url"),
])
def test_run_bake_refuses_bad_input_before_waiting(bad, problem):
    clock = Clock()
    with pytest.raises(rb.BakeError, match=problem):
        rb.run_bake(params(**bad), scraper([]), no_prometheus, clock.sleep, clock.time)
    assert clock.slept == []


def test_run_bake_nothing_to_judge_passes_at_once():
    clock = Clock()
    result = rb.run_bake(params(models=[]), scraper([]), no_prometheus, clock.sleep, clock.time)
    assert result["passed"] and result["notes"] == ["nothing to bake: no models"] and clock.slept == []


def test_run_bake_prometheus_queries_the_window_at_its_end():
    clock = Clock()
    asked = []

    def fetch_json(url, query):
        asked.append((url, query))
        metric = query["query"].split("increase(")[1].split("{")[0]
        if metric == "nv_inference_request_success":
            return {"status": "success", "data": {"result": [series("s", "10.0.0.1:8002", "m", 30),
                                                             series("s", "10.0.0.2:8002", "m", 30)]}}
        if metric == "nv_inference_request_duration_us":
            return {"status": "success", "data": {"result": [series("d", "10.0.0.1:8002", "m", 30 * 9000),
                                                             series("d", "10.0.0.2:8002", "m", 30 * 3000)]}}
        return {"status": "success", "data": {"result": []}}
    result = rb.run_bake(params(prometheus_url="http://prom:9090/", changed_hosts=[{"name": "lab-1", "metrics_url": "http://10.0.0.1:8002/metrics"}],
                                baseline_hosts=[{"name": "lab-2", "metrics_url": "http://10.0.0.2:8002/metrics"}]),
                         scraper([]), fetch_json, clock.sleep, clock.time)
    assert clock.slept == [30] and len(asked) == len(rb.COUNTERS)
    assert all(url == "http://prom:9090/api/v1/query" and query["time"] == "1030.000" and "[30s]" in query["query"]
               for url, query in asked)
    assert result["source"] == "prometheus" and result["hosts"]["baseline"] == ["lab-2"]
    assert [b["msg"] for b in result["breaches"]] == [
        "bake: m mean_latency_ratio 3.0 on triton_canary (lab-1) > limit 1.5 (baseline mean_latency_ms 3.0)"]


def test_run_bake_prometheus_without_the_changed_hosts_series_is_no_verdict():
    clock = Clock()

    def fetch_json(url, query):
        return {"status": "success", "data": {"result": [series("s", "lab-2", "m", 3)]}}
    with pytest.raises(rb.BakeError, match=r"no Triton series in the last 30s for changed host\(s\) lab-1 \(m\).*host='lab-1'"):
        rb.run_bake(params(prometheus_url="http://prom:9090", prometheus_host_label="host"), scraper([]), fetch_json,
                    clock.sleep, clock.time)


def test_run_bake_prometheus_error_is_reported():
    clock = Clock()

    def fetch_json(url, query):
        return {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    with pytest.raises(rb.BakeError, match="Prometheus at http://prom:9090 refused .*: parse error at char 3"):
        rb.run_bake(params(prometheus_url="http://prom:9090", prometheus_host_label="host"), scraper([]), fetch_json,
                    clock.sleep, clock.time)


# -- the rollout's side -------------------------------------------------------------------------------------
def ep(address="0.0.0.0", port=8002):
    """host vars with triton_server's endpoint fact (its metrics bind and port)."""
    return {"triton_server_endpoint": {"metrics_address": address, "metrics_port": port}}


def test_metrics_url_from_host_vars():
    assert rb.metrics_url("h", ep()) == "http://h:8002/metrics"
    assert rb.metrics_url("h", dict(ep("0.0.0.0"), ansible_host="10.0.0.5")) == "http://10.0.0.5:8002/metrics"
    assert rb.metrics_url("h", dict(ep("10.9.0.5", 9102), ansible_host="10.0.0.5")) == "http://10.9.0.5:9102/metrics"
    assert rb.metrics_url("h", dict(ep("::"), ansible_host="fd00::5")) == "http://[fd00::5]:8002/metrics"
    assert rb.metrics_url("h", ep("fd00::7")) == "http://[fd00::7]:8002/metrics"
    # the override needs no fact
    assert rb.metrics_url("h", {"triton_rollout_bake_metrics_url": "https://m.example/t/metrics",
                                "ansible_host": "x"}) == "https://m.example/t/metrics"


def test_metrics_url_without_the_endpoint_fact_names_the_host():
    with pytest.raises(ValueError, match="h has no triton_server_endpoint fact.*tasks_from: endpoint"):
        rb.metrics_url("h", {"ansible_host": "10.0.0.5", "triton_server_metrics_port": 9102})


def test_bake_hosts_and_baseline():
    hostvars = {"a": dict(ep(), ansible_host="10.0.0.1"), "b": ep(), "c": {}, "d": {}}
    assert rb.bake_hosts(hostvars, ["a", "b"]) == [{"name": "a", "metrics_url": "http://10.0.0.1:8002/metrics"},
                                                   {"name": "b", "metrics_url": "http://b:8002/metrics"}]
    plan = {"order": ["a", "b", "c", "d"], "groups": [{"name": "canary", "hosts": ["a"]}, {"name": "wave", "hosts": ["b", "c", "d"]}]}
    assert rb.baseline_names(plan, ["a"]) == ["b", "c", "d"]
    assert rb.baseline_names(plan, ["c", "b"]) == ["d"]
    assert rb.baseline_names(plan, ["d"]) == []
    assert rb.baseline_names(plan, ["not-planned"]) == []


def test_settings_problems():
    good = {"triton_rollout_bake_seconds": "120", "triton_rollout_bake_max_failure_ratio": 0.01,
            "triton_rollout_bake_max_latency_ms": None, "triton_rollout_bake_max_latency_ratio": 2,
            "triton_rollout_bake_min_requests": "50", "triton_rollout_bake_prometheus_url": "http://10.89.77.2:9090",
            "triton_rollout_bake_prometheus_host_label": "host", "triton_rollout_bake_prometheus_job": ""}
    assert rb.settings_problems(good) == []
    bad = {"triton_rollout_bake_seconds": "60s", "triton_rollout_bake_max_failure_ratio": 5,
           "triton_rollout_bake_max_latency_ms": 0, "triton_rollout_bake_min_requests": 1.5,
           "triton_rollout_bake_prometheus_url": "prometheus:9090", "triton_rollout_bake_prometheus_host_label": "a-b",
           "triton_rollout_bake_secnds": 1}
    assert rb.settings_problems(bad) == [
        "triton_rollout_bake_max_failure_ratio must be between 0 and 1, got 5",
        "triton_rollout_bake_max_latency_ms must be positive, got 0",
        "triton_rollout_bake_min_requests must be an integer of 0 or more, got 1.5",
        "triton_rollout_bake_prometheus_host_label must be a Prometheus label name, got 'a-b'",
        "triton_rollout_bake_prometheus_url must be an http(s) URL, got 'prometheus:9090'",
        "triton_rollout_bake_secnds is not a bake setting (known: %s)" % ", ".join(sorted(rb.SETTINGS)),
        "triton_rollout_bake_seconds must be a number, got '60s'",
    ]
