"""The anomaly detector's ONNX graphs compute what was trained, and v2 beats v1."""

import numpy as np
import onnxruntime as ort

from model_repository._build import anomaly, telemetry


def test_generator_is_seeded_and_labels_what_it_injects():
    x1, y1, k1 = telemetry.generate(5, 50)
    x2, y2, _kinds = telemetry.generate(5, 50)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    assert x1.shape == (50, 60, 20) and x1.dtype == np.float32
    for row, injected in zip(y1, k1):
        assert sorted(np.flatnonzero(row)) == sorted(metric for _kind, metric in injected)


def test_onnx_matches_numpy_and_v2_is_better():
    x_train, y_train = telemetry.generate(1, 600)[:2]
    x_test, y_test = telemetry.generate(2, 300)[:2]
    f1 = {}
    versions = (("v1", anomaly.fit_v1, anomaly.v1_numpy, anomaly.v1_onnx),
                ("v2", anomaly.fit_v2, anomaly.v2_numpy, anomaly.v2_onnx))
    for name, fit, run, to_onnx in versions:
        params = fit(x_train, y_train)
        model = to_onnx(params)
        assert model.opset_import[0].version == anomaly.OPSET and model.ir_version == anomaly.IR_VERSION
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        score, labels = session.run(None, {"metrics_input": x_test})
        want_score, want_labels = run(params, x_test)
        np.testing.assert_allclose(score, want_score, atol=1e-3)
        assert (labels != want_labels).mean() < 1e-3
        assert ((score >= 0) & (score <= 1)).all() and labels.dtype == np.int32
        f1[name] = anomaly.evaluate(y_test, labels, score)["per_metric"]["f1"]
    assert f1["v2"] > f1["v1"] + 0.2, f1
