"""What the nvidia_container_toolkit role leaves on a lab host fed by the test-double repository."""

import json
import tomllib

import pytest

PACKAGES = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]


@pytest.mark.parametrize("name", PACKAGES)
def test_pinned_version_installed_although_newer_offered(host, name):
    assert host.package(name).version == "1.17.8-1"
    policy = host.check_output("apt-cache policy %s" % name)
    assert "1.18.0-1" in policy  # the repo offers a newer one; the pin keeps 1.17.8
    assert "Candidate: 1.17.8-1" in policy


def test_packages_held(host):
    held = host.check_output("apt-mark showhold").split()
    assert sorted(name for name in held if name in PACKAGES) == sorted(PACKAGES)


def test_repo_uses_signed_by_keyring_not_apt_key(host):
    sources = host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.sources")
    assert sources.contains("^URIs: file:///srv/nvidia-repo/stable/deb/amd64/$")
    assert sources.contains("^Signed-By: /etc/apt/keyrings/nvidia-container-toolkit.asc$")
    assert host.file("/etc/apt/keyrings/nvidia-container-toolkit.asc").contains("BEGIN PGP PUBLIC KEY BLOCK")
    assert not host.file("/etc/apt/trusted.gpg").exists


def test_nvidia_ctk_reports_pinned_version(host):
    assert host.check_output("nvidia-ctk --version").startswith("NVIDIA Container Toolkit CLI version 1.17.8")


def test_daemon_json_merged_keeping_user_keys(host):
    path = host.file("/etc/docker/daemon.json")
    data = json.loads(path.content_string)
    assert data["log-opts"] == {"max-size": "100m"}
    assert data["registry-mirrors"] == ["https://mirror.internal:5000"]
    assert data["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert data["runtimes"]["nvidia"] == {"path": "/usr/bin/nvidia-container-runtime", "args": []}
    assert data["features"] == {"cdi": True}
    assert "default-runtime" not in data
    assert path.mode == 0o600


def test_containerd_config_merged_keeping_user_keys(host):
    text = host.file("/etc/containerd/config.toml").content_string
    assert text.startswith("# site settings -- keep me\nversion = 2\n")
    cri = tomllib.loads(text)["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.internal/pause:3.9"
    assert cri["enable_cdi"] is True
    nvidia = cri["containerd"]["runtimes"]["nvidia"]
    assert nvidia == {"runtime_type": "io.containerd.runc.v2",
                      "options": {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}}


def test_podman_runtime_added(host):
    doc = tomllib.loads(host.file("/etc/containers/containers.conf").content_string)
    assert doc["engine"]["runtimes"]["nvidia"] == ["/usr/bin/nvidia-container-runtime"]


def test_cdi_refresh_unit_enabled(host):
    unit = host.file("/etc/systemd/system/aiops-nvidia-cdi-refresh.service")
    assert unit.contains("^ExecStart=/usr/bin/nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml$")
    assert host.service("aiops-nvidia-cdi-refresh").is_enabled
    # No driver in the lab host: the unit's condition keeps it from running.
    assert not host.file("/etc/cdi/nvidia.yaml").exists
