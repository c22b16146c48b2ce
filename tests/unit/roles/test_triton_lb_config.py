"""triton_lb's haproxy.cfg, rendered by ansible-playbook from an inventory and checked by `haproxy -c`
(Debian's haproxy, installed by `make setup`)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from lb_harness import ROOT, write_inventory

PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "render_haproxy_cfg.yml")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lb")
    servers = {
        "lab-1": {},  # no address: its inventory name
        "gpu-02": {"ansible_host": "10.0.0.2", "triton_server_http_port": 9000, "triton_server_grpc_port": 9001},
        "gpu-03": {"ansible_host": "gpu-03.mgmt", "triton_lb_server_address": "10.1.0.3"},
        # Triton bound to one address: HAProxy goes there, not to ansible_host (triton_server's endpoint fact)
        "gpu-04": {"ansible_host": "10.0.0.4", "triton_server_http_address": "10.9.0.9", "triton_server_grpc_port": 7001},
        "gpu-05": {"ansible_host": "10.0.0.5", "triton_server_address": "fd00::5"},
    }
    inventory = write_inventory(folder / "hosts.yml", servers, lb_hosts={"lb-1": {}})
    out = folder / "haproxy.cfg"
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), PLAYBOOK, "-e", json.dumps({"cfg_out": str(out)})],
                          capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return out


def section(text, name):
    match = re.search(r"^%s\n((?:    .*\n|\s*\n)*)" % re.escape(name), text, re.M)
    assert match, "no section %r in\n%s" % (name, text)
    return [line.strip() for line in match.group(1).splitlines() if line.strip() and not line.strip().startswith("#")]


def test_haproxy_accepts_the_config(cfg):
    proc = subprocess.run([HAPROXY, "-c", "-f", str(cfg)], capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Configuration file is valid" in proc.stdout + proc.stderr


def test_every_triton_host_is_a_server_of_both_backends(cfg):
    text = cfg.read_text()
    assert section(text, "backend triton_http")[-5:] == [
        "server lab-1 lab-1:8000 check",
        "server gpu-02 10.0.0.2:9000 check",
        "server gpu-03 10.1.0.3:8000 check",
        "server gpu-04 10.9.0.9:8000 check",
        "server gpu-05 [fd00::5]:8000 check",
    ]
    assert section(text, "backend triton_grpc")[-5:] == [
        "server lab-1 lab-1:8001 proto h2 check port 8000 check-proto h1",
        "server gpu-02 10.0.0.2:9001 proto h2 check port 9000 check-proto h1",
        "server gpu-03 10.1.0.3:8001 proto h2 check port 8000 check-proto h1",
        "server gpu-04 10.0.0.4:7001 proto h2 check addr 10.9.0.9 port 8000 check-proto h1",
        "server gpu-05 [fd00::5]:8001 proto h2 check port 8000 check-proto h1",
    ]
    for backend in ("backend triton_http", "backend triton_grpc"):
        lines = section(text, backend)
        assert "option httpchk GET /v2/health/ready" in lines
        assert "http-check expect status 200" in lines


def test_frontends_admin_socket_exporter_and_state_file(cfg):
    text = cfg.read_text()
    assert "bind :8000" in section(text, "frontend triton_http")
    assert "bind :8001 proto h2" in section(text, "frontend triton_grpc")
    assert "http-request use-service prometheus-exporter if { path /metrics }" in section(text, "frontend stats")
    assert "bind :8405" in section(text, "frontend stats")
    glob = section(text, "global")
    assert "stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners" in glob
    assert "server-state-file /var/lib/haproxy/server-state" in glob
    assert "load-server-state-from-file global" in section(text, "defaults")


def test_entry_points_have_specs_and_every_method_has_its_task_files():
    import yaml
    role = os.path.join(ROOT, "roles", "triton_lb")
    with open(os.path.join(role, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    assert sorted(specs) == ["drain", "main", "status", "undrain"]
    methods = specs["drain"]["options"]["triton_lb_drain_method"]["choices"]
    for entry in ("drain", "undrain", "status"):
        assert specs[entry]["options"]["triton_lb_drain_method"]["choices"] == methods
        for method in methods:
            assert os.path.exists(os.path.join(role, "tasks", "%s_%s.yml" % (entry, method))), (entry, method)


def test_an_address_that_does_not_template_fails_instead_of_falling_back(tmp_path):
    # a fact the host does not have (facts gathered without the network subset): HAProxy must not quietly get
    # the inventory name instead, which no DNS resolves (every server down, found only under load)
    servers = {"lab-1": {"triton_lb_server_address": "{{ ansible_facts['default_ipv4']['address'] }}"}}
    inventory = write_inventory(tmp_path / "hosts.yml", servers, lb_hosts={"lb-1": {}})
    out = tmp_path / "haproxy.cfg"
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), PLAYBOOK, "-e", json.dumps({"cfg_out": str(out)})],
                          capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)
    assert proc.returncode != 0 and not out.exists(), proc.stdout[-3000:]
    assert "default_ipv4" in proc.stdout + proc.stderr
