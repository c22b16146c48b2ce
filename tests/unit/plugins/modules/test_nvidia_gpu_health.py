"""nvidia_gpu_health end to end against the lab's test doubles (tests/doubles/nvidia-smi-health.double, which prints
the XML the real nvidia-smi 535 printed for each state, and kernel-log.double), in check mode as the gates run it."""

import json
import os
import subprocess
import sys
import time

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi
from ansible_collections.aiops.triton.plugins.modules import nvidia_gpu_health

TESTS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FIXTURES = os.path.join(TESTS, "fixtures", "nvidia_smi")
DOUBLES = os.path.join(TESTS, "doubles")
SMI = os.path.join(DOUBLES, "nvidia-smi-health.double")
KERNEL_LOG = os.path.join(DOUBLES, "kernel-log.double")
BUS = "00000000:4E:00.0"


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A host with no NVIDIA device in its (temporary) sysfs and the doubles reading tmp/gpu_state."""
    state_file = tmp_path / "gpu_state"
    monkeypatch.setenv("AIOPS_GPU_STATE_FILE", str(state_file))
    monkeypatch.setenv("NVIDIA_SMI_DOUBLE_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setattr(smi, "PCI_DEVICES_PATH", str(tmp_path / "pci"))

    def set_state(state, at=None):
        state_file.write_text(state + "\n")
        if at is not None:
            os.utime(str(state_file), (at, at))
        return tmp_path

    return set_state


def run_module(capsys, **args):
    args.setdefault("_ansible_check_mode", True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            nvidia_gpu_health.main()
    return json.loads(capsys.readouterr().out)


def double(*args):
    proc = subprocess.run([SMI] + list(args), capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


# --- the doubles ---------------------------------------------------------------------------------------------------
def test_the_double_is_built_from_the_recordings():
    proc = subprocess.run([sys.executable, os.path.join(DOUBLES, "build_nvidia_smi_health_double.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("state", ["healthy", "row_remap_pending", "dbe_ecc", "ecc_aggregate", "pcie_degraded", "hw_slowdown"])
def test_the_double_prints_the_real_binarys_xml_byte_for_byte(host, state):
    host(state)
    with open(os.path.join(FIXTURES, "recorded_real_535.261.03_q_x_%s.xml" % state)) as handle:
        assert double("-q", "-x") == (0, handle.read(), "")


def test_the_double_prints_the_real_lost_text(host):
    host("xid79")
    with open(os.path.join(FIXTURES, "recorded_real_535.261.03_q_x_xid79.txt")) as handle:
        recorded = handle.read()
    rc, out, _err = double("-q", "-x")
    assert (rc, out + "rc=%d\n" % rc) == (15, recorded)


def test_reset_clears_what_a_reset_clears_and_keeps_the_log(host):
    tmp = host("row_remap_pending", at=1796464800)
    assert double("-r") == (0, "GPU %s was successfully reset.\nAll done.\n" % BUS, "")
    assert (tmp / "gpu_state").read_text() == "healthy\ncleared row_remap_pending 1796464800\n"
    log = subprocess.run([KERNEL_LOG], capture_output=True, text=True, check=True).stdout
    assert "2026-12-05T10:00:00+0000 %s kernel: NVRM: Xid (PCI:0000:4e:00): 63, pid=2315, name=tritonserver, Row Remapper: " \
           "New row (0x00000000000c3e12) marked for remapping, reset gpu to activate." % os.uname()[1] in log
    host("xid79")
    rc, out, _err = double("-r")
    assert rc == 15 and "GPU is lost" in out
    assert (tmp / "gpu_state").read_text() == "xid79\n"
    host("dbe_ecc")
    double("--gpu-reset", "-i", "0")
    assert (tmp / "gpu_state").read_text().splitlines()[0] == "ecc_aggregate"


# --- the module ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("state, verdict, reset, fallen", [
    ("healthy", "healthy", False, []),
    ("row_remap_pending", "unhealthy", True, []),
    ("dbe_ecc", "unhealthy", True, []),
    ("ecc_aggregate", "degraded", False, []),
    ("pcie_degraded", "degraded", False, []),
    ("hw_slowdown", "degraded", False, []),
    ("xid79", "unhealthy", False, [BUS]),
])
def test_every_state_in_check_mode(capsys, host, state, verdict, reset, fallen):
    host(state, at=1796464800)
    result = run_module(capsys, nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False)
    assert result["changed"] is False and "failed" not in result
    fact = result["ansible_facts"]["triton_gpu_health"]
    assert (fact["verdict"], fact["reset_recommended"], sorted(fact["fallen_off_bus"])) == (verdict, reset, sorted(fallen))
    assert dict((k, result[k]) for k in fact) == fact
    assert fact["nvidia_smi_path"] == SMI and fact["quarantined"] is False and fact["quarantine"] is None
    assert fact["host_kind"] == "gpu"


def test_xid79_reasons_name_the_gpu_and_the_bus(capsys, host):
    host("xid79", at=1796464800)
    fact = run_module(capsys, nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False)
    assert fact["reasons"] == [
        "00000000:4E:00.0 (not listed by nvidia-smi): Xid 79 at 2026-12-05T10:00:00+0000: GPU has fallen off the bus",
        "GPU 0: fallen off the bus (nvidia-smi: GPU is lost. Reboot the system to recover this GPU): reboot, replace the GPU if it "
        "stays lost"]
    assert [e["xid"] for e in fact["xid_events"]] == [79]


def test_row_remap_pending_then_reset_then_healthy(capsys, host):
    """The repair ladder's read side: unhealthy, reset clears it, the since file makes the old Xid 63 stop counting."""
    tmp = host("row_remap_pending", at=time.time() - 60)
    args = dict(nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False, since_file=str(tmp / "since"))
    before = run_module(capsys, **args)
    assert before["verdict"] == "unhealthy" and before["reset_recommended"] is True
    assert before["reasons"][0] == "GPU 0 (%s): row remap pending, reset required" % BUS
    assert [e["xid"] for e in before["xid_events"]] == [63]
    assert double("-r")[0] == 0
    (tmp / "since").write_text("%f\n" % time.time())
    after = run_module(capsys, **args)
    assert (after["verdict"], after["xid_events"], after["reasons"]) == ("healthy", [], [])
    # without the since file the logged Xid 63 still counts: the fault looks uncleared
    assert run_module(capsys, nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False)["verdict"] == "unhealthy"


