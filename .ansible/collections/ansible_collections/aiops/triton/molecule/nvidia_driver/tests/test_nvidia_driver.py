"""What the nvidia_driver role leaves on a GPU-less Debian 12 lab host."""

import json

import pytest

PINNED = "535.261.03"
DRIVER_PACKAGES = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1", "firmware-nvidia-gsp"]


@pytest.mark.parametrize("name", DRIVER_PACKAGES)
def test_driver_packages_installed_at_the_pinned_version(host, name):
    package = host.package(name)
    assert package.is_installed
    assert package.version.startswith(PINNED + "-"), package.version


def test_driver_packages_are_held(host):
    held = host.check_output("apt-mark showhold").split()
    for name in DRIVER_PACKAGES + ["nvidia-persistenced"]:
        assert name in held
    assert not [name for name in held if name.startswith(("nvidia-container", "libnvidia-container"))]


def test_apt_pin_keeps_the_exact_version_although_a_newer_one_exists(host):
    pref = host.file("/etc/apt/preferences.d/nvidia-driver.pref")
    assert pref.contains("^Pin: version 535.261.03-\\*$")
    policy = host.check_output("apt-cache policy nvidia-smi")
    assert "Candidate: 535.261.03-" in policy
    assert "535.309." in policy or "security" not in policy  # the newer security build is seen but not chosen


def test_nonfree_sources_use_the_archive_keyring(host):
    sources = host.file("/etc/apt/sources.list.d/nvidia-driver-debian.sources")
    assert sources.contains("Components: contrib non-free non-free-firmware")
    assert sources.contains("Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg")


def test_nouveau_blacklisted(host):
    conf = host.file("/etc/modprobe.d/blacklist-nouveau.conf")
    assert conf.mode == 0o644
    assert conf.contains("^blacklist nouveau$")
    assert conf.contains("^options nouveau modeset=0$")


def test_persistence_daemon_enabled_not_started_without_driver(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled
    assert not service.is_running


def test_dkms_reports_running_kernel_without_headers(host):
    report = json.loads(host.file("/var/tmp/nvidia_driver_report.json").content_string)
    assert report["installed"] == PINNED
    assert report["reboot_pending"] is False  # no GPU: nothing a reboot would load
    running = [entry for entry in report["dkms"] if entry["running"]]
    assert len(running) == 1
    kernel = host.check_output("uname -r")
    assert running[0] == {"kernel": kernel, "running": True, "headers": False, "module": False}
