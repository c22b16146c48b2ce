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
