"""The served classifier code: trusted-types loading and vectorised classification."""

import importlib.util
import os

import numpy as np
import pytest
import skops.io as sio
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from model_repository._build import alerts

CLASSIFY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "model_repository", "alert_classifier", "1", "classify.py")


@pytest.fixture(scope="module")
def classify():
    spec = importlib.util.spec_from_file_location("alert_classify_under_test", CLASSIFY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    texts, labels = alerts.corpus(3, 30)
    path = str(tmp_path_factory.mktemp("clf") / "classifier.skops")
    sio.dump(alerts.train(texts, labels), path)
    return path


def test_loads_and_classifies_a_batch(classify, artifact):
    pipe = classify.load(artifact)
    labels, confidence = classify.classify(pipe, ["Disk space on /dev/sda1 is 95% full", "Pod memory usage exceeds 90% threshold"], 0.3)
    assert list(labels) == ["disk", "memory"]
    assert confidence.dtype == np.float32 and confidence.shape == (2,)


def test_low_confidence_is_unknown(classify, artifact):
    labels, confidence = classify.classify(classify.load(artifact), ["Disk space on /dev/sda1 is 95% full"], 1.01)
    assert list(labels) == ["unknown"] and 0 < confidence[0] <= 1


def test_refuses_an_artifact_with_untrusted_types(classify, tmp_path):
    path = str(tmp_path / "evil.skops")
    sio.dump(make_pipeline(FunctionTransformer(os.system)), path)
    with pytest.raises(ValueError, match="does not trust: posix.system"):
        classify.load(path)


def test_direct_path_matches_the_pipeline(classify, artifact):
    clf = classify.load(artifact)
    assert clf.direct
    texts, _labels = alerts.corpus(5, 60)
    texts += ["zzqx no known words", "Disk space on /dev/sda1 is 95% full"]
    want = clf.pipeline.predict_proba(texts)
    np.testing.assert_allclose(clf.predict_proba(texts), want, rtol=0, atol=1e-12)
    labels, conf = classify.classify(clf, texts[:3], 0.3)
    want_labels, want_conf = classify.classify(clf.pipeline, texts[:3], 0.3)
    assert list(labels) == list(want_labels)
    np.testing.assert_allclose(conf, want_conf, atol=1e-6)


def test_unknown_pipeline_shape_uses_the_pipeline(classify):
    from sklearn.linear_model import LogisticRegression
    from sklearn.feature_extraction.text import TfidfVectorizer
    texts, labels = ["disk full", "cpu hot", "disk slow", "cpu busy"], ["disk", "cpu", "disk", "cpu"]
    pipe = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(texts, labels)
    clf = classify.Classifier(pipe)
    assert not clf.direct
    np.testing.assert_array_equal(clf.predict_proba(["disk"]), pipe.predict_proba(["disk"]))
