import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi

RECORDINGS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvidia_smi")


def recording(name):
    with open(os.path.join(RECORDINGS, name)) as handle:
        return handle.read()


def test_h100x8_every_field():
    gpus = smi.parse_query_gpu(recording("written_h100x8_535.csv"))
    assert [g["index"] for g in gpus] == list(range(8))
    first = gpus[0]
    assert first["uuid"].startswith("GPU-") and len(first["uuid"]) == 40
    assert first["name"] == "NVIDIA H100 80GB HBM3"
    assert first["pci_bus_id"] == "00000000:1B:00.0"
    assert first["memory_total_mib"] == 81559
    assert first["memory_used_mib"] == 0
    assert first["driver_version"] == "535.154.05"
    assert first["persistence_mode"] is True
    assert first["mig_mode"] == "disabled"
    assert first["ecc_mode"] == "enabled"
    assert first["ecc_errors_uncorrected_volatile"] == 0
    assert len(set(g["uuid"] for g in gpus)) == 8


def test_mig_and_ecc_counters():
    gpus = smi.parse_query_gpu(recording("written_a100x2_mig_535.csv"))
    assert [g["mig_mode"] for g in gpus] == ["enabled", "disabled"]
    assert gpus[1]["ecc_errors_corrected_volatile"] == 12
    assert gpus[1]["ecc_errors_uncorrected_aggregate"] == 2


def test_not_available_fields_become_none():
    t4 = smi.parse_query_gpu(recording("written_t4_535_nopersist.csv"))[0]
    assert t4["persistence_mode"] is False
    assert t4["mig_mode"] is None
    geforce = smi.parse_query_gpu(recording("written_rtx3090_noecc_535.csv"))[0]
    assert geforce["ecc_mode"] is None
    assert geforce["ecc_errors_uncorrected_volatile"] is None
    assert geforce["memory_used_mib"] == 312


def test_headerless_output_uses_query_order():
    h200 = smi.parse_query_gpu(recording("written_h200_550_noheader.csv"))
    assert len(h200) == 1
    assert h200[0]["name"] == "NVIDIA H200"
    assert h200[0]["memory_total_mib"] == 143771
    assert h200[0]["driver_version"] == "550.90.07"


def test_header_maps_reordered_columns_and_units():
    text = "name, index, uuid, memory.total [MiB]\nTesla T4, 3, GPU-x, 15360 MiB\nTesla T4, 1, GPU-y, 15360 MiB\n"
    gpus = smi.parse_query_gpu(text)
    assert [(g["index"], g["uuid"], g["memory_total_mib"]) for g in gpus] == [(1, "GPU-y", 15360), (3, "GPU-x", 15360)]
    assert gpus[0]["driver_version"] is None


def test_rejects_driver_error_text():
    with pytest.raises(smi.NvidiaSmiError, match="columns"):
        smi.parse_query_gpu(recording("written_no_driver.txt"))


def test_rejects_non_integer():
    text = "index, uuid, name\nzero, GPU-x, T4\n"
    with pytest.raises(smi.NvidiaSmiError, match="index: expected an integer"):
        smi.parse_query_gpu(text)


def test_empty_output_is_no_gpus():
    assert smi.parse_query_gpu("\n") == []


@pytest.mark.parametrize("rc,name,expected", [
    (9, "written_no_driver.txt", "no_driver"),
    (6, "written_no_devices.txt", "no_devices"),
    (2, None, None),
])
def test_classify_failure(rc, name, expected):
    text = recording(name) if name else "Invalid combination of input arguments."
    assert smi.classify_failure(rc, text) == expected


def test_cuda_version_from_banner_and_q():
    assert smi.parse_cuda_version(recording("written_h100x8_535.banner.txt")) == "12.2"
    assert smi.parse_cuda_version(recording("written_q_h200_550.txt")) == "12.4"
    assert smi.parse_cuda_version("no banner") is None


