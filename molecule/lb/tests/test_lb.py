"""The rolling operations of the side effect (files/rolling_under_load.py), from its results file, and the
hosts after them: a broken model and a broken server change stopped at the canary, the canary fixed and put
back, every host serving.

The driver asserts as it goes; these tests read what it recorded so a failed promise is named here too.
"""

import json
import os

import pytest

RESULTS = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""), "lb_results.json")
HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
STEPS = ["no_change_site", "a_flag_change_site", "b_rolling_reboot", "c_model_rollout", "c_broken_model",
         "d_broken_canary", "e_drain_refused", "e_drain_one", "e_undrain_one", "f_repair_canary", "f_undrain_canary"]


@pytest.fixture(scope="module")
def results():
    with open(RESULTS) as handle:
        return json.load(handle)


@pytest.mark.parametrize("step", STEPS)
def test_no_request_through_the_load_balancer_failed(results, step):
    entry = results["steps"][step]
    assert entry["failed"] == 0, [c["errors"] for c in entry["clients"]]
    assert all(c["ok"] > 0 for c in entry["clients"])
    assert {c["protocol"] for c in entry["clients"]} == {"grpc", "http"}


@pytest.mark.parametrize("step", ["a_flag_change_site", "b_rolling_reboot"])
def test_every_host_went_out_of_traffic_one_batch_at_a_time(results, step):
    entry = results["steps"][step]
    assert entry["rc"] == 0
    assert not entry["batch_rule_broken"]
    out = [set(s) for s in entry["out_of_traffic"]]
    assert set(HOSTS) == set().union(*out), "every host was drained at some point"
    assert entry["max_out"] <= 2  # the largest batch of the plan


def test_a_site_run_that_changes_nothing_drains_and_restarts_nothing(results):
    entry = results["steps"]["no_change_site"]
    assert entry["rc"] == 0 and entry["max_out"] == 0
    assert entry["before"]["pid"] == entry["after"]["pid"]
    assert all(entry["changed"][h] == 0 for h in HOSTS)


def test_the_flag_change_restarted_every_host(results):
    entry = results["steps"]["a_flag_change_site"]
    assert all(entry["before"]["pid"][h] != entry["after"]["pid"][h] for h in HOSTS)


def test_the_rolling_reboot_rebooted_every_host(results):
    entry = results["steps"]["b_rolling_reboot"]
    assert all(entry["before"]["boot"][h] != entry["after"]["boot"][h] for h in HOSTS)


def test_the_model_rollout_restarted_nothing(results):
    entry = results["steps"]["c_model_rollout"]
    assert entry["rc"] == 0 and entry["before"]["pid"] == entry["after"]["pid"]


def test_a_broken_model_version_stops_at_the_canary(results):
    entry = results["steps"]["c_broken_model"]
    assert entry["rc"] != 0 and entry["before"]["pid"] == entry["after"]["pid"]
    assert all(v == [2] for v in entry["serving"].values()), entry["serving"]
    assert all(3 not in v for v in entry["wave_1_on_disk"].values()), entry["wave_1_on_disk"]
    # rolled back for v3's own golden cases, not for a failure at sync or load
    assert entry["golden_cases_failed"] and set(entry["golden_cases_failed"]) <= set(entry["broken_cases"])


def test_the_fixed_canary_is_set_up_then_put_back_only_by_undrain(results):
    repaired, back = results["steps"]["f_repair_canary"], results["steps"]["f_undrain_canary"]
    assert repaired["rc"] == 0 and repaired["last_states"]["roll-1"] == "drained"
    assert repaired["after"]["pid"]["roll-1"] not in ("0", repaired["before"]["pid"]["roll-1"])
    assert back["rc"] == 0 and all(back["last_states"][h] == "up" for h in HOSTS)


def test_a_broken_server_change_stops_at_the_canary_which_stays_drained(results):
    entry = results["steps"]["d_broken_canary"]
    assert entry["rc"] != 0
    assert entry["last_states"]["roll-1"] == "drained"
    assert all(entry["last_states"][h] == "up" for h in HOSTS[1:])
    assert all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in HOSTS[1:])
    assert any(line.startswith("roll-1 [triton_canary]: failed, left drained") for line in entry["summary"])


def test_drain_refuses_to_empty_a_rollout_group_then_drains_and_undrains_one_host(results):
    refused, drained, back = (results["steps"][s] for s in ("e_drain_refused", "e_drain_one", "e_undrain_one"))
    assert refused["rc"] != 0 and all(refused["last_states"][h] == "up" for h in HOSTS[1:])
    assert drained["rc"] == 0 and drained["last_states"]["roll-2"] == "drained"
    assert back["rc"] == 0 and back["last_states"]["roll-2"] == "up"
