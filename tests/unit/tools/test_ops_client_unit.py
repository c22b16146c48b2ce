"""ops_client's retry: transient gRPC failures are retried, real errors are not."""

import os
import sys

import pytest
from tritonclient.utils import InferenceServerException

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))

import ops_client  # noqa: E402


def flaky(failures):
    calls = []

    def call():
        calls.append(1)
        if len(calls) <= len(failures):
            raise InferenceServerException(failures[len(calls) - 1])
        return "answer"
    return call, calls


def test_transient_failures_are_retried_until_an_answer():
    call, calls = flaky(["[StatusCode.UNAVAILABLE] failed to connect to all addresses", "[StatusCode.UNAVAILABLE] Socket closed"])
    assert ops_client.with_retry(call, attempts=3, delay=0.0) == "answer"
    assert len(calls) == 3


def test_a_model_error_is_not_retried():
    call, calls = flaky(["[StatusCode.INVALID_ARGUMENT] unexpected shape for input 'metrics_input'"])
    with pytest.raises(ops_client.OpsClientError, match="unexpected shape"):
        ops_client.with_retry(call, attempts=5, delay=0.0)
    assert len(calls) == 1


def test_gives_up_after_the_last_attempt():
    call, calls = flaky(["[StatusCode.UNAVAILABLE] failed to connect"] * 5)
    with pytest.raises(ops_client.OpsClientError, match="failed to connect"):
        ops_client.with_retry(call, attempts=2, delay=0.0)
    assert len(calls) == 2


def test_the_incident_window_differs_from_the_normal_one_only_in_p99_latency():
    normal, incident = ops_client.metrics_windows()
    assert normal.shape == (60, 20) and normal.dtype.name == "float32"
    changed = sorted(set(int(c) for c in (normal != incident).nonzero()[1]))
    assert [ops_client.METRICS[c][0] for c in changed] == ["latency_p99_ms"]


def test_lab_goes_through_the_load_balancer(monkeypatch):
    monkeypatch.setenv("AIOPS_LAB_LB_GRPC", "10.89.77.6:8001")
    assert ops_client.lab_lb_urls() == [("lab-lb", "10.89.77.6:8001")]
    asked = []
    monkeypatch.setattr(ops_client, "OpsAgent", lambda url, attempts: asked.append(url) or pytest.fail("stop here"))
    with pytest.raises(pytest.fail.Exception):
        ops_client.main(["--lab"])
    assert asked == ["10.89.77.6:8001"]


def test_lab_without_a_load_balancer_says_so(monkeypatch, capsys):
    monkeypatch.delenv("AIOPS_LAB_LB_GRPC", raising=False)
    monkeypatch.setattr(ops_client, "lab_urls", lambda port=8001, label="aiops.lab.host=1": [])
    with pytest.raises(SystemExit):
        ops_client.main(["--lab"])
    assert "no lab load balancer runs" in capsys.readouterr().err
