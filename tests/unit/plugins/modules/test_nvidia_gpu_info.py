"""nvidia_gpu_info run end to end against the nvidia-smi test double replaying written nvidia-smi outputs."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.filter.gpu_facts import gpu_consistency
from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi
from ansible_collections.aiops.triton.plugins.modules import nvidia_gpu_info

TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "..")
RECORDINGS = os.path.abspath(os.path.join(TESTS, "fixtures", "nvidia_smi"))
DOUBLE = os.path.abspath(os.path.join(TESTS, "doubles", "nvidia-smi.double"))


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            nvidia_gpu_info.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A host whose /proc and sysfs views are temp files; the double replays the given recordings."""
    proc = tmp_path / "version"
    monkeypatch.setattr(smi, "PROC_VERSION_PATH", str(proc))
    monkeypatch.setattr(smi, "PCI_DEVICES_PATH", str(tmp_path / "pci"))
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE_LOG", str(tmp_path / "calls.log"))

    def configure(query, banner="written_h100x8_535.banner.txt", rc=0, proc_version=None, compute_cap=None, compute_cap_rc=0):
        monkeypatch.setenv("NVIDIA_SMI_DOUBLE_QUERY", os.path.join(RECORDINGS, query))
        if compute_cap:
            monkeypatch.setenv("NVIDIA_SMI_DOUBLE_COMPUTE_CAP", os.path.join(RECORDINGS, compute_cap))
            monkeypatch.setenv("NVIDIA_SMI_DOUBLE_COMPUTE_CAP_RC", str(compute_cap_rc))
        monkeypatch.setenv("NVIDIA_SMI_DOUBLE_BANNER", os.path.join(RECORDINGS, banner))
        monkeypatch.setenv("NVIDIA_SMI_DOUBLE_RC", str(rc))
        if proc_version:
            with open(os.path.join(RECORDINGS, proc_version)) as src:
                proc.write_text(src.read())
        return tmp_path

    return configure


def test_h100_host_reports_gpus_and_versions(capsys, host):
    tmp = host("written_h100x8_535.csv", proc_version="written_proc_version_proprietary_535.txt",
               compute_cap="written_compute_cap_h100x8_535.csv")
    result = run_module(capsys, nvidia_smi_path=DOUBLE, expected_driver_version="535.154.05", expected_gpu_count=8)
    assert result["changed"] is False
    assert result["status"] == "ok"
    assert result["gpu_count"] == 8
    assert result["gpus"][7]["pci_bus_id"] == "00000000:DF:00.0"
    assert result["driver_version"] == "535.154.05"
    assert result["cuda_version"] == "12.2"
    assert result["kernel_module"] == {"version": "535.154.05", "flavor": "proprietary"}
    assert result["problems"] == []
    assert result["message"] == "8 GPU(s), driver 535.154.05, CUDA 12.2"
    assert result["host_kind"] == "gpu" and result["nvidia_smi_output"] is None
    assert [(g["compute_capability"], g["compute_capability_source"]) for g in result["gpus"]] == [("9.0", "nvidia-smi")] * 8
    assert result["compute_cap_error"] is None
    calls = (tmp / "calls.log").read_text().splitlines()
    # written out, not built with the module's own query_command()
    assert calls == ["--query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,driver_version,persistence_mode,"
                     "mig.mode.current,mig.mode.pending,ecc.mode.current,ecc.errors.corrected.volatile.total,"
                     "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total --format=csv,nounits",
                     "--query-gpu=index,compute_cap --format=csv,noheader,nounits", ""]


def test_compute_capability_nvidia_smi_reports_is_used_for_a_gpu_the_name_table_lacks(capsys, host):
    host("written_rtx3090_noecc_535.csv", compute_cap="written_compute_cap_rtx3090_535.csv")
    (gpu,) = run_module(capsys, nvidia_smi_path=DOUBLE)["gpus"]
    assert (gpu["name"], gpu["compute_capability"], gpu["compute_capability_source"]) == ("NVIDIA GeForce RTX 3090", "8.6", "nvidia-smi")


@pytest.mark.parametrize("query, capability, source", [
    ("written_t4_535_nopersist.csv", "7.5", "name"),  # Tesla T4: in the name table
    ("written_rtx3090_noecc_535.csv", None, None),  # not in it: unknown, never guessed
])
def test_an_nvidia_smi_without_compute_cap_falls_back_to_the_name_and_says_so(capsys, host, query, capability, source):
    # a driver before R510 refuses the field (rc 2); the GPU list itself was read by the first query
    host(query, compute_cap="written_compute_cap_not_a_field_470.txt", compute_cap_rc=2)
    result = run_module(capsys, nvidia_smi_path=DOUBLE)
    assert result["status"] == "ok" and "failed" not in result
    (gpu,) = result["gpus"]
    assert (gpu["compute_capability"], gpu["compute_capability_source"]) == (capability, source)
    assert result["compute_cap_error"] == 'Field "compute_cap" is not a valid field to query.'


