"""The batch option of s3_model_sync and triton_model_config (triton_model's runs on real Triton in
tests/integration/test_triton_model.py): one call answers as a loop over the models would."""

import json
import os

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.modules import s3_model_sync, triton_model_config

SEED = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "seed")


def seed(name):
    with open(os.path.join(SEED, name + ".yml")) as handle:
        return yaml.safe_load(handle)


def run_module(module, capsys, check=False, diff=False, **args):
    with patch_module_args(dict(args, _ansible_check_mode=check, _ansible_diff=diff)):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


def test_config_batch_writes_each_model_and_answers_in_order(capsys, tmp_path):
    batch = [{"name": "alert_classifier", "config": seed("alert_classifier")},
             {"name": "anomaly_detector", "config": seed("anomaly_detector")}]
    first = run_module(triton_model_config, capsys, diff=True, repository=str(tmp_path), gpus=[], batch=batch)
    assert first["changed"] is True and "failed" not in first
    assert [r["item"]["name"] for r in first["results"]] == ["alert_classifier", "anomaly_detector"]
    for result in first["results"]:
        with open(os.path.join(str(tmp_path), result["item"]["name"], "config.pbtxt")) as handle:
            assert handle.read() == result["content"]
        assert result["changed"] is True and result["diff"]["after"] == result["content"]
    # each model's diff, for --diff to show them all
    assert [d["after_header"] for d in first["diff"]] == [r["path"] for r in first["results"]]
    again = run_module(triton_model_config, capsys, repository=str(tmp_path), gpus=[], batch=batch)
    assert again["changed"] is False and [r["changed"] for r in again["results"]] == [False, False]
    assert "diff" not in again and all("diff" not in r for r in again["results"])


def test_config_batch_tries_every_model_and_names_each_failure(capsys, tmp_path):
    bad = dict(seed("anomaly_detector"), max_batch_size="many")
    batch = [{"name": "anomaly_detector", "config": bad}, {"name": "alert_classifier", "config": seed("alert_classifier")},
             {"name": "../escape", "config": seed("alert_classifier")}]
    result = run_module(triton_model_config, capsys, repository=str(tmp_path), gpus=[], batch=batch)
    assert result["failed"] is True and result["changed"] is True
    first, second, third = result["results"]
    assert first["failed"] is True and "anomaly_detector" in first["msg"] and "max_batch_size" in first["msg"]
    assert second["changed"] is True and "failed" not in second  # tried after the first failed, as a loop would
    assert third["failed"] is True and "not a usable Triton model directory name" in third["msg"]
    assert first["msg"] in result["msg"] and third["msg"] in result["msg"]
    assert sorted(os.listdir(str(tmp_path))) == ["alert_classifier"]  # nothing written for the failed ones


def test_config_batch_check_mode_writes_nothing(capsys, tmp_path):
    batch = [{"name": "alert_classifier", "config": seed("alert_classifier")}]
    result = run_module(triton_model_config, capsys, check=True, repository=str(tmp_path), gpus=[], batch=batch)
    assert result["changed"] is True and result["results"][0]["changed"] is True
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("args,message", [
    ({"batch": [{"name": "m", "config": {}}], "name": "m"}, "mutually exclusive"),
    ({"batch": [{"name": "m", "config": {}}], "config": {}}, "mutually exclusive"),
    ({"batch": [{"name": "m"}]}, "missing required arguments: config"),
    ({"batch": [{"config": {}}]}, "missing required arguments: name"),
])
def test_config_batch_bad_arguments(capsys, tmp_path, args, message):
    result = run_module(triton_model_config, capsys, repository=str(tmp_path), **args)
    assert result["failed"] is True and message in result["msg"]


def versions(repo, model):
    return sorted(n for n in os.listdir(os.path.join(str(repo), model)) if n.isdigit())


def test_sync_batch_absent_removes_per_model_and_goes_on_after_a_failure(capsys, tmp_path):
    for model in ("a", "b"):
        for version in ("1", "2"):
            os.makedirs(os.path.join(str(tmp_path), model, version))
    # state=absent contacts no S3: an endpoint nobody listens on
    common = dict(bucket="b", repository=str(tmp_path), state="absent", endpoint_url="http://127.0.0.1:9")
    batch = [{"model": "a", "versions": [2]}, {"model": ".hidden", "versions": [1]}, {"model": "b", "versions": [1]}]
    check = run_module(s3_model_sync, capsys, check=True, batch=batch, **common)
    assert check["failed"] is True and [r.get("versions_removed") for r in check["results"]] == [[2], None, [1]]
    assert versions(tmp_path, "a") == ["1", "2"] and versions(tmp_path, "b") == ["1", "2"]
    real = run_module(s3_model_sync, capsys, batch=batch, **common)
    assert real["failed"] is True and real["changed"] is True
    assert ".hidden" in real["msg"] and "not a usable Triton model directory name" in real["msg"]
    assert [r["item"]["model"] for r in real["results"]] == ["a", ".hidden", "b"]
    assert [r.get("model") for r in real["results"]] == ["a", ".hidden", "b"]
    assert versions(tmp_path, "a") == ["1"] and versions(tmp_path, "b") == ["2"]


def test_sync_batch_element_values_replace_the_shared_ones(capsys, tmp_path):
    for version in ("1", "2", "3"):
        os.makedirs(os.path.join(str(tmp_path), "a", version))
    os.makedirs(os.path.join(str(tmp_path), "b", "1"))
    # keep_versions is shared; the element's versions are its own
    result = run_module(s3_model_sync, capsys, check=True, bucket="b", repository=str(tmp_path), state="absent",
                        batch=[{"model": "a"}, {"model": "b", "versions": [1]}])
    assert [r["versions_removed"] for r in result["results"]] == [[1, 2, 3], [1]]


@pytest.mark.parametrize("element,message", [
    ({"model": "a"}, "state is present but any of the following are missing: versions, latest"),
    ({"model": "a", "versions": [1], "latest": 1}, "versions and latest are mutually exclusive"),
    ({"model": "a", "latest": 0}, "latest must be >= 1"),
    ({"model": "a", "versions": [1], "keep_versions": -1}, "keep_versions must be >= 0"),
])
def test_sync_batch_refuses_a_bad_element_before_s3(capsys, tmp_path, element, message):
    result = run_module(s3_model_sync, capsys, bucket="b", repository=str(tmp_path), endpoint_url="http://127.0.0.1:9",
                        batch=[element])
    assert result["failed"] is True and message in result["results"][0]["msg"] and message in result["msg"]


def test_sync_batch_and_model_are_exclusive(capsys, tmp_path):
    result = run_module(s3_model_sync, capsys, bucket="b", repository=str(tmp_path), model="a", latest=1,
                        batch=[{"model": "a", "latest": 1}])
    assert result["failed"] is True and "mutually exclusive" in result["msg"]


def test_empty_batch_is_no_change_and_needs_nothing(capsys, tmp_path):
    result = run_module(s3_model_sync, capsys, bucket="b", repository=str(tmp_path), endpoint_url="http://127.0.0.1:9",
                        batch=[])
    assert (result["changed"], result["results"]) == (False, [])
    result = run_module(triton_model_config, capsys, repository=str(tmp_path), batch=[])
    assert (result["changed"], result["results"]) == (False, [])
