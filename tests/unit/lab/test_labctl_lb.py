"""labctl's load balancer host: lab-lb in the inventory's triton_lb group with bridge addresses, and its
frontends in `labctl env` while it runs. podman is replaced; nothing starts."""

import importlib.util
import os
import types

import yaml

from labctl_lib import common, hosts, image  # lab/, put on sys.path by conftest.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("labctl", os.path.join(ROOT, "lab", "labctl.py"))
labctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labctl)


def test_inventory_puts_lab_lb_in_triton_lb_and_every_address_in(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "INVENTORY", str(tmp_path / "hosts.yml"))
    hosts.write_inventory(["lab-1", "lab-2", "lab-3"], {"lab-1": "10.89.77.3", "lab-2": "10.89.77.4",
                                                        "lab-3": "10.89.77.5", "lab-lb": "10.89.77.6"})
    inv = yaml.safe_load((tmp_path / "hosts.yml").read_text())
    assert inv["triton_servers"]["children"]["triton_canary"]["hosts"] == {"lab-1": {"aiops_lab_address": "10.89.77.3"}}
    assert sorted(inv["triton_servers"]["children"]["triton_wave_1"]["hosts"]) == ["lab-2"]
    assert sorted(inv["triton_servers"]["children"]["triton_wave_2"]["hosts"]) == ["lab-3"]
    assert inv["triton_lb"]["hosts"] == {"lab-lb": {"aiops_lab_address": "10.89.77.6"}}
    assert inv["triton_lb"]["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert "lab-lb" not in str(inv["triton_servers"]), "the load balancer is no Triton host"


def test_inventory_without_addresses_keeps_its_old_shape(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "INVENTORY", str(tmp_path / "hosts.yml"))
    hosts.write_inventory(["lab-1"])
    inv = yaml.safe_load((tmp_path / "hosts.yml").read_text())
    assert inv["triton_servers"]["children"]["triton_canary"]["hosts"] == {"lab-1": None}
    # the waves are always there (group_vars name all three in triton_rollout_groups), empty or not
    assert inv["triton_servers"]["children"]["triton_wave_1"]["hosts"] == {}
    assert inv["triton_servers"]["children"]["triton_wave_2"]["hosts"] == {}
    assert "triton_lb" not in inv


def test_rollout_groups_alternate_the_waves_so_every_prefix_has_three_groups():
    names = ["lab-%d" % i for i in range(1, 25)]
    groups = hosts.rollout_groups(names)
    assert [group for group, _members in groups] == ["triton_canary", "triton_wave_1", "triton_wave_2"]
    assert dict(groups)["triton_canary"] == ["lab-1"]
    assert dict(groups)["triton_wave_1"] == ["lab-%d" % i for i in range(2, 25, 2)]
    assert dict(groups)["triton_wave_2"] == ["lab-%d" % i for i in range(3, 25, 2)]
    for size in (8, 16, 24):
        sizes = [len(members) for _group, members in hosts.rollout_groups(names[:size])]
        assert sizes[0] == 1 and abs(sizes[1] - sizes[2]) <= 1 and sum(sizes) == size
    assert sorted(sum((members for _group, members in groups), [])) == sorted(names), "every host in exactly one group"


def fake_podman(running, address):
    def podman(*args, check=True):
        if args[:2] == ("container", "inspect") and "{{.State.Running}}" in args:
            return types.SimpleNamespace(returncode=0 if running else 125, stdout="true" if running else "")
        if args[:2] == ("container", "inspect"):
            assert '"aiops-lab"' in args[3], args
            return types.SimpleNamespace(returncode=0, stdout=address + "\n")
        raise AssertionError("unexpected podman call %r" % (args,))
    return podman


def test_env_exports_the_lb_frontends_while_lab_lb_runs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(common, "STATE", str(tmp_path))
    monkeypatch.setattr(common, "podman", fake_podman(True, "10.89.77.6"))
    assert labctl.main(["env"]) == 0
    out = capsys.readouterr().out
    assert "export AIOPS_LAB_LB_HTTP=10.89.77.6:8000\n" in out
    assert "export AIOPS_LAB_LB_GRPC=10.89.77.6:8001\n" in out


def test_env_without_lab_lb_exports_no_lb(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(common, "STATE", str(tmp_path))
    monkeypatch.setattr(common, "podman", fake_podman(False, ""))
    assert labctl.main(["env"]) == 0
    assert "AIOPS_LAB_LB" not in capsys.readouterr().out


def test_lab_lb_is_no_triton_host(monkeypatch):
    calls = []
    monkeypatch.setattr(common, "container_running", lambda name: False)
    monkeypatch.setattr(common, "podman", lambda *args, **kw: calls.append(args) or types.SimpleNamespace(returncode=0, stdout=""))
    assert hosts.start_lb("debian12") is True
    run = [c for c in calls if c[0] == "run"][0]
    assert "aiops.lab.lb=1" in run and "aiops.lab.host=1" not in run and common.LABEL in run
    assert run[run.index("--name") + 1] == "lab-lb"


def test_the_image_carries_haproxy_and_socat():
    assert {"haproxy", "socat"} <= set(image.image_packages())
