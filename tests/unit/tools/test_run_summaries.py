"""The run summaries (aiops.triton.rolling_summary for triton_server.yml, reboot.yml, quarantine.yml, the driver
upgrade; aiops.triton.rollout_summary for models.yml): counts per rollout group first, then only the hosts that need
a person, then where the full per-host list is. At 1,000 hosts a failed host is not one line among 1,000."""

import json

from ansible_collections.aiops.triton.plugins.filter.fleet import rollout_summary, rollout_summary_hosts
from ansible_collections.aiops.triton.plugins.filter.rolling import rolling_summary, rolling_summary_hosts

GROUPS = ["triton_canary", "triton_wave_1", "triton_wave_2"]


def fleet(count):
    """(hostvars with the plan on localhost, hosts in plan order): 10 canary hosts, the rest alternating between the waves."""
    members = dict((g, []) for g in GROUPS)
    for index in range(count):
        members[GROUPS[0] if index < 10 else GROUPS[1 + index % 2]].append("h-%04d" % index)
    order = [h for g in GROUPS for h in members[g]]
    plan = {"groups": [{"name": g, "hosts": members[g]} for g in GROUPS], "order": order}
    return {"localhost": {"triton_rollout_plan": plan}}, order, members


def test_a_rolling_run_over_1000_hosts_prints_counts_and_the_two_hosts_to_look_at():
    hostvars, order, members = fleet(1000)
    for host in order:
        group = next(g for g in GROUPS if host in members[g])
        hostvars[host] = {"triton_rolling_result": {"host": host, "group": group, "operation": "reboot", "outcome": "done"}}
    hostvars["h-0501"]["triton_rolling_result"].update(outcome="failed, left drained", error="Triton did not become ready in 300 s")
    # quarantine.yml's own outcome carries no group: the plan names it
    hostvars["h-0600"] = {"triton_rolling_result": {"host": "h-0600", "operation": "quarantine",
                                                    "outcome": "quarantined, left drained: release it with playbooks/undrain.yml once it is healthy"}}
    for host in members["triton_wave_1"][-100:]:  # the run stopped before their batch
        del hostvars[host]["triton_rolling_result"]
    lines = rolling_summary(hostvars, order, details="/work/build/run-summary/reboot.json")
    assert lines == [
        "triton_canary: 10 hosts, 10 done, 0 failed, 0 left drained",
        "triton_wave_1: 495 hosts, 395 done, 0 failed, 1 left drained, 100 not reached",
        "triton_wave_2: 495 hosts, 494 done, 1 failed, 1 left drained",
        "h-0600 [triton_wave_1]: quarantined, left drained: release it with playbooks/undrain.yml once it is healthy",
        "h-0501 [triton_wave_2]: failed, left drained: Triton did not become ready in 300 s",
        "every host: /work/build/run-summary/reboot.json",
    ]
    rows = rolling_summary_hosts(hostvars, order)
    assert len(rows) == 1000 and [r["host"] for r in rows] == order
    by_host = dict((r["host"], r) for r in json.loads(json.dumps(rows)))
    assert by_host["h-0510"] == {"host": "h-0510", "group": "triton_wave_1", "counts": ["done"], "needs_person": False,
                                 "line": "h-0510 [triton_wave_1]: done", "result": hostvars["h-0510"]["triton_rolling_result"]}
    assert by_host["h-0998"]["counts"] == ["not reached"] and by_host["h-0998"]["result"] is None


def test_triton_server_yml_names_a_host_set_up_but_still_out_of_traffic():
    hostvars, order, _members = fleet(12)
    for host in order:
        hostvars[host] = {"triton_rolling_result": {"host": host, "group": "triton_canary" if host < "h-0010" else "triton_wave_1",
                                                    "outcome": "unchanged"}}
    hostvars["h-0003"]["triton_rolling_result"]["outcome"] = (
        "set up (was not serving); still out of traffic (drained): put it back with playbooks/undrain.yml")
    hostvars["h-0011"]["triton_rolling_result"]["outcome"] = "set up (was not serving)"
    assert rolling_summary(hostvars, order) == [
        "triton_canary: 10 hosts, 0 done, 9 unchanged, 1 set up, 0 failed, 1 left drained",
        "triton_wave_1: 2 hosts, 0 done, 1 unchanged, 1 set up, 0 failed, 0 left drained",
        "h-0003 [triton_canary]: set up (was not serving); still out of traffic (drained): put it back with playbooks/undrain.yml",
    ]


def test_a_rollout_over_1000_hosts_counts_changes_and_names_the_rolled_back_canary():
    hostvars, order, members = fleet(1000)
    move = [{"name": "anomaly_detector", "from": [2], "to": [3]}, {"name": "alert_classifier", "from": [1], "to": [1]}]
    for group in GROUPS:
        for host in members[group]:
            hostvars[host] = {"triton_rollout_result": {"group": group, "status": "changed", "models": move, "error": "", "failure": {}}}
    hostvars["h-0002"]["triton_rollout_result"] = {
        "group": "triton_canary", "status": "rolled back", "models": [{"name": "anomaly_detector", "from": [2], "to": [2]}],
        "error": "anomaly_detector: version 3: golden case 'cpu_spike' over grpc: wrong", "failure": {}}
    hostvars["h-0004"]["triton_rollout_result"] = {"group": "triton_canary", "status": "unchanged", "models": [], "error": "", "failure": {}}
    for host in members["triton_wave_1"] + members["triton_wave_2"]:  # the rollout stopped at the canary
        del hostvars[host]["triton_rollout_result"]
    lines = rollout_summary(hostvars, order, details="build/run-summary/models.json")
    assert lines == [
        "triton_canary: 10 hosts, 8 changed, 1 unchanged, 1 rolled back, 0 left drained",
        "triton_wave_1: 495 hosts, 0 changed, 0 rolled back, 0 left drained, 495 not reached",
        "triton_wave_2: 495 hosts, 0 changed, 0 rolled back, 0 left drained, 495 not reached",
        "triton_canary: anomaly_detector [2] -> [3] on 8 hosts",
        # the per-host line as before: molecule's scenario checks read the rollback's reason from it
        "h-0002 [triton_canary]: rolled back: anomaly_detector [2] -> [2] -- anomaly_detector: version 3: golden case 'cpu_spike' over grpc: wrong",
        "every host: build/run-summary/models.json",
    ]
    rows = rollout_summary_hosts(hostvars, order)
    assert [r["host"] for r in rows if r["needs_person"]] == ["h-0002"] and rows[-1]["counts"] == ["not reached"]


def test_a_gpu_host_fault_in_a_rollout_needs_a_person():
    hostvars, order, _members = fleet(3)
    hostvars["h-0000"] = {"triton_rollout_result": {"group": "triton_canary", "status": "changed", "error": "",
                                                    "models": [{"name": "m", "from": [], "to": [1]}]}}
    hostvars["h-0001"] = {"triton_rollout_result": {"group": "triton_canary", "status": "host fault, not model fault: left drained",
                                                    "models": [], "error": "GPU 3: Xid 79"}}
    hostvars["h-0002"] = {"triton_rollout_result": {"group": "triton_canary", "status": "unchanged", "models": [], "error": ""}}
    assert rollout_summary(hostvars, order) == [
        "triton_canary: 3 hosts, 1 changed, 1 unchanged, 0 rolled back, 1 left drained",
        "triton_canary: m [] -> [1] on 1 host",
        "h-0001 [triton_canary]: host fault, not model fault: left drained -- GPU 3: Xid 79",
    ]
