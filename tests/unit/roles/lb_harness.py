"""Run triton_lb's entry points through ansible-playbook against localhost, for the contract tests."""

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CONTRACT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lb_contract.yml")
DOUBLE = os.path.join(ROOT, "tests", "doubles", "lb-hook.double")
SITE_TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lb_site_tasks")


def write_inventory(path, servers, lb_hosts=None, group_vars=None):
    """servers / lb_hosts: {name: hostvars}; every host is reached with connection local."""
    inventory = {"all": {
        "vars": dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable}, **(group_vars or {})),
        "children": {"triton_servers": {"hosts": servers}}}}
    if lb_hosts is not None:
        inventory["all"]["children"]["triton_lb"] = {"hosts": lb_hosts}
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle, sort_keys=False)
    return path


def run_action(inventory, action, out_dir, limit=None, extra=None, timeout=300):
    """ansible-playbook lb_contract.yml; returns (CompletedProcess, {host: state} for status)."""
    variables = dict({"lb_action": action, "lb_out": str(out_dir)}, **(extra or {}))
    cmd = ["ansible-playbook", "-i", str(inventory), CONTRACT, "-e", json.dumps(variables)]
    if limit:
        cmd += ["--limit", limit]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout, env=env, cwd=ROOT)
    states = {}
    if action == "status":
        for name in os.listdir(str(out_dir)):
            if name.endswith(".state"):
                with open(os.path.join(str(out_dir), name)) as handle:
                    states[name[:-len(".state")]] = handle.read().strip()
                os.remove(os.path.join(str(out_dir), name))
    return proc, states


def output(proc):
    return proc.stdout[-4000:] + proc.stderr[-2000:]
