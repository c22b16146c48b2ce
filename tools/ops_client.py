"""Ask the deployed models what an ops agent would ask, over gRPC, and print the answers.

For each Triton endpoint (``--url host:8001``, repeatable; ``--lab``: through the lab's load balancer lab-lb,
HAProxy's gRPC frontend, as a client of the fleet would; ``--lab-hosts``: every running lab host directly):

  anomaly_detector    is anything wrong in the last 5 minutes of 20 host metrics?  (a normal window and
                      one whose p99 latency steps up)
  alert_classifier    which team gets these alerts?  (the three alert texts of the seed article)
  metric_forecaster   what will the request rate be over the next 6 hours?  (48 hours of history)

Calls go through tritonclient's gRPC client with retries (a host that is restarting answers
UNAVAILABLE for a moment); a server that still does not answer is reported and the exit code is 1.
Needs numpy and tritonclient[grpc] (the controller's .venv has both).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

ALERTS = ("Pod memory usage exceeds 90% threshold",
          "Network latency P99 increased to 5000ms",
          "Disk space on /dev/sda1 is 95% full")
# The anomaly detector's 20 metrics, in its input order (model_repository/_build/telemetry.py), with the
# level and noise of a typical host: what an agent would pull from Prometheus for the last 60 x 5 s.
METRICS = (("cpu_util_pct", 54.0, 2.0), ("mem_util_pct", 64.0, 0.6), ("load_avg_1m", 3.9, 0.25),
           ("net_in_mbps", 150.0, 6.0), ("net_out_mbps", 117.0, 5.0), ("disk_io_iops", 925.0, 40.0),
           ("latency_p50_ms", 39.0, 1.5), ("latency_p99_ms", 210.0, 12.0), ("error_rate_pct", 0.6, 0.08),
           ("request_rate_rps", 1850.0, 45.0), ("gc_pause_ms", 13.5, 1.5), ("thread_count", 235.0, 4.0),
           ("conn_count", 740.0, 15.0), ("queue_depth", 18.0, 2.0), ("cache_hit_ratio", 0.92, 0.006),
           ("disk_used_pct", 71.0, 0.05), ("swap_used_mb", 261.0, 3.0), ("iowait_pct", 2.9, 0.3),
           ("db_qps", 1110.0, 30.0), ("db_latency_ms", 9.2, 0.6))
STEPS = 60
RETRYABLE = ("StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED", "failed to connect", "Socket closed")


class OpsClientError(Exception):
    """A server did not answer after every retry, or answered with an error."""


def with_retry(call, attempts=5, delay=1.0):
    """``call()`` until it answers; only transient gRPC failures are retried, with doubling delays."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except InferenceServerException as exc:
            text = str(exc)
            if attempt == attempts or not any(mark in text for mark in RETRYABLE):
                raise OpsClientError(text)
            time.sleep(delay * 2 ** (attempt - 1))
    raise OpsClientError("no attempt made")


def metrics_windows(seed=7):
    """A normal window and the same window with p99 latency stepping up 5x its noise for the last 15 steps."""
    rng = np.random.default_rng(seed)
    steps = np.arange(STEPS)[:, None]
    level = np.array([m[1] for m in METRICS])
    noise = np.array([m[2] for m in METRICS])
    normal = level + 0.5 * noise * np.sin(2 * np.pi * steps / 20.0) + rng.normal(0.0, 1.0, (STEPS, len(METRICS))) * noise
    incident = normal.copy()
    p99 = [m[0] for m in METRICS].index("latency_p99_ms")
    incident[45:, p99] += 10.0 * noise[p99]
    return np.round(np.stack([normal, incident]), 2).astype(np.float32)


