"""aiops.triton.triton_verify against a real tritonserver serving a tiny python-backend model."""

import copy
import os

import pytest

from triton_fixtures import (TritonServer, add_sub_golden_case, free_port, run_module, write_add_sub_version,
                             write_upper_model)

pytestmark = pytest.mark.integration

UPPER_CASE = {"name": "alerts", "inputs": {"TEXT": {"datatype": "BYTES", "shape": [2, 1], "data": [["disk full"], ["oom kill"]]}},
              "expected": {"UPPER": {"shape": [2, 1], "data": ["DISK FULL", "OOM KILL"], "equals": True}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = str(tmp_path_factory.mktemp("repo"))
    write_add_sub_version(repo, 1)
    write_add_sub_version(repo, 2)
    write_upper_model(repo, dims="-1, 1")
    with TritonServer(repo) as srv:
        yield srv


def verify(server, models, **extra):
    args = {"url": server.http_url, "models": models, "ready_timeout": 5}
    args.update(extra)
    return run_module("triton_verify", args)


def test_passes_with_repository_golden_cases_over_http_and_grpc(server):
    result = verify(server, [{"name": "add_sub", "latency_budget": {"requests": 20, "p50_ms": 2000, "p99_ms": 5000}},
                             {"name": "upper", "golden_cases": [UPPER_CASE]}],
                    model_repository=server.repository, grpc_url=server.grpc_url)
    assert result.get("failed") is not True, result.get("msg")
    assert result["changed"] is False
    assert result["server"] == {"live": True, "ready": True, "version": "2.51.0"}
    add_sub, upper = result["models"]
    assert add_sub["passed"] is True and add_sub["failures"] == []
    (v2,) = add_sub["versions"]
    assert v2["version"] == 2 and v2["ready"] is True
    assert v2["cases_source"] == os.path.join(server.repository, "add_sub", "2", "golden_cases.json")
    outcomes = [(c["name"], c["protocol"], c["passed"]) for c in v2["cases"]]
    assert outcomes == [("add-sub-v2", "http", True), ("add-sub-v2", "grpc", True)]
    assert v2["latency"]["requests"] == 20
    assert 0 < v2["latency"]["p50_ms"] <= v2["latency"]["p99_ms"] < 5000
    assert [c["protocol"] for c in upper["versions"][0]["cases"] if c["passed"]] == ["http", "grpc"]


def test_wrong_expected_output_fails_with_the_difference(server):
    case = add_sub_golden_case(2)
    case["expected"]["OUTPUT0"]["data"] = [1.5, 2.5, 3.5, 4.6]
    result = verify(server, [{"name": "add_sub", "golden_cases": [case]}])
    assert result["failed"] is True
    assert "add_sub: version 2: golden case 'add-sub-v2' over http: output OUTPUT0[3] is 4.5, expected 4.6" in result["msg"]
    assert result["models"][0]["passed"] is False


def test_wrong_version_answer_fails_exact_match(server):
    # the v1 case run against v2: VERSION is compared exactly
    result = verify(server, [{"name": "add_sub", "golden_cases": [add_sub_golden_case(1)]}], grpc_url=server.grpc_url)
    assert result["failed"] is True
    assert "output VERSION[0] is 2, expected 1 exactly" in result["msg"]
    assert {c["protocol"] for c in result["models"][0]["versions"][0]["cases"] if not c["passed"]} == {"http", "grpc"}


def test_wrong_bytes_output_fails(server):
    case = copy.deepcopy(UPPER_CASE)
    case["expected"]["UPPER"]["data"] = ["DISK FULL", "OOM"]
    result = verify(server, [{"name": "upper", "golden_cases": [case]}])
    assert result["failed"] is True
    assert "output UPPER[1] is 'OOM KILL', expected 'OOM'" in result["msg"]


def test_latency_budget_breach_fails(server):
    result = verify(server, [{"name": "add_sub", "golden_cases": [add_sub_golden_case(2)],
                              "latency_budget": {"requests": 10, "p99_ms": 0.001}}])
    assert result["failed"] is True
    assert "p99 latency" in result["msg"] and "exceeds the budget of 0.001 ms over 10 requests" in result["msg"]
    latency = result["models"][0]["versions"][0]["latency"]
    assert latency["passed"] is False and latency["p99_ms"] > 0.001


def test_version_not_ready_fails(server):
    result = verify(server, [{"name": "add_sub", "versions": [1, 2]}], model_repository=server.repository)
    assert result["failed"] is True
    assert "add_sub: version 1: not READY" in result["msg"]
    assert [v["ready"] for v in result["models"][0]["versions"]] == [False, True]


def test_unknown_model_and_missing_cases_fail(server, tmp_path):
    result = verify(server, [{"name": "nope"}, {"name": "upper"}])
    assert result["failed"] is True
    assert "nope: model is not serving" in result["msg"]
    assert "upper: version 1: no golden cases" in result["msg"]
    # cases may be waived
    assert verify(server, [{"name": "upper"}], require_golden_cases=False).get("failed") is not True


def test_golden_cases_file_path(server, tmp_path):
    path = tmp_path / "cases.json"
    path.write_text('{"schema": 1, "cases": [%s]}' % __import__("json").dumps(UPPER_CASE))
    result = verify(server, [{"name": "upper", "golden_cases_file": str(path)}])
    assert result.get("failed") is not True, result.get("msg")
    assert result["models"][0]["versions"][0]["cases_source"] == str(path)
    broken = verify(server, [{"name": "upper", "golden_cases_file": str(tmp_path / "missing.json")}])
    assert broken["failed"] is True and "cannot read golden cases" in broken["msg"]


RECORDINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "nvidia_smi")
DOUBLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "doubles", "nvidia-smi.double")


