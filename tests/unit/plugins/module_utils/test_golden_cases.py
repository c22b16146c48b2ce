"""The golden-case contract shared by the model build and triton_verify."""

from ansible_collections.aiops.triton.plugins.module_utils import golden_cases as tv


def fp32(data, shape=None):
    return {"datatype": "FP32", "shape": shape or [len(data)], "data": data}


def test_tolerances_follow_numpy_allclose_rule():
    assert tv.compare("y", fp32([1.0005]), {"data": [1.0], "atol": 1e-3}, 0.0, 0.0) == ""
    assert tv.compare("y", fp32([101.0]), {"data": [100.0], "rtol": 0.02}, 0.0, 0.0) == ""
    problem = tv.compare("y", fp32([1.01]), {"data": [1.0], "atol": 1e-3}, 0.0, 0.0)
    assert problem == "output y[0] is 1.01, expected 1.0 within atol=0.001 rtol=0"


def test_defaults_apply_when_a_case_gives_no_tolerance():
    assert tv.compare("y", fp32([1.0 + 5e-7]), {"data": [1.0]}, 1e-6, 0.0) == ""
    assert tv.compare("y", fp32([1.0 + 5e-6]), {"data": [1.0]}, 1e-6, 0.0) != ""


def test_exact_fp32_ignores_json_digits_but_not_real_differences():
    # 0.1 as float32 printed with full double digits by a server
    assert tv.compare("y", fp32([0.10000000149011612]), {"data": [0.1], "equals": True}, 0, 0) == ""
    assert tv.compare("y", fp32([0.10000001]), {"data": [0.1], "equals": True}, 0, 0) != ""


def test_bytes_and_equals_value_are_exact():
    got = {"datatype": "BYTES", "shape": [2, 1], "data": ["disk", b"oom"]}
    assert tv.compare("label", got, {"data": [["disk"], ["oom"]], "shape": [2, 1]}, 1, 1) == ""
    assert tv.compare("label", got, {"data": ["disk", "OOM"]}, 1, 1) == "output label[1] is 'oom', expected 'OOM' exactly"
    ints = {"datatype": "INT64", "shape": [2], "data": [3, 4]}
    assert tv.compare("n", ints, {"equals": [3, 4]}, 0, 0) == ""
    assert "expected 5 exactly" in tv.compare("n", ints, {"equals": [3, 5], "atol": 10}, 0, 0)


def test_shape_count_and_missing_outputs():
    assert tv.compare("y", fp32([1, 2], shape=[1, 2]), {"data": [1, 2], "shape": [2, 1]}, 0, 0) == \
        "output y has shape [1, 2], expected [2, 1]"
    assert tv.compare("y", fp32([1, 2]), {"data": [1, 2, 3]}, 0, 0) == "output y has 2 values, expected 3"
    assert tv.compare("y", None, {"data": [1]}, 0, 0) == "output y missing from the response"
    assert tv.check_outputs({"a": fp32([1.0])}, {"a": {"data": [1.0]}, "b": {"data": [2]}}, 0, 0) == \
        ["output b missing from the response"]


def test_nan_matches_nan_only():
    assert tv.compare("y", fp32([float("nan")]), {"data": [float("nan")]}, 0, 0) == ""
    assert tv.compare("y", fp32([1.0]), {"data": [float("nan")]}, 0, 0) != ""


def test_cases_file_accepts_list_or_cases_key(tmp_path):
    (tmp_path / "a.json").write_text('[{"name": "x"}]')
    (tmp_path / "b.json").write_text('{"schema": 1, "cases": [{"name": "y"}]}')
    (tmp_path / "c.json").write_text('{"schema": 1}')
    assert tv.load_cases_file(str(tmp_path / "a.json")) == [{"name": "x"}]
    assert tv.load_cases_file(str(tmp_path / "b.json")) == [{"name": "y"}]
    try:
        tv.load_cases_file(str(tmp_path / "c.json"))
    except tv.GoldenCaseError as exc:
        assert "expected a list of cases" in str(exc)
    else:
        raise AssertionError("a file without cases was accepted")


def test_case_problem_names_the_case():
    assert tv.case_problem({"name": "a", "inputs": {}, "expected": {"y": {}}}) == ""
    assert tv.case_problem({"name": "a", "inputs": {}}) == "golden case 'a' needs 'inputs' and 'expected' maps"
    assert tv.case_problem("text") == "golden case 'case' needs 'inputs' and 'expected' maps"
