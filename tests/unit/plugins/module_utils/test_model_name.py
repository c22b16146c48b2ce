"""The one model-name rule every module applies (plugins/module_utils/model_name.py)."""

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.model_name import (
    NAME_MAX_BYTES, ModelNameError, check_model_name, model_name_problem)

# (name, the words the refusal must contain)
HOSTILE = [
    ("", "must not be empty"),
    ("   ", "must not be empty"),               # Triton: "Model name cannot be empty"
    (".", "the repository itself or its parent"),
    ("..", "the repository itself or its parent"),  # Triton: path traversal
    ("../../x", "must not contain '/'"),
    ("/etc/x", "must not contain '/'"),
    ("a/b", "must not contain '/'"),
    ("a/", "must not contain '/'"),
    ("a\x00b", "must not contain a NUL byte"),
    ("a\nb", "control characters (found '\\n')"),
    ("x\n", "control characters"),
    ("a\tb", "control characters"),
    ("a\rb", "control characters"),
    ("a\x7fb", "control characters"),
    (" x", "must not start or end with whitespace"),
    ("x ", "must not start or end with whitespace"),
    (".hidden", "must not start with '.'"),
    (".aiops-old-1", "must not start with '.'"),
    ("m" * (NAME_MAX_BYTES + 1), "256 bytes long"),
    ("\u00e9" * 128, "256 bytes long"),         # 128 characters, 256 bytes in UTF-8
    (None, "must be a string, got NoneType"),
    (7, "must be a string, got int"),
]

GOOD = ["anomaly_detector", "alert-triage", "m", "1", "Model.v2", "a b", "caf\u00e9", "x" * NAME_MAX_BYTES, "a\\b"]


@pytest.mark.parametrize("name,words", HOSTILE, ids=[repr(n)[:40] for n, _w in HOSTILE])
def test_hostile_names_are_refused_with_the_reason(name, words):
    assert words in model_name_problem(name)
    with pytest.raises(ModelNameError) as err:
        check_model_name(name, "models[2].name")
    text = str(err.value)
    assert text.startswith("models[2].name: model name %r is not a usable Triton model directory name: " % (name,))
    assert words in text


@pytest.mark.parametrize("name", GOOD)
def test_names_triton_loads_are_accepted(name):
    assert model_name_problem(name) == ""
    assert check_model_name(name) == name


def test_the_error_is_a_value_error():
    # Callers that only know ValueError still catch it.
    with pytest.raises(ValueError):
        check_model_name("a/b")
