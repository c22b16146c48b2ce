"""The GPU health reporter (roles/triton_gpu_health/files/aiops_gpu_health.py) as the role installs it: the CLI beside
the collection's own gpu_health.py and nvidia_smi.py (and fs.py, which writes the textfile), run by the host's python3 without Ansible, against the lab's
doubles; its textfile is what the alert rules read."""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

import host_lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "triton_gpu_health")
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
DOUBLES = os.path.join(ROOT, "tests", "doubles")
CLI = os.path.join(ROLE, "files", "aiops_gpu_health.py")
# The host's python3: no Ansible there (a venv python would find ansible_collections in its site-packages).
HOST_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
PROMTOOL = shutil.which("promtool")


def test_the_reporter_installs_every_module_util_the_cli_imports():
    """What reporter.yml ships under lib/ is what the CLI needs there: the verdict code and fs.py (the textfile's
    atomic write), each read from the checkout's plugins/module_utils."""
    needed = host_lib.needed_module_utils(CLI)
    assert {"gpu_health.py", "nvidia_smi.py", "fs.py"} <= set(needed), needed
    entries = host_lib.module_util_entries("triton_gpu_health")
    assert sorted(entries) == needed
    for name, entry in entries.items():
        assert host_lib.module_util_source("triton_gpu_health", entry) == os.path.join(MODULE_UTILS, name)


@pytest.fixture
def reporter(tmp_path, monkeypatch):
    """The reporter's directory as reporter.yml lays it out, and a runner for it."""
    host_lib.lay_out("triton_gpu_health", str(tmp_path))
    shutil.copy(CLI, str(tmp_path / "aiops_gpu_health.py"))
    state = tmp_path / "gpu_state"
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    config = {"nvidia_smi_path": os.path.join(DOUBLES, "nvidia-smi-health.double"),
              "kernel_log_command": [os.path.join(DOUBLES, "kernel-log.double")],
              "since_file": str(tmp_path / "since"), "quarantine_file": str(tmp_path / "quarantine.json"),
              "dcgm": True, "dcgm_diag": False, "thresholds": {"expected_gpu_count": None, "retired_pages_max": 59}}
    (tmp_path / "config.json").write_text(json.dumps(config))

    def run(gpu_state, *extra):
        state.write_text(gpu_state + "\n")
        env = dict(os.environ, AIOPS_GPU_STATE_FILE=str(state), PATH="/usr/bin:/bin")
        env.pop("PYTHONPATH", None)
        proc = subprocess.run([HOST_PYTHON, str(tmp_path / "aiops_gpu_health.py"), "--config", str(tmp_path / "config.json"),
                               "--output", str(textfile / "aiops_gpu_health.prom")] + list(extra),
                              capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)
        prom = textfile / "aiops_gpu_health.prom"
        return proc, prom.read_text() if prom.exists() else None

    return run


def test_healthy_host(reporter, tmp_path):
    proc, text = reporter("healthy", "--json")
    assert proc.returncode == 0, proc.stderr
    # Written by the collection's fs.write_atomic: readable by node_exporter (not mkstemp's 0600), no temp file left.
    assert os.listdir(str(tmp_path / "textfile")) == ["aiops_gpu_health.prom"]
    assert stat.S_IMODE(os.stat(str(tmp_path / "textfile" / "aiops_gpu_health.prom")).st_mode) == 0o644
    assert json.loads(proc.stdout)["verdict"] == "healthy"
    assert 'aiops_gpu_host_health{host_kind="gpu"} 0' in text
    assert 'aiops_gpu_health_verdict{bus_id="00000000:4E:00.0",gpu="0",uuid="GPU-5f0c3a1e-7b2d-4c9a-8e61-d0a4b3c2e1f0"} 0' in text
    assert "aiops_gpu_health_read_success 1" in text and "aiops_gpu_fallen_off_bus 0" in text
    assert "aiops_gpu_quarantined 0" in text
    assert "aiops_gpu_health_reason{" not in text


def test_row_remap_pending(reporter):
    proc, text = reporter("row_remap_pending")
    assert proc.returncode == 0, proc.stderr
    assert 'aiops_gpu_host_health{host_kind="gpu"} 2' in text
    assert 'aiops_gpu_row_remap_pending{bus_id="00000000:4E:00.0",gpu="0"} 1' in text
    assert 'aiops_gpu_xid_events_total{bus_id="00000000:4E:00.0",class="hardware",xid="63"} 1' in text
    assert 'aiops_gpu_health_reason{reason="GPU 0 (00000000:4E:00.0): row remap pending, reset required",severity="unhealthy"} 1' in text


def test_fallen_off_the_bus(reporter):
    proc, text = reporter("xid79")
    assert proc.returncode == 0, proc.stderr
    assert "aiops_gpu_fallen_off_bus 1" in text
    assert 'aiops_gpu_xid_events_total{bus_id="00000000:4E:00.0",class="hardware",xid="79"} 1' in text
    assert 'aiops_gpu_host_health{host_kind="gpu"} 2' in text


def test_degraded_and_ecc(reporter):
    assert 'aiops_gpu_host_health{host_kind="gpu"} 1' in reporter("pcie_degraded")[1]
    text = reporter("dbe_ecc")[1]
    assert 'aiops_gpu_ecc_uncorrectable_volatile{bus_id="00000000:4E:00.0",gpu="0"} 1' in text
    assert 'aiops_gpu_xid_events_total{bus_id="00000000:4E:00.0",class="hardware",xid="48"} 1' in text


def test_nvidia_smi_failing_is_unhealthy_and_a_failed_read_writes_no_stale_verdict(reporter, tmp_path):
    proc, text = reporter("no_such_state")  # the double fails as an unknown nvidia-smi error would
    assert proc.returncode == 0 and 'aiops_gpu_host_health{host_kind="gpu"} 2' not in text
    assert 'aiops_gpu_host_health{host_kind="cpu"} 2' in text  # no GPU answers: the lab's CPU sysfs
    (tmp_path / "since").write_text("soon")
    proc, text = reporter("healthy")
    assert proc.returncode == 1 and "cannot read the GPUs' health" in proc.stderr
    assert "aiops_gpu_health_read_success 0" in text and "aiops_gpu_host_health" not in text


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus) is not installed; make setup installs it")
@pytest.mark.parametrize("state", ["healthy", "row_remap_pending", "xid79"])
def test_promtool_accepts_the_textfile(reporter, state):
    _proc, text = reporter(state)
    proc = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
