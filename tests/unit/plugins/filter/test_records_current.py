"""records_current agrees with triton_model_state: on the controller, from the records the module read, it says
"nothing to record" exactly when the module, run for real on the host's state directory, would change nothing.

Each case is a sequence a host goes through (record, no change, a new version, a model leaving the set, a
config change, a version rolled back to), judged by the filter first and then by the module itself.
"""

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.filter.fleet import records_current
from ansible_collections.aiops.triton.plugins.modules import triton_model_state

CONFIG = {"name": "m", "backend": "python", "max_batch_size": 8,
          "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [60, 20]}]}
ENSEMBLE = {"name": "e", "platform": "ensemble"}


def module(capsys, host, **args):
    with patch_module_args(dict(host, **args)):
        with pytest.raises(SystemExit):
            triton_model_state.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    for model, versions in (("m", [1, 2, 3]), ("e", [1])):
        for version in versions:
            (tmp_path / "models" / model / str(version)).mkdir(parents=True)
    return {"repository": str(tmp_path / "models"), "state_dir": str(tmp_path / "state")}


def present(m_versions, m_config=None, with_ensemble=True):
    models = [{"name": "m", "config": m_config or CONFIG, "versions": m_versions}]
    return models + ([{"name": "e", "config": ENSEMBLE, "versions": [1]}] if with_ensemble else [])


def loads(models):
    """The load loop's results as triton_model registers them: the versions READY after, per model."""
    return [{"name": m["name"], "after": m["versions"], "changed": False} for m in models]


STEPS = [
    ("first deployment", present([1])),
    ("no change", present([1])),
    ("a new version", present([2])),
    ("no change again", present([2])),
    ("the ensemble leaves the set", present([2], with_ensemble=False)),
    ("a config change", present([2], m_config=dict(CONFIG, max_batch_size=16), with_ensemble=False)),
    ("rolled back to an earlier version", present([1], m_config=dict(CONFIG, max_batch_size=16), with_ensemble=False)),
    ("controller values in tuples and numbers as text", present(("1",), m_config=dict(
        CONFIG, max_batch_size=16, input=[{"name": "X", "data_type": "TYPE_FP32", "dims": (60, 20)}]), with_ensemble=False)),
]


def test_the_filter_agrees_with_the_module_through_a_hosts_history(capsys, host):
    verdicts = []
    for step, models in STEPS:
        read = module(capsys, host, models=[{"name": m["name"]} for m in models])["records"]
        skip = records_current(read, models, loads(models))
        recorded = module(capsys, host, state="recorded", models=[dict(m, versions=list(m["versions"])) for m in models])
        assert skip is (not recorded["changed"]), (step, read, recorded)
        verdicts.append((step, skip))
    assert [verdict[1] for verdict in verdicts] == [False, True, False, True, False, False, False, True]


def test_a_load_that_left_other_versions_ready_is_recorded(capsys, host):
    module(capsys, host, state="recorded", models=present([1]))
    read = module(capsys, host)["records"]
    results = [{"name": "m", "after": [1, 3]}, {"name": "e", "after": [1]}]
    assert records_current(read, present([1]), results) is False


def test_no_read_records_means_everything_is_recorded():
    assert records_current({}, present([1]), loads(present([1]))) is False
