"""What the nvidia_container_toolkit role leaves on a lab host fed by the test-double repository.

Molecule's testinfra goes through ansible (seconds per command), so the host state is read
with one command per module and every test asserts on that snapshot.
"""

import json
import tomllib

import pytest

PACKAGES = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]
COMMANDS = {
    "versions": "dpkg-query -W -f '${Package} ${Version}\\n' " + " ".join(PACKAGES),
    "policy": "apt-cache policy " + " ".join(PACKAGES),
    "held": "apt-mark showhold",
    "sources": "cat /etc/apt/sources.list.d/nvidia-container-toolkit.sources",
    "keyring": "head -n1 /etc/apt/keyrings/nvidia-container-toolkit.asc; ls /etc/apt/trusted.gpg 2>&1 || true",
    "ctk": "nvidia-ctk --version",
    "daemon_mode": "stat -c %a /etc/docker/daemon.json",
    "daemon": "cat /etc/docker/daemon.json",
    "containerd": "cat /etc/containerd/config.toml",
    "podman": "cat /etc/containers/containers.conf",
    "unit": "systemctl is-enabled aiops-nvidia-cdi-refresh; grep ^ExecStart= /etc/systemd/system/aiops-nvidia-cdi-refresh.service",
    "cdi": "ls /etc/cdi/nvidia.yaml 2>&1 || true",
}


@pytest.fixture(scope="module")
def state(snapshot):
    return snapshot(COMMANDS)


def test_pinned_version_installed_although_newer_offered(state):
    assert sorted(state["versions"].splitlines()) == sorted("%s 1.17.8-1" % name for name in PACKAGES)
    assert state["policy"].count("Candidate: 1.17.8-1") == len(PACKAGES)
    assert state["policy"].count("1.18.0-1") >= len(PACKAGES)  # offered, not chosen


def test_packages_held(state):
    assert set(PACKAGES) <= set(state["held"].split())


def test_repo_uses_signed_by_keyring_not_apt_key(state):
    lines = state["sources"].splitlines()
    assert "URIs: file:///srv/nvidia-repo/stable/deb/amd64/" in lines
    assert "Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc" in lines
    keyring = state["keyring"].splitlines()
    assert keyring[0] == "-----BEGIN PGP PUBLIC KEY BLOCK-----"
    assert "No such file" in keyring[1]  # nothing went into apt-key's trusted.gpg


def test_nvidia_ctk_reports_pinned_version(state):
    assert state["ctk"].startswith("NVIDIA Container Toolkit CLI version 1.17.8\n")


def test_daemon_json_merged_keeping_user_keys(state):
    data = json.loads(state["daemon"])
    assert data["log-opts"] == {"max-size": "100m"}
    assert data["registry-mirrors"] == ["https://mirror.internal:5000"]
    assert data["runtimes"] == {"crun": {"path": "/usr/bin/crun"}, "nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}
    assert data["features"] == {"cdi": True}
    assert "default-runtime" not in data
    assert state["daemon_mode"] == "600"


def test_containerd_config_merged_keeping_user_keys(state):
    assert state["containerd"].startswith("# site settings -- keep me\nversion = 2\n")
    cri = tomllib.loads(state["containerd"])["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.internal/pause:3.9"
    assert cri["enable_cdi"] is True
    assert cri["containerd"]["runtimes"]["nvidia"] == {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True},
    }


def test_podman_runtime_added(state):
    assert tomllib.loads(state["podman"])["engine"]["runtimes"]["nvidia"] == ["/usr/bin/nvidia-container-runtime"]


def test_cdi_refresh_unit_enabled_but_no_spec_without_driver(state):
    assert state["unit"].splitlines() == ["enabled", "ExecStart=/usr/bin/nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"]
    assert "No such file" in state["cdi"]
