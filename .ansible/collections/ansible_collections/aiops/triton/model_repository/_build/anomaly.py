"""anomaly_detector: two versions trained on seeded telemetry, written as plain ONNX graphs.

Both versions are small statistical detectors whose parameters are fitted in numpy/scikit-learn
and then expressed with ``onnx.helper`` (no deep-learning framework, so the build is fast and
byte-for-byte reproducible).  Every formula below exists twice -- once in numpy (``*_numpy``, used
for training and evaluation) and once as ONNX nodes -- and the build asserts they agree.

v1  window z-score: a metric is anomalous when some step is far from the window's own mean in
    units of the window's own std.  Cheap, but a level shift or drift inflates the std it is
    measured against, so it misses exactly the slow incidents.
v2  reference-window detector: the first 25 steps are the baseline; features are the largest
    deviation after the baseline, the shift of the last 10 steps and the largest step jump, each
    in units of the baseline's spread; a logistic regression fitted on labelled windows turns
    them into a per-metric probability.  anomaly_score is the largest per-metric probability.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.linear_model import LogisticRegression

from . import telemetry

OPSET = 17      # Triton 23.x-25.x native onnxruntime backends all load opset 17 / IR 8
IR_VERSION = 8
REF = 25        # baseline steps (anomalies are injected after them)
TAIL = 10       # "recent" steps for the level-shift feature
EPS = 1e-6


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# -- v1 ------------------------------------------------------------------------------
def v1_features(x):
    mean = x.mean(axis=1, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True))
    return (np.abs(x - mean) / (std + EPS)).max(axis=1)                 # [B,20]


def fit_v1(x, y):
    """Pick the z threshold that maximises per-metric F1 on the training set."""
    z = v1_features(x)
    best = max(np.arange(2.0, 6.0, 0.05), key=lambda t: _f1(y, (z > t).astype(np.int32)))
    return {"threshold": float(round(best, 2)), "sharpness": 3.0}


def v1_numpy(params, x):
    z = v1_features(x).astype(np.float32)
    labels = (z > params["threshold"]).astype(np.int32)
    score = _sigmoid(params["sharpness"] * (z.max(axis=1, keepdims=True) - params["threshold"]))
    return score.astype(np.float32), labels


# -- v2 ------------------------------------------------------------------------------
def v2_features(x):
    ref = x[:, :REF]
    base = ref.mean(axis=1, keepdims=True)
    spread = np.sqrt(((ref - base) ** 2).mean(axis=1, keepdims=True)) + EPS
    dev = (np.abs(x[:, REF:] - base) / spread).max(axis=1)
    shift = np.abs(x[:, -TAIL:].mean(axis=1, keepdims=True) - base)[:, 0] / spread[:, 0]
    jump = (np.abs(np.diff(x, axis=1)) / spread).max(axis=1)
    return np.log1p(np.stack([dev, shift, jump], axis=-1))            # [B,20,3]


def fit_v2(x, y):
    feats = v2_features(x).reshape(-1, 3)
    clf = LogisticRegression(C=1.0, max_iter=1000)
    clf.fit(feats, y.reshape(-1))
    return {"weights": [float(w) for w in clf.coef_[0]], "bias": float(clf.intercept_[0])}


def v2_numpy(params, x):
    feats = v2_features(x).astype(np.float32)
    prob = _sigmoid(feats @ np.asarray(params["weights"], dtype=np.float32) + params["bias"])
    return prob.max(axis=1, keepdims=True).astype(np.float32), (prob > 0.5).astype(np.int32)


# -- ONNX ----------------------------------------------------------------------------
class _Graph(object):
    """Tiny node/initializer collector so the graphs read like the numpy above."""

    def __init__(self):
        self.nodes, self.inits, self._n = [], [], 0

    def const(self, value, dtype=np.float32):
        name = "c%d" % len(self.inits)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type, *inputs, **attrs):
        self._n += 1
        out = "%s_%d" % (op_type.lower(), self._n)
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def mean(self, x, axis=1):
        return self.op("ReduceMean", x, axes=[axis], keepdims=1)

    def std(self, x, mean):
        centred = self.op("Sub", x, mean)
        return self.op("Sqrt", self.mean(self.op("Mul", centred, centred)))

    def steps(self, x, start, end):
        return self.op("Slice", x, self.const([start], np.int64), self.const([end], np.int64),
                       self.const([1], np.int64))

    def finish(self, score, labels, doc):
        self.nodes.append(helper.make_node("Identity", [score], ["anomaly_score"]))
        self.nodes.append(helper.make_node("Identity", [labels], ["anomaly_labels"]))
        graph = helper.make_graph(
            self.nodes, "anomaly_detector",
            [helper.make_tensor_value_info("metrics_input", TensorProto.FLOAT, ["batch", telemetry.STEPS, telemetry.N_METRICS])],
            [helper.make_tensor_value_info("anomaly_score", TensorProto.FLOAT, ["batch", 1]),
             helper.make_tensor_value_info("anomaly_labels", TensorProto.INT32, ["batch", telemetry.N_METRICS])],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="aiops.triton model build", doc_string=doc)
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model


def v1_onnx(params):
    g = _Graph()
    x = "metrics_input"
    mean = g.mean(x)
    z = g.op("Div", g.op("Abs", g.op("Sub", x, mean)), g.op("Add", g.std(x, mean), g.const(EPS)))
    zmax = g.op("ReduceMax", z, axes=[1], keepdims=0)                                  # [B,20]
    labels = g.op("Cast", g.op("Greater", zmax, g.const(params["threshold"])), to=TensorProto.INT32)
    top = g.op("ReduceMax", zmax, axes=[1], keepdims=1)                                # [B,1]
    score = g.op("Sigmoid", g.op("Mul", g.const(params["sharpness"]), g.op("Sub", top, g.const(params["threshold"]))))
    return g.finish(score, labels, "v1: window z-score detector")


def v2_onnx(params):
    g = _Graph()
    x = "metrics_input"
    ref = g.steps(x, 0, REF)
    base = g.mean(ref)
    spread = g.op("Add", g.std(ref, base), g.const(EPS))
    dev = g.op("ReduceMax", g.op("Div", g.op("Abs", g.op("Sub", g.steps(x, REF, telemetry.STEPS), base)), spread),
               axes=[1], keepdims=0)
    shift = g.op("ReduceMax", g.op("Div", g.op("Abs", g.op("Sub", g.mean(g.steps(x, telemetry.STEPS - TAIL, telemetry.STEPS)), base)),
                                   spread), axes=[1], keepdims=0)
    diff = g.op("Sub", g.steps(x, 1, telemetry.STEPS), g.steps(x, 0, telemetry.STEPS - 1))
    jump = g.op("ReduceMax", g.op("Div", g.op("Abs", diff), spread), axes=[1], keepdims=0)
    one = g.const(1.0)
    w = params["weights"]
    logit = g.const(params["bias"])
    for weight, feat in zip(w, (dev, shift, jump)):
        logit = g.op("Add", logit, g.op("Mul", g.const(weight), g.op("Log", g.op("Add", feat, one))))
    prob = g.op("Sigmoid", logit)                                                      # [B,20]
    labels = g.op("Cast", g.op("Greater", prob, g.const(0.5)), to=TensorProto.INT32)
    score = g.op("ReduceMax", prob, axes=[1], keepdims=1)
    return g.finish(score, labels, "v2: reference-window logistic detector")


# -- metrics -------------------------------------------------------------------------
def _f1(y, pred):
    tp = int(((y == 1) & (pred == 1)).sum())
    fp = int(((y == 0) & (pred == 1)).sum())
    fn = int(((y == 1) & (pred == 0)).sum())
    return 2 * tp / max(2 * tp + fp + fn, 1)


def evaluate(y, labels, score):
    """Per-metric and per-window precision/recall/F1 (window truth: any metric anomalous)."""
    out = {}
    for level, truth, pred in (("per_metric", y, labels), ("per_window", y.max(axis=1), (score[:, 0] > 0.5).astype(np.int32))):
        tp = int(((truth == 1) & (pred == 1)).sum())
        fp = int(((truth == 0) & (pred == 1)).sum())
        fn = int(((truth == 1) & (pred == 0)).sum())
        precision = tp / max(tp + fp, 1)
        recall = tp / max(tp + fn, 1)
        out[level] = {"precision": round(precision, 4), "recall": round(recall, 4),
                      "f1": round(2 * precision * recall / max(precision + recall, 1e-12), 4)}
    return out


def evaluate_by_kind(labels, kinds):
    """Recall per injected anomaly kind (per metric): where each version wins or loses."""
    counts = {k: [0, 0] for k in telemetry.ANOMALY_KINDS}
    for i, injected in enumerate(kinds):
        for kind, metric in injected:
            counts[kind][0] += int(labels[i, metric] == 1)
            counts[kind][1] += 1
    return {k: round(hit / max(n, 1), 4) for k, (hit, n) in counts.items()}
