"""triton_rollout_bake (the module): arguments, failing on a breach with the breach's sentence, warnings, check mode.

The metrics reads are handed canned Triton text here; tests/integration/test_rollout_bake_live.py bakes real Tritons.
"""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.modules import triton_rollout_bake

TEXT = ('nv_inference_request_success{{model="m",version="1"}} {s}\n'
        'nv_inference_request_failure{{model="m",reason="BACKEND",version="1"}} {f}\n'
        'nv_inference_request_duration_us{{model="m",version="1"}} {d}\n')


def run(capsys, monkeypatch, rounds=None, check_mode=False, **args):
    slept, warned = [], []
    monkeypatch.setattr(triton_rollout_bake.time, "sleep", slept.append)
    # where module.warn's text lands depends on what else the process imported (controller code routes it to
    # Display): record the calls instead
    monkeypatch.setattr(triton_rollout_bake.AnsibleModule, "warn", lambda self, text: warned.append(text))
    answers = list(rounds or [])

    def fetcher(timeout, validate_certs):
        def fetch_many(urls, hosts):
            texts = answers.pop(0)
            return [(host, texts[host["name"]]) for host in hosts]
        return fetch_many
    monkeypatch.setattr(triton_rollout_bake, "fetcher", fetcher)
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            triton_rollout_bake.main()
    result = json.loads(capsys.readouterr().out)
    result["slept"], result["warned"] = slept, warned
    return result


CANARY = [{"name": "lab-1", "metrics_url": "http://lab-1:8002/metrics"}]


def test_breach_fails_with_its_sentence_and_the_numbers(capsys, monkeypatch):
    rounds = [{"lab-1": TEXT.format(s=100, f=0, d=1e5)}, {"lab-1": TEXT.format(s=144, f=6, d=1e5 + 44e3)}]
    result = run(capsys, monkeypatch, rounds, changed_hosts=CANARY, models=["m"], group="triton_canary", bake_seconds=5)
    assert result["failed"] and not result["passed"] and not result["changed"]
    assert result["msg"] == "bake: m failure_ratio 0.12 on triton_canary (lab-1) > limit 0.0"
    assert result["models"]["m"]["changed"]["mean_latency_ms"] == 1.0
    assert result["breaches"][0]["metric"] == "failure_ratio" and result["slept"] == [5.0]


def test_clean_window_passes_in_check_mode_too(capsys, monkeypatch):
    rounds = [{"lab-1": TEXT.format(s=100, f=0, d=1e5)}, {"lab-1": TEXT.format(s=150, f=0, d=1.5e5)}]
    result = run(capsys, monkeypatch, rounds, check_mode=True, changed_hosts=CANARY, models=["m"], bake_seconds=1,
                 max_failure_ratio=0.01, max_latency_ms=2)
    assert not result.get("failed") and result["passed"] and not result["changed"]
    assert result["models"]["m"]["changed"]["requests"] == 50 and result["warned"] == []
    assert result["limits"] == {"max_failure_ratio": 0.01, "max_latency_ms": 2.0, "max_latency_ratio": 1.5, "min_requests": 0}


def test_no_traffic_passes_with_a_warning(capsys, monkeypatch):
    rounds = [{"lab-1": TEXT.format(s=7, f=0, d=70)}] * 2
    result = run(capsys, monkeypatch, rounds, changed_hosts=CANARY, models=["m"], group="triton_canary", bake_seconds=1)
    assert result["passed"]
    assert result["warned"] == ["bake: m: no requests on triton_canary in the window, nothing to judge"]


@pytest.mark.parametrize("args, msg", [
    ({"max_failure_ratio": 1.2}, "bake: max_failure_ratio must be between 0 and 1, got 1.2"),
    ({"min_requests": -3}, "bake: min_requests must be 0 or more, got -3"),
    ({"prometheus_url": "http://prom:9090", "prometheus_host_label": "a-b"},
     "bake: prometheus_host_label must be a Prometheus label name, got 'a-b'"),
])
def test_bad_input_fails_before_waiting(capsys, monkeypatch, args, msg):
    result = run(capsys, monkeypatch, None, changed_hosts=CANARY, models=["m"], **args)
    assert result["failed"] and result["msg"] == msg


def test_nothing_to_bake(capsys, monkeypatch):
    result = run(capsys, monkeypatch, None, changed_hosts=CANARY, models=[])
    assert result["passed"] and result["slept"] == [] and result["notes"] == ["nothing to bake: no models"]
