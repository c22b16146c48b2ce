"""A first run with no red (issue 38, item 4): triton_server's check pass on a new host and triton_lb's status
read before the load balancer is set up, each run by ansible-playbook on this machine (-c local).

- The venv blocks of roles/triton_server/tasks/install_native.yml and tools_venv.yml in check mode, with
  stamps that say pip would run, on an interpreter without the `packaging` module (a new Debian host: the
  package task that installs python3-packaging does not run in check mode). Before, the pip module failed
  there ("Failed to import the required Python library (packaging)") and the check pass of
  playbooks/triton_server.yml printed a fatal block per new host; now the change is reported, pip does not
  run, nothing is written, and Triton's restart is still announced. With the stamps current nothing runs.
- tasks/service.yml and the role's restart handler in check mode on a host without tritonserver.service:
  systemd is not asked about a unit it cannot have (before: "Could not find the requested service").
- _triton_server_unit_installed (vars/main.yml) from the directories call's checksums.
- triton_lb's status with the built-in HAProxy method: a balancer without its admin socket (a first converge)
  gives state unknown and no failure (before: socat failed, a failed block per host); a balancer that
  answers (a socat stand-in serving `show servers state`) still gives each host's state.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from lb_harness import output, run_action, write_inventory

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "triton_server")
SERVER_VENV_BLOCK = "Install the server venv (requirements, interpreter or pip sources changed)"
TOOLS_VENV_BLOCK = "Install the module venv (requirements, interpreter or pip sources changed)"


def tasks_named(path, *names):
    with open(os.path.join(ROLE, "tasks", path)) as handle:
        tasks = [t for t in yaml.safe_load(handle) if t["name"] in names]
    assert len(tasks) == len(names), (path, names)
    return tasks


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python without `packaging` (nor setuptools, nor pip): what a new Debian host has for Ansible."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", "import packaging"], capture_output=True, check=False)
    assert probe.returncode != 0, "the bare interpreter imports packaging: this test would prove nothing"
    return python


def step_notes():
    """The role's handlers that note a step's change for triton_server_result (they only set facts)."""
    with open(os.path.join(ROLE, "handlers", "main.yml")) as handle:
        return [h for h in yaml.safe_load(handle) if h["name"].startswith("Note ")]


def play(tmp_path, tasks, variables, check="cli", python=sys.executable, handlers=None, vars_files=()):
    """ansible-playbook over these role tasks on localhost, with the role's vars/main.yml. check: "cli" (--check),
    "play" (what playbooks/triton_server.yml's check pass does: a play-level check_mode: true, which
    ansible_check_mode does not show, and triton_server_check_only: true), or False."""
    if check == "play":
        variables = dict(variables, triton_server_check_only=True)
    files = tmp_path / "files"
    files.mkdir(exist_ok=True)
    for name in ("requirements-native.txt", "requirements-python-models.txt", "requirements-tools.txt"):
        shutil.copy(os.path.join(ROLE, "files", name), str(files / name))
    path = tmp_path / "play.yml"
    playbook = {
        "name": "role tasks", "hosts": "localhost", "gather_facts": False, "tasks": tasks,
        "vars_files": [os.path.join(ROLE, "vars", "main.yml")] + list(vars_files),
        "handlers": handlers or step_notes() + [{"name": "Restart tritonserver", "ansible.builtin.debug": {"msg": "restart announced"}}]}
    if check == "play":  # only then: a play-level check_mode: false would override --check
        playbook["check_mode"] = True
    path.write_text(yaml.safe_dump([playbook]))
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(dict(variables, ansible_python_interpreter=python)))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "@%s" % extra, str(path)]
                          + (["--check"] if check == "cli" else []), capture_output=True, text=True, check=False,
                          timeout=300, env=env, cwd=str(tmp_path))
    return proc


def venv_vars(tmp_path, pending):
    home = tmp_path / "opt"
    return {
        "_triton_server_venv_pending": pending, "_triton_server_tools_pending": pending,
        "_triton_server_native_gpu": False,
        "_triton_server_requirements_file": "requirements-native.txt",
        "_triton_server_requirements": str(home / "requirements-native.txt"),
        "_triton_server_site_packages": str(home / "venv" / "lib" / "python3" / "site-packages"),
        "_triton_server_venv_python": "/usr/bin/python3", "_triton_server_pip_extra_args": ["--no-index"],
        "_triton_server_venv_want": "want\n", "_triton_server_venv_stamp": str(home / "venv" / ".aiops-installed"),
        "_triton_server_tools_want": "want\n", "_triton_server_tools_stamp": str(home / "tools" / ".aiops-installed"),
        "_triton_server_tools_requirements": str(home / "requirements-tools.txt"),
        "triton_server_home": str(home), "triton_server_venv": str(home / "venv"),
        "triton_server_tools_venv": str(home / "tools"),
    }


def recap(proc):
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("localhost") and "ok=" in ln][-1]
    return dict((k, int(v)) for k, v in (f.split("=") for f in line.split()[2:]))


# "play" is how a first make lab meets it: the check pass of playbooks/triton_server.yml (play-level check_mode).
# Before triton_server_check_only, only --check was tested, and a fresh 24-host lab printed 24 fatal blocks.
@pytest.mark.parametrize("check", ["cli", "play"])
def test_check_mode_on_a_new_host_reports_the_venv_installs_without_pip(tmp_path, bare_python, check):
    tasks = tasks_named("install_native.yml", SERVER_VENV_BLOCK) + tasks_named("tools_venv.yml", TOOLS_VENV_BLOCK)
    proc = play(tmp_path, tasks, venv_vars(tmp_path, pending=True), check=check, python=bare_python)
    out = output(proc)
    assert proc.returncode == 0, out
    assert "fatal:" not in proc.stdout and "Failed to import the required Python library" not in out, out
    assert "pip would install requirements-native.txt" in proc.stdout
    assert "pip would install requirements-tools.txt" in proc.stdout
    assert "RUNNING HANDLER [Restart tritonserver]" in proc.stdout, "a venv pip would reinstall restarts Triton"
    assert recap(proc)["changed"] >= 4  # both requirement copies, both installs, both stamps (the loop counts once)
    assert not (tmp_path / "opt").exists(), "check mode wrote to the host"


def test_with_current_stamps_nothing_runs(tmp_path, bare_python):
    tasks = tasks_named("install_native.yml", SERVER_VENV_BLOCK) + tasks_named("tools_venv.yml", TOOLS_VENV_BLOCK)
    for check in ("cli", "play", False):
        proc = play(tmp_path, tasks, venv_vars(tmp_path, pending=False), check=check, python=bare_python)
        assert proc.returncode == 0, output(proc)
        counts = recap(proc)
        assert counts["ok"] == 0 and counts["changed"] == 0, (check, counts)  # no module call at all


@pytest.mark.parametrize("check", ["cli", "play"])
def test_check_mode_does_not_ask_systemd_about_a_unit_a_new_host_lacks(tmp_path, check):
    with open(os.path.join(ROLE, "handlers", "main.yml")) as handle:
        handlers = yaml.safe_load(handle)
    tasks = tasks_named("service.yml", "Enable and start tritonserver") + [
        {"name": "Notify the restart", "ansible.builtin.debug": {"msg": "x"}, "changed_when": True,
         "notify": "Restart tritonserver"}]
    variables = {"_triton_server_unit_name": "tritonserver.service", "_triton_server_unit_installed": False}
    proc = play(tmp_path, tasks, variables, check=check, handlers=[h for h in handlers if h["name"] == "Restart tritonserver"])
    assert proc.returncode == 0, output(proc)
    assert "Could not find the requested service" not in output(proc)
    assert recap(proc)["skipped"] == 2, output(proc)  # the start and the handler's restart


@pytest.mark.parametrize("checksums, installed", [
    ({"/etc/systemd/system/tritonserver.service": None}, False),
    ({"/etc/systemd/system/tritonserver.service": "3f786850e387550fdab836ed7e6dc881de23001b"}, True),
    (None, True),  # the directories call did not run (a run limited by tags): as before, ask systemd
])
def test_unit_installed_is_read_from_the_directories_call(tmp_path, checksums, installed):
    variables = {"triton_server_venv": "/v", "triton_server_tools_venv": "/t"}
    if checksums is not None:
        variables["__triton_server_directories_result"] = {"checksums": checksums}
    show = {"content": "{{ _triton_server_unit_installed | bool | to_json }}", "dest": str(tmp_path / "installed.json"),
            "mode": "0644"}
    tasks = [{"name": "Show", "ansible.builtin.copy": show}]
    proc = play(tmp_path, tasks, variables, check=False)
    assert proc.returncode == 0, output(proc)
    assert json.loads((tmp_path / "installed.json").read_text()) is installed


# -- triton_lb status with the built-in HAProxy method ------------------------------------------------
# `show servers state` as HAProxy 2.6 answers it (columns as tests/fixtures/haproxy/): t1 up, t2 drained, both backends
HEADER = ("# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight "
          "srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state "
          "srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port "
          "srv_check_addr srv_agent_addr srv_agent_port")
SERVERS_STATE = "1\n%s\n%s" % (HEADER, "".join(
    "%d %s %d %s 127.0.0.1 2 %d 1 1 5 15 3 4 6 0 0 0 - 18%d0%d - 0 0 - - 0\n" % (be, backend, n, host, admin, be - 3, n)
    for be, backend in ((3, "triton_http"), (4, "triton_grpc")) for n, host, admin in ((1, "t1", 0), (2, "t2", 8))))


def haproxy_lab(tmp_path, *sockets):
    lb_hosts = dict(("lb%d" % n, {"triton_lb_admin_socket": str(socket)}) for n, socket in enumerate(sockets, 1))
    inventory = write_inventory(tmp_path / "hosts.yml", {"t1": {}, "t2": {}}, lb_hosts=lb_hosts,
                                group_vars={"triton_lb_drain_method": "haproxy"})
    out = tmp_path / "out"
    out.mkdir()
    return inventory, out


def test_status_before_the_balancer_is_set_up_reads_unknown_without_a_failure(tmp_path):
    inventory, out = haproxy_lab(tmp_path, tmp_path / "no-haproxy-yet" / "admin.sock")
    proc, states = run_action(inventory, "status", out)
    assert proc.returncode == 0, output(proc)
    assert "failed:" not in proc.stdout and "fatal:" not in proc.stdout, output(proc)
    assert states == {"t1": "unknown", "t2": "unknown"}
    assert json.loads((out / "t1.states").read_text()) == {"t1": "unknown", "t2": "unknown"}


def test_status_from_a_balancer_that_answers(tmp_path):
    if not shutil.which("socat"):
        pytest.fail("socat is not installed: make setup installs it (APT_PACKAGES)")
    (tmp_path / "answer.txt").write_text(SERVERS_STATE)
    socket = tmp_path / "admin.sock"
    # reads the command line first, as HAProxy does: a stand-in that answered and closed at once could close before
    # the client had written it (a broken pipe on a loaded machine: an error of the stand-in, not of the role)
    server = subprocess.Popen(["socat", "UNIX-LISTEN:%s,fork" % socket, "SYSTEM:head -n 1 >/dev/null; cat %s" % (tmp_path / "answer.txt")])
    try:
        deadline = time.time() + 10
        while not socket.exists() and time.time() < deadline:
            time.sleep(0.1)
        inventory, out = haproxy_lab(tmp_path, socket)
        proc, states = run_action(inventory, "status", out)
        assert proc.returncode == 0, output(proc)
        assert states == {"t1": "up", "t2": "drained"}
        # a second balancer not set up yet: up on one is not up everywhere; drained stays drained
        shutil.rmtree(str(out))
        inventory, out = haproxy_lab(tmp_path, socket, tmp_path / "lb2-not-yet" / "admin.sock")
        proc, states = run_action(inventory, "status", out)
    finally:
        server.terminate()
        server.wait(10)
    assert proc.returncode == 0, output(proc)
    assert states == {"t1": "unknown", "t2": "drained"}
    assert json.loads((out / "t1.states").read_text()) == {"t1": "unknown", "t2": "drained"}
