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
    assert [p.split(":")[0] for p in problems] == ["score", "label", "flags"]
    assert "shape [2]" in problems[2]
    assert golden.check(expected, {}) == ["score: missing from the response", "label: missing from the response",
                                          "flags: missing from the response"]
