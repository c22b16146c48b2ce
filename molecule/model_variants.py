"""Model versions a failure sequence publishes to the lab's S3, and the answers each version must give.

Each variant is built from the collection's own build (build/model_repository, `make models`), so it is a
real artifact the fleet syncs, checks by sha256 and loads:
- ``anomaly_detector`` corrupt: version 2's files with a truncated ``model.onnx`` (cannot load);
- ``anomaly_detector`` regressed: version 1's graph under version 2's golden cases (a retrain that answers
  like the old detector: it loads, then fails its golden cases);
- ``anomaly_detector`` good: version 2's files again, under a new version number;
- ``alert_classifier`` slow: version 1's files with a ``model.py`` that takes ``seconds`` longer for any
  request of more texts than its largest golden case (the golden cases pass; live traffic is slowed).

``ExpectedAnswers`` runs each published anomaly_detector graph with onnxruntime on the controller over fixed
windows, so a client can compare every answer with what the version that answered (the response's
``model_version``) must return.
"""

import json
import os
import shutil

import numpy as np

from lab_hosts import publish_version  # molecule/lab_hosts.py (its callers put molecule/ on sys.path)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.join(ROOT, "build", "model_repository")
# A request of this many texts is larger than any golden case of alert_classifier (its largest holds 3).
SLOW_BATCH = 4
SLOW_HOOK = '''

# --- slow variant (molecule/model_variants.py): a regression only live traffic shows --------------------
import time as _slow_time  # noqa: E402

_GOLDEN_MAX_TEXTS = %(golden_max)d
_fast_execute = TritonPythonModel.execute


def _slow_execute(self, requests):
    texts = max(pb_utils.get_input_tensor_by_name(r, "alert_text").as_numpy().size for r in requests)
    if texts > _GOLDEN_MAX_TEXTS:
        _slow_time.sleep(%(seconds)r)
    return _fast_execute(self, requests)


TritonPythonModel.execute = _slow_execute
'''


def _stage(workdir, model, version, files_from):
    """A repository holding ``model``/``version`` copied from the build's ``files_from`` version."""
    repo = os.path.join(workdir, "%s-v%d-repo" % (model, version))
    shutil.rmtree(repo, ignore_errors=True)
    dest = os.path.join(repo, model, str(version))
    shutil.copytree(os.path.join(BUILD, model, str(files_from)), dest,
                    ignore=shutil.ignore_patterns("__pycache__", "MANIFEST.json"))
    return repo, dest


def _golden(dest, version, cases_from=None, model=None):
    """Write dest's golden_cases.json for ``version`` (another build version's cases when cases_from)."""
    source = os.path.join(BUILD, model, str(cases_from), "golden_cases.json") if cases_from else os.path.join(dest, "golden_cases.json")
    with open(source) as handle:
        cases = json.load(handle)
    cases["version"] = version
    with open(os.path.join(dest, "golden_cases.json"), "w") as handle:
        json.dump(cases, handle)
    return [case["name"] for case in cases["cases"]]


def publish_anomaly(workdir, version, kind):
    """Publish anomaly_detector ``version`` of ``kind`` (corrupt, regressed, good); returns its case names."""
    weights = {"corrupt": 2, "regressed": 1, "good": 2}[kind]
    repo, dest = _stage(workdir, "anomaly_detector", version, weights)
    cases = _golden(dest, version, cases_from=2, model="anomaly_detector")
    if kind == "corrupt":
        path = os.path.join(dest, "model.onnx")
        with open(path, "rb") as handle:
            head = handle.read(200)
        with open(path, "wb") as handle:  # a cut-off upload: what the manifest hashes is what the host gets
            handle.write(head)
    publish_version(repo, "anomaly_detector", version)
    return cases


def publish_slow_classifier(workdir, version, seconds):
    """Publish alert_classifier ``version``: version 1 slowed by ``seconds`` on requests of more texts
    than its golden cases send. Returns the largest golden case's text count."""
    repo, dest = _stage(workdir, "alert_classifier", version, 1)
    _golden(dest, version)
    with open(os.path.join(dest, "golden_cases.json")) as handle:
        golden_max = max(int(np.prod(c["inputs"]["alert_text"]["shape"])) for c in json.load(handle)["cases"])
    assert golden_max < SLOW_BATCH, "the live batch must be larger than every golden case"
    with open(os.path.join(dest, "model.py"), "a") as handle:
        handle.write(SLOW_HOOK % {"golden_max": golden_max, "seconds": float(seconds)})
    publish_version(repo, "alert_classifier", version)
    return golden_max


def classifier_live_batch():
    """SLOW_BATCH alert texts and their labels, taken from alert_classifier 1's single-text golden cases."""
    with open(os.path.join(BUILD, "alert_classifier", "1", "golden_cases.json")) as handle:
        cases = json.load(handle)["cases"]
    singles = [(c["inputs"]["alert_text"]["data"][0], c["expected"]["class_label"]["data"][0])
               for c in cases if c["inputs"]["alert_text"]["shape"] == [1, 1]]
    assert len(singles) >= SLOW_BATCH, singles
    return [t for t, _l in singles[:SLOW_BATCH]], [label for _t, label in singles[:SLOW_BATCH]]


class ExpectedAnswers(object):
    """anomaly_score of fixed [4, 60, 20] windows for each served version, from its own graph."""

    def __init__(self, windows=8, seed=11):
        rng = np.random.default_rng(seed)
        self.windows = [rng.normal(size=(4, 60, 20)).astype(np.float32) for _window in range(windows)]
        self.scores = {}  # version -> [scores per window]

    def add(self, version, weights_from):
        import onnxruntime
        session = onnxruntime.InferenceSession(os.path.join(BUILD, "anomaly_detector", str(weights_from), "model.onnx"),
                                               providers=["CPUExecutionProvider"])
        self.scores[int(version)] = [session.run(["anomaly_score"], {"metrics_input": w})[0] for w in self.windows]

    def table(self):
        """What a client process needs (plain data, picklable)."""
        return {"windows": self.windows, "scores": dict(self.scores)}


def answer_problem(table, window, version, score, atol=1e-4):
    """None when ``score`` is what ``version`` answers for window ``window``; else what is wrong."""
    try:
        version = int(version)
    except (TypeError, ValueError):
        return "no model_version in the answer: %r" % (version,)
    expected = table["scores"].get(version)
    if expected is None:
        return "answered by version %d, whose answers are not known (never published as a good one)" % version
    score = np.asarray(score, dtype=np.float32)
    if score.shape != expected[window].shape or not np.allclose(score, expected[window], atol=atol, rtol=0):
        return "version %d answered window %d with %s, not its own %s" % (
            version, window, np.ravel(score).tolist(), np.ravel(expected[window]).tolist())
    return None
