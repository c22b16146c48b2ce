"""staging_plan: which candidates a host stages before a changed model serves, in load order."""

from ansible_collections.aiops.triton.plugins.module_utils import fleet

MODEL = {"name": "m", "config": {"name": "m", "backend": "python", "instance_group": [{"kind": "KIND_CPU", "count": 2}]},
         "versions": [3], "ensemble": False}
OTHER = {"name": "o", "config": {"name": "o", "backend": "python"}, "versions": [1], "ensemble": False}
INNER = {"name": "e", "versions": [1], "ensemble": True,
         "config": {"name": "e", "platform": "ensemble", "ensemble_scheduling": {"step": [{"model_name": "m"}, {"model_name": "o"}]}}}
OUTER = {"name": "outer", "versions": [1], "ensemble": True,
         "config": {"name": "outer", "platform": "ensemble", "ensemble_scheduling": {"step": [{"model_name": "e"}]}}}


def test_changed_models_then_the_ensembles_that_call_them_over_the_candidates():
    plan = fleet.staging_plan([OUTER, MODEL, OTHER, INNER], {"m"})
    assert [p["candidate"] for p in plan] == ["m__candidate", "e__candidate", "outer__candidate"]
    assert plan[0]["config"]["name"] == "m__candidate"
    assert plan[0]["config"]["instance_group"] == [{"kind": "KIND_CPU", "count": 1}], "one instance per group"
    assert MODEL["config"]["instance_group"][0]["count"] == 2, "the real config is untouched"
    steps = [s["model_name"] for s in plan[1]["config"]["ensemble_scheduling"]["step"]]
    assert steps == ["m__candidate", "o"], "a staged model is called as its candidate, the others as they serve"
    assert plan[2]["config"]["ensemble_scheduling"]["step"][0]["model_name"] == "e__candidate"
    assert INNER["config"]["ensemble_scheduling"]["step"][0]["model_name"] == "m"


def test_nothing_changed_nothing_staged_and_an_ensemble_alone_is_staged_over_the_serving_models():
    assert fleet.staging_plan([MODEL, OTHER, INNER], set()) == []
    plan = fleet.staging_plan([MODEL, OTHER, INNER], {"e"})
    assert [p["candidate"] for p in plan] == ["e__candidate"]
    assert [s["model_name"] for s in plan[0]["config"]["ensemble_scheduling"]["step"]] == ["m", "o"]


def test_verify_and_latency_budget_carry_over():
    plan = fleet.staging_plan([dict(MODEL, verify=False, latency_budget={"p99_ms": 5})], {"m"})
    assert plan[0]["verify"] is False and plan[0]["latency_budget"] == {"p99_ms": 5}


def test_a_real_model_name_may_not_end_in_the_candidate_suffix():
    assert any("reserved" in p for p in fleet._entry_problems({"name": "x__candidate", "versions": [1], "config": {}}, "g"))
