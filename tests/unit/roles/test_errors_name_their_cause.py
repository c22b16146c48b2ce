"""Errors that name their cause and fail fast (issue 38, item 5), each run by ansible-playbook on this machine
(-c local) the way an operator meets it:

- triton_lb's drain, undrain and status with the built-in HAProxy method when a load balancer's admin socket does
  not answer: a socket file nobody listens on (HAProxy stopped: "Connection refused") and no socket at all. Before,
  the run said only "[Errno 111] Connection refused" (community.general.haproxy) or socat's bare error; now it names
  the socket, the load-balancer host, the reason and what to run (systemctl start haproxy.service there, or
  playbooks/load_balancer.yml), and an undrain leaves the host drained.
- playbooks/undrain.yml on a host whose Triton unit is stopped, failed or crash-looping (a systemctl double on PATH
  says so): before, the readiness poll ran for triton_rolling_ready_timeout (5 min 37 s on the lab) and ended in a raw
  errno; now the unit, its state, the host and the next commands are named at once (aiops.triton.triton_ready reads
  the unit with its first readiness request), and the load balancer is not asked to put the host back. A unit that
  runs but never gets ready is still polled, and the failure names the unit's state.
"""

import json
import os
import re
import socket
import subprocess
import time

import pytest

from lb_harness import ROOT, command_hooks, output, run_action, write_inventory

SYSTEMCTL_DOUBLE = os.path.join(ROOT, "tests", "doubles", "systemctl.double")


def fatal_messages(proc):
    """The msg of every fatal: line (JSON after '=> ')."""
    found = []
    for line in proc.stdout.splitlines():
        if line.startswith("fatal: [") and "=> " in line:
            found.append(json.loads(line.split("=> ", 1)[1]).get("msg", ""))
    return found