def test_proc_version_flavours():
    assert smi.parse_proc_version(recording("written_proc_version_proprietary_535.txt")) == {"version": "535.154.05", "flavor": "proprietary"}
    assert smi.parse_proc_version(recording("written_proc_version_open_535.txt")) == {"version": "535.154.05", "flavor": "open"}
    assert smi.parse_proc_version("") is None


def test_fabricmanager_version():
    assert smi.parse_fabricmanager_version(recording("written_fabricmanager_version_535.txt")) == "535.154.05"
    assert smi.parse_fabricmanager_version("nv-fabricmanager: command not found") is None


def _pci_device(root, name, vendor, pci_class):
    device = root / name
    device.mkdir()
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(pci_class + "\n")


def test_scan_pci_finds_gpus_and_nvswitches(tmp_path):
    _pci_device(tmp_path, "0000:1b:00.0", "0x10de", "0x030200")  # H100 3D controller
    _pci_device(tmp_path, "0000:01:00.0", "0x10de", "0x030000")  # VGA GPU
    _pci_device(tmp_path, "0000:01:00.1", "0x10de", "0x040300")  # its HDMI audio function
    _pci_device(tmp_path, "0000:05:00.0", "0x10de", "0x068000")  # NVSwitch
    _pci_device(tmp_path, "0000:00:02.0", "0x8086", "0x030000")  # Intel VGA
    found = smi.scan_pci(str(tmp_path))
    assert found == {"gpus": ["0000:01:00.0", "0000:1b:00.0"], "nvswitches": ["0000:05:00.0"]}


def test_scan_pci_without_sysfs(tmp_path):
    assert smi.scan_pci(str(tmp_path / "absent")) == {"gpus": [], "nvswitches": []}


# The argv written out here, not built from the module's own QUERY_FIELDS (a field dropped from those would
# pass a comparison with themselves); that the real binary answers it with the header the parser maps:
# test_fixture_formats.py.
QUERY_ARGV = ["/usr/bin/nvidia-smi",
              "--query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,driver_version,persistence_mode,"
              "mig.mode.current,mig.mode.pending,ecc.mode.current,ecc.errors.corrected.volatile.total,"
              "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total",
              "--format=csv,nounits"]


def test_query_command_lists_all_fields():
    assert smi.query_command("/usr/bin/nvidia-smi") == QUERY_ARGV


@pytest.mark.parametrize("actual,wanted,result", [
    ("535.154.05", "535", True),
    ("535.154.05", "535.154.05", True),
    ("535.154.05", "535.154", True),
    ("535.154.05", "535.161.07", False),
    ("550.90.07", "535", False),
    (None, "535", False),
])
def test_version_matches(actual, wanted, result):
    assert smi.version_matches(actual, wanted) is result


def test_consistent_h100_host_has_no_problems():
    gpus = smi.parse_query_gpu(recording("written_h100x8_535.csv"))
    module = smi.parse_proc_version(recording("written_proc_version_proprietary_535.txt"))
    fm = smi.parse_fabricmanager_version(recording("written_fabricmanager_version_535.txt"))
    assert smi.check_consistency(gpus, module, "535.154.05", 8, fm) == []


def test_consistency_reports_every_mismatch():
    gpus = smi.parse_query_gpu(recording("written_a100x2_mig_535.csv"))  # driver 535.183.01, 2 GPUs
    module = smi.parse_proc_version(recording("written_proc_version_open_535.txt"))  # 535.154.05
    problems = smi.check_consistency(gpus, module, "535.183.01", 8, "535.154.05")
    assert problems == [
        "expected 8 GPUs, nvidia-smi lists 2",
        "nvidia-smi driver 535.183.01 != loaded kernel module 535.154.05 (NVML/driver mismatch: reboot or reload the module)",
        "kernel module 535.154.05 does not match pinned 535.183.01",
        "fabric manager 535.154.05 does not match pinned 535.183.01",
        "fabric manager 535.154.05 != driver 535.183.01",
    ]


