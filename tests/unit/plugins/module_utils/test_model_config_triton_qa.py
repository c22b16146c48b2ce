"""Triton server's qa/L0_model_config cases: what Triton rejects we reject, with Triton's message."""

import glob
import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import model_config as mc

QA = os.path.join(os.path.dirname(__file__), "fixtures", "triton_qa")

# These need the filesystem Triton sees, not the config: whether version directory 2 exists.
NEEDS_VERSION_DIRECTORIES = {"no_required_version", "no_required_version_2", "no_required_version_3"}


def read(path):
    with open(path) as handle:
        return handle.read()


def expected_messages(case_dir):
    """Triton's test.sh greps the log with these; un-escape the grep brackets."""
    return [read(p).strip().replace("\\[", "[").replace("\\]", "]") for p in sorted(glob.glob(os.path.join(case_dir, "expected*")))]


def load_case(case_dir):
    """(ensemble-or-model config, other models) of one qa case directory."""
    single = os.path.join(case_dir, "config.pbtxt")
    if os.path.exists(single):
        return mc.parse(read(single)), {}
    models = dict((os.path.basename(os.path.dirname(p)), mc.parse(read(p))) for p in glob.glob(os.path.join(case_dir, "*", "config.pbtxt")))
    return models.pop(os.path.basename(case_dir)), models


def cases(pattern, skip=()):
    dirs = sorted(glob.glob(os.path.join(QA, pattern)))
    return [pytest.param(d, id=os.path.basename(d)) for d in dirs if os.path.basename(d) not in skip]


@pytest.mark.parametrize("case_dir", cases("noautofill_platform/*"))
def test_platform_independent_rejections(case_dir):
    config = mc.parse(read(os.path.join(case_dir, "config.pbtxt")))
    config["platform"] = "onnxruntime_onnx"  # as test.sh does for each platform
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config, gpus=[0])
    assert any(message in str(err.value) for message in expected_messages(case_dir)), str(err.value)


@pytest.mark.parametrize("case_dir", cases("autofill_noplatform/ensemble/*", skip=NEEDS_VERSION_DIRECTORIES))
def test_ensemble_rejections(case_dir):
    config, models = load_case(case_dir)
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config, models=models)
    assert any(message in str(err.value) for message in expected_messages(case_dir)), str(err.value)


@pytest.mark.parametrize("case_dir", cases("autofill_noplatform_success/ensemble/*"))
def test_ensembles_triton_loads_pass(case_dir):
    config, models = load_case(case_dir)
    mc.validate(config, models=models)


def ensembles_valid_alone():
    """Every ensemble config of a multi-model case: Triton accepts each as a config (ValidateModelConfig);
    the rejection cases among them fail only once the other models are known (ensemble_utils.cc)."""
    found = []
    for case_dir in sorted(glob.glob(os.path.join(QA, "autofill_noplatform*", "ensemble", "*"))):
        for path in sorted(glob.glob(os.path.join(case_dir, "*", "config.pbtxt"))):
            config = mc.parse(read(path))
            if config.get("platform") == "ensemble":
                found.append(pytest.param(config, id=os.path.relpath(os.path.dirname(path), QA)))
    return found


@pytest.mark.parametrize("config", ensembles_valid_alone())
def test_ensembles_pass_without_models(config):
    # models omitted: the wiring check that needs the other models is skipped, not failed
    mc.validate(config)
    mc.validate(config, models=None)


def test_ensembles_without_models_are_the_ones_expected():
    assert len(ensembles_valid_alone()) == 20  # 15 in wiring-rejection cases, 5 in cases Triton loads


def test_given_models_the_wiring_check_applies():
    config, models = load_case(os.path.join(QA, "autofill_noplatform", "ensemble", "non_existing_model"))
    mc.validate(config)
    with pytest.raises(mc.ModelConfigError) as err:
        mc.validate(config, models={})  # an empty mapping: "no other models", so every step is missing
    assert "contains models that are not available or ambiguous" in str(err.value)
    with pytest.raises(mc.ModelConfigError):
        mc.validate(config, models=models)


def test_qa_case_counts():
    # Guards against a fixture tree that silently lost cases.
    assert len(cases("noautofill_platform/*")) == 58
    assert len(cases("autofill_noplatform/ensemble/*", skip=NEEDS_VERSION_DIRECTORIES)) == 29


ALL_QA_CONFIGS = sorted(glob.glob(os.path.join(QA, "**", "config.pbtxt"), recursive=True))


@pytest.mark.parametrize("path", [pytest.param(p, id=os.path.relpath(p, QA)) for p in ALL_QA_CONFIGS])
def test_every_qa_config_round_trips(path):
    data = mc.parse(read(path))
    text = mc.render(data)
    assert mc.parse(text) == data
    assert mc.render(mc.parse(text)) == text
