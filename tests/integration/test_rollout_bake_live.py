"""aiops.triton.triton_rollout_bake against real tritonservers with real traffic, and a real Prometheus.

- The built model set (the session's ``ops_triton``) as a one-host canary: clean traffic passes; what Triton
  2.51 does not count as failed (misshaped requests, a python model's error responses) is pinned down.
- Two small Tritons, each serving ``bake_probe`` (a python model that sleeps in execute; the changed one 10x
  slower than the baseline) and ``bake_strict`` (fails every batch larger than one, by raising): failing
  batches fail the bake naming failure_ratio; read from their /metrics with the traffic sent inside the
  window, the counts are exact and the latency ratio breaches; a Triton restarted inside the window counts
  from 0. Read from Debian's Prometheus (scraping both every second, labelled as roles/triton_monitoring
  labels its targets) the verdict is the same.
"""

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import triton_fixtures
from triton_fixtures import TritonServer, free_port, run_module

from ansible_collections.aiops.triton.plugins.module_utils import rollout_bake
from ansible_collections.aiops.triton.plugins.modules import triton_rollout_bake

pytestmark = pytest.mark.integration

PROMETHEUS = shutil.which("prometheus")
if PROMETHEUS is None:  # pragma: no cover - machine set-up, not a result
    raise RuntimeError("needs Debian's prometheus (make setup installs it)")

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

PROBE_CONFIG = """\
backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

# Y = X after DELAY seconds: the same model, fast on the baseline and slow on the changed host.
PROBE_MODEL = """\
import time
import triton_python_backend_utils as pb_utils

DELAY = {delay!r}


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            time.sleep(DELAY)
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)]))
        return out
"""
PROBE_INPUT = {"X": {"datatype": "FP32", "shape": [1], "data": [1.0]}}
FAST, SLOW = 0.005, 0.05
SETTLE = 1.0  # Triton adds a request to its counters just after answering it: wait before the window closes


# The live-traffic-only failure: a version that passes single-item golden cases but fails every batch
# larger than one. Raising in execute is how a python model fails a request in Triton's counters.
STRICT_CONFIG = """\
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""
STRICT_MODEL = """\
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            if x.shape[0] > 1:
                raise pb_utils.TritonModelException("batches larger than one are not supported")
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)]))
        return out
"""


def write_strict(repository):
    os.makedirs(os.path.join(repository, "bake_strict", "1"))
    with open(os.path.join(repository, "bake_strict", "config.pbtxt"), "w") as handle:
        handle.write(STRICT_CONFIG)
    with open(os.path.join(repository, "bake_strict", "1", "model.py"), "w") as handle:
        handle.write(STRICT_MODEL)


def write_probe(repository, delay):
    version_dir = os.path.join(repository, "bake_probe", "1")
    os.makedirs(version_dir)
    with open(os.path.join(repository, "bake_probe", "config.pbtxt"), "w") as handle:
        handle.write(PROBE_CONFIG)
    with open(os.path.join(version_dir, "model.py"), "w") as handle:
        handle.write(PROBE_MODEL.format(delay=delay))


class FixedPortTriton(TritonServer):
    """Comes back on the same ports after stop(), as a restarted host does."""

    ports = None

    def start(self):
        if self.ports is None:
            TritonServer.start(self)
            self.ports = (self.http_port, self.grpc_port, self.metrics_port)
            return self
        ports = iter(self.ports)
        saved = triton_fixtures.free_port
        triton_fixtures.free_port = lambda: next(ports)
        try:
            return TritonServer.start(self)
        finally:
            triton_fixtures.free_port = saved


def infer(server, model, inputs):
    """POST one inference; True when Triton answered 200, False on an error answer."""
    body = {"inputs": [dict(name=name, **tensor) for name, tensor in inputs.items()]}
    request = urllib.request.Request("%s/v2/models/%s/infer" % (server.http_url, model), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with OPENER.open(request, timeout=60) as resp:
            return resp.status == 200
    except urllib.error.HTTPError as exc:
        exc.read()
        return False


class Traffic(object):
    """Clients sending (server, model, inputs) in a loop until stopped; counts answers per kind."""

    def __init__(self, **kinds):
        self.kinds = kinds
        self.counts = dict((kind, {"ok": 0, "error": 0}) for kind in kinds)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(kind,), daemon=True) for kind in kinds]

    def _run(self, kind):
        server, model, inputs = self.kinds[kind]
        while not self._stop.is_set():
            self.counts[kind]["ok" if infer(server, model, inputs) else "error"] += 1
            time.sleep(0.01)

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        time.sleep(0.5)  # every client under way before the window opens
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


