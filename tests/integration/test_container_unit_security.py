"""The container unit's sandbox: `systemd-analyze security --offline=yes` scores every variant the role
renders (engine, GPU mode, key delivery, hidepid) under a bound, and the engine invocation drops every
capability, forbids privilege gain, runs read-only as the service user and keeps the key off the
command line when the image reads it from a file. (That it still serves: molecule/container.)"""

import json
import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DIGEST = "sha256:" + "1" * 64
# The unit scored 9.6 UNSAFE before it was hardened; the native unit scores 1.4.
EXPOSURE_BOUND = 5.0


def render(tmp_path, **overrides):
    extra = dict({"unit_out": str(tmp_path), "triton_server_install_method": "container", "verify_unit": False,
                  "triton_server_container_digest": DIGEST, "__triton_server_user": {"uid": 998, "group": 998}},
                 **overrides)
    proc = subprocess.run(
        ["ansible-playbook", os.path.join(HERE, "playbooks", "render_container_unit.yml"), "-e", json.dumps(extra)],
        capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp_path / "tritonserver.service"


def exposure(path):
    proc = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(path)],
                          capture_output=True, text=True, check=False, timeout=60)
    match = re.search(r"Overall exposure level for tritonserver\.service: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout[-2000:] + proc.stderr[-2000:]
    return float(match.group(1)), proc.stdout


VARIANTS = [
    {"triton_server_container_engine": "podman", "triton_server_container_gpu_mode": "cdi"},
    {"triton_server_container_engine": "podman", "triton_server_container_gpu_mode": "none",
     "triton_server_container_key_file_args": True, "triton_server_container_source": "archive"},
    {"triton_server_container_engine": "podman", "triton_server_container_gpu_mode": "cdi",
     "triton_server_proc_hidepid": False},
    {"triton_server_container_engine": "docker", "triton_server_container_gpu_mode": "gpus"},
]


@pytest.mark.parametrize("overrides", VARIANTS, ids=lambda v: "-".join(str(x) for x in v.values()))
def test_exposure_is_bounded(tmp_path, overrides):
    score, report = exposure(render(tmp_path, **overrides))
    assert score <= EXPOSURE_BOUND, report


def test_bound_is_a_real_check(tmp_path):
    # The same unit with its sandbox lines removed scores far above the bound: the check can fail.
    path = render(tmp_path)
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("NoNewPrivileges="))
    end = lines.index("[Install]")
    path.write_text("\n".join(lines[:start] + lines[end:]))
    score, report = exposure(path)
    assert score > 9.0, report


def command(path):
    """ExecStart's argv, continuation lines joined."""
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("ExecStart="))
    argv = []
    for line in lines[start:]:
        argv += line.rstrip("\\").split()
        if not line.endswith("\\"):
            return argv
    return argv


@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_engine_invocation_is_locked_down(tmp_path, engine):
    argv = command(render(tmp_path, triton_server_container_engine=engine))
    for flag in ("--cap-drop=all", "--security-opt=no-new-privileges", "--read-only", "--cgroupns=private",
                 "--user", "998:998"):
        assert flag in argv, flag
    assert "/tmp:rw,nosuid,nodev,size=512m" in argv
    assert ("--read-only-tmpfs=false" in argv) == (engine == "podman")  # no implicit writable /run, /var/tmp
    assert not any(a.startswith("--cap-add") or a == "--privileged" for a in argv)


def test_key_file_keeps_the_key_off_every_command_line(tmp_path):
    path = render(tmp_path, triton_server_container_key_file_args=True, triton_server_container_source="archive")
    text = path.read_text()
    assert "${TRITON_API_KEY}" not in text and "EnvironmentFile=" not in text and "TRITON_API_KEY" not in text
    argv = command(path)
    assert "/etc/tritonserver/api-key:/run/secrets/triton-api-key:ro" in argv
    assert "--http-restricted-api=model-repository:triton-admin-key=@/run/secrets/triton-api-key" in text
    assert "--grpc-restricted-protocol=model-repository:triton-admin-key=@/run/secrets/triton-api-key" in text
    # archive source: the unit runs the pinned image ID itself, no registry name
    assert DIGEST in argv and "nvcr.io" not in text
