"""Load the skops alert classifier and classify a batch of texts (no Triton imports here).

Shared by model.py (served) and the build (which computes golden cases with it), so what
Triton answers and what the golden cases expect come from the same code.

``load`` returns a ``Classifier``: the fitted scikit-learn pipeline plus a direct evaluation of
it for small batches. A profile of one ``predict_proba`` call on one text (about 0.9 ms on the
2-core bench VM) spent under 15% in the features and the product with the coefficients; the rest
was scikit-learn's per-call machinery (input and parameter validation, dataframe checks,
joblib for the FeatureUnion, sparse-matrix construction). ``Classifier`` computes the same
numbers for a few texts without it: each vectorizer's own analyzer and vocabulary, sublinear
tf, idf, the norm, then ``coef_`` and softmax. It is built only for the pipeline shape it knows
(TF-IDF vectorizers in a FeatureUnion, then LogisticRegression), checked at load against the
pipeline's own ``predict_proba`` on probe texts (otherwise, and for batches above
``DIRECT_MAX_TEXTS``, the pipeline itself answers). Over 2,800 texts the two agree to 2e-15.
"""

import math

import numpy as np
import skops.io as sio

# skops loads only types it trusts by default (scikit-learn estimators, numpy, scipy); it
# reports everything else as untrusted and this loader then refuses the file, so a tampered
# artifact cannot make loading call arbitrary functions.  Nothing extra is trusted.
TRUSTED_TYPES = []
UNKNOWN = "unknown"
# Batches up to this many texts (the model's max_batch_size) take the direct path: measured on
# the bench VM, 66 us against 1,140 us for one text and 2.0 ms against 3.4 ms for 32.
DIRECT_MAX_TEXTS = 64
# The direct path must agree with the pipeline to this on the probe texts, or it is not used.
PROBE_ATOL = 1e-9


def load(path):
    with open(path, "rb") as handle:
        data = handle.read()
    untrusted = sorted(set(sio.get_untrusted_types(data=data)) - set(TRUSTED_TYPES))
    if untrusted:
        raise ValueError("%s contains types this model does not trust: %s" % (path, ", ".join(untrusted)))
    return Classifier(sio.loads(data, trusted=TRUSTED_TYPES))


def _direct_parts(pipeline):
    """The (vectorizer parts, coef^T, intercept) of a supported pipeline, else None."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, Pipeline

    # the exact classes, not isinstance: a subclass may override what the direct path re-computes
    if pipeline.__class__ is not Pipeline or len(pipeline.steps) != 2:
        return None
    union, clf = pipeline.steps[0][1], pipeline.steps[1][1]
    if union.__class__ is not FeatureUnion or union.transformer_weights is not None or clf.__class__ is not LogisticRegression:
        return None
    parts, offset = [], 0
    for _name, vec in union.transformer_list:
        if vec.__class__ is not TfidfVectorizer or vec.binary or vec.norm not in ("l2", "l1", None):
            return None
        idf = np.asarray(vec.idf_, dtype=np.float64) if vec.use_idf else None
        parts.append((vec.build_analyzer(), vec.vocabulary_, idf, bool(vec.sublinear_tf), vec.norm, offset))
        offset += len(vec.vocabulary_)
    coef = np.asarray(clf.coef_, dtype=np.float64)
    if coef.shape[1] != offset:
        return None
    return parts, np.ascontiguousarray(coef.T), np.asarray(clf.intercept_, dtype=np.float64)


class Classifier(object):
    """``predict_proba`` and ``classes_`` of the fitted pipeline (``.pipeline``), small batches direct."""

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.classes_ = pipeline.classes_
        self._direct = _direct_parts(pipeline)
        if self._direct is not None and not self._agrees():
            self._direct = None

    @property
    def direct(self):
        """True when small batches are answered without the pipeline's per-call machinery."""
        return self._direct is not None

    def _probes(self):
        words = sorted(self._direct[0][0][1])[:40]
        return ["Disk space on /dev/sda1 is 95% full", "zzqx", " ".join(words[:20]), " ".join(words[20:]),
                " ".join(str(c) for c in self.classes_)]

    def _agrees(self):
        probes = self._probes()
        want = self.pipeline.predict_proba(probes)
        got = self._direct_proba(probes)
        return want.shape == got.shape and bool(np.allclose(got, want, rtol=0.0, atol=PROBE_ATOL))

    def _direct_proba(self, texts):
        parts, coef_t, intercept = self._direct
        scores = np.tile(intercept, (len(texts), 1))
        for row, text in enumerate(texts):
            for analyzer, vocab, idf, sublinear, norm, offset in parts:
                counts = {}
                for token in analyzer(text):
                    index = vocab.get(token)
                    if index is not None:
                        counts[index] = counts.get(index, 0) + 1
                if not counts:
                    continue
                index = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
                value = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
                if sublinear:
                    value = np.log(value) + 1.0
                if idf is not None:
                    value = value * idf[index]
                if norm == "l2":
                    total = math.sqrt(float(value @ value))
                elif norm == "l1":
                    total = float(np.abs(value).sum())
                else:
                    total = 0.0
                if total > 0.0:
                    value = value / total
                scores[row] += value @ coef_t[index + offset]
        if coef_t.shape[1] == 1:  # binary: LogisticRegression's logistic of the one decision value
            positive = 1.0 / (1.0 + np.exp(-scores[:, 0]))
            return np.column_stack([1.0 - positive, positive])
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        return scores

    def predict_proba(self, texts):
        if self._direct is not None and len(texts) <= DIRECT_MAX_TEXTS:
            return self._direct_proba(texts)
        return self.pipeline.predict_proba(texts)


def classify(pipeline, texts, min_confidence):
    """Return (labels: object array of str, confidence: float32 array) for a list of str.

    ``pipeline``: what ``load`` returns, or any fitted estimator with ``predict_proba`` and ``classes_``.
    """
    if not texts:
        return np.empty(0, dtype=object), np.empty(0, dtype=np.float32)
    proba = pipeline.predict_proba(texts)
    best = proba.argmax(axis=1)
    confidence = proba[np.arange(len(texts)), best].astype(np.float32)
    labels = np.asarray(pipeline.classes_, dtype=object)[best]
    labels[confidence < min_confidence] = UNKNOWN
    return labels, confidence