def test_consistency_branch_pin_and_mixed_versions():
    gpus = smi.parse_query_gpu(recording("written_h100x8_535.csv"))
    gpus[3]["driver_version"] = "550.90.07"
    problems = smi.check_consistency(gpus, expected_driver_version="535")
    assert problems[0] == "nvidia-smi reports several driver versions: 535.154.05, 550.90.07"
    assert smi.check_consistency(smi.parse_query_gpu(recording("written_h100x8_535.csv")), expected_driver_version="550") == [
        "nvidia-smi driver 535.154.05 does not match pinned 550",
    ]


def test_compute_apps_command_and_parse():
    assert smi.compute_apps_command("/usr/bin/nvidia-smi") == [
        "/usr/bin/nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,nounits"]
    apps = smi.parse_compute_apps(recording("written_compute_apps_h100_onnx_on_gpu0.csv"))
    assert [(a["pid"], a["used_memory_mib"]) for a in apps] == [(48213, 616), (48213, 616), (48391, 1094)]
    assert apps[2]["process_name"] == "/opt/tritonserver/backends/python/triton_python_backend_stub"
    assert apps[2]["gpu_uuid"] == smi.parse_query_gpu(recording("written_h100x2_535.csv"))[0]["uuid"]
    assert smi.parse_compute_apps(recording("written_compute_apps_none.txt")) == []
    assert smi.parse_compute_apps("") == []
    # MIG: nvidia-smi cannot attribute memory per process
    assert smi.parse_compute_apps("77, python3, [N/A], GPU-x\n")[0]["used_memory_mib"] is None


def sysfs_from_recording(root, name):
    """Materialise a recorded ``grep -H . /sys/bus/pci/devices/*/{vendor,class}`` listing as a sysfs tree."""
    for line in recording(name).splitlines():
        path, value = line.rsplit(":", 1)
        device, attribute = path.split("/")[-2:]
        (root / device).mkdir(parents=True, exist_ok=True)
        (root / device / attribute).write_text(value + "\n")
    return str(root)


def test_scan_pci_on_written_hosts(tmp_path):
    assert smi.scan_pci(sysfs_from_recording(tmp_path / "h100", "written_sysfs_pci_h100x2.txt")) == {
        "gpus": ["0000:1b:00.0", "0000:43:00.0"], "nvswitches": []}  # the ASPEED BMC VGA (0x1a03) is not NVIDIA
    assert smi.scan_pci(sysfs_from_recording(tmp_path / "cpu", "written_sysfs_pci_cpu_only.txt")) == {"gpus": [], "nvswitches": []}


@pytest.mark.parametrize("gpu_count,pci_gpus,kind", [
    (2, ["0000:1b:00.0", "0000:43:00.0"], "gpu"),
    (0, ["0000:1b:00.0"], "broken"),
    (0, [], "cpu"),
    (1, [], "gpu"),  # a GPU passed through without a PCI view (sysfs hidden) is still a GPU
])
def test_host_kind(gpu_count, pci_gpus, kind):
    assert smi.host_kind(gpu_count, pci_gpus) == kind


def test_compute_cap_command_and_parse():
    # written out, not built from COMPUTE_CAP_FIELDS
    assert smi.compute_cap_command("/usr/bin/nvidia-smi") == ["/usr/bin/nvidia-smi", "--query-gpu=index,compute_cap",
                                                              "--format=csv,noheader,nounits"]
    assert smi.parse_compute_cap(recording("written_compute_cap_h100x8_535.csv")) == dict((i, "9.0") for i in range(8))
    assert smi.parse_compute_cap("0, 8.6\n1, [N/A]\n\n") == {0: "8.6"}
    assert smi.parse_compute_cap("") == {}


@pytest.mark.parametrize("text", ["written_compute_cap_not_a_field_470.txt", "0, sm_86\n", "0\n"])
def test_compute_cap_output_that_is_not_rows_is_an_error(text):
    body = recording(text) if text.startswith("written_") else text
    with pytest.raises(smi.NvidiaSmiError, match="compute_cap query"):
        smi.parse_compute_cap(body)
