"""tools/ops_client.py against the real tritonserver serving the built ops model set."""

import json
import os
import subprocess
import sys

import pytest

from triton_fixtures import CHECKOUT, free_port

pytestmark = pytest.mark.integration

CLIENT = os.path.join(CHECKOUT, "tools", "ops_client.py")
SEED_ALERTS = {"Pod memory usage exceeds 90% threshold": "memory",
               "Network latency P99 increased to 5000ms": "network",
               "Disk space on /dev/sda1 is 95% full": "disk"}


def run_client(*args):
    return subprocess.run([sys.executable, CLIENT] + list(args), capture_output=True, text=True, timeout=300, check=False)


def test_answers_like_an_ops_agent(ops_triton):
    proc = run_client("--url", ops_triton.grpc_url, "--json")
    assert proc.returncode == 0, proc.stderr
    (answers,) = json.loads(proc.stdout)
    assert answers["url"] == ops_triton.grpc_url
    # the three alerts of the seed article, each to its team
    assert dict((a["alert"], a["class"]) for a in answers["alerts"]) == SEED_ALERTS
    assert all(0.0 < a["confidence"] <= 1.0 for a in answers["alerts"])
    # the quiet window is quiet; the one whose p99 latency steps up is flagged on exactly that metric
    normal, incident = answers["anomalies"]
    assert normal["window"] == "normal window" and normal["anomalous_metrics"] == [] and normal["anomaly_score"] < 0.5
    assert incident["anomalous_metrics"] == ["latency_p99_ms"] and incident["anomaly_score"] > 0.5
    # six hourly steps after the history, inside their interval, at a request rate like the history's
    history_end = 1762128000
    forecast = answers["forecast"]
    assert [p["timestamp"] for p in forecast] == [history_end + 3600 * (i + 1) for i in range(6)]
    assert all(p["low"] <= p["request_rate"] <= p["high"] for p in forecast)
    assert all(500 < p["request_rate"] < 3500 for p in forecast)


def test_human_output_names_each_answer(ops_triton):
    proc = run_client("--url", ops_triton.grpc_url)
    assert proc.returncode == 0, proc.stderr
    assert "== %s (%s)" % (ops_triton.grpc_url, ops_triton.grpc_url) in proc.stdout
    assert '"Disk space on /dev/sda1 is 95% full"' in proc.stdout and "-> disk" in proc.stdout
    assert "p99 latency step" in proc.stdout and "latency_p99_ms" in proc.stdout
    assert "metric_forecaster  request rate next 6 h (UTC)" in proc.stdout


def test_unreachable_server_is_retried_then_reported():
    url = "127.0.0.1:%d" % free_port()
    proc = run_client("--url", url, "--attempts", "2")
    assert proc.returncode == 1
    assert "== %s (%s): no answer:" % (url, url) in proc.stderr and "Traceback" not in proc.stderr
