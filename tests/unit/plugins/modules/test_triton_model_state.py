"""triton_model_state: records written atomically and only on change, stale records dropped, rollback targets."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.module_utils import fleet
from ansible_collections.aiops.triton.plugins.modules import triton_model_state

CONFIG = {"name": "m", "backend": "python"}
ENSEMBLE = {"name": "e", "platform": "ensemble"}


def run(capsys, check_mode=False, diff=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            triton_model_state.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    repo, state = tmp_path / "models", tmp_path / "state"
    for model, versions in (("m", [1, 2]), ("e", [1]), ("gone", [4])):
        for v in versions:
            (repo / model / str(v)).mkdir(parents=True)
    (repo / "m" / ".aiops-staging-3").mkdir()  # hidden: staging, never a model or a version
    return {"repository": str(repo), "state_dir": str(state)}


def test_record_then_nothing_to_do(capsys, host):
    models = [{"name": "m", "config": CONFIG, "versions": [2]}, {"name": "e", "config": ENSEMBLE, "versions": [1]}]
    first = run(capsys, state="recorded", models=models, **host)
    assert first["changed"] and sorted(first["written"]) == ["e", "m"]
    assert json.load(open(os.path.join(host["state_dir"], "m.json"))) == {"config": CONFIG, "versions": [2], "verified": [2]}
    assert oct(os.stat(os.path.join(host["state_dir"], "m.json")).st_mode & 0o777) == "0o600"
    again = run(capsys, state="recorded", models=models, **host)
    assert not again["changed"] and again["written"] == [] and again["removed"] == []


def test_check_mode_writes_nothing(capsys, host):
    result = run(capsys, check_mode=True, diff=True, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [1]}], **host)
    assert result["changed"] and '"versions": [\n      1\n    ]' in result["diff"]["after"]
    assert not os.path.exists(host["state_dir"])


def test_stale_records_are_dropped(capsys, host):
    run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [2]},
                                          {"name": "gone", "config": dict(CONFIG, name="gone"), "versions": [4]}], **host)
    result = run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [2]}], **host)
    assert result["removed"] == ["gone"]
    assert sorted(os.listdir(host["state_dir"])) == ["m.json"]


def test_rollback_target_pins_recorded_versions_still_on_disk(capsys, host):
    run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [1, 2, 3]},
                                          {"name": "e", "config": ENSEMBLE, "versions": [1]}], **host)
    result = run(capsys, **host)
    assert not result["changed"]
    assert [t["name"] for t in result["rollback"]] == ["m", "e"], "ensembles restore last"
    model = result["rollback"][0]
    assert model["versions"] == [1, 2] and model["missing"] == [3]
    assert model["config"]["version_policy"] == {"specific": {"versions": [1, 2]}}
    assert "version_policy" not in result["rollback"][1]["config"]


def test_unrecoverable_when_no_recorded_version_is_on_disk(capsys, host):
    run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [7]}], **host)
    result = run(capsys, **host)
    assert result["unrecoverable"] == ["m"] and result["rollback"] == []


def test_stale_models_are_on_disk_or_recorded_but_not_wanted(capsys, host):
    run(capsys, state="recorded", models=[{"name": "e", "config": ENSEMBLE, "versions": [1]},
                                          {"name": "m", "config": CONFIG, "versions": [1]}], **host)
    result = run(capsys, models=[{"name": "m"}], **host)
    assert result["stale"] == [{"name": "e", "ensemble": True, "on_disk": True, "recorded": True},
                               {"name": "gone", "ensemble": False, "on_disk": True, "recorded": False}]


def test_a_corrupt_record_is_a_clear_error(capsys, host):
    os.makedirs(host["state_dir"])
    with open(os.path.join(host["state_dir"], "m.json"), "w") as handle:
        handle.write("{not json")
    result = run(capsys, **host)
    assert result["failed"] and "m.json is not JSON" in result["msg"]


def test_recorded_needs_models(capsys, host):
    result = run(capsys, state="recorded", **host)
    assert result["failed"] and "models" in result["msg"]


def test_verified_history_remembers_earlier_verified_versions_most_recent_first(capsys, host):
    for versions in ([1], [2], [1], [2]):
        run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": versions}], **host)
    record = json.load(open(os.path.join(host["state_dir"], "m.json")))
    assert record["versions"] == [2] and record["verified"] == [2, 1]
    assert fleet.verified_history({"verified": list(range(30, 0, -1))}, [31])[:3] == [31, 30, 29]
    assert len(fleet.verified_history({"verified": list(range(30, 0, -1))}, [31])) == fleet.VERIFIED_HISTORY


def test_a_record_without_history_is_not_rewritten(capsys, host):
    os.makedirs(host["state_dir"])
    with open(os.path.join(host["state_dir"], "m.json"), "w") as handle:
        json.dump({"config": CONFIG, "versions": [2]}, handle)
    result = run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [2]}], **host)
    assert not result["changed"], "a record written before the history existed reads as verified at its versions"


def test_ensembles_calling_an_unrecoverable_model_are_blocked_not_restored(capsys, host):
    inner = {"name": "e", "platform": "ensemble", "ensemble_scheduling": {"step": [{"model_name": "m"}]}}
    outer = {"name": "outer", "platform": "ensemble", "ensemble_scheduling": {"step": [{"model_name": "e"}]}}
    other = {"name": "other", "platform": "ensemble", "ensemble_scheduling": {"step": [{"model_name": "x"}]}}
    os.makedirs(os.path.join(host["repository"], "outer", "1"))
    os.makedirs(os.path.join(host["repository"], "other", "1"))
    os.makedirs(os.path.join(host["repository"], "x", "1"))
    run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [7]},
                                          {"name": "x", "config": dict(CONFIG, name="x"), "versions": [1]},
                                          {"name": "e", "config": inner, "versions": [1]},
                                          {"name": "outer", "config": outer, "versions": [1]},
                                          {"name": "other", "config": other, "versions": [1]}], **host)
    result = run(capsys, **host)
    assert result["unrecoverable"] == ["m"]
    assert result["blocked"] == ["e", "outer"], "ensembles calling m, directly or through e"
    assert [t["name"] for t in result["rollback"]] == ["x", "other"]


def test_unrecorded_lists_models_on_disk_that_were_never_verified(capsys, host):
    run(capsys, state="recorded", models=[{"name": "m", "config": CONFIG, "versions": [1]}], **host)
    assert run(capsys, **host)["unrecorded"] == ["e", "gone"]
