"""The container method's unit renders and passes systemd-analyze verify (it cannot run here: no NGC);
neither unit (native, container) ever holds the repository-API key, and the endpoints bind where told.

systemd-analyze verify needs the unit's ExecStart binary and the units it requires: podman is
installed here, so the podman unit is verified; the docker unit (Requires=docker.service) is
rendered and checked for content only, as this machine has no docker engine.
"""

import json
import os
import secrets
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DIGEST = "sha256:" + "0" * 64
# The native unit's ExecStart is pytriton's tritonserver inside this venv, so verify can check it exists.
VENV = os.path.dirname(os.path.dirname(sys.executable))


def render(tmp_path, **overrides):
    extra = dict({"unit_out": str(tmp_path), "triton_server_install_method": "container",
                  "triton_server_container_digest": DIGEST, "__triton_server_user": {"uid": 998, "group": 998}},
                 **overrides)
    proc = subprocess.run(
        ["ansible-playbook", os.path.join(HERE, "playbooks", "render_container_unit.yml"), "-e", json.dumps(extra)],
        capture_output=True, text=True, check=False, timeout=300)
    return proc, (tmp_path / "tritonserver.service")


@pytest.mark.parametrize("engine,gpu_mode,verify", [("podman", "cdi", True), ("podman", "none", True), ("docker", "gpus", False)])
def test_container_unit_renders_and_verifies(tmp_path, engine, gpu_mode, verify):
    proc, path = render(tmp_path, triton_server_container_engine=engine, triton_server_container_gpu_mode=gpu_mode,
                        verify_unit=verify)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    unit = path.read_text()
    assert "ExecStart=/usr/bin/%s run --rm --name tritonserver" % engine in unit
    assert "nvcr.io/nvidia/tritonserver@" + DIGEST in unit
    assert "--volume /var/lib/triton/models:/models:ro" in unit
    assert "--model-repository=/models" in unit
    assert "--http-restricted-api=model-repository:triton-admin-key=${TRITON_API_KEY}" in unit
    assert "--ulimit memlock=-1 --ulimit stack=67108864" in exec_start(unit)
    assert "--user 998:998" in unit
    assert "TimeoutStopSec=45" in unit  # above --exit-timeout-secs=30
    if gpu_mode == "cdi":
        assert "--device nvidia.com/gpu=all" in unit
    elif gpu_mode == "gpus":
        assert "--gpus all" in unit and "Requires=docker.service" in unit
    else:
        assert "nvidia.com/gpu" not in unit and "--gpus" not in unit


def test_verify_rejects_a_broken_unit(tmp_path):
    # The validate step is real: a unit whose ExecStart binary does not exist is refused.
    proc, path = render(tmp_path, triton_server_container_engine="no-such-engine", verify_unit=True)
    assert proc.returncode != 0
    assert "no-such-engine" in proc.stdout and not path.exists()


def exec_start(unit):
    """ExecStart with its continuation lines joined: the command systemd runs."""
    lines = unit.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("ExecStart="))
    command = []
    for line in lines[start:]:
        command.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    return " ".join(command)


@pytest.mark.parametrize("method,overrides", [
    ("native", {"triton_server_venv": VENV}),
    ("container", {"triton_server_container_engine": "podman"}),
])
def test_no_unit_holds_the_api_key(tmp_path, method, overrides):
    key = secrets.token_hex(32)
    proc, path = render(tmp_path, triton_server_install_method=method, triton_server_api_key=key, verify_unit=True,
                        **overrides)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    unit = path.read_text()
    assert key not in unit
    command = exec_start(unit)
    # systemd expands the key from the 0600 EnvironmentFile when it starts the process, not before.
    assert "--http-restricted-api=model-repository:triton-admin-key=${TRITON_API_KEY}" in command
    assert "--grpc-restricted-protocol=model-repository:triton-admin-key=${TRITON_API_KEY}" in command
    assert "EnvironmentFile=/etc/tritonserver/tritonserver.env" in unit
    assert key not in proc.stdout + proc.stderr


@pytest.mark.parametrize("method", ["native", "container"])
def test_endpoints_bind_to_their_own_addresses(tmp_path, method):
    proc, path = render(tmp_path, triton_server_install_method=method, triton_server_venv=VENV, verify_unit=False,
                        triton_server_http_address="127.0.0.1", triton_server_grpc_address="10.1.2.3",
                        triton_server_metrics_address="::1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    command = exec_start(path.read_text())
    assert "--http-address=127.0.0.1 " in command
    assert "--grpc-address=10.1.2.3 " in command
    assert "--metrics-address=::1 " in command


@pytest.mark.parametrize("method", ["native", "container"])
def test_one_address_still_binds_all_three(tmp_path, method):
    proc, path = render(tmp_path, triton_server_install_method=method, triton_server_venv=VENV, verify_unit=False,
                        triton_server_address="192.0.2.7")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    command = exec_start(path.read_text())
    for flag in ("--http-address", "--grpc-address", "--metrics-address"):
        assert "%s=192.0.2.7 " % flag in command


def test_a_check_pass_on_a_new_host_renders_without_the_users_uid(tmp_path):
    """The user module in check mode on a host without the service user returns no uid: the check pass predicts the
    unit with a placeholder instead of failing (a red fatal on a first converge); a real run without it still fails."""
    user = {"name": "triton", "group": "triton", "changed": True}
    proc, path = render(tmp_path, __triton_server_user=user, triton_server_check_only=True, verify_unit=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "--user <uid of triton>:triton " in path.read_text()
    (tmp_path / "real").mkdir()
    proc, path = render(tmp_path / "real", __triton_server_user=user, verify_unit=False)
    assert proc.returncode != 0 and "has no attribute 'uid'" in " ".join((proc.stdout + proc.stderr).split())
