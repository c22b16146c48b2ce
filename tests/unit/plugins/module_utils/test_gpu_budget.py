"""The GPU memory budget's arithmetic (module_utils/gpu_budget.py): Triton's instance placement, instances x footprint
per version, a rollout's peak (the staged candidates, one instance per group, or the largest reload, whose new set
Triton loads beside the serving one), headroom, unknown footprints, the refusal's advice, and the table."""

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import fleet
from ansible_collections.aiops.triton.plugins.module_utils import gpu_budget as gb

T4 = [{"index": 0, "name": "Tesla T4", "memory_mib": 16384}]


def model(name, versions, groups, fp=None):
    data = {"name": name, "versions": versions, "config": {"name": name, "instance_group": groups}}
    if fp is not None:
        data["footprint"] = fp
    return data


ANOMALY = model("anomaly_detector", [2], [{"count": 2, "kind": "KIND_GPU", "gpus": [0]}],
                {2: {"gpu_mib": 1200, "host_mib": 250}, 3: {"gpu_mib": 1300, "host_mib": 260}})
CLASSIFIER = model("alert_classifier", [1], [{"count": 2, "kind": "KIND_CPU"}], {"gpu_mib": 0, "host_mib": 900})
RANKER = model("ranker", [5], [{"count": 1, "kind": "KIND_GPU"}], {"gpu_mib": 10000, "host_mib": 400})


def host(models, gpus=None, memory=65536, **extra):
    data = {"gpus": T4 if gpus is None else gpus, "host_memory_mib": memory, "models": models}
    data.update(extra)
    return data


def rows_by_device(result):
    return dict((r["device"], r) for r in result["rows"])


# --- placement (Triton's ModelInstanceGroup) ------------------------------------------------------------------------

def test_kind_gpu_puts_count_on_each_listed_gpu():
    assert gb.placement({"instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": [0, 1]}]}, [0, 1, 2]) == \
        {"gpu": {0: 2, 1: 2}, "cpu": 0}


def test_kind_gpu_without_gpus_is_on_every_gpu_and_groups_add_up():
    config = {"instance_group": [{"count": 1, "kind": "KIND_GPU"}, {"count": 3, "kind": "KIND_GPU", "gpus": [1]},
                                 {"count": 2, "kind": "KIND_CPU"}]}
    assert gb.placement(config, [0, 1]) == {"gpu": {0: 1, 1: 4}, "cpu": 2}


def test_auto_is_gpu_with_gpus_and_gpu_groups_run_on_cpu_without():
    config = {"instance_group": [{"count": 2, "kind": "KIND_AUTO"}, {"count": 1, "kind": "KIND_GPU", "gpus": [0]}]}
    assert gb.placement(config, [0]) == {"gpu": {0: 3}, "cpu": 0}
    assert gb.placement(config, []) == {"gpu": {}, "cpu": 3}


def test_no_instance_group_is_one_per_gpu_or_one_on_cpu():
    assert gb.placement({}, [0, 1]) == {"gpu": {0: 1, 1: 1}, "cpu": 0}
    assert gb.placement({}, []) == {"gpu": {}, "cpu": 1}


# --- footprints and headroom ----------------------------------------------------------------------------------------

def test_footprint_per_version_flat_or_unknown():
    assert gb.footprint({2: {"gpu_mib": 1200, "host_mib": 250}}, 2) == {"gpu_mib": 1200, "host_mib": 250}
    assert gb.footprint({"3": {"gpu_mib": 1300}}, 3) == {"gpu_mib": 1300, "host_mib": None}
    assert gb.footprint({2: {"gpu_mib": 1200}}, 4) == {"gpu_mib": None, "host_mib": None}
    assert gb.footprint({"gpu_mib": "unknown", "host_mib": 900, "source": "measured on lab-1"}, 7) == \
        {"gpu_mib": None, "host_mib": 900}
    assert gb.footprint(None, 1) == {"gpu_mib": None, "host_mib": None}


@pytest.mark.parametrize("bad", [{"gpu_mib": -1}, {"gpu_mib": "1.2GiB"}, {"gpu_mib": True}, {"vram": 3}, [1200],
                                 {2: 1200}])
