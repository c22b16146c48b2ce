"""fleet_report on results the playbook records when a host cannot be verified, and each host's GPU memory budget."""

import importlib.util
import os

import pytest
import yaml

from ansible_collections.aiops.triton.plugins.filter import gpu_fit
from ansible_collections.aiops.triton.plugins.module_utils import gpu_budget

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
    assert report["summary"] == {"hosts": 1, "passed": 0, "drifted": [], "failed": ["gpu-7"], "out_of_traffic": [],
                                 "gpu_unhealthy": None, "quarantined": [], "not_reported": []}
    # most severe first, each with what to run: Triton does not answer, and nvidia-smi cannot reach the driver
    assert [(e["kind"], e["reason"], e["hosts"], e["command"]) for e in report["exceptions"]] == [
        ("unreachable", UNREACHABLE["verify"]["msg"], ["gpu-7"], "ansible-playbook -i <inventory> aiops.triton.triton_server --limit gpu-7"),
        ("gpu-driver", UNREACHABLE["gpu"]["message"], ["gpu-7"], "ansible-playbook -i <inventory> aiops.triton.gpu_stack --limit gpu-7")]
    page = fleet_report.render_html(report)
    assert "<td>triton_wave_1</td>" in page and "unreachable" in page and "is not live after 5s" in page


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
    page = fleet_report.render_html(report)
    assert "<th>Load balancer</th>" in page
    assert '<td class="bad">drained</td>' in page and '<td>up</td>' in page
    assert '<td class="bad">unknown (socat: connection refused)</td>' in page
    assert '<li class="count bad" data-count="out of traffic"><b>1 (0 quarantined)</b> out of traffic</li>' in page
    commands = dict((e["kind"], (e["hosts"], e["command"])) for e in report["exceptions"])
    assert commands["out-of-traffic"] == (["gpu-2"], "ansible-playbook -i <inventory> aiops.triton.undrain --limit gpu-2")
    # the balancer is fixed on its own hosts: no --limit of Triton hosts
    assert commands["lb-unread"] == (["gpu-3"], "ansible-playbook -i <inventory> aiops.triton.load_balancer")


SERVING = {"server": {"live": True, "ready": True, "version": "2.51.0"}, "failures": [],
           "models": [{"name": "m", "states": {"2": "READY"},
                       "versions": [{"version": 2, "ready": True, "cases": [{"name": "c", "protocol": "http", "passed": True, "message": ""}],
                                     "latency": {"requests": 30, "p50_ms": 1.0, "p99_ms": 2.0}}]}]}


def serving(name, group="triton_wave_1", **extra):
    base = dict(UNREACHABLE, host=name, groups=["triton_servers", group], verify=SERVING, lb_state="up",
                gpu={"status": "not_installed", "gpus": [], "message": "nvidia-smi is not installed", "host_kind": "cpu"})
    return dict(base, **extra)


def test_without_gpu_health_the_report_says_not_read():
    report = fleet_report.build({"rollout_groups": ["triton_wave_1"], "hosts": [serving("cpu-1")]})
    assert report["summary"]["gpu_unhealthy"] is None and report["hosts"][0]["gpu_health"] is None
    page = fleet_report.render_html(report)
    assert '<b>not read</b> GPU unhealthy' in page and "<td>not read</td>" in page
    assert report["exceptions"] == [] and "Needs a person (0)" in page


