"""fleet_report on results the playbook records when a host cannot be verified."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("fleet_report", os.path.join(ROOT, "playbooks", "files", "fleet_report.py"))
fleet_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fleet_report)

UNREACHABLE = {"host": "gpu-7", "groups": ["triton_servers", "triton_wave_1"], "pinned": [{"name": "m", "versions": [2]}],
               "verify": {"failed": True, "msg": "Triton at http://127.0.0.1:8000 is not live after 5s (cannot reach Triton)",
                          "server": {}, "models": [], "failures": ["Triton at http://127.0.0.1:8000 is not live after 5s"]},
               "gpu": {"status": "no_driver", "gpus": [], "message": "nvidia-smi cannot talk to the NVIDIA kernel module"},
               "configs": [{"item": {"name": "m"}, "changed": False}]}


def test_an_unreachable_host_is_reported_with_the_reason_not_as_drift():
    report = fleet_report.build({"rollout_groups": ["triton_canary", "triton_wave_1"], "hosts": [UNREACHABLE]})
    (host,) = report["hosts"]
    assert host["group"] == "triton_wave_1" and host["reachable"] is False and host["passed"] is False
    assert host["failures"] == [UNREACHABLE["verify"]["msg"]]
    assert host["drift"] == []  # nothing is known about its versions, so nothing is claimed
    assert report["summary"] == {"hosts": 1, "passed": 0, "drifted": [], "failed": ["gpu-7"], "out_of_traffic": []}
    page = fleet_report.render_html(report, {})
    assert "<h2>Rollout group triton_wave_1</h2>" in page and "unreachable" in page and "is not live after 5s" in page


def test_a_failed_config_check_is_drift_with_its_reason():
    raw = dict(UNREACHABLE, configs=[{"item": {"name": "m"}, "failed": True, "msg": "config.pbtxt is not valid"}],
               verify={"server": {"live": True, "ready": True, "version": "2.51.0"}, "failures": [],
                       "models": [{"name": "m", "states": {"2": "READY"}, "versions": []}]})
    (host,) = fleet_report.build({"rollout_groups": [], "hosts": [raw]})["hosts"]
    assert host["group"] is None and host["models"][0]["ready"] == [2]
    assert host["drift"] == ["m: config.pbtxt cannot be checked: config.pbtxt is not valid"]


def test_load_balancer_state_per_host_and_hosts_out_of_traffic():
    serving = dict(UNREACHABLE, host="gpu-1", lb_state="up")
    drained = dict(UNREACHABLE, host="gpu-2", lb_state="drained")
    unread = dict(UNREACHABLE, host="gpu-3", lb_error="socat: connection refused")
    report = fleet_report.build({"rollout_groups": ["triton_wave_1"], "hosts": [serving, drained, unread, UNREACHABLE]})
    assert [(h["host"], h["lb_state"]) for h in report["hosts"]] == [
        ("gpu-1", "up"), ("gpu-2", "drained"), ("gpu-3", "unknown"), ("gpu-7", "unknown")]
    assert report["summary"]["out_of_traffic"] == ["gpu-2"]
    page = fleet_report.render_html(report, {})
    assert "<th>Load balancer</th>" in page
    assert '<td class="bad">drained</td>' in page and '<td class="">up</td>' in page
    assert '<td class="bad">unknown (socat: connection refused)</td>' in page
    assert "out of traffic on the load balancer: gpu-2." in page