def nvidia_smi_double(monkeypatch, directory, pids=None, query="written_h100x2_535.csv", rc=0):
    """Put the nvidia-smi double (tests/doubles) first on PATH, replaying a 2x H100 host's written outputs with the
    compute apps of Triton serving on GPU 0, their PIDs (tritonserver, its stub) replaced by ``pids``."""
    with open(os.path.join(RECORDINGS, "written_compute_apps_h100_onnx_on_gpu0.csv")) as handle:
        rows = [line.split(", ", 1) for line in handle.read().splitlines()]
    recorded = sorted(set(int(pid) for pid, _rest in rows))
    mapping = dict(zip(recorded, pids or recorded))
    apps = directory / "compute_apps.csv"
    apps.write_text("".join("%d, %s\n" % (mapping[int(pid)], rest) for pid, rest in rows))
    os.symlink(os.path.abspath(DOUBLE), str(directory / "nvidia-smi"))
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE_QUERY", os.path.join(RECORDINGS, query))
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE_APPS", str(apps))
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE_RC", str(rc))
    monkeypatch.setenv("PATH", str(directory) + os.pathsep + os.environ["PATH"])


def test_require_gpu_fails_on_cpu_instances(server, tmp_path, monkeypatch):
    nvidia_smi_double(monkeypatch, tmp_path, [server.pid, server.pid])
    result = verify(server, [{"name": "add_sub"}], require_gpu=True, model_repository=server.repository)
    assert result["failed"] is True
    gpu = result["models"][0]["gpu"]
    # the Triton process is found among the compute apps; the CPU instance group is the failure
    assert sorted(set(p["triton_pid"] for p in gpu["triton_processes"])) == [server.pid]
    assert gpu["instance_kinds"] == ["KIND_CPU"]
    assert "instance_group kinds are ['KIND_CPU'], not KIND_GPU" in result["msg"]
    assert "no Triton process holds a GPU context" not in result["msg"]


def test_require_gpu_fails_when_triton_is_not_on_a_gpu(server, tmp_path, monkeypatch):
    nvidia_smi_double(monkeypatch, tmp_path, [os.getpid(), os.getpid()])
    result = verify(server, [{"name": "add_sub"}], require_gpu=True, model_repository=server.repository)
    assert "no Triton process holds a GPU context (nvidia-smi compute apps: ['%d " % os.getpid() in result["msg"]


