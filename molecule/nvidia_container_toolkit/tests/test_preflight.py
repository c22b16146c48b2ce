"""What the preflight role claims, on the lab host after it ran (preflight.yml, from prepare.yml) and the toolkit's
converge.

The role's refusals are proven in preflight.yml (an unsupported OS, a Python older than required, too little
free disk: each refused, naming why). Here: it changed nothing, and the host it accepted is one it had to
accept (a precondition of preflight.yml's passing run, not a property the role sets).
"""


def test_preflight_changed_nothing(host):
    # The role is read-only (and the toolkit installs no Triton): no Triton paths exist after it ran.
    assert not host.file("/opt/tritonserver").exists
    assert not host.file("/etc/systemd/system/tritonserver.service").exists


def test_the_accepted_host_meets_what_preflight_requires(host):
    # precondition of preflight.yml's first play: systemd as PID 1 and a Python the modules run on; were these
    # false, that play's pass would mean the role failed to refuse
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"
    assert host.check_output("python3 -c 'import sys; print(sys.version_info[:2] >= (3, 9))'") == "True"
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")
