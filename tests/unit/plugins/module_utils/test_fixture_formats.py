"""The written GPU test doubles checked against the real tools' formats, where this GPU-less machine can run them.

tests/fixtures/nvidia_smi/written_* and triton_log/written_* were written to match the formats, not captured
on a GPU host. What is checked here against the real thing:
- nvidia-smi: recorded_real_535.261.03_* are what Debian's nvidia-smi 535.261.03 binary printed here
  (capture_real_formats.sh): its header line for the collection's --query-gpu and --query-compute-apps, its
  query help (the fields it documents), its no-driver and no-device texts;
- the placement line: the real python-based onnxruntime backend (roles/triton_server/files/backends/
  onnxruntime/model.py) formats it; triton_log/recorded_placement_cpu_fallback.log was captured from it on
  this machine, so the written GPU log must be the same code's output for a CUDA session, framed the same.
What is not: the values of a GPU host's rows (UUIDs, memory); tools/gpu_check.sh proves placement on one.
"""

import importlib.util
import os
import re
import sys
import types

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
SMI = os.path.join(FIXTURES, "nvidia_smi")
LOGS = os.path.join(FIXTURES, "triton_log")
BACKEND = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "triton_server", "files", "backends",
                       "onnxruntime", "model.py")
REAL = "recorded_real_535.261.03_%s.txt"
WRITTEN_WITH_HEADER = ["written_h100x8_535.csv", "written_h100x2_535.csv", "written_a100x2_mig_535.csv",
                       "written_t4_535_nopersist.csv", "written_rtx3090_noecc_535.csv"]
WRITTEN_APPS = ["written_compute_apps_h100_onnx_on_gpu0.csv", "written_compute_apps_h100_triton_pool_only.csv",
                "written_compute_apps_h100_python_stubs.csv"]
UUID = r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def read(directory, name):
    with open(os.path.join(directory, name)) as handle:
        return handle.read()


def columns(header):
    """Header cells without their unit ("memory.total [MiB]" -> "memory.total")."""
    return [re.sub(r" \[[^\]]+\]$", "", cell) for cell in header.strip().split(", ")]


def documented(help_text):
    """Every field name the real binary's query help documents (including aliases: "a" or "b")."""
    return set(name for line in help_text.splitlines() if line.startswith('"') for name in re.findall(r'"([^"]+)"', line))


def test_the_module_queries_fields_the_real_binary_documents():
    assert set(smi.QUERY_FIELDS) <= documented(read(SMI, REAL % "help_query_gpu"))
    assert set(smi.COMPUTE_CAP_FIELDS) <= documented(read(SMI, REAL % "help_query_gpu"))
    assert set(smi.COMPUTE_APPS_FIELDS) <= documented(read(SMI, REAL % "help_query_compute_apps"))


def test_the_real_header_is_the_modules_query():
    # the binary answered the module's own argv (query_command) with this header
    assert columns(read(SMI, REAL % "header_query_gpu")) == list(smi.QUERY_FIELDS)


@pytest.mark.parametrize("name", WRITTEN_WITH_HEADER)
def test_written_query_gpu_headers_are_the_real_ones(name):
    assert read(SMI, name).splitlines()[0] == read(SMI, REAL % "header_query_gpu").strip()


@pytest.mark.parametrize("name", WRITTEN_WITH_HEADER + ["written_h200_550_noheader.csv"])
def test_written_query_gpu_rows_have_the_real_columns(name):
    width = len(columns(read(SMI, REAL % "header_query_gpu")))
    rows = [line for line in read(SMI, name).splitlines() if line and not line.startswith("index, ")]
    assert rows and all(len(row.split(", ")) == width for row in rows), rows
    assert all(re.fullmatch(UUID, row.split(", ")[1]) for row in rows), rows