def test_footprint_that_is_not_mib_is_an_error(bad):
    with pytest.raises(gb.BudgetError):
        gb.footprint(bad, 2)


def test_headroom_percent_rounds_half_up_and_mib_is_exact():
    assert gb.parse_headroom("10%") == ("percent", 10.0)
    assert gb.parse_headroom(None) == ("percent", 10.0)
    assert gb.headroom_mib(16384, ("percent", 10.0)) == 1638
    assert gb.headroom_mib(15, ("percent", 10.0)) == 2  # 1.5 rounds up
    assert gb.headroom_mib(16384, gb.parse_headroom(2048)) == 2048
    assert gb.headroom_mib(1000, gb.parse_headroom("2048")) == 1000


@pytest.mark.parametrize("bad", ["ten", "-5%", "100%", -1, True, "5GiB"])
def test_headroom_that_is_neither_percent_nor_mib_is_an_error(bad):
    with pytest.raises(gb.BudgetError, match="triton_gpu_budget_headroom"):
        gb.parse_headroom(bad)


# --- the budget -----------------------------------------------------------------------------------------------------

def test_a_set_that_fits_with_its_candidate():
    result = gb.budget({"lab-2": host([ANOMALY, CLASSIFIER])}, "10%", ["anomaly_detector"])
    gpu = rows_by_device(result)["GPU 0"]
    assert (gpu["capacity_mib"], gpu["headroom_mib"], gpu["available_mib"]) == (16384, 1638, 14746)
    # the candidate is one instance (1,200); reloading loads the new two beside the serving two (2,400): the larger counts
    assert (gpu["serving_mib"], gpu["staged_mib"], gpu["reload_mib"], gpu["transient"]) == (2400, 1200, 2400, "reload")
    assert (gpu["peak_mib"], gpu["fits"]) == (4800, True)
    memory = rows_by_device(result)["host memory"]
    assert (memory["serving_mib"], memory["staged_mib"], memory["reload_mib"]) == (2 * 250 + 2 * 900, 250, 2 * 250)
    assert result["refusals"] == [] and result["unknown"] == []


def test_a_set_that_does_not_fit_is_refused_with_the_numbers_and_what_to_do():
    anomaly_3 = dict(ANOMALY, versions=[3])
    result = gb.budget({"lab-2": host([anomaly_3, CLASSIFIER, RANKER])}, "10%", ["anomaly_detector"])
    assert result["refusals"] == [
        "lab-2 GPU 0 (Tesla T4): serving anomaly_detector v3 2×1,300 MiB + ranker v5 1×10,000 MiB = 12,600 MiB; reloading "
        "anomaly_detector adds 2,600 MiB (Triton loads the new set beside the serving one: anomaly_detector v3 2×1,300 MiB): "
        "peak 15,200 MiB > 16,384 MiB − 10% headroom (14,746 MiB) by 454 MiB. To fit: lower the instance count of "
        "anomaly_detector (its new set loads beside the old one), move a model to a rollout group without this host, or a "
        "GPU with more memory"]
    gpu = rows_by_device(result)["GPU 0"]
    assert gpu["fits"] is False and gpu["over_mib"] == 454


def test_the_same_set_on_a_bigger_gpu_passes():
    anomaly_3 = dict(ANOMALY, versions=[3])
    a10 = [{"index": 0, "name": "NVIDIA A10", "memory_mib": 23028}]
    assert gb.budget({"lab-2": host([anomaly_3, CLASSIFIER, RANKER], gpus=a10)}, "10%", ["anomaly_detector"])["refusals"] == []


def test_one_more_instance_tips_the_set_over():
    fits = model("ranker", [5], [{"count": 1, "kind": "KIND_GPU"}], {"gpu_mib": 5000, "host_mib": 400})
    assert gb.budget({"lab-2": host([ANOMALY, fits])}, "10%", ["anomaly_detector"])["refusals"] == []
    more = model("ranker", [5], [{"count": 2, "kind": "KIND_GPU"}], {"gpu_mib": 5000, "host_mib": 400})
    (text,) = gb.budget({"lab-2": host([ANOMALY, more])}, "10%", ["anomaly_detector"])["refusals"]
    assert "ranker v5 2×5,000 MiB" in text and "peak 14,800 MiB > 16,384 MiB − 10% headroom (14,746 MiB) by 54 MiB" in text