def test_gpu_health_per_host_and_quarantine():
    bad = {"verdict": "unhealthy", "reasons": ["GPU 1: Xid 79"], "gpus": [{"index": 1, "bus_id": "0000:3B:00.0", "verdict": "unhealthy"}],
           "xid_events": [{"xid": 79}]}
    # nvidia_gpu_health's shape: quarantined (bool) and the record in quarantine
    quarantined = dict(bad, quarantined=True, quarantine={"reason": "Xid 79 alert", "since": "2026-03-02T04:11:09Z", "verdict": "unhealthy"})
    raw = {"rollout_groups": ["triton_wave_1"],
           "hosts": [serving("gpu-1"), serving("gpu-2", gpu_health=bad), serving("gpu-3", lb_state="drained")],
           # verify.yml writes the facts beside the results; a host's own key (gpu-2) wins
           "gpu_health": {"gpu-1": {"verdict": "healthy", "reasons": []}, "gpu-3": quarantined}}
    report = fleet_report.build(raw, ["inv/prod"])
    hosts = dict((h["host"], h) for h in report["hosts"])
    assert [hosts[h]["gpu_health"]["verdict"] for h in ("gpu-1", "gpu-2", "gpu-3")] == ["healthy", "unhealthy", "unhealthy"]
    assert hosts["gpu-3"]["quarantined"] == {"reason": "Xid 79 alert", "since": "2026-03-02T04:11:09Z"}
    assert report["summary"]["gpu_unhealthy"] == ["gpu-2", "gpu-3"] and report["summary"]["quarantined"] == ["gpu-3"]
    assert "quarantined" in hosts["gpu-3"]["states"] and "out-of-traffic" in hosts["gpu-3"]["states"]
    # a quarantined host is out of traffic on purpose: the repair, not undrain, is what to run
    assert [(e["kind"], e["hosts"], e["command"]) for e in report["exceptions"]] == [
        ("gpu-unhealthy", ["gpu-2"], "ansible-playbook -i inv/prod aiops.triton.quarantine --limit gpu-2"),
        ("quarantined", ["gpu-3"], "ansible-playbook -i inv/prod aiops.triton.quarantine --limit gpu-3")]
    page = fleet_report.render_html(report)
    assert '<b>2</b> GPU unhealthy' in page
    assert '<td class="bad">quarantined since 2026-03-02T04:11:09Z (Xid 79 alert); unhealthy: GPU 1: Xid 79</td>' in page


def test_exceptions_group_hosts_and_name_a_whole_rollout_group():
    drifted = dict(SERVING, models=[dict(SERVING["models"][0], states={"1": "READY"})])
    raw = {"rollout_groups": ["triton_canary", "triton_wave_1"], "inventory_hosts": ["c-1", "w-1", "w-2", "w-3", "gone"],
           "hosts": [serving("c-1", "triton_canary"), serving("w-1", verify=drifted), serving("w-2", verify=drifted), serving("w-3", verify=drifted)]}
    report = fleet_report.build(raw, ["a.yml", "b.yml"])
    assert [(e["kind"], e["reason"], e["hosts"], e["command"]) for e in report["exceptions"]] == [
        ("not-reported", "in the inventory, but verify.yml has no result for it (unreachable over SSH, or its play failed)", ["gone"],
         "ansible-playbook -i a.yml -i b.yml aiops.triton.verify --limit gone"),
        ("drifted", "m: READY versions [1], pinned [2]", ["w-1", "w-2", "w-3"],
         "ansible-playbook -i a.yml -i b.yml aiops.triton.models --limit triton_wave_1")]
    assert report["summary"]["not_reported"] == ["gone"]


def test_aggregate_per_group_and_model_is_a_distribution_across_hosts():
    def timed(name, p99, ready="2"):
        verify = dict(SERVING, models=[dict(SERVING["models"][0], states={ready: "READY"},
                                            versions=[dict(SERVING["models"][0]["versions"][0], latency={"requests": 30, "p50_ms": p99 / 2, "p99_ms": p99})])])
        return serving(name, verify=verify)
    hosts = [timed("w-%d" % i, float(i)) for i in range(1, 10)] + [timed("w-slow", 90.0, ready="1"), UNREACHABLE]
    report = fleet_report.build({"rollout_groups": ["triton_wave_1"], "hosts": hosts})
    (row,) = report["aggregates"]
    assert (row["group"], row["model"], row["hosts"], row["unreachable"], row["at_pin"]) == ("triton_wave_1", "m", 11, 1, 9)
    assert row["serving"] == {"2": 9, "1": 1}
    assert row["golden"] == {"passed": 10, "total": 10, "hosts_passed": 10}
    assert row["p99"] == {"hosts": 10, "min": 1.0, "median": 5.5, "p90": pytest.approx(17.1), "max": 90.0, "worst": "w-slow"}
    page = fleet_report.render_html(report)
    assert '<td data-v="5.5">1 / 5.5 / 17.1 / 90 (w-slow)</td>' in page  # the cell sorts by its median