def request_rate_history(hours=48, end=1762128000):
    """Hourly request rate with a daily cycle, ending at ``end`` (unix seconds, on the hour)."""
    stamps = end - 3600 * np.arange(hours - 1, -1, -1, dtype=np.int64)
    hour = (stamps // 3600) % 24
    values = 1500.0 * (1.0 + 0.45 * np.sin(2 * np.pi * (hour - 8) / 24.0)) + np.random.default_rng(3).normal(0, 40, hours)
    return np.round(values, 1).astype(np.float32), stamps


class OpsAgent(object):
    """The three questions, asked of one Triton server."""

    def __init__(self, url, timeout=30.0, attempts=5):
        self.url = url
        self.timeout = timeout
        self.attempts = attempts
        self.client = grpcclient.InferenceServerClient(url=url)

    def _infer(self, model, inputs, outputs):
        tensors = []
        for name, array, dtype in inputs:
            tensor = grpcclient.InferInput(name, list(array.shape), dtype)
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        wanted = [grpcclient.InferRequestedOutput(o) for o in outputs]
        result = with_retry(lambda: self.client.infer(model, tensors, outputs=wanted, client_timeout=self.timeout),
                            attempts=self.attempts)
        return dict((o, result.as_numpy(o)) for o in outputs)

    def wait_ready(self):
        with_retry(lambda: self.client.is_server_ready() or self._not_ready(), attempts=self.attempts)

    def _not_ready(self):
        raise InferenceServerException("StatusCode.UNAVAILABLE: %s is live but not ready" % self.url)

    def detect_anomalies(self):
        windows = metrics_windows()
        out = self._infer("anomaly_detector", [("metrics_input", windows, "FP32")], ["anomaly_score", "anomaly_labels"])
        answers = []
        for label, score, flags in zip(("normal window", "p99 latency step"), out["anomaly_score"][:, 0], out["anomaly_labels"]):
            answers.append({"window": label, "anomaly_score": round(float(score), 3),
                            "anomalous_metrics": [METRICS[i][0] for i in np.flatnonzero(flags)]})
        return answers

    def classify_alerts(self, alerts=ALERTS):
        text = np.array([[a.encode("utf-8")] for a in alerts], dtype=np.object_)
        out = self._infer("alert_classifier", [("alert_text", text, "BYTES")], ["class_label", "confidence"])
        return [{"alert": a, "class": label[0].decode("utf-8"), "confidence": round(float(conf[0]), 3)}
                for a, label, conf in zip(alerts, out["class_label"], out["confidence"])]

    def forecast(self, horizon=6):
        values, stamps = request_rate_history()
        out = self._infer("metric_forecaster", [("history_values", values, "FP32"), ("history_timestamps", stamps, "INT64"),
                                                ("horizon", np.array([horizon], dtype=np.int32), "INT32")],
                          ["forecast_timestamps", "yhat", "yhat_lower", "yhat_upper"])
        return [{"timestamp": int(t), "request_rate": round(float(y), 1), "low": round(float(lo), 1), "high": round(float(hi), 1)}
                for t, y, lo, hi in zip(out["forecast_timestamps"], out["yhat"], out["yhat_lower"], out["yhat_upper"])]

    def ask(self):
        self.wait_ready()
        return {"url": self.url, "anomalies": self.detect_anomalies(), "alerts": self.classify_alerts(),
                "forecast": self.forecast()}


def lab_urls(port=8001, label="aiops.lab.host=1"):
    """(name, host:port) of every running lab container with ``label`` (default: the Triton hosts) on the lab bridge."""
    names = subprocess.run(["podman", "ps", "--filter", "label=" + label, "--format", "{{.Names}}"],
                           capture_output=True, text=True, check=True).stdout.split()
    urls = []
    for name in sorted(names):
        addr = subprocess.run(["podman", "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", name],
                              capture_output=True, text=True, check=True).stdout.split()
        if addr:
            urls.append((name, "%s:%d" % (addr[0], port)))
    return urls


def lab_lb_urls():
    """The lab load balancer's gRPC frontend: AIOPS_LAB_LB_GRPC (lab/labctl.py env), else lab-lb's address."""
    if os.environ.get("AIOPS_LAB_LB_GRPC"):
        return [("lab-lb", os.environ["AIOPS_LAB_LB_GRPC"])]
    return lab_urls(label="aiops.lab.lb=1")


def print_answers(name, answers):
    print("== %s (%s)" % (name, answers["url"]))
    for item in answers["anomalies"]:
        found = ", ".join(item["anomalous_metrics"]) or "nothing anomalous"
        print("  anomaly_detector   %-18s score %.3f: %s" % (item["window"], item["anomaly_score"], found))
    for item in answers["alerts"]:
        print("  alert_classifier   %-42s -> %s (%.2f)" % ('"%s"' % item["alert"], item["class"], item["confidence"]))
    steps = ", ".join("%s %.0f" % (time.strftime("%H:%M", time.gmtime(p["timestamp"])), p["request_rate"]) for p in answers["forecast"])
    print("  metric_forecaster  request rate next %d h (UTC): %s" % (len(answers["forecast"]), steps))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Ask the deployed ops models what an ops agent would ask (gRPC, with retry).")
    parser.add_argument("--url", action="append", default=[], help="Triton gRPC endpoint host:port (repeatable)")
    parser.add_argument("--lab", action="store_true", help="through the lab's load balancer (lab-lb, lab/labctl.py up)")
    parser.add_argument("--lab-hosts", action="store_true", help="every running lab host directly, not through the load balancer")
    parser.add_argument("--attempts", type=int, default=5, help="tries per call for transient gRPC failures")
    parser.add_argument("--json", action="store_true", help="print the answers as JSON")
    args = parser.parse_args(argv)
    lb = lab_lb_urls() if args.lab else []
    if args.lab and not lb:
        parser.error("--lab: no lab load balancer runs (lab/labctl.py up starts lab-lb); --lab-hosts asks each host")
    targets = [(url, url) for url in args.url] + lb + (lab_urls() if args.lab_hosts else [])
    if not targets:
        parser.error("give --url host:port, --lab or --lab-hosts")
    results, failed = [], []
    for name, url in targets:
        try:
            answers = OpsAgent(url, attempts=args.attempts).ask()
        except OpsClientError as exc:
            failed.append(name)
            print("== %s (%s): no answer: %s" % (name, url, exc), file=sys.stderr)
            continue
        answers["host"] = name
        results.append(answers)
        if not args.json:
            print_answers(name, answers)
    if args.json:
        print(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