@pytest.fixture()
def silent_balancers(tmp_path):
    """Two load balancers whose admin socket does not answer: lb1 a socket file with no listener (what a stopped
    HAProxy leaves), lb2 none at all."""
    dead = str(tmp_path / "dead.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(dead)
    sock.close()  # the file stays; connect() is refused
    lb_hosts = {"lb1": {"triton_lb_admin_socket": dead}, "lb2": {"triton_lb_admin_socket": str(tmp_path / "absent.sock")}}
    inventory = write_inventory(tmp_path / "hosts.yml", {"t1": {}, "t2": {}}, lb_hosts=lb_hosts)
    return inventory, tmp_path, dead


def assert_names_both_sockets(message, dead, folder):
    assert "the load balancer's admin socket %s on lb1 did not answer (Connection refused)" % dead in message, message
    assert "admin socket %s on lb2 did not answer (No such file or directory)" % (folder / "absent.sock") in message, message
    assert "systemctl start haproxy.service on lb1" in message and "playbooks/load_balancer.yml" in message, message
    assert "Errno" not in message, message


@pytest.mark.parametrize("action, opening", [
    ("drain", "t1 was not drained: "),
    ("undrain", "t1 was not put back into traffic: "),
    ("status", "The load-balancer state of t1 could not be read: "),
])
def test_a_silent_admin_socket_is_named_with_its_host_and_the_next_command(silent_balancers, action, opening):
    inventory, folder, dead = silent_balancers
    proc = run_action(inventory, action, folder, limit="t1")[0]
    assert proc.returncode != 0, output(proc)
    messages = fatal_messages(proc)
    assert len(messages) == 1, output(proc)
    assert messages[0].startswith(opening), messages
    assert_names_both_sockets(messages[0], dead, folder)
    if action == "undrain":
        assert messages[0].endswith("it stays drained."), messages


# -- playbooks/undrain.yml and Triton's unit -----------------------------------------------------------
def closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def undrain(tmp_path, unit_state, ready_timeout):
    """playbooks/undrain.yml --limit t1; Triton's unit in the state the systemctl double reports, nothing listening
    on Triton's port, the load balancer the lb-hook double (command method). Returns (proc, seconds, lb calls)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(SYSTEMCTL_DOUBLE, str(bindir / "systemctl"))
    (tmp_path / "double").mkdir()
    group_vars = command_hooks()
    servers = {"t1": {"triton_rolling_url": "http://127.0.0.1:%d" % closed_port(), "triton_rolling_ready_timeout": ready_timeout}}
    inventory = write_inventory(tmp_path / "hosts.yml", servers, group_vars=group_vars)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", PATH=str(bindir) + os.pathsep + os.environ.get("PATH", ""),
               AIOPS_SYSTEMCTL_DOUBLE=unit_state, AIOPS_SYSTEMCTL_DOUBLE_LOG=str(tmp_path / "systemctl.log"),
               AIOPS_LB_DOUBLE_DIR=str(tmp_path / "double"))
    started = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), os.path.join(ROOT, "playbooks", "undrain.yml"),
                           "--limit", "t1"], capture_output=True, text=True, check=False, timeout=300, env=env, cwd=ROOT)
    seconds = time.monotonic() - started
    calls_path = tmp_path / "double" / "calls.jsonl"
    calls = [json.loads(line)["action"] for line in calls_path.read_text().splitlines()] if calls_path.exists() else []
    return proc, seconds, calls


@pytest.mark.parametrize("unit_state, words", [
    ("inactive/dead/success", "is inactive (dead)"),
    ("failed/failed/exit-code", "is failed (failed, result exit-code)"),
    ("not-found", "is not installed (not-found)"),
    # a bad flag under Restart=on-failure: systemd restarts Triton every RestartSec, so the unit is never "stopped"
    ("activating/auto-restart/exit-code/1/2", "is activating (auto-restart, result exit-code, status 1, restarted 2 times)"),
])
def test_undrain_names_a_unit_that_does_not_run_at_once(tmp_path, unit_state, words):
    # Before: the readiness poll ran its full 60 s here (5 min 37 s on the lab at the default) and said only
    # "Status code was -1 and not [200]: Request failed: <urlopen error [Errno 111] Connection refused>".
    proc, seconds, calls = undrain(tmp_path, unit_state, ready_timeout=60)
    assert proc.returncode != 0, output(proc)
    message = [m for m in fatal_messages(proc) if m.startswith("t1 stays drained: ")]
    assert message, output(proc)
    message = message[-1]
    assert "Triton's unit tritonserver.service on t1 %s, so Triton cannot become ready" % words in message, message
    assert "journalctl -u tritonserver.service" in message, message
    assert "ansible-playbook playbooks/triton_server.yml --limit t1" in message, message
    assert "playbooks/undrain.yml --limit t1" in message, message
    # starting a crash-looping unit again fixes nothing: the advice is to fix what Triton refuses
    crash_loop = "auto-restart" in unit_state
    assert ("Fix what Triton refuses" in message) == crash_loop and ("systemctl start" in message) != crash_loop, message
    assert "Errno" not in message, message
    assert "undrain" not in calls, "the load balancer was asked to put back a host whose Triton does not run"
    shows = (tmp_path / "systemctl.log").read_text().splitlines()
    assert len(shows) == 1 and shows[0].startswith("show -p "), "the unit was read %d times: polled" % len(shows)
    assert seconds < 50, "%.0f s: the unit's state was not read before the readiness poll" % seconds


def test_undrain_polls_a_running_unit_and_names_its_state_when_it_never_gets_ready(tmp_path):
    proc, seconds, calls = undrain(tmp_path, "active/running/success", ready_timeout=4)
    assert proc.returncode != 0, output(proc)
    message = [m for m in fatal_messages(proc) if m.startswith("t1 stays drained: ")][-1]
    assert re.search(r"Triton on t1 did not report ready at http://127\.0\.0\.1:\d+/v2/health/ready within 4 s", message), message
    assert "its unit tritonserver.service is active (running)" in message, message
    assert "journalctl -u tritonserver.service" in message, message
    assert "undrain" not in calls


def test_a_unit_state_that_cannot_be_read_is_polled_as_before(tmp_path):
    proc = undrain(tmp_path, "broken", ready_timeout=4)[0]
    assert proc.returncode != 0, output(proc)
    message = [m for m in fatal_messages(proc) if m.startswith("t1 stays drained: ")][-1]
    assert "did not report ready" in message and "cannot become ready" not in message, message
    assert "its unit tritonserver.service is unknown" in message, message
