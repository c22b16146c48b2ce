"""triton_model_config end to end through AnsibleModule: writes, idempotence, check, diff, failures."""

import json
import os
import stat

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.module_utils import model_config as mc
from ansible_collections.aiops.triton.plugins.modules import triton_model_config

SEED = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "seed")


def seed(name):
    with open(os.path.join(SEED, name + ".yml")) as handle:
        return yaml.safe_load(handle)


def golden(name):
    with open(os.path.join(SEED, name + ".pbtxt")) as handle:
        return handle.read()


def run_module(capsys, check=False, diff=False, **args):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            triton_model_config.main()
    return json.loads(capsys.readouterr().out)


def config_path(repo, name):
    return os.path.join(str(repo), name, "config.pbtxt")


def leftovers(repo, name):
    return sorted(n for n in os.listdir(os.path.join(str(repo), name)) if n != "config.pbtxt")


def test_writes_then_is_idempotent(capsys, tmp_path):
    args = dict(repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    first = run_module(capsys, **args)
    assert first["changed"] is True
    assert first["path"] == config_path(tmp_path, "alert_classifier")
    with open(first["path"]) as handle:
        assert handle.read() == golden("alert_classifier") == first["content"]
    assert stat.S_IMODE(os.stat(first["path"]).st_mode) == 0o644
    assert leftovers(tmp_path, "alert_classifier") == []  # no temp file left behind
    inode = os.stat(first["path"]).st_ino
    second = run_module(capsys, **args)
    assert second["changed"] is False
    assert os.stat(first["path"]).st_ino == inode  # not rewritten
    assert second["config"] == mc.normalize(seed("alert_classifier"))


def test_cpu_host_gets_cpu_instance_groups(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="anomaly_detector", config=seed("anomaly_detector"), gpus=[])
    assert result["changed"] is True
    assert result["content"] == golden("anomaly_detector.cpu")
    assert result["config"]["instance_group"] == [{"count": 2, "kind": "KIND_CPU"}]
    assert result["host_overrides"] == ["instance_group[0]: KIND_GPU -> KIND_CPU (this host has no NVIDIA GPU)"]


def test_broken_driver_host_is_refused_and_nothing_written(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="anomaly_detector", config=seed("anomaly_detector"), gpus=[],
                        pci_gpus=["0000:1b:00.0"])
    assert result["failed"] is True
    assert result["msg"].startswith("%s/anomaly_detector: instance_group[0].kind: KIND_GPU, and the PCI bus shows NVIDIA GPU(s) "
                                    "0000:1b:00.0 that the driver does not list: refusing to run this model on CPU" % tmp_path)
    assert not os.path.exists(os.path.join(str(tmp_path), "anomaly_detector"))


def test_gpu_host_keeps_gpu_groups(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="anomaly_detector", config=seed("anomaly_detector"), gpus=[0, 1],
                        pci_gpus=["0000:1b:00.0", "0000:43:00.0"])
    assert result["content"] == golden("anomaly_detector")
    assert result["host_overrides"] == []


def test_missing_gpu_is_refused_and_nothing_written(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="anomaly_detector", config=seed("anomaly_detector"), gpus=[1])
    assert result["failed"] is True
    assert result["msg"] == "%s/anomaly_detector: instance_group[0].gpus: GPU 0 requested but this host has GPUs [1]" % tmp_path
    assert not os.path.exists(os.path.join(str(tmp_path), "anomaly_detector"))


def test_without_host_override_a_cpu_host_fails_triton_rule(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="anomaly_detector", config=seed("anomaly_detector"), gpus=[], host_override=False)
    assert result["failed"] is True
    assert "instance_group[0].kind: instance group anomaly_detector_0 of model anomaly_detector has kind KIND_GPU but no GPUs are available" in result["msg"]


def test_check_mode_reports_change_but_writes_nothing(capsys, tmp_path):
    result = run_module(capsys, check=True, diff=True, repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    assert result["changed"] is True
    assert result["diff"]["before"] == ""
    assert result["diff"]["after"] == golden("alert_classifier")
    assert not os.path.exists(os.path.join(str(tmp_path), "alert_classifier"))


def test_diff_shows_only_the_change_and_overrides_merge(capsys, tmp_path):
    args = dict(repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    run_module(capsys, **args)
    result = run_module(capsys, diff=True, overrides={"dynamic_batching": {"max_queue_delay_microseconds": 100}}, **args)
    assert result["changed"] is True
    before = result["diff"]["before"].splitlines()
    after = result["diff"]["after"].splitlines()
    assert [line for line in before if line not in after] == ["  max_queue_delay_microseconds: 50000"]
    assert [line for line in after if line not in before] == ["  max_queue_delay_microseconds: 100"]
    assert result["config"]["dynamic_batching"] == {"preferred_batch_size": [8, 16, 32, 64], "max_queue_delay_microseconds": 100}
    with open(result["path"]) as handle:
        assert handle.read() == result["content"]


def test_check_mode_on_unchanged_file_is_not_changed(capsys, tmp_path):
    args = dict(repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    run_module(capsys, **args)
    assert run_module(capsys, check=True, diff=True, **args)["changed"] is False


def test_mode_change_alone_is_a_change(capsys, tmp_path):
    args = dict(repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    run_module(capsys, **args)
    result = run_module(capsys, mode="0640", **args)
    assert result["changed"] is True
    assert stat.S_IMODE(os.stat(result["path"]).st_mode) == 0o640
    assert run_module(capsys, mode="0640", **args)["changed"] is False


def test_hand_edited_file_is_replaced(capsys, tmp_path):
    args = dict(repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    path = run_module(capsys, **args)["path"]
    with open(path, "a") as handle:
        handle.write("max_batch_size: 1\n")
    assert run_module(capsys, **args)["changed"] is True
    with open(path) as handle:
        assert handle.read() == golden("alert_classifier")


def test_ensemble_wiring_checked_against_models(capsys, tmp_path):
    models = {"anomaly_detector": seed("anomaly_detector"), "alert_classifier": seed("alert_classifier")}
    ok = run_module(capsys, repository=str(tmp_path), name="alert_triage", config=seed("alert_triage"), models=models)
    assert ok["content"] == golden("alert_triage")
    models["alert_classifier"]["output"][1]["data_type"] = "TYPE_FP64"
    bad = run_module(capsys, repository=str(tmp_path / "other"), name="alert_triage", config=seed("alert_triage"), models=models)
    assert bad["failed"] is True
    assert ("in ensemble alert_triage, ensemble tensor confidence: inconsistent data type: TYPE_FP32 is inferred from model alert_triage "
            "while TYPE_FP64 is inferred from model alert_classifier") in bad["msg"]


def test_schema_error_names_path_and_writes_nothing(capsys, tmp_path):
    config = seed("alert_classifier")
    config["input"][0]["data_type"] = "FP23"
    result = run_module(capsys, repository=str(tmp_path), name="alert_classifier", config=config)
    assert result["failed"] is True
    assert "alert_classifier: input[0].data_type: 'FP23' is not a valid DataType (" in result["msg"]
    assert not os.path.exists(os.path.join(str(tmp_path), "alert_classifier"))


def test_name_mismatch_is_refused(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="other", config=seed("alert_classifier"))
    assert result["failed"] is True
    assert "name: config name 'alert_classifier' does not match the model directory name 'other'" in result["msg"]


def test_name_defaults_to_the_option(capsys, tmp_path):
    config = seed("alert_classifier")
    del config["name"]
    result = run_module(capsys, repository=str(tmp_path), name="alert_classifier", config=config)
    assert result["content"] == golden("alert_classifier")


def test_failed_write_leaves_old_file_and_no_temp(capsys, tmp_path, monkeypatch):
    args = dict(repository=str(tmp_path), name="alert_classifier", config=seed("alert_classifier"))
    path = run_module(capsys, **args)["path"]

    def broken_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(triton_model_config.os, "rename", broken_rename)
    result = run_module(capsys, overrides={"max_batch_size": 32, "dynamic_batching": {"preferred_batch_size": [8]}}, **args)
    assert result["failed"] is True
    assert "No space left on device" in result["msg"]
    with open(path) as handle:
        assert handle.read() == golden("alert_classifier")
    assert leftovers(tmp_path, "alert_classifier") == []


# -- issue 11: ensembles without models, src, validate_only ----------------------------------------
def test_ensemble_without_models_gets_its_own_checks_only(capsys, tmp_path):
    result = run_module(capsys, repository=str(tmp_path), name="alert_triage", config=seed("alert_triage"))
    assert result["changed"] is True and result["content"] == golden("alert_triage")
    broken = seed("alert_triage")
    broken["ensemble_scheduling"]["step"][0]["model_name"] = ""
    bad = run_module(capsys, repository=str(tmp_path / "other"), name="alert_triage", config=broken)
    assert bad["failed"] is True and "ensemble_scheduling.step[0].model_name: must specify 'model_name'" in bad["msg"]


def write_src(tmp_path, name, text):
    path = tmp_path / "incoming" / name / "config.pbtxt"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return str(path)


def test_src_is_checked_and_written_in_canonical_form(capsys, tmp_path):
    # a hand-written file: comments, other spacing; the module writes the canonical text
    text = "# by hand\n" + golden("alert_classifier").replace("  ", "    ")
    src = write_src(tmp_path, "alert_classifier", text)
    repo = tmp_path / "repo"
    result = run_module(capsys, repository=str(repo), name="alert_classifier", src=src)
    assert result["changed"] is True
    with open(result["path"]) as handle:
        assert handle.read() == golden("alert_classifier")
    assert run_module(capsys, repository=str(repo), name="alert_classifier", src=src)["changed"] is False
    with open(src) as handle:
        assert handle.read() == text  # the source is only read


def test_validate_only_needs_no_repository_and_writes_nothing(capsys, tmp_path):
    src = write_src(tmp_path, "anomaly_detector", golden("anomaly_detector"))
    before = sorted(os.listdir(str(tmp_path)))
    result = run_module(capsys, src=src, validate_only=True, gpus=[])
    assert result["changed"] is False and "path" not in result
    assert result["content"] == golden("anomaly_detector.cpu")  # fitted to the host, as a write would be
    assert result["config"]["name"] == "anomaly_detector"
    assert sorted(os.listdir(str(tmp_path))) == before
    # the same in check mode: validate_only does not change what check mode means
    assert run_module(capsys, check=True, src=src, validate_only=True, gpus=[])["changed"] is False


def test_validate_only_reports_what_triton_would_refuse(capsys, tmp_path):
    text = golden("anomaly_detector").replace("max_batch_size: 32", "max_batch_size: 32\nmodel_warmup [ { name: \"w\" batch_size: 64 "
                                              "inputs { key: \"metrics_input\" value { data_type: TYPE_FP32 dims: [ 60, 20 ] zero_data: true } } } ]")
    assert text != golden("anomaly_detector")
    src = write_src(tmp_path, "anomaly_detector", text)
    result = run_module(capsys, src=src, validate_only=True)
    assert result["failed"] is True
    assert result["msg"] == ("anomaly_detector: model_warmup[0].batch_size: failed to run warmup sample 'w': batch size 64 for "
                             "'anomaly_detector', max allowed is 32")


def test_validate_only_with_config_data_and_name_from_the_config(capsys):
    result = run_module(capsys, config=seed("alert_classifier"), validate_only=True)
    assert result["changed"] is False and result["content"] == golden("alert_classifier")


def test_validate_only_name_from_the_src_directory(capsys, tmp_path):
    text = "\n".join(line for line in golden("alert_classifier").splitlines() if not line.startswith("name:")) + "\n"
    src = write_src(tmp_path, "alert_classifier", text)
    result = run_module(capsys, src=src, validate_only=True)
    assert result["config"]["name"] == "alert_classifier"


@pytest.mark.parametrize("args,message", [
    ({"validate_only": True}, "one of the following is required: config, src"),
    ({"validate_only": True, "config": {"backend": "python"}, "src": "/x"}, "parameters are mutually exclusive: config|src"),
    ({"config": {"backend": "python"}}, "validate_only is False but all of the following are missing: repository, name"),
    ({"validate_only": True, "src": "/nonexistent/m/config.pbtxt"}, "src: cannot read /nonexistent/m/config.pbtxt: [Errno 2]"),
])
def test_src_and_validate_only_argument_errors(capsys, args, message):
    result = run_module(capsys, **args)
    assert result["failed"] is True
    assert message in result["msg"], result["msg"]


def test_src_that_is_not_pbtxt_names_the_file(capsys, tmp_path):
    src = write_src(tmp_path, "m", "name: 3 4\n")
    result = run_module(capsys, src=src, validate_only=True, name="m")
    assert result["failed"] is True
    assert result["msg"].startswith("m: src: %s: config.pbtxt: 1:" % src)


@pytest.mark.parametrize("files, result", [
    ({"1/model.py": "", "2/other": ""}, {"backend": "python"}),
    ({"10/model.py": "", "9/model.onnx": ""}, {"backend": "python"}),  # Triton reads the first directory in byte order
])
def test_backend_left_to_triton_is_worked_out_from_the_first_version_directory(capsys, tmp_path, files, result):
    for path, text in files.items():
        (tmp_path / "m" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "m" / path).write_text(text)
    config = {"input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [2]}]}
    out = run_module(capsys, repository=str(tmp_path), name="m", config=config)
    assert out.get("failed") is not True, out
    assert out["auto_complete"] == result
    assert "backend" not in out["config"] and "backend" not in out["content"]  # written as given: Triton fills it


def test_backend_left_to_triton_without_a_model_file_is_refused(capsys, tmp_path):
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "weights.bin").write_text("")
    out = run_module(capsys, repository=str(tmp_path), name="m", config={"max_batch_size": 0})
    assert out["failed"] is True
    assert out["msg"] == ("%s/m: platform: Invalid model name: Could not determine backend for model 'm' with no backend in model "
                          "configuration. Expected model name of the form 'model.<backend_name>'." % tmp_path)
    assert not os.path.exists(config_path(tmp_path, "m"))


def test_backend_left_to_triton_before_any_version_is_synced_is_accepted(capsys, tmp_path):
    out = run_module(capsys, validate_only=True, config={"name": "m"})
    assert out["auto_complete"] is None and out["changed"] is False
    out = run_module(capsys, repository=str(tmp_path), name="m", config={"name": "m"})
    assert out["auto_complete"] is None and out["changed"] is True