def test_quarantine_record_and_cpu_host(capsys, host, monkeypatch):
    tmp = host("healthy")
    record = tmp / "quarantine.json"
    record.write_text(json.dumps({"reason": "Xid 79 alert", "since": "2026-12-05T10:00:00Z", "verdict": "unhealthy"}))
    result = run_module(capsys, nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False, quarantine_file=str(record))
    assert result["quarantined"] is True and result["quarantine"]["reason"] == "Xid 79 alert"
    assert result["quarantine_file"] == str(record)
    monkeypatch.setattr(nvidia_gpu_health.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: None)
    cpu = run_module(capsys)
    assert (cpu["verdict"], cpu["host_kind"], cpu["nvidia_smi_path"]) == ("healthy", "cpu", None)
    assert cpu["status"] == "CPU host: no NVIDIA GPU on the PCI bus and no nvidia-smi; nothing to check"
    assert cpu["notes"] == ["kernel log: neither journalctl nor dmesg is installed: Xid events unknown"]


def test_thresholds_are_options(capsys, host):
    host("pcie_degraded")
    relaxed = run_module(capsys, nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False, pcie_min_link_gen=3,
                         pcie_min_link_width=8)
    assert relaxed["verdict"] == "healthy"
    counted = run_module(capsys, nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False, expected_gpu_count=8,
                         degrade_on_pcie_downgrade=False)
    assert counted["reasons"] == ["expected 8 GPUs, 1 answer nvidia-smi"]


def test_a_since_file_with_garbage_fails_with_a_message(capsys, host):
    tmp = host("healthy")
    (tmp / "since").write_text("soon")
    with patch_module_args(dict(nvidia_smi_path=SMI, kernel_log_command=[KERNEL_LOG], dcgm=False, since_file=str(tmp / "since"))):
        with pytest.raises(SystemExit):
            nvidia_gpu_health.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and result["msg"].startswith("cannot read the GPUs' health: ")
