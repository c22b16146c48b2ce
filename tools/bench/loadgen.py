"""Closed-loop load generator: ``concurrency`` clients, each sends its next request when the last
one answered, spread over separate processes (forked, so they do not share the GIL with each
other or with the orchestrator).

The clients are the maintained libraries a user of each server would use: Triton's own
``tritonclient`` (HTTP with binary tensors, and gRPC) for Triton, stdlib ``http.client``
keep-alive connections for the FastAPI baseline; and, so that both servers can be timed with the
same client, that same ``http.client`` code against Triton's HTTP endpoint (``client:
"http.client"``: prebuilt binary-tensor bodies as the FastAPI bodies are prebuilt, the JSON
header of the answer parsed as FastAPI's JSON answer is). tritonclient costs its caller about
200 us of CPU per request over gRPC and 160 us over HTTP against 90-120 us for http.client
(profile in docs/benchmarks.md), which a closed-loop client pays in its latency.  Why not a load tool: perf_analyzer is not
installable here, locust records latencies in whole milliseconds (these models answer in
well under one), and wrk/hey have no gRPC and cannot time the two dependent calls the FastAPI
pipeline makes as one request.

A measurement: all clients start together, warm up for ``warmup`` s unrecorded, then every
request that starts and ends inside the next ``duration`` s is recorded.  CPU seconds of the
generator processes and of the server's process tree are taken over the same window.
"""

import http.client
import io
import json
import multiprocessing
import os
import threading
import time

import numpy as np

# -- payloads ---------------------------------------------------------------------------------


FORECAST_HORIZON = 6


def payloads(checkout, repository, count=32, seed=7):
    """Real telemetry windows (float32 [60, 20]) and the alert texts of the classifier's golden cases."""
    import sys
    sys.path.insert(0, checkout)
    from model_repository._build import telemetry
    windows, _labels, _kinds = telemetry.generate(seed, count)
    with open(os.path.join(repository, "alert_classifier", "1", "golden_cases.json"), encoding="utf-8") as handle:
        texts = [c["inputs"]["alert_text"]["data"][0] for c in json.load(handle)["cases"]]
    return np.asarray(windows, dtype=np.float32), texts


def forecast_requests(count=32, hours=48):
    """metric_forecaster requests as live traffic sends them: ``hours`` hourly points of the build's series
    ending a week after its training end (so every row is past it), shifted by an hour each, 6 h ahead."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from model_repository._build import forecaster
    stamps, values = forecaster.series(21, weeks=10)
    unix = stamps.as_unit("s").asi8.astype(np.int64)
    values = np.round(values, 1).astype(np.float32)
    trained = 24 * 7 * 8
    return [(values[stop - hours:stop], unix[stop - hours:stop]) for stop in range(trained + 168, trained + 168 + count)]


# -- clients: make(target, windows, texts) -> call(i) raising on any error ----------------------


def _triton_inputs(module, model, window, text):
    inputs = []
    if model in ("anomaly_detector", "ops_pipeline"):
        tensor = module.InferInput("metrics_input", [1, 60, 20], "FP32")
        tensor.set_data_from_numpy(window[None, ...])
        inputs.append(tensor)
    if model in ("alert_classifier", "ops_pipeline"):
        tensor = module.InferInput("alert_text", [1, 1], "BYTES")
        tensor.set_data_from_numpy(np.array([[text.encode("utf-8")]], dtype=object))
        inputs.append(tensor)
    return inputs


def _forecast_inputs(module, request):
    values, stamps = request
    inputs = []
    for name, array, dtype in (("history_values", values, "FP32"), ("history_timestamps", stamps, "INT64"),
                               ("horizon", np.array([FORECAST_HORIZON], dtype=np.int32), "INT32")):
        tensor = module.InferInput(name, list(array.shape), dtype)  # no batch dimension: max_batch_size 0
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return inputs


_OUTPUTS = {"anomaly_detector": ["anomaly_score", "anomaly_labels"], "alert_classifier": ["class_label", "confidence"],
            "ops_pipeline": ["anomaly_score", "anomaly_labels", "class_label", "confidence"],
            "metric_forecaster": ["forecast_timestamps", "yhat", "yhat_lower", "yhat_upper"]}


def _triton_client(target, windows, texts):
    if target["protocol"] == "grpc":
        import tritonclient.grpc as module
        client = module.InferenceServerClient(target["url"])
        outputs = [module.InferRequestedOutput(n) for n in _OUTPUTS[target["model"]]]
    else:
        import tritonclient.http as module
        client = module.InferenceServerClient(target["url"], concurrency=1, connection_timeout=30, network_timeout=30)
        outputs = [module.InferRequestedOutput(n, binary_data=True) for n in _OUTPUTS[target["model"]]]
    model, version = target["model"], target.get("version", "")
    if model == "metric_forecaster":
        sets = [_forecast_inputs(module, request) for request in forecast_requests()]
    else:
        sets = [_triton_inputs(module, model, windows[i % len(windows)], texts[i % len(texts)]) for i in range(len(windows))]
    first = _OUTPUTS[model][0]

    def call(i):
        result = client.infer(model, sets[i % len(sets)], model_version=version, outputs=outputs)
        if result.as_numpy(first) is None:
            raise RuntimeError("no %s in the answer" % first)
    return call


def _triton_http_body(model, window, text, forecast=None):
    """Triton's HTTP/REST request with binary tensors (its binary-data extension), prebuilt as bytes."""
    inputs, blobs = [], []
    if model == "metric_forecaster":
        values, stamps = forecast
        for name, array, dtype in (("history_values", values, "FP32"), ("history_timestamps", stamps, "INT64"),
                                   ("horizon", np.array([FORECAST_HORIZON], dtype=np.int32), "INT32")):
            data = np.ascontiguousarray(array).tobytes()
            inputs.append({"name": name, "shape": list(array.shape), "datatype": dtype, "parameters": {"binary_data_size": len(data)}})
            blobs.append(data)
    if model in ("anomaly_detector", "ops_pipeline"):
        data = np.ascontiguousarray(window[None, ...], dtype=np.float32).tobytes()
        inputs.append({"name": "metrics_input", "shape": [1, 60, 20], "datatype": "FP32",
                       "parameters": {"binary_data_size": len(data)}})
        blobs.append(data)
    if model in ("alert_classifier", "ops_pipeline"):
        raw = text.encode("utf-8")
        data = len(raw).to_bytes(4, "little") + raw
        inputs.append({"name": "alert_text", "shape": [1, 1], "datatype": "BYTES",
                       "parameters": {"binary_data_size": len(data)}})
        blobs.append(data)
    header = json.dumps({"inputs": inputs, "outputs": [{"name": n, "parameters": {"binary_data": True}}
                                                       for n in _OUTPUTS[model]]}).encode()
    return len(header), header + b"".join(blobs)


