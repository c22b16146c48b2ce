"""Build the whole model repository from source: ``python -m model_repository._build``.

Writes ``<out>/model_repository/`` (a Triton repository: config.pbtxt, trained artifacts,
model.py files, golden_cases.json in every version dir), ``<out>/reports/`` (metrics JSON and
model cards) and refreshes the committed cards in ``docs/models/``.  Seeds are fixed: a rerun
gives the same metrics, and the same bytes for every artifact except the skops zip (see
model_repository/README.md).
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

from . import alerts, anomaly, cards, forecaster, golden, render, telemetry

SOURCES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKOUT = os.path.dirname(SOURCES)
MODELS = ("anomaly_detector", "alert_classifier", "metric_forecaster", "ops_pipeline")
SEEDS = {"telemetry_train": 101, "telemetry_test": 202, "telemetry_golden": 303,
         "alerts_train": 11, "alerts_test": 12, "series": 21}

SEED_ALERTS = [  # the examples from the seed article, plus one per remaining class
    ("Pod memory usage exceeds 90% threshold", "memory"),
    ("Network latency P99 increased to 5000ms", "network"),
    ("Disk space on /dev/sda1 is 95% full", "disk"),
    ("CPU usage on web-01.dc1 is above 95% for 10 minutes", "cpu"),
    ("MySQL replication lag on orders-db is 120 seconds", "database"),
    ("HTTP 5xx error rate of checkout is 7%", "application"),
    ("Watchdog alert is firing to ensure the pipeline works", "unknown"),
]

ANOMALY_NOTES = [
    "Per-metric truth is the injected label; window truth is 'any metric anomalous', predicted as anomaly_score > 0.5.",
    "v1 misses level shifts and drifts: they inflate the window std it measures against.",
    "Anomalies starting inside the first 25 steps are outside what v2 was trained for.",
]
CLASSIFIER_NOTES = [
    "Generated wording is narrower than real alert streams; retrain on your own labelled alerts before trusting it.",
    "A request whose text is empty or not UTF-8 gets an error response; the other requests in the batch are answered.",
]


def _copy_sources(model, version, dest):
    src = os.path.join(SOURCES, model, str(version))
    os.makedirs(dest, exist_ok=True)
    if os.path.isdir(src):
        for name in sorted(os.listdir(src)):
            if name.endswith(".py"):
                shutil.copy2(os.path.join(src, name), os.path.join(dest, name))


def _load_module(model, version, name):
    """Import a per-version helper (classify.py, forecast.py) from the built version dir."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("%s_v%s_%s" % (model, version, name),
                                                  os.path.join(SOURCES, model, str(version), name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- anomaly_detector --------------------------------------------------------------------
def _anomaly_row(version, m):
    cells = [m[level][k] for level in ("per_metric", "per_window") for k in ("precision", "recall", "f1")]
    return [version] + cells + [m["recall_by_kind"][k] for k in telemetry.ANOMALY_KINDS]


def build_anomaly(out_repo, reports):
    x_train, y_train, _kinds = telemetry.generate(SEEDS["telemetry_train"], 3000)
    x_test, y_test, k_test = telemetry.generate(SEEDS["telemetry_test"], 2000)
    versions = {1: (anomaly.fit_v1, anomaly.v1_numpy, anomaly.v1_onnx), 2: (anomaly.fit_v2, anomaly.v2_numpy, anomaly.v2_onnx)}
    import onnxruntime as ort
    metrics, sessions, params_by_version = {}, {}, {}
    for version, (fit, run_numpy, to_onnx) in versions.items():
        params = fit(x_train, y_train)
        model = to_onnx(params)
        vdir = os.path.join(out_repo, "anomaly_detector", str(version))
        os.makedirs(vdir, exist_ok=True)
        path = os.path.join(vdir, "model.onnx")
        with open(path, "wb") as handle:
            handle.write(model.SerializeToString())
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        score, labels = sess.run(["anomaly_score", "anomaly_labels"], {"metrics_input": x_test})
        ref_score, ref_labels = run_numpy(params, x_test)
        # the ONNX graph must compute what was trained and evaluated
        assert np.abs(score - ref_score).max() < 1e-3 and (labels != ref_labels).mean() < 1e-3, "ONNX != numpy"
        metrics["v%d" % version] = dict(anomaly.evaluate(y_test, labels, score),
                                        recall_by_kind=anomaly.evaluate_by_kind(labels, k_test), params=params)
        sessions[version], params_by_version[version] = sess, params
    if not metrics["v2"]["per_metric"]["f1"] > metrics["v1"]["per_metric"]["f1"]:
        raise SystemExit("anomaly_detector v2 is not better than v1 on held-out data: %s" % metrics)

    # golden: a normal window, one per anomaly kind, and a batch of four
    x, y, kinds = telemetry.generate(SEEDS["telemetry_golden"], 300)
    x = np.round(x.astype(np.float64), 2).astype(np.float32)
    z1 = anomaly.v1_features(x)
    p2 = anomaly._sigmoid(anomaly.v2_features(x) @ np.asarray(params_by_version[2]["weights"]) + params_by_version[2]["bias"])
    clear = (np.abs(z1 - params_by_version[1]["threshold"]).min(axis=1) > 0.3) & (np.abs(p2 - 0.5).min(axis=1) > 0.2)
    v2_right = ((p2 > 0.5).astype(np.int32) == y).all(axis=1)
    picks = {}
    for i in np.flatnonzero(clear & v2_right):
        label = kinds[i][0][0] if len(kinds[i]) == 1 else ("normal" if not kinds[i] else None)
        if label and label not in picks:
            picks[label] = int(i)
    missing = {"normal", "spike", "level_shift", "drift"} - set(picks)
    if missing:
        raise SystemExit("no clear golden window for %s" % sorted(missing))
    batches = [("normal window", [picks["normal"]]), ("level shift in one metric", [picks["level_shift"]]),
               ("batch of four: normal, spike, level shift, drift",
                [picks["normal"], picks["spike"], picks["level_shift"], picks["drift"]])]
    for version, sess in sessions.items():
        cases = []
        for name, rows in batches:
            batch = x[rows]
            score, labels = sess.run(["anomaly_score", "anomaly_labels"], {"metrics_input": batch})
            cases.append(golden.case(name, {"metrics_input": batch},
                                     {"anomaly_score": golden.close(score, atol=1e-4), "anomaly_labels": golden.exact(labels)}))
        golden.write(os.path.join(out_repo, "anomaly_detector", str(version), "golden_cases.json"),
                     "anomaly_detector", version, cases)
    reports["anomaly_detector"] = {
        "summary": "Flags anomalous metrics in a 60-step x 20-metric telemetry window (5 s steps) and scores the window. "
                   "v1 is a window z-score detector; v2 compares the newest 35 steps with a 25-step baseline and "
                   "combines deviation, level-shift and jump features with a logistic regression.",
        "artifacts": "`model.onnx` per version (opset %d, IR %d), built with onnx.helper from fitted parameters"
                     % (anomaly.OPSET, anomaly.IR_VERSION),
        "reproducibility": "fixed seeds; model.onnx is byte-identical on rebuild",
        "data": "Seeded synthetic telemetry (model_repository/_build/telemetry.py): 20 metrics (%s) driven by one "
                "traffic factor with time-of-day, periodic jobs and noise, on hosts of different size. About half the "
                "windows carry 1-3 anomalous metrics (spike, level shift or drift after step 25). Train: 3000 windows "
                "(seed %d); held-out: 2000 windows (seed %d)."
                % (", ".join(telemetry.NAMES), SEEDS["telemetry_train"], SEEDS["telemetry_test"]),
        "metrics_header": ["version", "metric P", "metric R", "metric F1", "window P", "window R", "window F1",
                           "recall spike", "recall shift", "recall drift"],
        "metrics_rows": [_anomaly_row(v, m) for v, m in sorted(metrics.items())],
        "notes": ANOMALY_NOTES,
        "metrics": metrics,
    }


# -- alert_classifier -----------------------------------------------------------------
def build_classifier(out_repo, reports):
    import skops.io as sio
    import zipfile
    texts, labels = alerts.corpus(SEEDS["alerts_train"], 270)
    pipe = alerts.train(texts, labels)
    seen = alerts.corpus(SEEDS["alerts_test"], 100)
    unseen = alerts.corpus(SEEDS["alerts_test"], 40, unseen=True)
    held_out = (seen[0] + unseen[0], seen[1] + unseen[1])
    metrics = {"held_out": alerts.evaluate(pipe, *held_out), "held_out_unseen_wording": alerts.evaluate(pipe, *unseen)}
    if metrics["held_out"]["macro_f1"] < 0.9:
        raise SystemExit("alert_classifier macro F1 %.3f < 0.9" % metrics["held_out"]["macro_f1"])
    vdir = os.path.join(out_repo, "alert_classifier", "1")
    _copy_sources("alert_classifier", 1, vdir)
    path = os.path.join(vdir, "classifier.skops")
    sio.dump(pipe, path, compression=zipfile.ZIP_DEFLATED)
    # golden answers come from the artifact loaded the way the server loads it
    classify = _load_module("alert_classifier", 1, "classify")
    served = classify.load(path)
    spec = render.load_spec(os.path.join(SOURCES, "alert_classifier"))
    min_conf = float(spec["config"]["parameters"]["MIN_CONFIDENCE"]["string_value"])
    cases = []
    for text, want in SEED_ALERTS:
        got, conf = classify.classify(served, [text], min_conf)
        if got[0] != want:
            raise SystemExit("alert_classifier: %r -> %s, expected %s" % (text, got[0], want))
        cases.append(golden.case(text, {"alert_text": np.array([[text.encode()]], dtype=object)},
                                 {"class_label": golden.exact(got.reshape(1, 1)), "confidence": golden.close(conf.reshape(1, 1), atol=0.02)}))
    batch = [text for text, _label in SEED_ALERTS[:3]]
    got, conf = classify.classify(served, batch, min_conf)
    cases.append(golden.case("seed article alerts in one request", {"alert_text": np.array([[t.encode()] for t in batch], dtype=object)},
                             {"class_label": golden.exact(got.reshape(-1, 1)), "confidence": golden.close(conf.reshape(-1, 1), atol=0.02)}))
    golden.write(os.path.join(vdir, "golden_cases.json"), "alert_classifier", 1, cases)
    reports["alert_classifier"] = {
        "summary": "Classifies an ops alert text into one of: %s. Word (1-2 gram) and character (3-5 gram) TF-IDF "
                   "features into a multinomial logistic regression; answers `unknown` below MIN_CONFIDENCE." % ", ".join(alerts.CLASSES),
        "artifacts": "`classifier.skops` (skops zip, deflated). Loading does not run code: `classify.py` accepts only the "
                     "types skops trusts by default (scikit-learn, numpy, scipy) and refuses an artifact naming any other",
        "reproducibility": "fixed seeds; same predictions and metrics on rebuild (the skops zip's member names and "
                           "timestamps differ between builds, so its bytes do not)",
        "data": "Generated corpus (model_repository/_build/alerts.py) in Prometheus/Alertmanager, Zabbix, Nagios and "
                "Kubernetes wording with hostnames, pods, mounts and numbers; 270 texts per class to train (seed %d). "
                "Held-out: 100 per class from the training templates with new fills plus 40 per class from one template "
                "per class that training never saw (seed %d)." % (SEEDS["alerts_train"], SEEDS["alerts_test"]),
        "metrics_header": ["set", "accuracy", "macro F1"] + ["F1 %s" % c for c in alerts.CLASSES],
        "metrics_rows": [[k, m["accuracy"], m["macro_f1"]] + [m["per_class_f1"][c] for c in alerts.CLASSES]
                         for k, m in sorted(metrics.items())],
        "notes": CLASSIFIER_NOTES,
        "metrics": metrics,
    }


# -- metric_forecaster ----------------------------------------------------------------
def build_forecaster(out_repo, reports):
    from prophet.serialize import model_to_json
    stamps, values = forecaster.series(SEEDS["series"])
    model = forecaster.train(stamps[:-forecaster.HOLD_OUT], values[:-forecaster.HOLD_OUT])
    spec = render.load_spec(os.path.join(SOURCES, "metric_forecaster"))
    params = {k: v["string_value"] for k, v in spec["config"]["parameters"].items()}
    anchor, seed = int(params["ANCHOR_POINTS"]), int(params["SEED"])
    unix = stamps.as_unit("s").asi8.astype(np.int64)
    history = (values[-forecaster.HOLD_OUT - 48:-forecaster.HOLD_OUT], unix[-forecaster.HOLD_OUT - 48:-forecaster.HOLD_OUT])
    requests = [("two days of hourly history, 6 hours ahead", history[0], history[1], 6),
                ("same history on a busier host (+500 req/s), 3 hours ahead", history[0] + 500, history[1], 3)]
    metrics, answers = None, {}
    for version in spec["versions"]:
        vdir = os.path.join(out_repo, "metric_forecaster", str(version))
        _copy_sources("metric_forecaster", version, vdir)
        path = os.path.join(vdir, "prophet_model.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(model_to_json(model))
        fc = _load_module("metric_forecaster", version, "forecast")
        served = fc.load(path) if version == 1 else fc.load(path, seed)
        if version >= 2 and served.path != "direct":
            raise SystemExit("metric_forecaster v%d: the direct path does not serve the built model: %s" % (version, served.describe()))
        got = forecaster.evaluate(lambda v, t, h: fc.forecast(served, v, t, h, anchor, seed)[1], stamps, values)
        if metrics is not None and got != metrics:
            raise SystemExit("metric_forecaster v%d: held-out metrics %s differ from v1's %s" % (version, got, metrics))
        metrics = got
        cases = []
        for name, hist_v, hist_t, horizon in requests:
            hist_v = np.round(hist_v, 1).astype(np.float32)
            answer = fc.forecast(served, hist_v, hist_t, horizon, anchor, seed)
            # a later version must answer as version 1 does (same model, same draws): float rounding only
            first = answers.setdefault(name, answer)
            if not all(np.allclose(a, b, rtol=1e-6, atol=0) for a, b in zip(answer, first)):
                raise SystemExit("metric_forecaster v%d answers %r differently from v1" % (version, name))
            t, yhat, lo, hi = answer
            cases.append(golden.case(name, {"history_values": hist_v, "history_timestamps": hist_t, "horizon": np.array([horizon], dtype=np.int32)},
                                     {"forecast_timestamps": golden.exact(t), "yhat": golden.close(yhat, rtol=1e-3),
                                      "yhat_lower": golden.close(lo, rtol=0.02), "yhat_upper": golden.close(hi, rtol=0.02)}))
        golden.write(os.path.join(vdir, "golden_cases.json"), "metric_forecaster", version, cases)
    reports["metric_forecaster"] = {
        "summary": "Forecasts a metric (here: request rate) from its recent history with Prophet (daily + weekly "
                   "seasonality), re-anchored to the level of the history it is given; returns the point forecast "
                   "and an 80% interval.",
        "artifacts": "`prophet_model.json` (prophet.serialize.model_to_json; plain JSON, no code on load)",
        "reproducibility": "fixed seeds; prophet_model.json is byte-identical on rebuild; interval sampling is seeded per request",
        "data": "Seeded hourly request-rate series (model_repository/_build/forecaster.py): daily cycle, weekend dip, "
                "slow trend and noise; 8 weeks to fit, the next %d hours held out (seed %d)." % (forecaster.HOLD_OUT, SEEDS["series"]),
        "metrics_header": ["MAPE Prophet", "MAPE naive (same hour yesterday)", "MAPE naive (same hour last week)"],
        "metrics_rows": [[metrics["mape_prophet"], metrics["mape_naive_daily"], metrics["mape_naive_weekly"]]],
        "notes": ["Interface: see model_repository/README.md#metric_forecaster.",
                  "The shape (trend and seasonality) is the training series'; only the level adapts to a request. "
                  "Fit one model per metric family for real use.",
                  "Version 2 serves the same model and answers as version 1 (its golden cases are version 1's), "
                  "evaluated in numpy without Prophet's per-call pandas (docs/benchmarks.md)."],
        "metrics": metrics,
    }


def build_ensemble(out_repo, reports):
    """ops_pipeline's golden case is the two steps' golden answers, asked in one request."""
    ad = json.load(open(os.path.join(out_repo, "anomaly_detector", "2", "golden_cases.json")))["cases"][1]
    ac = json.load(open(os.path.join(out_repo, "alert_classifier", "1", "golden_cases.json")))["cases"][0]
    vdir = os.path.join(out_repo, "ops_pipeline", "1")
    os.makedirs(vdir, exist_ok=True)
    case = {"name": "metrics window and alert text in one request",
            "inputs": dict(ad["inputs"], **ac["inputs"]), "expected": dict(ad["expected"], **ac["expected"])}
    golden.write(os.path.join(vdir, "golden_cases.json"), "ops_pipeline", 1, [case])


def write_configs(out_repo, gpus):
    for model in MODELS:
        spec = render.load_spec(os.path.join(SOURCES, model))
        with open(os.path.join(out_repo, model, "config.pbtxt"), "w", encoding="utf-8") as handle:
            handle.write(render.render(render.pinned(spec), gpus))


def write_reports(out, reports, docs):
    rdir = os.path.join(out, "reports")
    os.makedirs(rdir, exist_ok=True)
    for model, report in sorted(reports.items()):
        text = cards.card(render.load_spec(os.path.join(SOURCES, model)), report)
        with open(os.path.join(rdir, model + ".json"), "w", encoding="utf-8") as handle:
            json.dump(report["metrics"], handle, indent=2, sort_keys=True)
        for folder in [rdir] + ([docs] if docs else []):
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, model + ".md"), "w", encoding="utf-8") as handle:
                handle.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m model_repository._build", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(CHECKOUT, "build"), help="output dir (default: build/)")
    parser.add_argument("--gpus", default="", help="comma-separated GPU indices of the serving host (default: none, CPU instances)")
    parser.add_argument("--no-docs", action="store_true", help="do not refresh docs/models/")
    args = parser.parse_args(argv)
    started = time.monotonic()
    out_repo = os.path.join(args.out, "model_repository")
    shutil.rmtree(out_repo, ignore_errors=True)
    reports = {}
    for step in (build_anomaly, build_classifier, build_forecaster, build_ensemble):
        t0 = time.monotonic()
        step(out_repo, reports)
        print("%-20s %5.1fs" % (step.__name__, time.monotonic() - t0), file=sys.stderr)
    write_configs(out_repo, [int(g) for g in args.gpus.split(",") if g.strip()])
    write_reports(args.out, reports, None if args.no_docs else os.path.join(CHECKOUT, "docs", "models"))
    print("built %s in %.0fs" % (out_repo, time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
