"""The container method's unit renders and passes systemd-analyze verify (it cannot run here: no NGC).

systemd-analyze verify needs the unit's ExecStart binary and the units it requires: podman is
installed here, so the podman unit is verified; the docker unit (Requires=docker.service) is
rendered and checked for content only, as this machine has no docker engine.
"""

import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DIGEST = "sha256:" + "0" * 64


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
    assert "--ulimit memlock=-1 --ulimit stack=67108864" in unit
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