def test_mismatches_are_reported_not_failed(capsys, host):
    host("written_a100x2_mig_535.csv", proc_version="written_proc_version_open_535.txt")
    result = run_module(capsys, nvidia_smi_path=DOUBLE, expected_driver_version="535.183.01", expected_gpu_count=2)
    assert "failed" not in result
    assert result["gpus"][0]["mig_mode"] == "enabled"
    assert result["problems"] == [
        "nvidia-smi driver 535.183.01 != loaded kernel module 535.154.05 (NVML/driver mismatch: reboot or reload the module)",
        "kernel module 535.154.05 does not match pinned 535.183.01",
    ]


def test_fabricmanager_version_is_compared(capsys, host, monkeypatch):
    tmp = host("written_h100x8_535.csv", proc_version="written_proc_version_proprietary_535.txt")
    bindir = tmp / "bin"
    bindir.mkdir()
    fm = bindir / "nv-fabricmanager"
    fm.write_text("#!/bin/sh\necho 'Fabric Manager version is : 535.161.07'\n")  # double: a stale FM
    fm.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    result = run_module(capsys, nvidia_smi_path=DOUBLE, expected_driver_version="535.154.05")
    assert result["fabricmanager_version"] == "535.161.07"
    assert result["problems"] == [
        "fabric manager 535.161.07 does not match pinned 535.154.05",
        "fabric manager 535.161.07 != driver 535.154.05",
    ]


@pytest.mark.parametrize("query, proc_version, fabricmanager, expected", [
    ("written_h100x8_535.csv", "written_proc_version_proprietary_535.txt", None,
     {"expected_driver_version": "535.154.05", "expected_gpu_count": 8}),
    ("written_a100x2_mig_535.csv", "written_proc_version_open_535.txt", None,
     {"expected_driver_version": "535.183.01", "expected_gpu_count": 2}),
    ("written_h100x8_535.csv", "written_proc_version_proprietary_535.txt", "535.161.07",
     {"expected_driver_version": "535.154.05"}),
    ("written_h100x8_535.csv", None, None, {"expected_driver_version": "550", "expected_gpu_count": 4}),
])
def test_gpu_consistency_on_the_facts_is_the_module_s_own_check(capsys, host, monkeypatch, query, proc_version, fabricmanager, expected):
    """roles/common's gpu_facts reads once without expectations; the filter gives what a second read with them would."""
    tmp = host(query, proc_version=proc_version)
    if fabricmanager:
        bindir = tmp / "bin"
        bindir.mkdir()
        fm = bindir / "nv-fabricmanager"
        fm.write_text("#!/bin/sh\necho 'Fabric Manager version is : %s'\n" % fabricmanager)
        fm.chmod(0o755)
        monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    facts = run_module(capsys, nvidia_smi_path=DOUBLE)
    checked = run_module(capsys, nvidia_smi_path=DOUBLE, **expected)
    assert gpu_consistency(facts, expected.get("expected_driver_version"), expected.get("expected_gpu_count")) == checked["problems"]


@pytest.mark.parametrize("recording,rc,status", [
    ("written_no_driver.txt", 9, "no_driver"),
    ("written_no_devices.txt", 6, "no_devices"),
])
def test_no_driver_or_no_gpu_is_an_empty_list(capsys, host, recording, rc, status):
    tmp = host(recording, rc=rc)
    pci = tmp / "pci" / "0000:1b:00.0"
    pci.mkdir(parents=True)
    (pci / "vendor").write_text("0x10de\n")
    (pci / "class").write_text("0x030200\n")
    result = run_module(capsys, nvidia_smi_path=DOUBLE, expected_gpu_count=1)
    assert "failed" not in result
    assert result["status"] == status
    assert result["gpus"] == []
    assert result["pci"]["gpus"] == ["0000:1b:00.0"]
    assert result["problems"] == ["expected 1 GPUs, nvidia-smi lists 0"]
    assert result["host_kind"] == "broken"
    assert result["nvidia_smi_output"] == open(os.path.join(RECORDINGS, recording)).read().strip()
    if status == "no_driver":
        assert result["message"] == (
            "nvidia-smi cannot talk to the NVIDIA kernel module (not loaded; 1 NVIDIA GPU(s) on the PCI bus): NVIDIA-SMI has failed "
            "because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.")


def test_not_installed(capsys, host, monkeypatch, tmp_path):
    host("written_no_driver.txt")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(nvidia_gpu_info.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: None)
    result = run_module(capsys)
    assert result["status"] == "not_installed"
    assert result["gpus"] == [] and result["gpu_count"] == 0
    assert result["message"] == "nvidia-smi is not installed"
    assert result["host_kind"] == "cpu"  # and no NVIDIA device on the (empty) PCI bus


def test_unexpected_error_fails_with_its_text(capsys, host):
    host("written_no_devices.txt")
    result = run_module(capsys, nvidia_smi_path="/bin/false")
    assert result["failed"] is True
    assert result["msg"].startswith("cannot read nvidia-smi output: /bin/false failed with rc 1")
