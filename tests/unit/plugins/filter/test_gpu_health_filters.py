"""The GPU-health gates' fleet decisions: the cap per rollout group, the canary with no healthy host."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.gpu_health import gpu_health_faults, gpu_health_refusals, max_unhealthy

GROUPS = {"triton_canary": ["lab-1"], "triton_wave_1": ["lab-2", "lab-3", "lab-4"]}
ORDER = ["triton_canary", "triton_wave_1"]
ALL = ["lab-1", "lab-2", "lab-3", "lab-4"]
REMAP = "GPU 0 (00000000:4E:00.0): row remap pending, reset required"


def health(verdict, *reasons, quarantined=None):
    """The fact as nvidia_gpu_health returns it: quarantined a bool, its record in quarantine."""
    return {"triton_gpu_health": {"verdict": verdict, "reasons": list(reasons), "quarantined": quarantined is not None,
                                  "quarantine": quarantined}}


def fleet(**faults):
    hv = dict((h, health("healthy")) for h in ALL)
    hv.update(faults)
    return hv


def test_a_healthy_fleet_goes_on():
    assert gpu_health_refusals(fleet(), GROUPS, ORDER, ALL, 1) == []


def test_degraded_is_no_fault():
    assert gpu_health_refusals(fleet(**{"lab-1": health("degraded", "PCIe link x8, capable of x16")}), GROUPS, ORDER, ALL, 0) == []


def test_one_wave_host_within_the_cap_goes_on_and_is_named_as_a_fault():
    hv = fleet(**{"lab-3": health("unhealthy", REMAP)})
    assert gpu_health_refusals(hv, GROUPS, ORDER, ALL, 1) == []
    assert gpu_health_faults(hv, ALL) == [{"host": "lab-3", "reasons": REMAP}]


def test_more_faults_than_the_cap_stop_the_run_with_every_reason():
    hv = fleet(**{"lab-2": health("unhealthy", "GPU 0: fallen off the bus (Xid 79)"), "lab-3": health("unhealthy", REMAP)})
    problems = gpu_health_refusals(hv, GROUPS, ORDER, ALL, 1)
    assert len(problems) == 1
    assert problems[0].startswith("triton_wave_1: 2 of 3 hosts are out for a host fault")
    assert "lab-2: GPU 0: fallen off the bus (Xid 79)" in problems[0] and REMAP in problems[0]
    assert "allows (1)" in problems[0]


def test_a_quarantined_host_counts_against_the_cap():
    hv = fleet(**{"lab-2": health("healthy", quarantined={"reason": "Xid 79 alert"}), "lab-4": health("unhealthy", REMAP)})
    problems = gpu_health_refusals(hv, GROUPS, ORDER, ALL, 1)
    assert len(problems) == 1 and "lab-2: quarantined (Xid 79 alert)" in problems[0]


def test_a_canary_with_no_healthy_host_stops_the_rollout():
    problems = gpu_health_refusals(fleet(**{"lab-1": health("unhealthy", REMAP)}), GROUPS, ORDER, ALL, 1)
    assert problems == ["triton_canary (the canary) has no healthy host to prove the change on (lab-1: %s)" % REMAP]


def test_the_canary_is_the_first_group_with_a_host_in_the_run():
    # --limit to wave_1: its own hosts are then the first to change; one healthy host there is enough
    hv = fleet(**{"lab-1": health("unhealthy", REMAP), "lab-2": health("unhealthy", REMAP)})
    assert gpu_health_refusals(hv, GROUPS, ORDER, ["lab-2", "lab-3"], 1) == []
    assert gpu_health_refusals(hv, GROUPS, ORDER, ["lab-2"], 1) == [
        "triton_wave_1 (the canary) has no healthy host to prove the change on (lab-2: %s)" % REMAP]


def test_without_the_canary_rule_only_the_cap_counts():
    assert gpu_health_refusals(fleet(**{"lab-1": health("unhealthy", REMAP)}), GROUPS, ORDER, ALL, 1, False) == []


def test_a_host_never_read_is_not_counted():
    hv = fleet()
    del hv["lab-4"]
    assert gpu_health_refusals(hv, GROUPS, ORDER, ALL, 0) == []


@pytest.mark.parametrize("limit,members,allowed", [(1, 3, 1), ("2", 3, 2), ("25%", 8, 2), ("25%", 3, 1), ("0%", 4, 1),
                                                   ("100%", 4, 4), (0, 4, 0)])
def test_the_cap_as_a_count_or_a_percentage(limit, members, allowed):
    assert max_unhealthy(limit, members) == allowed


@pytest.mark.parametrize("limit", ["many", "-1", "150%", "x%"])
def test_a_bad_cap_is_refused_with_the_variable_named(limit):
    with pytest.raises(AnsibleFilterError, match="triton_gpu_health_max_unhealthy"):
        max_unhealthy(limit, 3)


def test_quarantine_within_the_cap_is_allowed():
    from ansible_collections.aiops.triton.plugins.filter.gpu_health import quarantine_refusals
    states = {"lab-1": "up", "lab-2": "up", "lab-3": "up", "lab-4": "up"}
    assert quarantine_refusals(["lab-3"], GROUPS, ORDER, states, 1) == []


def test_a_storm_quarantines_nothing_beyond_the_cap():
    from ansible_collections.aiops.triton.plugins.filter.gpu_health import quarantine_refusals
    states = {"lab-1": "up", "lab-2": "drained", "lab-3": "up", "lab-4": "up"}
    assert quarantine_refusals(["lab-3"], GROUPS, ORDER, states, 1) == [
        "triton_wave_1: quarantining lab-3 would put 2 of 3 hosts out of traffic (already out: lab-2 drained), "
        "more than triton_gpu_health_max_unhealthy allows (1)"]
    assert len(quarantine_refusals(["lab-2", "lab-3", "lab-4"], GROUPS, ORDER, dict(states, **{"lab-2": "up"}), "50%")) == 1
