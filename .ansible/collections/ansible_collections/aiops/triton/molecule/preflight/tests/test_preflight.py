"""Verify the lab host is what the preflight role claims it checked."""


def test_systemd_is_pid1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_system_is_running(host):
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state in ("running", "degraded"), state


def test_python_meets_minimum(host):
    out = host.check_output("python3 -c 'import sys; print(sys.version_info[:2] >= (3, 9))'")
    assert out == "True"


def test_preflight_changed_nothing(host):
    # The role is read-only: no collection paths exist after it ran.
    assert not host.file("/opt/tritonserver").exists
    assert not host.file("/etc/systemd/system/tritonserver.service").exists