@pytest.mark.parametrize("name", WRITTEN_APPS)
def test_written_compute_apps_rows_have_the_real_columns(name):
    # real header: "pid, process_name, used_gpu_memory [MiB], gpu_uuid"; the double is noheader,nounits
    header = columns(read(SMI, REAL % "header_query_compute_apps"))
    assert header == ["pid", "process_name", "used_gpu_memory", "gpu_uuid"]
    for row in read(SMI, name).splitlines():
        pid, process, memory, uuid = row.split(", ")
        assert pid.isdigit() and process.startswith("/") and memory.isdigit() and re.fullmatch(UUID, uuid), row


@pytest.mark.parametrize("name", ["written_compute_cap_h100x8_535.csv", "written_compute_cap_rtx3090_535.csv"])
def test_written_compute_cap_rows_are_what_the_real_help_documents(name):
    # the help: "compute_cap" is "The CUDA Compute Capability, represented as Major DOT Minor"
    assert 'The CUDA Compute Capability, represented as Major DOT Minor.' in read(SMI, REAL % "help_query_gpu")
    for row in read(SMI, name).splitlines():
        assert re.fullmatch(r"[0-9]+, [0-9]+\.[0-9]", row), row


@pytest.mark.parametrize("written, real", [("written_no_driver.txt", "no_driver"), ("written_no_devices.txt", "no_devices")])
def test_written_failure_texts_are_the_real_ones(written, real):
    assert read(SMI, written).strip() == read(SMI, REAL % real).split("\nrc=")[0].strip()


def test_the_real_exit_codes_are_the_ones_the_module_expects():
    assert read(SMI, REAL % "no_driver").strip().endswith("rc=%d" % smi.RC_NO_DRIVER)
    assert read(SMI, REAL % "no_devices").strip().endswith("rc=%d" % smi.RC_NO_DEVICES)


# -- Triton's log: the onnxruntime backend's placement line ----------------------------------------------
class Session(object):
    """What onnxruntime's InferenceSession answers about its providers."""

    def __init__(self, providers, options):
        self.providers, self.options = providers, options

    def get_providers(self):
        return self.providers

    def get_provider_options(self):
        return self.options


@pytest.fixture(scope="module")
def backend():
    """The real backend's model.py (Triton's python backend module replaced by an empty stand-in)."""
    saved = sys.modules.get("triton_python_backend_utils")
    sys.modules["triton_python_backend_utils"] = types.ModuleType("triton_python_backend_utils")
    try:
        spec = importlib.util.spec_from_file_location("aiops_onnxruntime_backend", BACKEND)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        if saved is None:
            del sys.modules["triton_python_backend_utils"]
        else:
            sys.modules["triton_python_backend_utils"] = saved


GLOG = re.compile(r'^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ model\.py:\d+\] "(aiops onnxruntime placement: .*)"$')


def placement_lines(name):
    return [GLOG.match(line).group(1) for line in read(LOGS, name).splitlines() if "placement:" in line]


def test_the_captured_cpu_log_is_the_backends_own_line(backend):
    # onnxruntime's provider options are strings; a CPU session has no CUDA options
    where = backend.placement(Session(["CPUExecutionProvider"], {"CPUExecutionProvider": {}}))
    lines = placement_lines("recorded_placement_cpu_fallback.log")
    assert lines and all(line.endswith("provider=%s device=%d" % where) for line in lines)
    assert lines[0] == backend.PLACEMENT_FORMAT % (("anomaly_detector", "2", "anomaly_detector_0_0") + where)


def test_the_written_gpu_log_is_what_the_backend_logs_on_cuda(backend):
    import onnxruntime

    assert "CUDAExecutionProvider" in onnxruntime.get_all_providers()  # the real provider name
    where = backend.placement(Session(["CUDAExecutionProvider", "CPUExecutionProvider"],
                                      {"CUDAExecutionProvider": {"device_id": "0"}, "CPUExecutionProvider": {}}))
    assert where == ("CUDAExecutionProvider", 0)
    assert placement_lines("written_placement_h100_gpu0.log") == [
        backend.PLACEMENT_FORMAT % (("anomaly_detector", "3", "anomaly_detector_0_%d" % i) + where) for i in (0, 1)]