def golden_inputs(repository, model):
    versions = sorted((d for d in os.listdir(os.path.join(repository, model)) if d.isdigit()), key=int)
    with open(os.path.join(repository, model, versions[-1], "golden_cases.json")) as handle:
        return json.load(handle)["cases"][0]["inputs"]


def host(name, server):
    return {"name": name, "metrics_url": server.metrics_url}


# -- the built model set ----------------------------------------------------------------------------------
def test_clean_traffic_passes(ops_triton):
    traffic = Traffic(anomaly=(ops_triton, "anomaly_detector", golden_inputs(ops_triton.repository, "anomaly_detector")))
    with traffic:
        result = run_module("triton_rollout_bake", {
            "changed_hosts": [host("ops", ops_triton)], "models": ["anomaly_detector"], "group": "triton_canary",
            "bake_seconds": 4, "min_requests": 10, "max_latency_ms": 2000})
    assert not result.get("failed"), result
    assert result["passed"] and result["breaches"] == [] and not result["changed"]
    numbers = result["models"]["anomaly_detector"]["changed"]
    assert traffic.counts["anomaly"]["error"] == 0
    assert 10 <= numbers["requests"] <= traffic.counts["anomaly"]["ok"], (numbers, traffic.counts)
    assert numbers["failures"] == 0 and numbers["failure_ratio"] == 0.0
    assert numbers["inferences"] == numbers["requests"]  # one [1, 60, 20] window per request
    assert 0 < numbers["mean_latency_ms"] < 2000
    assert result["window"]["seconds"] >= 4


def test_what_triton_does_not_count_as_failed(ops_triton):
    """The bake sees only Triton's counters, and Triton 2.51 counts neither of these as failed (measured here):
    requests it refuses up front (a wrong shape) and error responses a python model returns (metric_forecaster
    answers an out-of-range horizon with one): the first are in no counter, the second count as successes.
    A model fails a request in the counters by raising (test_a_version_failing_batches_...)."""
    forecast = golden_inputs(ops_triton.repository, "metric_forecaster")
    forecast["horizon"] = dict(forecast["horizon"], data=[0])  # out of range: the model answers an error
    misshaped = {"metrics_input": {"datatype": "FP32", "shape": [1, 59, 20], "data": [0.0] * (59 * 20)}}
    traffic = Traffic(bad_horizon=(ops_triton, "metric_forecaster", forecast), misshaped=(ops_triton, "anomaly_detector", misshaped))
    with traffic:
        result = run_module("triton_rollout_bake", {
            "changed_hosts": [host("ops", ops_triton)], "models": ["anomaly_detector", "metric_forecaster"],
            "group": "triton_canary", "bake_seconds": 3})
    assert traffic.counts["bad_horizon"] == {"ok": 0, "error": traffic.counts["bad_horizon"]["error"]} and traffic.counts["bad_horizon"]["error"] > 0
    assert traffic.counts["misshaped"]["ok"] == 0 and traffic.counts["misshaped"]["error"] > 0
    assert result["passed"], result
    anomaly, forecaster = result["models"]["anomaly_detector"]["changed"], result["models"]["metric_forecaster"]["changed"]
    assert anomaly["requests"] == 0  # every misshaped request refused before the counters
    assert "anomaly_detector: no requests on triton_canary in the window, nothing to judge" in result["notes"]
    assert forecaster["failures"] == 0 and 0 < forecaster["successes"] <= traffic.counts["bad_horizon"]["error"]


def test_a_model_the_host_does_not_serve_is_no_verdict(ops_triton):
    result = run_module("triton_rollout_bake", {"changed_hosts": [host("ops", ops_triton)], "models": ["anomaly_detectr"],
                                                "bake_seconds": 30})
    assert result.get("failed"), result
    assert result["msg"] == ("bake: host ops reports no counters for anomaly_detectr in %s: Triton does not serve it there"
                             % ops_triton.metrics_url)


