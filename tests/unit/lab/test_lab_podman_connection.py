"""The lab's lab_podman connection (lab/plugins/connection), both exec methods, driven by ansible-playbook.

No container is needed: a stand-in ``podman`` (a test double, written below) answers ``inspect`` with
the test's own PID and a made-up container environment, and runs ``exec`` locally. With
exec_method=nsenter the real nsenter enters that process's namespaces (the test's own, so commands run
here); what the test checks is what the plugin controls: the environment is the container's only, the
working directory is the target's, stdin reaches pipelined modules and copied files, and the errors.
"""

import importlib.util
import json
import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLUGIN_DIR = os.path.join(ROOT, "lab", "plugins", "connection")
FAKE_PODMAN = """#!/bin/sh
# Test double for podman: inspect answers from $FAKE_PID / $FAKE_ENV, exec runs the command here.
echo "$@" >> "$FAKE_LOG"
case "$1" in
  inspect) printf '%s %s\\n' "$FAKE_PID" "$FAKE_ENV" ;;
  exec) shift; [ "$1" = -i ] && shift; shift; exec "$@" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""
PLAY = """
- hosts: box
  gather_facts: false
  tasks:
    - name: environment and working directory the command sees
      ansible.builtin.command: /bin/sh -c 'env; echo "PWD_IS=$(pwd)"'
      register: env_out
    - name: a copied file arrives through stdin
      ansible.builtin.copy:
        content: "payload\\n"
        dest: "{{ dest }}"
    - name: show
      ansible.builtin.debug:
        msg: "{{ env_out.stdout_lines }}"
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="nsenter needs root (the CI runs as root)")


def run(tmp_path, method, pid=None, extra=()):
    podman = tmp_path / "podman"
    podman.write_text(FAKE_PODMAN)
    podman.chmod(podman.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "hosts.ini").write_text("box ansible_connection=lab_podman ansible_pipelining=true "
                                        "ansible_python_interpreter=%s\n" % sys.executable)
    env = dict(os.environ, FAKE_PID=pid or str(os.getpid()), FAKE_LOG=str(tmp_path / "podman.log"), AIOPS_CONTROLLER_ONLY="leak",
               FAKE_ENV=json.dumps(["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "container=podman", "IN_CONTAINER=yes"]),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_CONNECTION_PLUGINS=PLUGIN_DIR,
               ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_PODMAN_EXEC_METHOD", None)  # the method is the test's to give, or the plugin's default
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "hosts.ini"),
            str(tmp_path / "play.yml"), "-e", "dest=%s" % (tmp_path / "copied")] + (
                ["-e", "ansible_podman_exec_method=%s" % method] if method else []) + [  # None: the plugin's default
                "-e", "ansible_podman_executable=%s" % podman] + list(extra)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300, check=False)
    log = (tmp_path / "podman.log").read_text() if (tmp_path / "podman.log").exists() else ""
    return proc, log


def test_nsenter_runs_with_only_the_containers_environment_and_reads_it_once_per_connection(tmp_path):
    proc, log = run(tmp_path, "nsenter")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "IN_CONTAINER=yes" in proc.stdout and "container=podman" in proc.stdout
    assert "HOME=/root" in proc.stdout, "podman exec sets HOME for root; so must nsenter"
    assert "AIOPS_CONTROLLER_ONLY" not in proc.stdout, "the controller's environment leaked into the container"
    assert '"PWD_IS=%s"' % os.getcwd() in proc.stdout, "the command must start in the target's working directory"
    assert (tmp_path / "copied").read_text() == "payload\n"
    calls = log.splitlines()
    assert calls and all(c.startswith("inspect ") for c in calls), "nsenter must not fall back to podman exec: %s" % calls
    # one inspect per task connection, not one per command (the copy task runs several commands)
    assert len(calls) <= 3, calls


def test_podman_exec_is_the_default(tmp_path):
    # no exec method given (before, this test passed "podman" itself and so proved nothing of the default)
    proc, log = run(tmp_path, None)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (tmp_path / "copied").read_text() == "payload\n"
    assert "exec -i box" in log and "inspect" not in log


def test_nsenter_names_a_stopped_container(tmp_path):
    proc, _log = run(tmp_path, "nsenter", pid="0")
    assert proc.returncode != 0
    assert "container box is not running" in proc.stdout + proc.stderr


def test_nsenter_refuses_a_remote_user(tmp_path):
    proc, log = run(tmp_path, "nsenter", extra=["-e", "ansible_user=nobody"])
    assert proc.returncode != 0
    assert "exec_method nsenter runs commands as root in box; unset remote_user" in proc.stdout + proc.stderr
    assert log == "", "nothing may run before the refusal"


def _dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_nsenter_reads_the_pid_again_after_the_container_restarted(monkeypatch):
    """A reboot inside a lab host restarts its container (podman's restart policy): new PID 1. The cached
    PID is gone, so the next command (ansible.builtin.reboot's boot-id probe, a retry) inspects again."""
    from ansible.playbook.play_context import PlayContext
    spec = importlib.util.spec_from_file_location("lab_podman", os.path.join(PLUGIN_DIR, "lab_podman.py"))
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    Connection = plugin.Connection

    conn = Connection(PlayContext(), None)
    options = {"remote_addr": "box", "exec_method": "nsenter", "remote_user": None}
    monkeypatch.setattr(conn, "get_option", options.get)
    answers = [_dead_pid(), os.getpid(), os.getpid()]
    inspected = []

    def fake_run(argv, in_data=None):
        inspected.append(argv)
        return 0, ("%d [\"PATH=/usr/bin\"]" % answers[len(inspected) - 1]).encode(), b""

    monkeypatch.setattr(conn, "_run", fake_run)
    monkeypatch.setattr(conn, "_podman_argv", lambda args: ["podman"] + list(args))
    assert conn._nsenter_target()[0] == answers[0]
    assert conn._nsenter_target()[0] == os.getpid(), "a PID that no longer exists must be read again"
    assert conn._nsenter_target()[0] == os.getpid() and len(inspected) == 2, "a live PID is read once per connection"
    conn.reset()
    conn._nsenter_target()
    assert len(inspected) == 3, "reset() (ansible.builtin.reboot between tries) forgets the PID"


def test_the_lab_ansible_cfg_finds_it_and_its_documentation_parses():
    """The lab inventory names it `lab_podman`: ansible.cfg's connection_plugins must reach it, and its
    DOCUMENTATION (no longer checked by ansible-test: it is not a collection plugin) must parse."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONNECTION_PLUGINS", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", "connection", "--json", "lab_podman"],
                          capture_output=True, text=True, env=env, cwd="/", timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["lab_podman"]["doc"]
    assert doc["filename"] == os.path.join(PLUGIN_DIR, "lab_podman.py")
    assert set(doc["options"]["exec_method"]["choices"]) == {"podman", "nsenter"}
