"""GPU placement (triton_verify's require_gpu) judged on written nvidia-smi outputs and Triton logs.

Proven here: the judgement, on text in the tools' formats (tests/fixtures/nvidia_smi/ and triton_log/, test
doubles written to match them, not captured: there is no GPU here; test_fixture_formats.py checks them
against the real nvidia-smi binary's field names and the real onnxruntime backend's log line): the GPUs of a
2x H100 host, the compute apps nvidia-smi lists when Triton serves the ONNX model on GPU 0 (tritonserver's
memory pool on every GPU plus the backend stub on GPU 0) or with the model on CPU (only the pool), and the
placement lines the onnxruntime backend logs. The only passing case runs on written text: that a real GPU
host passes is proven by tools/gpu_check.sh on one. The process tree nvidia-smi's PIDs belong to is given
per test (no GPU and no such processes on this machine).
"""

import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi
from ansible_collections.aiops.triton.plugins.module_utils import triton_verification as tv
from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
RECORDINGS = os.path.join(FIXTURES, "nvidia_smi")
# tritonserver (48213) and its python backend stub (48391), as /proc shows them on such a host.
TRITON_TREE = {48213: ("tritonserver", 1), 48391: ("triton_python_b", 48213)}


def recording(name):
    with open(os.path.join(RECORDINGS, name)) as handle:
        return handle.read()


def gpu_state(apps_recording, gpus_recording="written_h100x2_535.csv"):
    return {"gpus": smi.parse_query_gpu(recording(gpus_recording)),
            "apps": smi.parse_compute_apps(recording(apps_recording))}


def placements(log_recording, model="anomaly_detector"):
    with open(os.path.join(FIXTURES, "triton_log", log_recording)) as handle:
        return tv.parse_placements(handle.read()).get(model)


class Client(object):
    """Answers model_config as Triton does."""

    def __init__(self, groups):
        self.groups = groups

    def model_config(self, name):
        if self.groups is None:
            raise TritonApiError("connection refused")
        return {"name": name, "platform": "onnxruntime_onnx", "instance_group": self.groups}


@pytest.fixture(autouse=True)
def process_tree(monkeypatch):
    monkeypatch.setattr(tv, "_comm", lambda pid: TRITON_TREE.get(pid, ("", 0))[0])
    monkeypatch.setattr(tv, "_parent", lambda pid: TRITON_TREE.get(pid, ("", 0))[1])


def test_gpu_present_and_used_passes():
    client = Client([{"kind": "KIND_GPU", "count": 2, "gpus": [0]}])
    result, failures = tv.check_gpu(client, "anomaly_detector", gpu_state("written_compute_apps_h100_onnx_on_gpu0.csv"),
                                    placements("written_placement_h100_gpu0.log"), [3])
    assert failures == []
    assert result["passed"] is True
    assert result["expected_gpus"] == [0]
    assert result["execution_providers"] == {
        "3/anomaly_detector_0_0": {"version": 3, "instance": "anomaly_detector_0_0", "provider": "CUDAExecutionProvider", "device_id": 0},
        "3/anomaly_detector_0_1": {"version": 3, "instance": "anomaly_detector_0_1", "provider": "CUDAExecutionProvider", "device_id": 0}}
    stub = [p for p in result["triton_processes"] if p["pid"] == 48391]
    assert stub == [{"pid": 48391, "process_name": "/opt/tritonserver/backends/python/triton_python_backend_stub",
                     "triton_pid": 48213, "index": 0, "used_memory_mib": 1094}]


def test_gpu_present_but_model_on_cpu_fails():
    # onnxruntime fell back to CPU (as on this machine, whose real log is the recording): only tritonserver's pool is on the GPUs.
    client = Client([{"kind": "KIND_GPU", "count": 2, "gpus": [0]}])
    result, failures = tv.check_gpu(client, "anomaly_detector", gpu_state("written_compute_apps_h100_triton_pool_only.csv"),
                                    placements("recorded_placement_cpu_fallback.log"), [2])
    assert result["passed"] is False
    assert failures == ["version 2 instance anomaly_detector_0_%d runs on CPUExecutionProvider (device -1), not on CUDA GPU 0: "
                        "onnxruntime fell back to CPU (is onnxruntime-gpu installed and are the CUDA libraries found? see "
                        "Triton's log)" % i for i in (0, 1)]
    assert sorted(result["execution_providers"]) == ["2/anomaly_detector_0_0", "2/anomaly_detector_0_1"]  # version 1 not verified