def test_host_columns_once_per_host_and_plots_do_not_grow_with_the_fleet():
    def page_for(count):
        hosts = [serving("w-%d" % i) for i in range(count)]
        return fleet_report.render_html(fleet_report.build({"rollout_groups": ["triton_wave_1"], "hosts": hosts}))
    small, large = page_for(3), page_for(300)
    assert large.count("nvidia-smi is not installed") == 300  # the host's row, not each model's
    assert small.count("<rect ") == large.count("<rect ") == 2  # a p50 and a p99 box for the one group
    assert large.count('<svg viewBox="0 0 640 ') == 1
    assert "Slowest p99: <b>" in large


def test_a_quarantine_record_in_quarantined_itself_is_read_too():
    health = {"verdict": "healthy", "reasons": [], "quarantined": {"reason": "by an operator", "since": ""}}
    (host,) = fleet_report.build({"rollout_groups": [], "hosts": [serving("gpu-9", gpu_health=health)]})["hosts"]
    assert host["quarantined"] == {"reason": "by an operator", "since": ""} and "quarantined" in host["states"]


def budget_rows():
    """Rows as the aiops.triton.gpu_memory_budget filter returns them (verify.yml writes them under gpu_budget)."""
    t4 = [{"index": 0, "name": "Tesla T4", "memory_mib": 15360}]
    anomaly = {"name": "anomaly_detector", "versions": [3], "footprint": {"gpu_mib": 3600, "host_mib": 300},
               "config": {"instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": [0]}]}}
    small = dict(anomaly, footprint={"gpu_mib": 1000, "host_mib": 300})
    mystery = {"name": "alert_classifier", "versions": [1], "config": {"instance_group": [{"count": 2, "kind": "KIND_CPU"}]}}
    return gpu_budget.budget({"gpu-1": {"gpus": t4, "models": [anomaly, mystery]}, "gpu-2": {"gpus": t4, "models": [small]},
                              "cpu-1": {"gpus": [], "host_memory_mib": 4096, "models": [small]}})


def test_each_hosts_gpu_memory_budget_and_the_hosts_over_it():
    raw = {"rollout_groups": ["triton_wave_1"], "gpu_budget": budget_rows(),
           "hosts": [serving("gpu-1"), serving("gpu-2"), serving("cpu-1"), serving("cpu-2")]}
    report = fleet_report.build(raw, ["inv/prod"])
    hosts = dict((h["host"], h) for h in report["hosts"])
    assert [r["line"] for r in hosts["gpu-1"]["gpu_budget"]] == [
        "GPU 0 (Tesla T4): peak 14,400 of 13,824 MiB available (15,360 less 1,536 headroom): over by 576 MiB; "
        "footprint declared: anomaly_detector v3",
        "host memory: peak 1,200 MiB, capacity unknown; footprint declared: anomaly_detector v3; "
        "footprint unknown: alert_classifier v1 (2 instances)"]
    assert [(r["device"], r["fits"]) for r in hosts["gpu-2"]["gpu_budget"]] == [("GPU 0", True), ("host memory", None)]
    assert hosts["cpu-1"]["gpu_budget"][0]["line"] == ("host memory: peak 1,200 of 3,686 MiB available (4,096 less 410 headroom); "
                                                       "footprint declared: anomaly_detector v3")
    assert hosts["cpu-2"]["gpu_budget"] == []  # no footprint known for it
    # over budget needs a person: the validation play says what to change and refuses the next rollout
    (entry,) = report["exceptions"]
    assert (entry["kind"], entry["hosts"], entry["command"]) == ("gpu-budget", ["gpu-1"], "ansible-playbook -i inv/prod aiops.triton.validate")
    assert entry["reason"] == hosts["gpu-1"]["gpu_budget"][0]["line"]
    assert "attention" in hosts["gpu-1"]["states"] and "attention" not in hosts["gpu-2"]["states"]
    page = fleet_report.render_html(report)
    assert "<th>GPU memory budget</th>" in page
    assert ('<td class="bad">GPU 0 (Tesla T4): peak 14,400 of 13,824 MiB available (15,360 less 1,536 headroom): over by 576 MiB; '
            'footprint declared: anomaly_detector v3; host memory: peak 1,200 MiB, capacity unknown; footprint declared: '
            'anomaly_detector v3; footprint unknown: alert_classifier v1 (2 instances)</td>') in page
    assert "<td>no footprint known</td>" in page