def _triton_plain_http_client(target, windows, texts):
    """The FastAPI side's own client (stdlib http.client keep-alive, prebuilt bodies) against Triton's HTTP."""
    host, port = target["url"].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    model = target["model"]
    path = "/v2/models/%s%s/infer" % (model, "/versions/%s" % target["version"] if target.get("version") else "")
    if model == "metric_forecaster":
        bodies = [_triton_http_body(model, None, None, request) for request in forecast_requests()]
    else:
        bodies = [_triton_http_body(model, windows[i % len(windows)], texts[i % len(texts)]) for i in range(len(windows))]
    first = _OUTPUTS[model][0]

    def call(i):
        header_len, body = bodies[i % len(bodies)]
        conn.request("POST", path, body=body, headers={"Inference-Header-Content-Length": str(header_len),
                                                       "Content-Type": "application/octet-stream"})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError("HTTP %s: %s" % (resp.status, data[:200]))
        size = resp.getheader("Inference-Header-Content-Length")
        answer = json.loads(data[:int(size)] if size else data)
        if not any(o.get("name") == first for o in answer.get("outputs", ())):
            raise RuntimeError("no %s in the answer" % first)
    return call


def _fastapi_client(target, windows, texts):
    conn = http.client.HTTPConnection(target["host"], target["port"], timeout=30)
    binary = target["encoding"] == "npy"
    anomaly, alert = [], []
    for window in windows:
        if binary:
            buf = io.BytesIO()
            np.save(buf, window, allow_pickle=False)
            anomaly.append(("/anomaly_detector/npy", buf.getvalue(), "application/octet-stream"))
        else:
            anomaly.append(("/anomaly_detector", json.dumps({"metrics_input": window.tolist()}).encode(), "application/json"))
    for text in texts:
        if binary:
            alert.append(("/alert_classifier/text", text.encode("utf-8"), "text/plain; charset=utf-8"))
        else:
            alert.append(("/alert_classifier", json.dumps({"alert_text": text}).encode(), "application/json"))
    forecasts = []
    if target["model"] == "metric_forecaster":
        for values, stamps in forecast_requests():
            if binary:
                buf = io.BytesIO()
                np.savez(buf, history_values=values, history_timestamps=stamps, horizon=np.array([FORECAST_HORIZON], dtype=np.int32))
                forecasts.append(("/metric_forecaster/npz", buf.getvalue(), "application/octet-stream"))
            else:
                body = {"history_values": values.tolist(), "history_timestamps": stamps.tolist(), "horizon": FORECAST_HORIZON}
                forecasts.append(("/metric_forecaster", json.dumps(body).encode(), "application/json"))
    # the FastAPI "pipeline" is what a client of that service does: two calls, one after the other
    steps = {"anomaly_detector": [anomaly], "alert_classifier": [alert], "ops_pipeline": [anomaly, alert],
             "metric_forecaster": [forecasts]}[target["model"]]

    def post(path, body, ctype):
        conn.request("POST", path, body=body, headers={"Content-Type": ctype})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError("HTTP %s: %s" % (resp.status, data[:200]))
        json.loads(data)

    def call(i):
        for pool in steps:
            post(*pool[i % len(pool)])
    return call


