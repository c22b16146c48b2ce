"""Load the skops alert classifier and classify a batch of texts (no Triton imports here).

Shared by model.py (served) and the build (which computes golden cases with it), so what
Triton answers and what the golden cases expect come from the same code.
"""

import numpy as np
import skops.io as sio

# skops loads only types it trusts by default (scikit-learn estimators, numpy, scipy); it
# reports everything else as untrusted and this loader then refuses the file, so a tampered
# artifact cannot make loading call arbitrary functions.  Nothing extra is trusted.
TRUSTED_TYPES = []
UNKNOWN = "unknown"


def load(path):
    with open(path, "rb") as handle:
        data = handle.read()
    untrusted = sorted(set(sio.get_untrusted_types(data=data)) - set(TRUSTED_TYPES))
    if untrusted:
        raise ValueError("%s contains types this model does not trust: %s" % (path, ", ".join(untrusted)))
    return sio.loads(data, trusted=TRUSTED_TYPES)


def classify(pipeline, texts, min_confidence):
    """Return (labels: object array of str, confidence: float32 array) for a list of str."""
    if not texts:
        return np.empty(0, dtype=object), np.empty(0, dtype=np.float32)
    proba = pipeline.predict_proba(texts)
    best = proba.argmax(axis=1)
    confidence = proba[np.arange(len(texts)), best].astype(np.float32)
    labels = np.asarray(pipeline.classes_, dtype=object)[best]
    labels[confidence < min_confidence] = UNKNOWN
    return labels, confidence