def test_a_raw_file_without_the_budget_says_not_computed():
    report = fleet_report.build({"rollout_groups": ["triton_wave_1"], "hosts": [serving("cpu-1")]})
    assert report["hosts"][0]["gpu_budget"] is None and report["exceptions"] == []
    assert "<td>not computed</td>" in fleet_report.render_html(report)


# --- measured footprints (FOOTPRINT.json in S3, the aiops.triton.model_footprints lookup) ---------------------------
BUCKET = "models-bucket"
ONNX = {"name": "anomaly_detector", "platform": "onnxruntime_onnx", "max_batch_size": 32,
        "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [4]}], "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}],
        "instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": [0]}]}
T4 = [{"name": "Tesla T4", "memory_mib": 15360}]


def measured_entry(model, version, gpu_mib, host_mib=300):
    """One entry of the lookup's footprints, as read_footprints returns it."""
    return {"footprint": {"gpu_mib": gpu_mib, "host_mib": host_mib, "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z"},
            "location": "s3://%s/models/%s/%s/FOOTPRINT.json" % (BUCKET, model, version), "host": "canary-1",
            "measured": "2026-12-06T09:44:20Z"}


def measured_fleet():
    """hostvars, groups and the lookup's answer: gpu-1 measured (3,600 MiB, over), gpu-2 measured (1,000 MiB, fits),
    gpu-3 declared, gpu-4 neither (unknown)."""
    def hv(versions, **extra):
        return dict({"triton_gpus": T4, "triton_models_list": [{"name": "anomaly_detector", "config": ONNX, "versions": versions}]}, **extra)
    hostvars = {"gpu-1": hv([3]), "gpu-2": hv([2]), "gpu-4": hv([4]),
                "gpu-3": hv([3], triton_models_catalog={"anomaly_detector": {"footprint": {"gpu_mib": 1000, "host_mib": 300}}})}
    groups = {"all": sorted(hostvars), "triton_servers": sorted(hostvars)}
    lookup = {"footprints": {"gpu-1": {"anomaly_detector": {"3": measured_entry("anomaly_detector", 3, 3600)}},
                             "gpu-2": {"anomaly_detector": {"2": measured_entry("anomaly_detector", 2, 1000)}},
                             "gpu-3": {"anomaly_detector": {"3": measured_entry("anomaly_detector", 3, 3600)}}},
              "warnings": ["measured footprints not read from S3 (other-bucket): cannot reach the S3 endpoint; versions without a "
                           "declared footprint are unknown"], "reads": 2}
    return hostvars, groups, lookup


def measured_raw():
    """fleet-raw.json as verify.yml writes it with the lookup's answer."""
    hostvars, groups, lookup = measured_fleet()
    budget = gpu_fit.gpu_memory_budget(hostvars, groups, measured=lookup["footprints"])
    return {"rollout_groups": ["triton_wave_1"], "gpu_budget": budget, "measured_footprints": lookup["footprints"],
            "footprint_warnings": lookup["warnings"],
            "hosts": [serving("gpu-1"), serving("gpu-2"), serving("gpu-3"), serving("gpu-4"), serving("cpu-9")]}