# -- two small Tritons: exact counts, a restart, the latency ratio, Prometheus ------------------------------
@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    servers = {}
    try:
        for name, delay in (("canary", SLOW), ("stable", FAST)):
            repo = str(tmp_path_factory.mktemp("bake-" + name))
            write_probe(repo, delay)
            write_strict(repo)
            servers[name] = FixedPortTriton(repo).start()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def send(server, count):
    return sum(1 for _attempt in range(count) if infer(server, "bake_probe", PROBE_INPUT))


def bake_in_process(params, during):
    """run_bake with the module's own HTTP reads and ``during()`` run inside the window (instead of a sleep)."""
    fetch_many = triton_rollout_bake.fetcher(10, True)
    fetch_json = triton_rollout_bake.json_fetcher(10, True)
    merged = {"group": "triton_canary", "bake_seconds": 0, "prometheus_url": None, "prometheus_host_label": "instance",
              "prometheus_job": None}
    merged.update(rollout_bake.DEFAULT_LIMITS)
    merged.update(params)
    return rollout_bake.run_bake(merged, fetch_many, fetch_json, lambda _seconds: during(), time.time)


def test_exact_counts_and_latency_ratio_from_metrics(pair):
    send(pair["canary"], 3)  # traffic before the window does not count
    time.sleep(SETTLE)
    sent = {}

    def during():
        threads = [threading.Thread(target=lambda n=n: sent.__setitem__(n, send(pair[n], 30))) for n in pair]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        time.sleep(SETTLE)

    result = bake_in_process({"changed_hosts": [host("canary-1", pair["canary"])],
                              "baseline_hosts": [host("stable-1", pair["stable"])], "models": ["bake_probe"]}, during)
    assert sent == {"canary": 30, "stable": 30}
    numbers = result["models"]["bake_probe"]
    assert (numbers["changed"]["requests"], numbers["baseline"]["requests"]) == (30, 30)
    assert numbers["changed"]["hosts"]["canary-1"]["successes"] == 30
    assert numbers["changed"]["mean_latency_ms"] >= SLOW * 1000 > numbers["baseline"]["mean_latency_ms"]
    assert numbers["latency_ratio"] > 1.5
    assert not result["passed"]
    assert [(b["metric"], b["limit"], b["hosts"]) for b in result["breaches"]] == [("mean_latency_ratio", 1.5, ["canary-1"])]
    assert result["breaches"][0]["msg"].startswith("bake: bake_probe mean_latency_ratio %s on triton_canary (canary-1) > limit 1.5"
                                                   % rollout_bake._format(numbers["latency_ratio"]))
    # the same traffic with the comparison off and a roomy absolute limit passes
    result = bake_in_process({"changed_hosts": [host("canary-1", pair["canary"])], "models": ["bake_probe"],
                              "max_latency_ratio": None, "max_latency_ms": 5000.0},
                             lambda: (send(pair["canary"], 5), time.sleep(SETTLE)))
    assert result["passed"] and result["models"]["bake_probe"]["changed"]["requests"] == 5


def test_a_version_failing_batches_fails_the_bake_naming_failure_ratio(pair):
    single = {"X": {"datatype": "FP32", "shape": [1, 1], "data": [1.0]}}
    double = {"X": {"datatype": "FP32", "shape": [2, 1], "data": [1.0, 2.0]}}
    traffic = Traffic(single=(pair["canary"], "bake_strict", single), double=(pair["canary"], "bake_strict", double),
                      stable=(pair["stable"], "bake_strict", double))
    with traffic:
        result = run_module("triton_rollout_bake", {
            "changed_hosts": [host("canary-1", pair["canary"])], "baseline_hosts": [host("stable-1", pair["stable"])],
            "models": ["bake_strict"], "group": "triton_canary", "bake_seconds": 4})
    assert traffic.counts["single"]["error"] == 0 and traffic.counts["double"]["ok"] == 0
    assert result.get("failed") and not result["passed"], json.dumps(result["models"], indent=1)
    numbers = result["models"]["bake_strict"]["changed"]
    assert 0 < numbers["failures"] <= traffic.counts["double"]["error"]
    assert 0 < numbers["successes"] <= traffic.counts["single"]["ok"]
    assert numbers["failures_by_reason"] == {"BACKEND": numbers["failures"]}
    assert [(b["model"], b["metric"], b["value"], b["limit"], b["hosts"]) for b in result["breaches"]] == [
        ("bake_strict", "failure_ratio", numbers["failure_ratio"], 0.0, ["canary-1"])]
    assert result["msg"] == "bake: bake_strict failure_ratio %s on triton_canary (canary-1) > limit 0.0" % (
        rollout_bake._format(numbers["failure_ratio"]))
    # the baseline fails the same way, but only the changed hosts are judged
    assert result["models"]["bake_strict"]["baseline"]["failure_ratio"] == 1.0


