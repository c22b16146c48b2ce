"""What the nvidia_driver role leaves on a GPU-less Debian 12 lab host.

Molecule's testinfra goes through ansible (seconds per command), so the host state is read
with one command per module and every test asserts on that snapshot.
"""

import json

import pytest

PINNED = "535.261.03"
DRIVER_PACKAGES = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1", "firmware-nvidia-gsp"]
COMMANDS = {
    "versions": "dpkg-query -W -f '${Package} ${Version}\\n' " + " ".join(DRIVER_PACKAGES),
    "held": "apt-mark showhold",
    "policy": "apt-cache policy nvidia-smi",
    "pref": "cat /etc/apt/preferences.d/nvidia-driver.pref",
    "sources": "cat /etc/apt/sources.list.d/nvidia-driver-debian.sources",
    "blacklist": "stat -c %a /etc/modprobe.d/blacklist-nouveau.conf; cat /etc/modprobe.d/blacklist-nouveau.conf",
    "persistenced": "systemctl is-enabled nvidia-persistenced; systemctl is-active nvidia-persistenced || true",
    "kernel": "uname -r",
    "report": "cat /var/tmp/nvidia_driver_report.json",
}


@pytest.fixture(scope="module")
def state(snapshot):
    return snapshot(COMMANDS)


def test_driver_packages_installed_at_the_pinned_version(state):
    versions = dict(line.split(" ", 1) for line in state["versions"].splitlines())
    assert sorted(versions) == sorted(DRIVER_PACKAGES)
    assert all(version.startswith(PINNED + "-") for version in versions.values()), versions


def test_driver_packages_are_held_toolkit_is_not(state):
    held = state["held"].split()
    assert set(DRIVER_PACKAGES + ["nvidia-persistenced"]) <= set(held)
    assert not [name for name in held if name.startswith(("nvidia-container", "libnvidia-container"))]


def test_pin_keeps_the_exact_version_although_a_newer_one_exists(state):
    assert "Pin: version 535.261.03-*" in state["pref"].splitlines()
    assert "Candidate: 535.261.03-" in state["policy"]
    assert "535.309.01" in state["policy"]  # offered by bookworm-security, not chosen


def test_nonfree_sources_use_the_archive_keyring(state):
    assert "Components: contrib non-free non-free-firmware" in state["sources"]
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in state["sources"]


def test_nouveau_blacklisted(state):
    lines = state["blacklist"].splitlines()
    assert lines[0] == "644"
    assert "blacklist nouveau" in lines and "options nouveau modeset=0" in lines


def test_persistence_daemon_enabled_not_running_without_driver(state):
    enabled, active = state["persistenced"].splitlines()
    assert enabled == "enabled"
    assert active in ("inactive", "failed")  # dpkg's postinst may have tried to start it; no module to talk to


def test_dkms_reported_for_running_kernel_without_headers(state):
    report = json.loads(state["report"])
    assert report["installed"] == PINNED
    assert report["reboot_pending"] is False  # no GPU: nothing a reboot would load
    running = [entry for entry in report["dkms"] if entry["running"]]
    assert running == [{"kernel": state["kernel"], "running": True, "headers": False, "module": False}]
