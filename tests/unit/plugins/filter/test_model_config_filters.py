"""model_config_from_pbtxt / model_config_to_pbtxt filters."""

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.model_config import FilterModule

SEED = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "seed")
FILTERS = FilterModule().filters()


def golden(name):
    with open(os.path.join(SEED, name + ".pbtxt")) as handle:
        return handle.read()


def test_from_pbtxt_loads_the_seed_classifier():
    data = FILTERS["model_config_from_pbtxt"](golden("alert_classifier"))
    assert data["parameters"] == {"EXECUTION_ENV_PATH": {"string_value": "/opt/triton/python_env"}}
    assert data["instance_group"] == [{"count": 4, "kind": "KIND_CPU"}]
    assert data["input"] == [{"name": "alert_text", "data_type": "TYPE_STRING", "dims": [1]}]


@pytest.mark.parametrize("name", ["anomaly_detector", "alert_classifier", "alert_triage"])
def test_to_pbtxt_round_trips_golden_files(name):
    text = golden(name)
    assert FILTERS["model_config_to_pbtxt"](FILTERS["model_config_from_pbtxt"](text)) == text


def test_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["model_config_from_pbtxt"]("name: 3 4")
    assert str(err.value).startswith("config.pbtxt: 1:")
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["model_config_to_pbtxt"]({"name": "m", "input": [{"data_type": "FP23"}]})
    assert "input[0].data_type: 'FP23' is not a valid DataType" in str(err.value)
    with pytest.raises(AnsibleFilterError):
        FILTERS["model_config_to_pbtxt"]("name: m")


def test_to_pbtxt_checks_the_schema_only_as_its_docs_say():
    # Triton refuses this at load (warmup batch over max_batch_size); the filter renders it, the module refuses it.
    from ansible_collections.aiops.triton.plugins.module_utils import model_config as mc
    config = FILTERS["model_config_from_pbtxt"](golden("anomaly_detector"))
    config["model_warmup"] = [{"name": "w", "batch_size": 64, "inputs": {
        "metrics_input": {"data_type": "TYPE_FP32", "dims": [60, 20], "zero_data": True}}}]
    assert "batch_size: 64" in FILTERS["model_config_to_pbtxt"](config)
    with pytest.raises(mc.ModelConfigError):
        mc.validate(config)
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter", "model_config_to_pbtxt.yml")
    with open(docs) as handle:
        assert "Checks the schema only" in handle.read()
