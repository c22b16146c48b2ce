"""labctl configures podman through its own drop-in: the machine owner's containers.conf is never
written, the drop-in is written whole and once, and `down` removes it (and only it)."""

import builtins
import importlib.util
import os
import types

import pytest

from labctl_lib import common, hosts, podman_conf, services  # lab/, put on sys.path by conftest.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("labctl", os.path.join(ROOT, "lab", "labctl.py"))
labctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labctl)

OWNER_CONF = "# the owner's settings\n[engine]\nevents_logger = \"journald\"\n"


@pytest.fixture
def etc(monkeypatch, tmp_path):
    """A stand-in /etc/containers under tmp_path; any write outside tmp_path fails the test."""
    conf_dir = tmp_path / "containers"
    conf_dir.mkdir()
    (conf_dir / "containers.conf").write_text(OWNER_CONF)
    monkeypatch.setattr(podman_conf, "PODMAN_DROPIN", str(conf_dir / "containers.conf.d" / "90-aiops-lab.conf"), raising=False)

    def guarded_open(path, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and not str(path).startswith(str(tmp_path)):
            raise AssertionError("labctl wrote outside the test dir: %s" % path)
        return builtins.open(path, mode, *args, **kwargs)

    real_replace = os.replace

    def guarded_replace(src, dst):
        if not str(dst).startswith(str(tmp_path)):
            raise AssertionError("labctl replaced a file outside the test dir: %s" % dst)
        return real_replace(src, dst)

    monkeypatch.setattr(podman_conf, "open", guarded_open, raising=False)
    monkeypatch.setattr(podman_conf.os, "replace", guarded_replace)
    return conf_dir


def lab_conf():
    with open(os.path.join(ROOT, "lab", "containers.conf")) as fh:
        return fh.read()


def test_configure_writes_a_drop_in_and_leaves_the_owner_file(etc, capsys):
    podman_conf.configure_podman()
    dropin = etc / "containers.conf.d" / "90-aiops-lab.conf"
    assert dropin.read_text() == lab_conf()
    assert oct(dropin.stat().st_mode & 0o777) == "0o644"
    assert (etc / "containers.conf").read_text() == OWNER_CONF
    # podman reads every *.conf there: no temporary file may be left beside the drop-in
    assert sorted(os.listdir(etc / "containers.conf.d")) == ["90-aiops-lab.conf"]
    assert "wrote %s" % dropin in capsys.readouterr().out


def test_configure_is_idempotent(etc, capsys):
    podman_conf.configure_podman()
    dropin = etc / "containers.conf.d" / "90-aiops-lab.conf"
    inode = dropin.stat().st_ino
    capsys.readouterr()
    podman_conf.configure_podman()
    assert dropin.stat().st_ino == inode
    assert capsys.readouterr().out == ""


def test_configure_repairs_a_changed_drop_in(etc):
    dropin = etc / "containers.conf.d" / "90-aiops-lab.conf"
    dropin.parent.mkdir()
    dropin.write_text("[engine]\nruntime = \"crun\"\n")
    podman_conf.configure_podman()
    assert dropin.read_text() == lab_conf()


def test_lab_settings_are_the_ones_this_machine_needs():
    text = lab_conf()
    assert 'runtime = "runc"' in text and 'cgroup_manager = "cgroupfs"' in text
    assert "nofile=20000:20000" in text


def test_down_removes_the_drop_in_and_nothing_else(etc, monkeypatch, tmp_path):
    podman_conf.configure_podman()
    other = etc / "containers.conf.d" / "10-owner.conf"
    other.write_text("[containers]\nlog_size_max = 1000\n")
    monkeypatch.setattr(services, "stop_services", lambda: None)
    monkeypatch.setattr(common, "STATE", str(tmp_path / "state"))
    monkeypatch.setattr(common, "INVENTORY", str(tmp_path / "hosts.yml"))

    def fake_podman(*args, check=True):
        if args[0] == "ps":
            return types.SimpleNamespace(returncode=0, stdout="")
        if args[:2] == ("network", "exists"):
            return types.SimpleNamespace(returncode=1, stdout="")
        raise AssertionError("unexpected podman call %r" % (args,))
    monkeypatch.setattr(common, "podman", fake_podman)
    labctl.down()
    assert sorted(os.listdir(etc / "containers.conf.d")) == ["10-owner.conf"]
    assert (etc / "containers.conf").read_text() == OWNER_CONF
    labctl.down()  # a second teardown has nothing left to remove and does not fail


def test_down_keeps_the_drop_in_while_a_container_survives(etc, monkeypatch, tmp_path):
    """A container created with runc must still be removable: the drop-in goes only after the hosts."""
    podman_conf.configure_podman()
    monkeypatch.setattr(services, "stop_services", lambda: None)
    monkeypatch.setattr(common, "STATE", str(tmp_path / "state"))
    monkeypatch.setattr(common, "INVENTORY", str(tmp_path / "hosts.yml"))

    def stuck_podman(*args, check=True):
        if args[0] == "ps":
            return types.SimpleNamespace(returncode=0, stdout="lab-1")
        if args[0] == "rm" or args[:2] == ("network", "exists"):
            return types.SimpleNamespace(returncode=1, stdout="")
        raise AssertionError("unexpected podman call %r" % (args,))
    monkeypatch.setattr(common, "podman", stuck_podman)
    with pytest.raises(common.LabError, match="survived"):
        labctl.down()
    assert (etc / "containers.conf.d" / "90-aiops-lab.conf").exists()


def test_lab_hosts_get_cap_sys_admin(monkeypatch):
    """triton_server remounts /proc with hidepid on its hosts; a lab host must allow it like a real one."""
    calls = []

    def record(*args, check=True):
        calls.append(args)
        return types.SimpleNamespace(returncode=1, stdout="")
    monkeypatch.setattr(common, "podman", record)
    monkeypatch.setattr(common, "container_running", lambda name: False)
    assert hosts.start_host("lab-1", "debian12")
    run = [c for c in calls if c[0] == "run"][0]
    assert run[run.index("--cap-add") + 1] == "SYS_ADMIN"
    assert run[-2:] == ("localhost/aiops-lab-debian12", "/sbin/init")
