"""The native unit's CPU and GPU variants and the requirements the role picks for each.

Units are rendered by ansible-playbook with the role's own defaults, vars and templates; the host's state
comes as extra vars shaped like what the role reads (the run's GPU facts nvidia_gpu_facts: host_kind, the
find of /dev). Both variants pass `systemd-analyze verify`, and `systemd-analyze security --offline=yes`
bounds their exposure; the GPU variant differs from the CPU one only where a GPU needs it.
"""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FILES = os.path.join(ROOT, "roles", "triton_server", "files")
PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "render_native_unit.yml")
RECORDINGS = os.path.join(ROOT, "tests", "fixtures", "pypi")
# ExecStart must exist for verify: pytriton's tritonserver in this venv; the device unit's tools are the double.
VENV = os.path.dirname(os.path.dirname(sys.executable))
DOUBLE = os.path.join(ROOT, "tests", "doubles", "nvidia-smi.double")
# What ansible.builtin.find registers on a 2-GPU host once the device unit ran (paths only are used).
NODES = {"files": [{"path": p} for p in ("/dev/nvidiactl", "/dev/nvidia1", "/dev/nvidia0", "/dev/nvidia-uvm",
                                         "/dev/nvidia-uvm-tools", "/dev/nvidia-caps/nvidia-cap1")]}
# Exposure of today's units; a change that loosens either fails here.
EXPOSURE_BOUND = {"cpu": 1.5, "gpu": 1.7}


def render(tmp_path, host_kind, **extra):
    out = tmp_path / host_kind
    out.mkdir(exist_ok=True)
    variables = dict({"unit_out": str(out), "triton_server_venv": VENV, "_triton_server_nvidia_smi": DOUBLE,
                      "_triton_server_nvidia_modprobe": DOUBLE, "__triton_server_nvidia_nodes": NODES,
                      "nvidia_gpu_facts": {"host_kind": host_kind, "gpu_count": 2 if host_kind == "gpu" else 0}}, **extra)
    proc = subprocess.run(["ansible-playbook", PLAYBOOK, "-e", json.dumps(variables)],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(str(out / "choice.json")) as handle:
        return out, json.load(handle)


def settings(path):
    """The unit's Key=value lines (comments and continuation lines dropped), as a sorted list."""
    with open(str(path)) as handle:
        return sorted(line for line in handle.read().splitlines() if re.match(r"^[A-Za-z]+=", line))


def exposure(path):
    proc = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(path)],
                          capture_output=True, text=True, check=False, timeout=60)
    match = re.search(r"Overall exposure level for tritonserver.service: ([0-9.]+)", proc.stdout + proc.stderr)
    assert match, proc.stdout + proc.stderr
    return float(match.group(1))


