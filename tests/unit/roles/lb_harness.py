"""Run triton_lb's entry points through ansible-playbook against localhost, for the contract tests."""

import json
import os
import shutil
import socket
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CONTRACT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lb_contract.yml")
DOUBLE = os.path.join(ROOT, "tests", "doubles", "lb-hook.double")
SITE_TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lb_site_tasks")
# roles/triton_lb's haproxy.cfg rendered alone, and Debian's haproxy (make setup): the real-HAProxy tests
RENDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "render_haproxy_cfg.yml")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def command_hooks(**extra):
    """group_vars of the command method with the lb-hook double as the load balancer."""
    return dict({"triton_lb_drain_method": "command",
                 "triton_lb_drain_command": DOUBLE + " drain {{ inventory_hostname }}",
                 "triton_lb_undrain_command": DOUBLE + " undrain {{ inventory_hostname }}",
                 "triton_lb_status_command": DOUBLE + " status {{ inventory_hostname }}"}, **extra)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin_answer(path, command):
    """HAProxy's runtime API at the admin socket ``path``: the whole answer to one command."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        sock.sendall(command.encode() + b"\n")
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                return b"".join(chunks).decode()
            chunks.append(data)


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
