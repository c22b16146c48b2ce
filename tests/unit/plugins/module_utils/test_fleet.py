"""The fleet as desired state: desired model sets, rollout plans, inventory problems."""

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import fleet

CONFIG = {"name": "m", "backend": "python", "max_batch_size": 0,
          "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1]}],
          "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}]}
ENSEMBLE = {"name": "e", "platform": "ensemble", "max_batch_size": 0,
            "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1]}],
            "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}],
            "ensemble_scheduling": {"step": [{"model_name": "m", "model_version": -1,
                                              "input_map": {"x": "x"}, "output_map": {"y": "y"}}]}}


def test_versions_are_pinned_exactly():
    [model] = fleet.desired_models([{"name": "m", "versions": [3, 2], "config": CONFIG}])
    assert model["config"]["version_policy"] == {"specific": {"versions": [2, 3]}}
    assert model["state"] == "present" and model["ensemble"] is False
    assert "version_policy" not in CONFIG, "the input is not modified"


def test_ensembles_get_no_version_policy():
    models = fleet.desired_models([{"name": "m", "versions": [1], "config": CONFIG},
                                   {"name": "e", "versions": [1], "config": ENSEMBLE}])
    assert "version_policy" not in models[1]["config"] and models[1]["ensemble"]


def test_latest_without_resolution_serves_the_newest_n():
    [model] = fleet.desired_models([{"name": "m", "latest": 2, "config": CONFIG}])
    assert model["config"]["version_policy"] == {"latest": {"num_versions": 2}}
    assert model["latest_key"] == "m:2" and not model["resolved"]
    [model] = fleet.desired_models([{"name": "m", "latest": 1, "config": CONFIG}], resolved={"m:1": [7], "m:2": [6, 7]})
    assert model["config"]["version_policy"] == {"specific": {"versions": [7]}}
    assert model["resolved"] and model["versions"] == [7]


def test_catalog_supplies_config_and_the_group_only_versions():
    catalog = {"m": {"config": CONFIG, "versions": [9], "latency_budget": {"p99_ms": 5}}}
    [model] = fleet.desired_models([{"name": "m", "versions": [1]}], catalog)
    assert model["versions"] == [1] and model["latency_budget"] == {"p99_ms": 5}
    assert model["config"]["name"] == "m"


@pytest.mark.parametrize("entry, message", [
    ({"name": "m", "config": CONFIG}, "needs exactly one of versions or latest"),
    ({"name": "m", "versions": [1], "latest": 1, "config": CONFIG}, "needs exactly one of versions or latest"),
    ({"name": "m", "versions": [], "config": CONFIG}, "non-empty list of distinct positive integers"),
    ({"name": "m", "versions": [1, 1], "config": CONFIG}, "non-empty list of distinct positive integers"),
    ({"name": "m", "versions": [True], "config": CONFIG}, "non-empty list of distinct positive integers"),
    ({"name": "m", "latest": 0, "config": CONFIG}, "latest must be a positive integer"),
    ({"name": "m", "versions": [1]}, "config (Triton ModelConfig as data) is missing"),
    ({"name": "m", "versions": [1], "config": dict(CONFIG, name="other")}, "config.name 'other' differs from name 'm'"),
    ({"name": "m", "versions": [1], "config": dict(CONFIG, version_policy={"all": {}})}, "version_policy is derived from versions"),
    ({"name": "m", "versions": [1], "config": CONFIG, "verison": 2}, "unknown key(s) verison"),
    ({"name": "m", "versions": [1], "config": CONFIG, "state": "gone"}, "state must be present or absent"),
])
def test_malformed_entries_are_named(entry, message):
    with pytest.raises(fleet.FleetError) as exc:
        fleet.desired_models([entry])
    assert message in str(exc.value)
    assert "triton_models_list[0] (m)" in str(exc.value)


def test_absent_entry_needs_no_versions():
    [model] = fleet.desired_models([{"name": "m", "state": "absent", "config": CONFIG}])
    assert model["state"] == "absent"


def test_present_models_keeps_present_entries_merged_over_the_catalog():
    catalog = {"m": {"config": CONFIG, "footprint": {"gpu_mib": 100}}}
    entries = [{"name": "m", "versions": [2]}, {"name": "gone", "state": "absent", "config": dict(CONFIG, name="gone")}]
    [model] = fleet.present_models(entries, catalog)
    assert model["name"] == "m" and model["versions"] == [2] and model["footprint"] == {"gpu_mib": 100}


@pytest.mark.parametrize("entries, catalog", [
    ([{"name": "m", "config": CONFIG}], {}),  # FleetError: neither versions nor latest
    ("m", {}),  # not a list
    ([{"name": "m", "versions": [1]}], {"m": "not a mapping"}),
])
def test_present_models_is_empty_when_the_inventory_cannot_say(entries, catalog):
    assert fleet.present_models(entries, catalog) == []


def test_present_models_merges_each_list_and_catalog_once():
    cache = {}
    entries = [{"name": "m", "versions": [1], "config": CONFIG}]
    first = fleet.present_models(entries, {}, cache)
    assert fleet.present_models([dict(entries[0])], {}, cache) is first, "an equal list and catalog: the cached set"
    assert fleet.present_models([dict(entries[0], versions=[2])], {}, cache) is not first
    assert len(cache) == 2


@pytest.mark.parametrize("count, serial, batches", [
    (1, 1, [1]), (2, 1, [1, 1]), (3, 2, [2, 1]), (4, "50%", [2, 2]), (3, "50%", [1, 1, 1]),
    (2, "100%", [2]), (5, 9, [5]), (1, "10%", [1]), (0, 1, []), (3, "2", [2, 1]),
])
def test_batches_never_empty_never_larger_than_the_group(count, serial, batches):
    assert fleet.batch_sizes(count, serial) == batches


@pytest.mark.parametrize("serial", ["half", "50", True, "-1%"])
def test_bad_serial_is_refused(serial):
    if serial == "50":
        assert fleet.batch_sizes(4, serial) == [4]
        return
    with pytest.raises(fleet.FleetError):
        fleet.batch_sizes(4, serial)


def test_plan_orders_groups_and_keeps_batches_inside_a_group():
    membership = {"triton_canary": ["c1"], "triton_wave_1": ["w1", "w2", "w3"]}
    plan = fleet.rollout_plan(["w1", "w2", "w3", "c1"], membership, ["triton_canary", "triton_wave_1"],
                              {"triton_canary": 1, "triton_wave_1": 2})
    assert plan["pattern"] == "triton_canary:triton_wave_1"
    assert plan["order"] == ["c1", "w1", "w2", "w3"]
    assert plan["batches"] == [1, 2, 1]
    assert [g["batches"] for g in plan["groups"]] == [[1], [2, 1]]


def test_rollout_groups_default_to_all_servers():
    assert fleet.rollout_groups(None) == ["triton_servers"]
    with pytest.raises(fleet.FleetError):
        fleet.rollout_groups(["g", "g"])
    with pytest.raises(fleet.FleetError):
        fleet.rollout_groups("triton_canary")


def _hosts(**lists):
    return dict((h, {"variables": ["triton_models_list"], "triton_models_list": lst, "required": {"triton_server_api_key": "k"}})
                for h, lst in lists.items())


def test_check_fleet_valid():
    models = [{"name": "m", "versions": [1], "config": CONFIG}, {"name": "e", "versions": [1], "config": ENSEMBLE}]
    hosts = _hosts(a=models, b=models)
    assert fleet.check_fleet(hosts, ["g1", "g2"], {"g1": ["a"], "g2": ["b"]}, {"triton_models_list"}) == []


def test_check_fleet_names_each_problem():
    models = [{"name": "m", "versions": [1], "config": CONFIG}]
    hosts = _hosts(a=models, b=None, c=models)
    hosts["c"]["variables"].append("triton_model_list")
    hosts["c"]["required"]["triton_server_api_key"] = ""
    problems = fleet.check_fleet(hosts, ["g1", "g2", "g3"], {"g1": ["a", "c"], "g2": ["b", "c"]}, {"triton_models_list"})
    text = "\n".join(problems)
    assert "host c must be in exactly one rollout group of ['g1', 'g2', 'g3'], is in ['g1', 'g2']" in text
    assert "rollout group g2: no triton_models_list for host(s) b, c" not in text  # c has a list
    assert "rollout group g2: no triton_models_list for host(s) b" in text
    assert "rollout group g3 (in triton_rollout_groups) is not an inventory group" in text
    assert "host c: unknown variable triton_model_list (did you mean triton_models_list?)" in text
    assert "host c: triton_server_api_key is required and empty" in text


def test_ensemble_calling_a_model_the_group_does_not_serve():
    problems = fleet.check_model_set([{"name": "e", "versions": [1], "config": ENSEMBLE}], None, "rollout group g")
    assert len(problems) == 1 and problems[0].startswith("rollout group g: model e:"), problems


def test_model_listed_twice():
    models = [{"name": "m", "versions": [1], "config": CONFIG}, {"name": "m", "versions": [2], "config": CONFIG}]
    assert "rollout group g: model m is listed twice" in fleet.check_model_set(models, None, "rollout group g")


def test_summary_lines():
    lines = fleet.summary_lines([
        ("a", {"group": "g1", "status": "changed", "models": [{"name": "m", "from": [1], "to": [2]}]}),
        ("b", {"group": "g2", "status": "rolled back", "models": [], "error": "golden case failed"}),
        ("c", None)])
    assert lines == ["a [g1]: changed: m [1] -> [2]", "b [g2]: rolled back -- golden case failed",
                     "c: not reached (the rollout stopped before its batch)"]