def test_a_measured_footprint_says_so_and_where_it_was_read():
    report = fleet_report.build(measured_raw(), ["inv/prod"])
    hosts = dict((h["host"], h) for h in report["hosts"])
    location = "s3://%s/models/anomaly_detector/2/FOOTPRINT.json" % BUCKET
    gpu = hosts["gpu-2"]["gpu_budget"][0]
    assert gpu["line"] == ("GPU 0 (Tesla T4): peak 4,000 of 13,824 MiB available (15,360 less 1,536 headroom); "
                           "footprint measured: anomaly_detector v2 (%s)" % location)
    # the filter's own terms stay, and each model version's footprint source is data too
    assert gpu["terms"] == ["anomaly_detector v2 2×1,000 MiB measured"]
    assert gpu["footprints"] == [{"model": "anomaly_detector", "version": "2", "source": "measured", "location": location,
                                  "measured_on": "canary-1", "measured_at": "2026-12-06T09:44:20Z"}]
    # declared wins over measured, and a version neither declares nor measured is unknown
    assert hosts["gpu-3"]["gpu_budget"][0]["line"].endswith("; footprint declared: anomaly_detector v3")
    assert [f["source"] for f in hosts["gpu-3"]["gpu_budget"][0]["footprints"]] == ["declared"]
    assert hosts["gpu-4"]["gpu_budget"][0]["line"].endswith("; footprint unknown: anomaly_detector v4 (2 instances)")
    assert [f["source"] for f in hosts["gpu-4"]["gpu_budget"][0]["footprints"]] == ["unknown"]
    # the fleet's footprint sources (the filter's lines, hosts named) and the lookup's warnings are in the JSON
    raw = measured_raw()
    assert report["gpu_budget"]["footprints"] == raw["gpu_budget"]["footprints"]
    assert any(line.startswith("footprint anomaly_detector v2: measured (") and location in line for line in report["gpu_budget"]["footprints"])
    assert report["gpu_budget"]["warnings"] == raw["footprint_warnings"] and report["gpu_budget"]["measured"] is True
    page = fleet_report.render_html(report)
    assert "footprint measured: anomaly_detector v2 (%s)" % location in page
    assert "no footprint known" in page and "no footprint declared" not in page  # cpu-9: no budget row
    assert "cannot reach the S3 endpoint" in page
    assert all(fleet_report.fleet_report_page._e(line) in page for line in report["gpu_budget"]["footprints"])


def test_a_host_over_budget_by_a_measured_footprint_is_listed_as_over():
    report = fleet_report.build(measured_raw(), ["inv/prod"])
    hosts = dict((h["host"], h) for h in report["hosts"])
    (row,) = [r for r in hosts["gpu-1"]["gpu_budget"] if r["device"] == "GPU 0"]
    assert (row["fits"], row["over_mib"]) == (False, 576)
    assert row["line"] == ("GPU 0 (Tesla T4): peak 14,400 of 13,824 MiB available (15,360 less 1,536 headroom): over by 576 MiB; "
                           "footprint measured: anomaly_detector v3 (s3://%s/models/anomaly_detector/3/FOOTPRINT.json)" % BUCKET)
    (entry,) = report["exceptions"]
    assert (entry["kind"], entry["hosts"], entry["command"]) == ("gpu-budget", ["gpu-1"], "ansible-playbook -i inv/prod aiops.triton.validate")
    assert entry["reason"] == row["line"]
    # without the measured footprints the same fleet is unknown there and nothing is over
    hostvars, groups, _lookup = measured_fleet()
    plain = dict(measured_raw(), gpu_budget=gpu_fit.gpu_memory_budget(hostvars, groups))
    assert fleet_report.build(plain, ["inv/prod"])["exceptions"] == []


def _plays(name):
    with open(os.path.join(ROOT, "playbooks", name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_verify_passes_the_measured_footprints_as_validate_reads_them():
    def footprint_fact(tasks):
        (task,) = [t for t in tasks if "aiops.triton.model_footprints" in str(t.get("ansible.builtin.set_fact"))]
        ((fact, expression),) = task["ansible.builtin.set_fact"].items()
        return fact, expression
    _fact, validate_lookup = footprint_fact([t for play in _plays("validate.yml") for t in play.get("tasks", [])])
    (controller,) = [p for p in _plays("verify.yml") if p["hosts"] == "localhost"]
    fact, verify_lookup = footprint_fact(controller["tasks"])
    assert verify_lookup == validate_lookup  # the same lookup, the same arguments
    (write,) = [t for t in controller["tasks"] if str(t.get("ansible.builtin.copy", {}).get("dest", "")).endswith("fleet-raw.json")]
    content = write["ansible.builtin.copy"]["content"]
    assert "measured=%s.footprints" % fact in content and "aiops.triton.gpu_memory_budget(" in content
    assert "'footprint_warnings': %s.warnings" % fact in content
    assert "'measured_footprints': %s.footprints" % fact in content
    # read before the raw file is written
    reads = [i for i, t in enumerate(controller["tasks"]) if "aiops.triton.model_footprints" in str(t.get("ansible.builtin.set_fact"))]
    assert reads[0] < controller["tasks"].index(write)