def make_client(target, windows, texts):
    if target["kind"] == "triton":
        return (_triton_plain_http_client if target.get("client") == "http.client" else _triton_client)(target, windows, texts)
    return _fastapi_client(target, windows, texts)


# -- one generator process --------------------------------------------------------------------


def _process(target, threads, offset, windows, texts, t_warm, t_end, pipe):
    lat, errors, lock = [], [0], threading.Lock()
    failures = []

    def loop(index):
        try:
            call = make_client(target, windows, texts)
        except Exception as exc:  # noqa: BLE001 - reported to the orchestrator
            failures.append("client: %s" % exc)
            return
        i = index * 7
        mine = []
        while True:
            t0 = time.monotonic()
            if t0 >= t_end:
                break
            try:
                call(i)
                ok = True
            except Exception as exc:  # noqa: BLE001 - counted, the first few kept for the report
                ok = False
                if len(failures) < 3:
                    failures.append(repr(exc)[:300])
            t1 = time.monotonic()
            i += 1
            if t0 >= t_warm and t1 <= t_end:
                if ok:
                    mine.append(t1 - t0)
                else:
                    with lock:
                        errors[0] += 1
        with lock:
            lat.extend(mine)

    workers = [threading.Thread(target=loop, args=(offset + k,), daemon=True) for k in range(threads)]
    for worker in workers:
        worker.start()
    time.sleep(max(0.0, t_warm - time.monotonic()))
    cpu0 = time.process_time()
    time.sleep(max(0.0, t_end - time.monotonic()))
    cpu1 = time.process_time()
    for worker in workers:
        worker.join(60)
    pipe.send({"lat": lat, "errors": errors[0], "cpu": cpu1 - cpu0, "failures": failures})
    pipe.close()


def _tree_cpu(pids):
    import psutil
    total = 0.0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            procs = [proc] + proc.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for item in procs:
            try:
                times = item.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                pass
    return total


def measure(target, concurrency, duration, warmup, windows, texts, server_pids=(), max_procs=4):
    """Run one closed-loop measurement; return a dict of results (latencies in ms)."""
    procs = min(concurrency, max_procs)
    share = [concurrency // procs + (1 if k < concurrency % procs else 0) for k in range(procs)]
    ctx = multiprocessing.get_context("fork")
    start = time.monotonic() + 0.3  # fork time, so every client's clock starts together
    t_warm, t_end = start + warmup, start + warmup + duration
    children, pipes, offset = [], [], 0
    for threads in share:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_process, args=(target, threads, offset, windows, texts, t_warm, t_end, child))
        proc.start()
        children.append(proc)
        pipes.append(parent)
        offset += threads
    time.sleep(max(0.0, t_warm - time.monotonic()))
    s0 = _tree_cpu(server_pids)
    time.sleep(max(0.0, t_end - time.monotonic()))
    s1 = _tree_cpu(server_pids)
    lat, errors, cpu, failures = [], 0, 0.0, []
    for pipe, proc in zip(pipes, children):
        if pipe.poll(120):
            part = pipe.recv()
            lat.extend(part["lat"])
            errors += part["errors"]
            cpu += part["cpu"]
            failures.extend(part["failures"])
        else:
            failures.append("generator process sent nothing")
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    arr = np.asarray(lat) * 1000.0
    pct = (lambda q: float(np.percentile(arr, q))) if arr.size else (lambda q: float("nan"))
    return {"concurrency": concurrency, "requests": int(arr.size), "errors": errors, "throughput": arr.size / duration,
            "p50": pct(50), "p95": pct(95), "p99": pct(99), "gen_cpu": cpu / duration,
            "server_cpu": (s1 - s0) / duration, "failures": failures[:3]}