@pytest.fixture(scope="module")
def units(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("units")
    return {"cpu": render(tmp, "cpu"), "gpu": render(tmp, "gpu")}


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_variant_verifies_and_stays_within_its_exposure_bound(units, kind):
    out, _choice = units[kind]
    names = sorted(n for n in os.listdir(str(out)) if n.endswith(".service"))
    assert names == (["tritonserver-nvidia-devices.service", "tritonserver.service"] if kind == "gpu" else ["tritonserver.service"])
    proc = subprocess.run(["systemd-analyze", "verify", "--man=no"] + names, cwd=str(out),
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert exposure(out / "tritonserver.service") <= EXPOSURE_BOUND[kind]


def test_gpu_variant_changes_only_what_a_gpu_needs(units):
    cpu = settings(units["cpu"][0] / "tritonserver.service")
    gpu = settings(units["gpu"][0] / "tritonserver.service")
    site = "%s/lib/python%d.%d/site-packages" % (VENV, sys.version_info[0], sys.version_info[1])
    removed = sorted(set(cpu) - set(gpu))
    assert removed == ["Environment=LD_LIBRARY_PATH=%s/nvidia_pytriton.libs" % site, "PrivateDevices=yes", "ProcSubset=pid"]
    added = sorted(set(gpu) - set(cpu))
    assert [a for a in added if a.startswith("DeviceAllow=")] == [
        "DeviceAllow=/dev/nvidia-caps/nvidia-cap1 rw", "DeviceAllow=/dev/nvidia-uvm rw", "DeviceAllow=/dev/nvidia-uvm-tools rw",
        "DeviceAllow=/dev/nvidia0 rw", "DeviceAllow=/dev/nvidia1 rw", "DeviceAllow=/dev/nvidiactl rw"]
    assert "PrivateDevices=no" in added and "DevicePolicy=closed" in gpu
    assert "Requires=tritonserver-nvidia-devices.service" in added
    assert "After=tritonserver-nvidia-devices.service nvidia-persistenced.service" in added
    (ld_path,) = [a for a in added if a.startswith("Environment=LD_LIBRARY_PATH=")]
    assert ld_path.split("=", 2)[2].split(":")[0] == site + "/nvidia_pytriton.libs"
    assert len(added) == 6 + 4  # the six nodes, PrivateDevices, Requires, After, LD_LIBRARY_PATH


def test_device_unit_makes_the_nodes_before_triton(units):
    with open(str(units["gpu"][0] / "tritonserver-nvidia-devices.service")) as handle:
        unit = handle.read()
    assert "Before=tritonserver.service" in unit and "Type=oneshot" in unit and "RemainAfterExit=yes" in unit
    assert "ExecStart=%s -u -c=0" % DOUBLE in unit and "ExecStart=%s -L" % DOUBLE in unit


def test_auto_picks_the_requirements_of_what_nvidia_smi_lists(units):
    assert units["gpu"][1] == {"gpu": True, "requirements": "requirements-native-gpu.txt"}
    assert units["cpu"][1] == {"gpu": False, "requirements": "requirements-native.txt"}


@pytest.mark.parametrize("host_kind,device,gpu", [
    ("broken", "auto", False),  # never installed: preflight fails first (test_gpu_preflight.py)
    ("gpu", "cpu", False),
])
def test_requirements_follow_the_device_choice(tmp_path, host_kind, device, gpu):
    _out, choice = render(tmp_path, host_kind, triton_server_native_device=device)
    assert choice == {"gpu": gpu, "requirements": "requirements-native-gpu.txt" if gpu else "requirements-native.txt"}


def pins(name):
    found = {}
    with open(os.path.join(FILES, name)) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                package, version = line.split("==")
                found[package.strip().lower()] = version.strip()
    return found


def test_gpu_requirements_pin_the_same_server_and_every_cuda_wheel():
    cpu, gpu = pins("requirements-native.txt"), pins("requirements-native-gpu.txt")
    assert gpu["nvidia-pytriton"] == cpu["nvidia-pytriton"]
    assert "onnxruntime" not in gpu and "onnxruntime-gpu" not in cpu  # one flavour per venv
    # onnxruntime-gpu's own metadata (recorded): every package its cuda/cudnn extras need is pinned, within range.
    with open(os.path.join(RECORDINGS, "recorded_onnxruntime_gpu_1.26.0_requires_dist.txt")) as handle:
        extras = [line.strip() for line in handle if 'extra == "cuda"' in line or 'extra == "cudnn"' in line]
    assert gpu["onnxruntime-gpu"] == "1.26.0"
    for requirement in extras:
        package, spec = re.match(r"^([A-Za-z0-9_.-]+)~=([0-9.]+);", requirement).groups()
        assert package.lower() in gpu, requirement
        assert gpu[package.lower()].split(".")[0] == spec.split(".")[0], requirement
    with open(os.path.join(ROOT, "roles", "triton_server", "vars", "main.yml")) as handle:
        lib_dirs = yaml.safe_load(handle)["_triton_server_cuda_wheel_libs"]
    wheels = sorted(p for p in gpu if p.startswith("nvidia-") and p.endswith("-cu12"))
    # nvidia-cuda-runtime-cu12 installs nvidia/cuda_runtime/lib, nvidia-cublas-cu12 nvidia/cublas/lib, ...
    assert sorted(w[len("nvidia-"):-len("-cu12")].replace("-", "_") for w in wheels) == sorted(lib_dirs)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_a_stop_is_graceful_and_outlasts_tritons_exit_timeout(units, kind):
    """SIGTERM to Triton alone (its python stubs keep serving what is in flight); systemd's SIGKILL only after
    Triton's own --exit-timeout-secs has passed."""
    lines = settings(units[kind][0] / "tritonserver.service")
    assert "KillSignal=SIGTERM" in lines and "KillMode=mixed" in lines
    with open(str(units[kind][0] / "tritonserver.service")) as handle:
        exit_timeout = int(re.search(r"--exit-timeout-secs=(\d+)", handle.read()).group(1))
    stop = int([line for line in lines if line.startswith("TimeoutStopSec=")][0].split("=", 1)[1])
    assert stop > exit_timeout