def test_without_named_candidates_every_model_may_change_in_one_rollout():
    result = gb.budget({"lab-2": host([ANOMALY, RANKER, CLASSIFIER])}, "2048")
    gpu, memory = rows_by_device(result)["GPU 0"], rows_by_device(result)["host memory"]
    # staged together: one instance each of anomaly_detector (1,200) and ranker (10,000); the largest reload: ranker
    assert (gpu["staged"], gpu["staged_mib"], gpu["reload"], gpu["reload_mib"]) == (["anomaly_detector", "ranker"], 11200, "ranker", 10000)
    assert gpu["transient"] == "staged" and gpu["peak_mib"] == 12400 + 11200
    assert memory["staged_mib"] == 250 + 400 + 900 and (memory["reload"], memory["reload_mib"]) == ("alert_classifier", 1800)
    (text,) = result["refusals"]
    assert ("staging the candidates of anomaly_detector, ranker at once adds 11,200 MiB (one instance per instance group: "
            "anomaly_detector__candidate v2 1×1,200 MiB + ranker__candidate v5 1×10,000 MiB): peak 23,600 MiB > 16,384 MiB − "
            "2,048 MiB headroom (14,336 MiB) by 9,264 MiB") in text


def test_two_served_versions_are_two_sets_and_the_reload_loads_both_again():
    both = dict(ANOMALY, versions=[2, 3])
    gpu = rows_by_device(gb.budget({"lab-2": host([both])}, "10%", ["anomaly_detector"]))["GPU 0"]
    assert gpu["serving_mib"] == 2 * 1200 + 2 * 1300 and gpu["reload_mib"] == gpu["serving_mib"]
    assert gpu["staged_mib"] == 1200 + 1300


def test_the_candidate_is_placed_as_the_role_stages_it():
    config = {"name": "m", "instance_group": [{"count": 3, "kind": "KIND_GPU", "gpus": [0, 1]}, {"count": 2, "kind": "KIND_CPU"}]}
    staged = fleet.candidate_config(config, "m" + fleet.CANDIDATE_SUFFIX)  # what roles/triton_models loads as the candidate
    assert gb.placement(config, [0, 1], one_per_group=True) == gb.placement(staged, [0, 1]) == {"gpu": {0: 1, 1: 1}, "cpu": 1}
    assert gb.CANDIDATE_SUFFIX == fleet.CANDIDATE_SUFFIX


EIGHT = [model("m%d" % i, [1], [{"count": 1, "kind": "KIND_GPU"}], {"gpu_mib": 1000, "host_mib": 10}) for i in range(8)]


def test_many_candidates_staged_at_once_can_be_the_peak_and_the_advice_says_how_to_avoid_it():
    result = gb.budget({"lab-2": host(EIGHT)}, "10%")
    gpu = rows_by_device(result)["GPU 0"]
    assert (gpu["serving_mib"], gpu["staged_mib"], gpu["reload_mib"], gpu["peak_mib"]) == (8000, 8000, 1000, 16000)
    (text,) = result["refusals"]
    assert text.endswith("by 1,254 MiB. To fit: change fewer models per rollout, or set triton_models_stage_candidates: "
                         "false for this host (no candidate copies; a changed version then serves before its golden cases "
                         "pass): either way the peak is the largest reload, 9,000 MiB, which fits")
    # one model per rollout, or no candidates: only the reload of one model is added
    assert gb.budget({"lab-2": host(EIGHT)}, "10%", ["m3"])["refusals"] == []
    off = gb.budget({"lab-2": host(EIGHT, stage_candidates=False)}, "10%")
    gpu = rows_by_device(off)["GPU 0"]
    assert (gpu["staged_mib"], gpu["staged"], gpu["transient"], gpu["peak_mib"]) == (None, [], "reload", 9000)
    assert off["refusals"] == [] and off["lines"][1].split()[8] == "off"


def test_a_set_that_does_not_fit_between_rollouts_says_so():
    big = model("ranker", [5], [{"count": 2, "kind": "KIND_GPU"}], {"gpu_mib": 8000, "host_mib": 400})
    (text,) = gb.budget({"lab-2": host([big])}, "10%")["refusals"]
    assert text.endswith("To fit: the set does not fit even between rollouts: serve fewer instances (instance_group count) or "
                         "fewer models here (a rollout group without this host), or a GPU with more memory")


