"""roles/common's os_packages entry point (issue 35 item 2), run by ansible-playbook on this machine (-c local) from a
stand-in caller role (the entry point refuses a play): a host that has every package pays one dpkg-query and never
the package manager; a missing one goes to the package manager alone, also in check mode."""

import json
import os
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
QUERY = "Read which of the packages are installed"
INSTALL = "Install the missing packages (apt)"
MISSING = "aiops-test-no-such-package"


def run(tmp_path, packages, check=False):
    """{task name: [host result]} of a play whose caller role enters common:os_packages with ``packages``."""
    tasks = tmp_path / "roles" / "caller" / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    (tasks / "main.yml").write_text(yaml.safe_dump([{
        "name": "Enter os_packages", "ansible.builtin.include_role": {"name": "aiops.triton.common", "tasks_from": "os_packages"},
        "vars": {"_common_os_packages": packages}}]))
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "caller", "hosts": "localhost", "gather_facts": True,
                                     "gather_subset": ["min"], "roles": ["caller"]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_NOCOLOR="1")
    # the system Python: the apt module needs its apt bindings (python3-apt)
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=/usr/bin/python3",
                           str(play)] + (["--check"] if check else []),
                          capture_output=True, text=True, check=False, timeout=300, env=env, cwd=str(tmp_path))
    report = json.loads(proc.stdout)
    results = {}
    for task in report["plays"][0]["tasks"]:
        name = task["task"]["name"].split(" : ", 1)[-1]
        results[name] = task["hosts"].get("localhost", {})
    return proc, results


@pytest.mark.parametrize("check", [False, True])
def test_a_host_that_has_every_package_never_runs_the_package_manager(tmp_path, check):
    proc, results = run(tmp_path, ["dpkg", "coreutils"], check=check)
    assert proc.returncode == 0, proc.stdout[-3000:]
    query = results[QUERY]
    assert query["cmd"][:2] == ["dpkg-query", "--show"] and query["cmd"][-2:] == ["dpkg", "coreutils"], query["cmd"]
    assert sorted(query["stdout_lines"]) == ["coreutils installed", "dpkg installed"], query["stdout_lines"]
    assert results[INSTALL].get("skipped") is True, results[INSTALL]
    assert not any(r.get("changed") for r in results.values()), "nothing may change"


@pytest.mark.parametrize("check", [False, True])
def test_only_the_missing_package_reaches_the_package_manager(tmp_path, check):
    proc, results = run(tmp_path, ["dpkg", MISSING], check=check)
    install = results[INSTALL]
    assert not install.get("skipped"), install
    assert install["invocation"]["module_args"]["name"] == [MISSING], install["invocation"]["module_args"]
    # no such package anywhere: apt refuses it, and the run fails on it (in check mode too) rather than passing by
    assert install.get("failed") and MISSING in install.get("msg", ""), install
    assert proc.returncode != 0