def test_model_on_another_gpu_than_its_group_lists_fails():
    client = Client([{"kind": "KIND_GPU", "count": 1, "gpus": [1]}])
    _result, failures = tv.check_gpu(client, "anomaly_detector", gpu_state("written_compute_apps_h100_onnx_on_gpu0.csv"),
                                     placements("written_placement_h100_gpu0.log"), [3])
    assert [f.split(":")[0] for f in failures] == [
        "version 3 instance anomaly_detector_0_0 runs on CUDAExecutionProvider (device 0), not on CUDA GPU 1",
        "version 3 instance anomaly_detector_0_1 runs on CUDAExecutionProvider (device 0), not on CUDA GPU 1"]


def test_kind_cpu_groups_fail_even_with_triton_on_the_gpu():
    client = Client([{"kind": "KIND_CPU", "count": 2}])
    result, failures = tv.check_gpu(client, "m", gpu_state("written_compute_apps_h100_onnx_on_gpu0.csv"), None, [1])
    assert len(failures) == 1 and failures[0].startswith("instance_group kinds are ['KIND_CPU'], not KIND_GPU")
    assert result["execution_providers"] is None  # a backend that logs nothing is judged by the process check alone


def test_no_triton_process_on_any_gpu_fails():
    _result, failures = tv.check_gpu(Client([{"kind": "KIND_GPU"}]), "m", gpu_state("written_compute_apps_none.txt"))
    assert failures == ["no Triton process holds a GPU context (nvidia-smi compute apps: none): check that the service gets "
                        "the GPU (DeviceAllow= for native, CDI/--gpus for containers) and the backend uses CUDA"]


def test_groups_without_gpus_must_use_every_gpu():
    # 8 GPUs, Triton only on 0 and 1 (CUDA_VISIBLE_DEVICES): a KIND_GPU group that lists no GPUs runs on all eight.
    client = Client([{"kind": "KIND_GPU"}])
    assert tv.check_gpu(client, "m", gpu_state("written_compute_apps_h100_onnx_on_gpu0.csv"))[1] == []
    result, failures = tv.check_gpu(client, "m", gpu_state("written_compute_apps_h100_onnx_on_gpu0.csv", "written_h100x8_535.csv"))
    assert result["expected_gpus"] == list(range(8))
    assert failures == ["no Triton process uses memory on GPU 2, 3, 4, 5, 6, 7, where the instances must run (Triton uses GPU 0, 1)"]


def test_unreadable_config_is_a_failure():
    _result, failures = tv.check_gpu(Client(None), "m", gpu_state("written_compute_apps_h100_onnx_on_gpu0.csv"))
    assert failures[0] == "cannot read the model configuration to check GPU placement: connection refused"


def test_last_placement_line_of_an_instance_wins():
    log = ('"aiops onnxruntime placement: model=m version=1 instance=m_0 provider=CPUExecutionProvider device=-1"\n'
           '"aiops onnxruntime placement: model=m version=1 instance=m_0 provider=CUDAExecutionProvider device=1"\n')
    want = {"version": 1, "instance": "m_0", "provider": "CUDAExecutionProvider", "device_id": 1}
    assert tv.parse_placements(log) == {"m": {"1/m_0": want}}
    assert tv.parse_placements("") == {}


def test_the_backend_logs_what_verify_parses():
    import ast
    path = os.path.join(FIXTURES, "..", "..", "roles", "triton_server", "files", "backends", "onnxruntime", "model.py")
    with open(path) as handle:
        tree = ast.parse(handle.read())
    (fmt,) = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
              and getattr(node.targets[0], "id", None) == "PLACEMENT_FORMAT"]
    line = fmt % ("anomaly_detector", "3", "anomaly_detector_0_1", "CUDAExecutionProvider", 1)
    assert tv.parse_placements(line)["anomaly_detector"]["3/anomaly_detector_0_1"]["device_id"] == 1