def test_host_memory_of_a_cpu_host_is_refused_too():
    stubs = model("log_parser", [1], [{"count": 4, "kind": "KIND_CPU"}], {"gpu_mib": 0, "host_mib": 500})  # python backend stubs
    (text,) = gb.budget({"cpu-1": host([CLASSIFIER, stubs], gpus=[], memory=4096)}, "10%", ["log_parser"])["refusals"]
    assert text.startswith("cpu-1 host memory: serving alert_classifier v1 2×900 MiB + log_parser v1 4×500 MiB = 3,800 MiB; "
                           "reloading log_parser adds 2,000 MiB")
    assert text.endswith("or more host memory (triton_host_memory_mib)")


def test_a_model_of_unknown_footprint_is_never_refused():
    mystery = model("mystery", [4], [{"count": 3, "kind": "KIND_GPU"}])
    tiny = [{"index": 0, "name": "Tiny", "memory_mib": 10}]
    result = gb.budget({"lab-2": host([mystery], gpus=tiny, memory=None)}, "10%")
    row = rows_by_device(result)["GPU 0"]
    assert (row["fits"], row["peak_mib"], row["unknown"]) == (True, 0, ["mystery v4 (3 instances)"])
    assert result["refusals"] == []


def test_unknown_footprints_are_reported_never_counted_as_zero():
    mystery = model("mystery", [4], [{"count": 3, "kind": "KIND_GPU"}])
    result = gb.budget({"lab-2": host([ANOMALY, mystery, RANKER])}, "10%", ["anomaly_detector"])
    gpu = rows_by_device(result)["GPU 0"]
    assert gpu["unknown"] == ["mystery v4 (3 instances)"]
    assert gpu["serving_mib"] == 2400 + 10000
    assert "lab-2 GPU 0: mystery v4 (3 instances)" in result["unknown"]
    (text,) = result["refusals"]
    assert "; not counted, footprint unknown: mystery v4 (3 instances). To fit: " in text


def test_a_device_of_unknown_capacity_is_shown_not_judged():
    result = gb.budget({"lab-9": host([CLASSIFIER], gpus=[], memory=None)})
    (row,) = result["rows"]
    assert (row["device"], row["capacity_mib"], row["fits"], row["serving_mib"]) == ("host memory", None, None, 1800)
    assert result["refusals"] == []


def test_a_cpu_host_counts_gpu_groups_as_host_memory():
    result = gb.budget({"lab-1": host([ANOMALY, CLASSIFIER], gpus=[], memory=4096)}, "10%", [])
    (row,) = result["rows"]
    assert row["serving_mib"] == 2 * 250 + 2 * 900 and row["fits"] is True


def test_ensembles_load_no_instances():
    ensemble = {"name": "pipeline", "versions": [1], "config": {"name": "pipeline", "platform": "ensemble"},
                "footprint": {"gpu_mib": 99999, "host_mib": 99999}}
    assert rows_by_device(gb.budget({"lab-2": host([ensemble, ANOMALY])}, "10%", []))["GPU 0"]["serving_mib"] == 2400


def test_each_host_may_carry_its_own_headroom():
    result = gb.budget({"lab-2": host([ANOMALY], headroom="50%"), "lab-3": host([ANOMALY])}, "10%", [])
    assert [r["headroom_mib"] for r in result["rows"] if r["device"] == "GPU 0"] == [8192, 1638]


def test_the_table_lines():
    result = gb.budget({"lab-2": host([ANOMALY, CLASSIFIER, RANKER])}, "10%", ["anomaly_detector"])
    header, gpu, memory = result["lines"]
    assert header.split() == ["host", "device", "capacity", "headroom", "serving", "staged", "reload", "peak", "fits", "unknown"]
    assert gpu.split() == ["lab-2", "GPU", "0", "Tesla", "T4", "16,384", "1,638", "12,400", "1,200", "(1", "model)", "2,400",
                           "(anomaly_detector)", "14,800", "NO,", "over", "by", "54", "-"]
    assert memory.split()[:4] == ["lab-2", "host", "memory", "65,536"]
