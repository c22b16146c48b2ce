"""The rolling flow's filters: the per-host summary and drain.yml's refusal to empty a rollout group."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.rolling import drain_refusals, rolling_summary

GROUPS = {"triton_canary": ["lab-1"], "triton_wave_1": ["lab-2", "lab-3", "lab-4"]}
ORDER = ["triton_canary", "triton_wave_1"]


def test_summary_counts_per_group_in_plan_order_and_names_only_the_failed_host():
    hostvars = {
        "lab-2": {"triton_rolling_result": {"group": "triton_wave_1", "outcome": "failed, left drained", "error": "not ready"}},
        "lab-1": {"triton_rolling_result": {"group": "triton_canary", "outcome": "done"}},
        "lab-3": {},
        "localhost": {"triton_rollout_plan": {"groups": [{"name": "triton_canary", "hosts": ["lab-1"]},
                                                         {"name": "triton_wave_1", "hosts": ["lab-2", "lab-3"]}]}},
    }
    assert rolling_summary(hostvars, ["lab-1", "lab-2", "lab-3"]) == [
        "triton_canary: 1 hosts, 1 done, 0 failed, 0 left drained",
        "triton_wave_1: 2 hosts, 0 done, 1 failed, 1 left drained, 1 not reached",
        "lab-2 [triton_wave_1]: failed, left drained: not ready",
    ]


def test_a_check_mode_summary_counts_what_would_change_and_claims_nothing_done():
    # --check on playbooks/triton_server.yml: the check pass notes every host's outcome, no batch runs
    hostvars = {
        "lab-1": {"triton_rolling_result": {"group": "triton_canary", "outcome": "would change; Triton would restart, drained first"}},
        "lab-2": {"triton_rolling_result": {"group": "triton_wave_1", "outcome": "would be set up (not serving)"}},
        "lab-3": {"triton_rolling_result": {"group": "triton_wave_1", "outcome": "unchanged"}},
    }
    assert rolling_summary(hostvars, ["lab-1", "lab-2", "lab-3"]) == [
        "triton_canary: 1 hosts, 0 done, 1 would change, 0 failed, 0 left drained",
        "triton_wave_1: 2 hosts, 0 done, 1 unchanged, 1 would change, 0 failed, 0 left drained",
    ]


def test_summary_refuses_a_host_list_that_is_not_a_list():
    with pytest.raises(AnsibleFilterError):
        rolling_summary({}, "lab-1")


def test_draining_one_of_several_up_hosts_is_allowed():
    states = {"lab-2": "up", "lab-3": "up", "lab-4": "drained"}
    assert drain_refusals(["lab-2"], GROUPS, ORDER, states) == []


def test_draining_the_last_up_host_of_a_group_is_refused_and_named():
    states = {"lab-2": "up", "lab-3": "drained", "lab-4": "down"}
    assert drain_refusals(["lab-2"], GROUPS, ORDER, states) == [
        "triton_wave_1 would have no host up (draining lab-2; others: lab-3 drained, lab-4 down)"]


def test_a_group_of_one_cannot_be_drained_and_other_groups_do_not_count():
    assert drain_refusals(["lab-1"], GROUPS, ORDER, {"lab-1": "up", "lab-2": "up"}) == [
        "triton_canary would have no host up (draining lab-1)"]


def test_peers_of_unknown_state_do_not_count_as_serving():
    assert drain_refusals(["lab-2", "lab-3"], GROUPS, ORDER, {"lab-2": "up", "lab-3": "up"}) == [
        "triton_wave_1 would have no host up (draining lab-2, lab-3; state unknown: lab-4)"]


def test_groups_without_a_drained_host_are_left_alone():
    assert drain_refusals(["lab-2"], GROUPS, ORDER, {"lab-3": "up", "lab-1": "down"}) == []


def test_a_host_that_serves_nothing_already_takes_no_traffic_away():
    # the only host of a group, its Triton dead (HAProxy: down): restarting it is what brings the group back
    for state in ("down", "drained", "maint"):
        assert drain_refusals(["lab-1"], GROUPS, ORDER, {"lab-1": state}) == [], state
    assert drain_refusals(["lab-2", "lab-3", "lab-4"], GROUPS, ORDER, {"lab-2": "down", "lab-3": "drained", "lab-4": "maint"}) == []


def test_a_host_of_unknown_state_may_be_serving_and_is_refused():
    assert drain_refusals(["lab-1"], GROUPS, ORDER, {"lab-1": "unknown"}) == ["triton_canary would have no host up (draining lab-1)"]
    assert drain_refusals(["lab-1"], GROUPS, ORDER, {}) == ["triton_canary would have no host up (draining lab-1)"]
    # one serving host among the drained ones is enough to refuse
    assert drain_refusals(["lab-2", "lab-3", "lab-4"], GROUPS, ORDER, {"lab-2": "down", "lab-3": "up", "lab-4": "down"}) == [
        "triton_wave_1 would have no host up (draining lab-2, lab-3, lab-4)"]