def test_triton_restarted_in_the_window_counts_from_zero(pair):
    canary = pair["canary"]
    send(canary, 20)  # the counters stand at 20+ when the window opens

    def during():
        canary.stop()
        canary.start()
        assert send(canary, 4) == 4
        time.sleep(SETTLE)

    result = bake_in_process({"changed_hosts": [host("canary-1", canary)], "models": ["bake_probe"]}, during)
    numbers = result["models"]["bake_probe"]["changed"]
    assert (numbers["requests"], numbers["successes"], numbers["failures"]) == (4, 4, 0)
    assert numbers["mean_latency_ms"] >= SLOW * 1000
    assert result["passed"]


def test_prometheus_gives_the_same_verdict(pair, tmp_path):
    port = free_port()
    sd = tmp_path / "aiops-triton.json"
    # as roles/triton_monitoring writes its file_sd: target address:port, labels host and rollout_group
    sd.write_text(json.dumps([
        {"targets": ["127.0.0.1:%d" % pair[name].metrics_port], "labels": {"host": name + "-1", "rollout_group": name}}
        for name in ("canary", "stable")]))
    config = tmp_path / "prometheus.yml"
    config.write_text("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                      "scrape_configs:\n  - job_name: aiops-triton\n    file_sd_configs: [{files: ['%s'], refresh_interval: 1s}]\n" % sd)
    log = open(str(tmp_path / "prometheus.log"), "wb")
    prometheus = subprocess.Popen([PROMETHEUS, "--config.file=%s" % config, "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                                   "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    try:
        wait_scraped(url, 60)
        traffic = Traffic(canary=(pair["canary"], "bake_probe", PROBE_INPUT), stable=(pair["stable"], "bake_probe", PROBE_INPUT))
        with traffic:
            result = run_module("triton_rollout_bake", {
                "changed_hosts": [{"name": "canary-1"}], "baseline_hosts": [{"name": "stable-1"}], "models": ["bake_probe"],
                "group": "triton_canary", "bake_seconds": 8, "prometheus_url": url, "prometheus_host_label": "host",
                "prometheus_job": "aiops-triton"})
    finally:
        prometheus.terminate()
        prometheus.wait(30)
        log.close()
    assert result.get("failed") and result["source"] == "prometheus", result
    numbers = result["models"]["bake_probe"]
    assert 0 < numbers["changed"]["requests"] <= traffic.counts["canary"]["ok"] * 1.2
    assert 0 < numbers["baseline"]["requests"] <= traffic.counts["stable"]["ok"] * 1.2
    assert numbers["changed"]["failures"] == 0
    assert numbers["changed"]["mean_latency_ms"] >= SLOW * 1000 * 0.9
    assert [(b["model"], b["metric"], b["hosts"]) for b in result["breaches"]] == [("bake_probe", "mean_latency_ratio", ["canary-1"])]
    assert result["msg"].startswith("bake: bake_probe mean_latency_ratio ")


def wait_scraped(url, timeout):
    """Until Prometheus has scraped both Tritons at least twice (so increase() has samples)."""
    query = urllib.parse.urlencode({"query": 'count_over_time(up{job="aiops-triton"}[1m]) >= 2'})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with OPENER.open("%s/api/v1/query?%s" % (url, query), timeout=5) as resp:
                if len(json.load(resp)["data"]["result"]) == 2:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError("Prometheus at %s did not scrape both Tritons within %ss" % (url, timeout))
