"""The golden-case writer and comparison (what triton_verify's cases look like)."""

import numpy as np

from model_repository._build import golden


def test_tensor_round_trips_float32_exactly():
    array = np.array([[0.1, 1500.37], [-2.5, 3.0]], dtype=np.float32)
    spec = golden.tensor(array)
    assert spec["datatype"] == "FP32" and spec["shape"] == [2, 2]
    np.testing.assert_array_equal(np.array(spec["data"], dtype=np.float32).reshape(2, 2), array)


def test_bytes_tensor_is_text():
    spec = golden.tensor(np.array([[b"disk full"]], dtype=object))
    assert spec == {"datatype": "BYTES", "shape": [1, 1], "data": ["disk full"]}


def test_check_accepts_within_tolerance_and_reports_each_problem():
    expected = {"score": golden.close(np.array([[0.5]], dtype=np.float32), atol=1e-3),
                "label": golden.exact(np.array([[b"memory"]], dtype=object)),
                "flags": golden.exact(np.array([[0, 1]], dtype=np.int32))}
    good = {"score": np.array([[0.5004]], dtype=np.float32), "label": np.array([[b"memory"]], dtype=object),
            "flags": np.array([[0, 1]], dtype=np.int32)}
    assert golden.check(expected, good) == []
    bad = {"score": np.array([[0.51]], dtype=np.float32), "label": np.array([[b"cpu"]], dtype=object),
           "flags": np.array([0, 1], dtype=np.int32)}
    problems = golden.check(expected, bad)
    # one sentence per tensor, by name: the same comparison triton_verify makes
    assert problems == ["output flags has shape [2], expected [1, 2]",
                        "output label[0] is 'cpu', expected 'memory' exactly",
                        "output score[0] is 0.51, expected 0.5 within atol=0.001 rtol=0"]
    assert golden.check(expected, {}) == ["output flags missing from the response", "output label missing from the response",
                                          "output score missing from the response"]


def test_build_and_module_share_one_comparison_and_tolerance():
    from ansible_collections.aiops.triton.plugins.module_utils import golden_cases
    assert golden.gc.DEFAULT_ATOL == golden_cases.DEFAULT_ATOL and golden.gc.DEFAULT_RTOL == golden_cases.DEFAULT_RTOL
    assert golden.gc.GOLDEN_FILE == golden_cases.GOLDEN_FILE == "golden_cases.json"
    # a case without its own tolerance gets the shared default in both places
    expected = {"y": {"shape": [1], "data": [1.0]}}
    near, far = 1.0 + golden_cases.DEFAULT_RTOL / 2, 1.0 + golden_cases.DEFAULT_RTOL * 3
    assert golden.check(expected, {"y": np.array([near], dtype=np.float64)}) == []
    assert golden.check(expected, {"y": np.array([far], dtype=np.float64)}) != []
    assert golden_cases.check_outputs({"y": {"datatype": "FP64", "shape": [1], "data": [near]}}, expected) == []
    assert golden_cases.check_outputs({"y": {"datatype": "FP64", "shape": [1], "data": [far]}}, expected) != []