def test_require_gpu_with_a_broken_driver_fails_with_what_nvidia_smi_said(server, tmp_path, monkeypatch):
    nvidia_smi_double(monkeypatch, tmp_path, query="written_no_driver.txt", rc=9)
    result = verify(server, [{"name": "add_sub"}], require_gpu=True, model_repository=server.repository)
    assert result["failed"] is True
    assert result["msg"].startswith("require_gpu: ")
    assert "failed (rc=9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." in result["msg"]


def test_require_gpu_fails_when_onnxruntime_runs_the_model_on_cpu(ops_triton, tmp_path, monkeypatch):
    """The real python-based onnxruntime backend logs the provider it runs on: CPU here, so GPU placement fails
    even though nvidia-smi (the double) shows this Triton's processes on the GPUs."""
    nvidia_smi_double(monkeypatch, tmp_path, [ops_triton.pid, ops_triton.pid])
    result = verify(ops_triton, [{"name": "anomaly_detector"}], require_gpu=True, model_repository=ops_triton.repository,
                    log_file=ops_triton.log_path)
    assert result["failed"] is True
    gpu = result["models"][0]["gpu"]
    versions = [v["version"] for v in result["models"][0]["versions"]]
    # every instance of every serving version, as the backend logged it
    assert sorted(gpu["execution_providers"]) == sorted("%d/anomaly_detector_0_%d" % (v, i) for v in versions for i in (0, 1))
    assert all(p["provider"] == "CPUExecutionProvider" and p["device_id"] == -1 for p in gpu["execution_providers"].values())
    for version in versions:
        assert ("version %d instance anomaly_detector_0_0 runs on CPUExecutionProvider (device -1), not on CUDA GPU 0, 1"
                % version in result["msg"])
    # its golden cases still pass: only the placement is wrong
    assert all(c["passed"] for v in result["models"][0]["versions"] for c in v["cases"])


def test_require_gpu_without_nvidia_smi(server, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = verify(server, [{"name": "add_sub"}], require_gpu=True)
    assert result["failed"] is True
    assert "nvidia-smi is not on this host's PATH" in result["msg"]


def test_server_down_fails_with_an_action():
    result = run_module("triton_verify", {"url": "http://127.0.0.1:%d" % free_port(), "ready_timeout": 1,
                                          "models": [{"name": "add_sub"}]})
    assert result["failed"] is True
    assert "is not live after 1s" in result["msg"] and "systemctl status tritonserver" in result["msg"]


def test_ops_model_set_passes_its_golden_cases(ops_triton):
    """The real model set (conftest's shared server) answers every golden case it ships, both protocols."""
    names = sorted(n for n in os.listdir(ops_triton.repository) if os.path.isfile(os.path.join(ops_triton.repository, n, "config.pbtxt")))
    assert len(names) >= 3, names
    result = verify(ops_triton, [{"name": n, "latency_budget": {"requests": 5, "p99_ms": 5000}} for n in names],
                    model_repository=ops_triton.repository, grpc_url=ops_triton.grpc_url)
    assert result.get("failed") is not True, result.get("msg")
    for model in result["models"]:
        cases = [c for v in model["versions"] for c in v["cases"]]
        assert cases and all(c["passed"] for c in cases), model
        assert {c["protocol"] for c in cases} == {"http", "grpc"}


def test_unreachable_triton_is_a_structured_failure_naming_the_url():
    url = "http://127.0.0.1:%d" % free_port()  # nothing listens there
    result = run_module("triton_verify", {"url": url, "models": [{"name": "add_sub"}], "ready_timeout": 1})
    assert result["failed"] is True
    assert result["msg"].startswith("Triton at %s is not live after 1s (cannot reach Triton at %s" % (url, url))
    assert result["failures"] == [result["msg"]] and result["models"] == [] and result["server"] == {}
    assert "exception" not in result and "Traceback" not in result["msg"]


def test_default_versions_come_from_the_repository_index(server):
    result = verify(server, [{"name": "add_sub"}], model_repository=server.repository)
    assert result.get("failed") is not True, result.get("msg")
    (add_sub,) = result["models"]
    # v1 is in the repository but not loaded (the version policy serves the latest); only READY ones are verified
    assert add_sub["states"]["2"] == "READY"
    assert [v["version"] for v in add_sub["versions"]] == [2]
