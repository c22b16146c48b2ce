"""Pure parts of triton_verify's checks: percentiles, process ancestry, case sources."""

import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import triton_verification as tv


def test_percentile_is_nearest_rank():
    samples = list(range(1, 101))
    assert tv.percentile(samples, 50) == 50
    assert tv.percentile(samples, 99) == 99
    assert tv.percentile([7.0], 99) == 7.0
    assert tv.percentile([5, 1, 3], 50) == 3


def test_pid_outside_triton_is_not_counted():
    assert tv.triton_pid_of(os.getpid()) == 0
    assert tv.triton_pid_of(1) == 0


def test_unreadable_cases_file_is_a_verify_error(tmp_path):
    with pytest.raises(tv.TritonVerifyError, match="cannot read golden cases"):
        tv.cases_for({"name": "m", "golden_cases_file": str(tmp_path / "absent.json")}, 1, None)
    (tmp_path / "m" / "3").mkdir(parents=True)
    (tmp_path / "m" / "3" / "golden_cases.json").write_text('{"cases": [{"name": "c"}]}')
    assert tv.cases_for({"name": "m"}, 3, str(tmp_path)) == ([{"name": "c"}], str(tmp_path / "m" / "3" / "golden_cases.json"))
    assert tv.cases_for({"name": "m"}, 4, str(tmp_path)) == ([], None)
