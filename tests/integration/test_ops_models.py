"""The ops model set, built from source, served by the real tritonserver (PyPI build, CPU)."""

import json
import os
import queue

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonClient
from triton_fixtures import CHECKOUT, run_module

pytestmark = pytest.mark.integration

VERSIONS = [("anomaly_detector", 1), ("anomaly_detector", 2), ("alert_classifier", 1), ("metric_forecaster", 1),
            ("metric_forecaster", 2), ("ops_pipeline", 1)]
SEED_ALERTS = {"Pod memory usage exceeds 90% threshold": "memory",
               "Network latency P99 increased to 5000ms": "network",
               "Disk space on /dev/sda1 is 95% full": "disk"}


def _http(server):
    return "127.0.0.1:%d" % server.http_port  # tritonclient.http wants host:port


def _telemetry(count, seed):
    import sys
    sys.path.insert(0, CHECKOUT)
    from model_repository._build import telemetry
    windows, labels, _kinds = telemetry.generate(seed, count)
    return windows, labels


def _golden(repo, model, version):
    with open(os.path.join(repo, model, str(version), "golden_cases.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _inputs(module, case):
    inputs = []
    for name, spec in case["inputs"].items():
        data = spec["data"]
        if spec["datatype"] == "BYTES":
            array = np.array([d.encode("utf-8") for d in data], dtype=object).reshape(spec["shape"])
        else:
            array = np.array(data, dtype={"FP32": np.float32, "INT32": np.int32, "INT64": np.int64}[spec["datatype"]])
            array = array.reshape(spec["shape"])
        tensor = module.InferInput(name, spec["shape"], spec["datatype"])
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return inputs


def test_every_model_version_is_ready(ops_triton):
    client = httpclient.InferenceServerClient(_http(ops_triton))
    assert client.is_server_ready()
    assert {(name, version): client.is_model_ready(name, str(version)) for name, version in VERSIONS} == \
        {key: True for key in VERSIONS}
    assert client.get_model_config("anomaly_detector")["platform"] == "onnxruntime_onnx"


@pytest.mark.parametrize("version", [1, 2])
def test_anomaly_detector_answers_a_batch_like_the_onnx_file(ops_triton, built_repository, version):
    windows = _telemetry(8, seed=4242)[0]
    client = httpclient.InferenceServerClient(_http(ops_triton))
    tensor = httpclient.InferInput("metrics_input", list(windows.shape), "FP32")
    tensor.set_data_from_numpy(windows)
    result = client.infer("anomaly_detector", [tensor], model_version=str(version))
    score, labels = result.as_numpy("anomaly_score"), result.as_numpy("anomaly_labels")
    assert score.shape == (8, 1) and score.dtype == np.float32
    assert labels.shape == (8, 20) and labels.dtype == np.int32
    assert ((score >= 0) & (score <= 1)).all()
    local = ort.InferenceSession(os.path.join(built_repository, "anomaly_detector", str(version), "model.onnx"))
    want_score, want_labels = local.run(["anomaly_score", "anomaly_labels"], {"metrics_input": windows})
    np.testing.assert_allclose(score, want_score, atol=1e-6)
    np.testing.assert_array_equal(labels, want_labels)


def test_anomaly_v2_flags_the_injected_metrics(ops_triton):
    windows, truth = _telemetry(32, seed=777)
    client = httpclient.InferenceServerClient(_http(ops_triton))
    tensor = httpclient.InferInput("metrics_input", list(windows.shape), "FP32")
    tensor.set_data_from_numpy(windows)
    labels = client.infer("anomaly_detector", [tensor], model_version="2").as_numpy("anomaly_labels")
    agreement = (labels == truth).mean()
    assert agreement > 0.98, agreement


def test_alert_classifier_labels_the_seed_alerts_over_grpc(ops_triton):
    client = grpcclient.InferenceServerClient(ops_triton.grpc_url)
    texts = list(SEED_ALERTS)
    tensor = grpcclient.InferInput("alert_text", [len(texts), 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[t.encode("utf-8")] for t in texts], dtype=object))
    result = client.infer("alert_classifier", [tensor])
    labels = [v.decode("utf-8") for v in result.as_numpy("class_label").reshape(-1)]
    assert labels == list(SEED_ALERTS.values())
    confidence = result.as_numpy("confidence")
    assert confidence.shape == (3, 1) and (confidence > 0.5).all()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model,version", VERSIONS)
def test_golden_cases_pass(ops_triton, built_repository, model, version, protocol):
    import sys
    sys.path.insert(0, CHECKOUT)
    from model_repository._build import golden
    module, url = (httpclient, _http(ops_triton)) if protocol == "http" else (grpcclient, ops_triton.grpc_url)
    client = module.InferenceServerClient(url)
    cases = _golden(built_repository, model, version)["cases"]
    assert cases
    for case in cases:
        result = client.infer(model, _inputs(module, case), model_version=str(version))
        outputs = {name: result.as_numpy(name) for name in case["expected"]}
        assert golden.check(case["expected"], outputs) == [], case["name"]


def test_golden_check_catches_a_wrong_answer(built_repository):
    """The comparison used above must be able to fail."""
    import sys
    sys.path.insert(0, CHECKOUT)
    from model_repository._build import golden
    case = _golden(built_repository, "alert_classifier", 1)["cases"][0]
    wrong = {"class_label": np.array([[b"disk"]], dtype=object), "confidence": np.array([[0.1]], dtype=np.float32)}
    assert len(golden.check(case["expected"], wrong)) == 2


def test_ensemble_answers_metrics_and_alert_in_one_request(ops_triton):
    windows, truth = _telemetry(2, seed=99)
    client = grpcclient.InferenceServerClient(ops_triton.grpc_url)
    metrics = grpcclient.InferInput("metrics_input", [2, 60, 20], "FP32")
    metrics.set_data_from_numpy(windows)
    text = grpcclient.InferInput("alert_text", [2, 1], "BYTES")
    text.set_data_from_numpy(np.array([[b"Pod memory usage exceeds 90% threshold"], [b"Disk space on /dev/sda1 is 95% full"]],
                                      dtype=object))
    result = client.infer("ops_pipeline", [metrics, text])
    assert result.as_numpy("anomaly_score").shape == (2, 1)
    assert result.as_numpy("anomaly_labels").shape == (2, 20)
    assert [v.decode() for v in result.as_numpy("class_label").reshape(-1)] == ["memory", "disk"]
    stats = client.get_inference_statistics("ops_pipeline", as_json=True)["model_stats"][0]
    assert int(stats["inference_stats"]["success"]["count"]) >= 1


def _classifier_stats(client):
    stats = client.get_inference_statistics("alert_classifier", "1", as_json=True)["model_stats"][0]
    return int(stats.get("execution_count", 0)), int(stats.get("inference_count", 0))  # absent = none yet


def test_bad_classifier_input_fails_only_its_own_request(ops_triton):
    """Requests queued together share one execute(); the bad ones get errors, the good ones answers."""
    client = grpcclient.InferenceServerClient(ops_triton.grpc_url)
    bodies = [b"Disk space on /dev/sda1 is 95% full", b"\xff\xfe not utf-8", b"   ", b"Pod memory usage exceeds 90% threshold"]
    # The shipped default answers a lone request at once (no queue delay): hold requests 0.3 s on one
    # instance so the four surely share an execute(), then put config.pbtxt back.
    shipped = client.get_model_config("alert_classifier", as_json=True)["config"]
    held = dict(shipped, dynamic_batching={"max_queue_delay_microseconds": 300000},
                instance_group=[{"count": 1, "kind": "KIND_CPU"}])
    client.load_model("alert_classifier", config=json.dumps(held))
    try:
        _shared_batch_with_bad_requests(client, bodies)
    finally:
        client.load_model("alert_classifier")


def _shared_batch_with_bad_requests(client, bodies):
    executions_before = _classifier_stats(client)[0]
    done = queue.Queue()
    for index, body in enumerate(bodies):
        tensor = grpcclient.InferInput("alert_text", [1, 1], "BYTES")
        tensor.set_data_from_numpy(np.array([[body]], dtype=object))
        client.async_infer("alert_classifier", [tensor], callback=lambda result, error, i=index: done.put((i, result, error)))
    answers = {}
    for _request in bodies:
        index, result, error = done.get(timeout=30)
        answers[index] = (result, error)
    assert answers[0][1] is None and answers[0][0].as_numpy("class_label")[0, 0] == b"disk"
    assert answers[3][1] is None and answers[3][0].as_numpy("class_label")[0, 0] == b"memory"
    assert isinstance(answers[1][1], InferenceServerException) and "UTF-8" in answers[1][1].message()
    assert isinstance(answers[2][1], InferenceServerException) and "empty" in answers[2][1].message()
    executions_after = _classifier_stats(client)[0]
    # dynamic batching put the four requests into fewer executions than requests
    assert executions_after - executions_before < len(bodies)


def test_forecaster_continues_the_history(ops_triton):
    hours = np.arange(48)
    # a Wednesday, midnight UTC: the model's daily cycle is by UTC hour, like the series it was fitted on
    stamps = (1_790_726_400 + hours * 3600).astype(np.int64)
    values = (2500 + 675 * np.sin(2 * np.pi * (hours % 24 - 8) / 24)).astype(np.float32)
    client = httpclient.InferenceServerClient(_http(ops_triton))
    inputs = []
    for name, array, dtype in (("history_values", values, "FP32"), ("history_timestamps", stamps, "INT64"),
                               ("horizon", np.array([12], dtype=np.int32), "INT32")):
        tensor = httpclient.InferInput(name, list(array.shape), dtype)
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    result = client.infer("metric_forecaster", inputs)
    when = result.as_numpy("forecast_timestamps")
    yhat, lower, upper = (result.as_numpy(n) for n in ("yhat", "yhat_lower", "yhat_upper"))
    np.testing.assert_array_equal(when, stamps[-1] + 3600 * np.arange(1, 13))
    assert yhat.shape == (12,) and (lower < yhat).all() and (yhat < upper).all()
    # same hours yesterday, lifted to this host's level (1000 above the training series)
    np.testing.assert_allclose(yhat, values[24:36], atol=250)


def test_forecaster_rejects_mismatched_history(ops_triton):
    client = httpclient.InferenceServerClient(_http(ops_triton))
    inputs = []
    for name, array, dtype in (("history_values", np.ones(5, dtype=np.float32), "FP32"),
                               ("history_timestamps", np.arange(4, dtype=np.int64), "INT64"),
                               ("horizon", np.array([3], dtype=np.int32), "INT32")):
        tensor = httpclient.InferInput(name, list(array.shape), dtype)
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    with pytest.raises(InferenceServerException, match="same length"):
        client.infer("metric_forecaster", inputs)


def test_triton_verify_module_passes_the_shipped_golden_cases(ops_triton, built_repository):
    """The collection's verify module reads these golden_cases.json files as hosts will."""
    result = run_module("triton_verify", {
        "url": ops_triton.http_url, "grpc_url": ops_triton.grpc_url, "model_repository": built_repository,
        "ready_timeout": 30, "models": [{"name": name} for name in sorted({m for m, _v in VERSIONS})]})
    assert result.get("failed") is not True, result.get("msg")
    ran = {(m["name"], v["version"], c["protocol"]) for m in result["models"] for v in m["versions"] for c in v["cases"] if c["passed"]}
    assert {(m, v, p) for m, v in VERSIONS for p in ("http", "grpc")} <= ran
    assert all(m["passed"] for m in result["models"])


def _vmrss_kib(pid):
    with open("/proc/%d/status" % pid) as handle:
        return int(next(line for line in handle if line.startswith("VmRSS:")).split()[1])


def test_triton_footprint_measures_the_python_backend_stubs(ops_triton, built_repository):
    """Each python-backend version's host memory is the RSS of its own stubs; no nvidia-smi here, so no GPU figure."""
    result = run_module("triton_footprint", {
        "url": ops_triton.http_url, "pid": ops_triton.pid,
        "models": [{"name": "alert_classifier"}, {"name": "metric_forecaster", "versions": [1, 2]},
                   {"name": "ops_pipeline", "versions": [1]}]}, check_mode=True)
    assert result.get("failed") is not True, result.get("msg")
    assert result["changed"] is False and result["server_pid"] == ops_triton.pid
    got = dict(((m["name"], m["version"]), m) for m in result["models"])
    assert sorted(got) == [("alert_classifier", 1), ("metric_forecaster", 1), ("metric_forecaster", 2), ("ops_pipeline", 1)]
    # as many stubs as Triton's own config of the model says now (a test before may have reloaded it with another count),
    # and none for a version another test left unloaded; at least one served version has stubs to measure
    api = TritonClient(ops_triton.http_url)
    measured = 0
    for name, version in (("alert_classifier", 1), ("metric_forecaster", 1), ("metric_forecaster", 2)):
        entry = got[(name, version)]
        served = version in api.ready_versions(name)
        instances = sum(group.get("count", 1) for group in api.model_config(name)["instance_group"]) if served else 0
        assert entry["instances"] == instances, (instances, entry)
        measured += instances
        if not served:
            continue
        assert entry["gpu_mib"] is None and entry["footprint"]["gpu_mib"] is None
        assert entry["unknown"] == ["GPU memory: nvidia-smi not installed"], entry
        assert entry["triton_memory_usage"] == []  # Triton 2.51's python backend reports none
        model_file = os.path.join(built_repository, name, str(version), "model.py")
        for instance in entry["per_instance"]:
            with open("/proc/%d/cmdline" % instance["pid"], "rb") as handle:
                argv = handle.read().decode().split("\0")
            assert os.path.basename(argv[0]) == "triton_python_backend_stub" and argv[1] == model_file, argv
            assert instance["instance"].startswith(name + "_")
            assert abs(instance["rss_kib"] - _vmrss_kib(instance["pid"])) <= 0.05 * instance["rss_kib"], instance
        rss = [i["rss_kib"] for i in entry["per_instance"]]
        assert entry["host_mib"] > 0 and entry["host_mib"] == -(-sum(rss) // 1024)
        assert entry["footprint"]["host_mib"] == -(-max(rss) // 1024) and entry["footprint"]["source"] == "triton_footprint"
    assert measured > 0, "no python-backend version served: nothing was measured"
    # no stub counted for two models or versions
    pids = [i["pid"] for m in result["models"] for i in m["per_instance"]]
    assert len(set(pids)) == len(pids) == sum(m["instances"] for m in result["models"])
    assert got[("ops_pipeline", 1)]["instances"] == 0 and got[("ops_pipeline", 1)]["host_mib"] is None
