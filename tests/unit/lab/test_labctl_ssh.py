"""labctl ssh: the lab key into a container's root authorized_keys, its host key into known_hosts under its
bridge address, one strict SSH login; and the image's sshd set-up. podman and ssh are replaced; the key
install script and ssh-keygen run for real."""

import os
import shutil
import stat
import subprocess
import types

import pytest

from labctl_lib import common, image, ssh  # lab/, put on sys.path by conftest.py

HOST_KEYS = {"lab-1": "ssh-ed25519 AAAAC3lab1 root@lab-1", "roll-2": "ssh-ed25519 AAAAC3roll2 root@roll-2"}
ADDRESSES = {"lab-1": "10.89.77.3", "roll-2": "10.89.77.9"}


@pytest.fixture
def state(tmp_path, monkeypatch):
    ssh_dir = tmp_path / "ssh"
    monkeypatch.setattr(ssh, "SSH_DIR", str(ssh_dir))
    monkeypatch.setattr(ssh, "KEY", str(ssh_dir / "id_ed25519"))
    monkeypatch.setattr(ssh, "KNOWN_HOSTS", str(ssh_dir / "known_hosts"))
    ssh_dir.mkdir()
    (ssh_dir / "id_ed25519").write_text("private\n")
    (ssh_dir / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3lab aiops-lab\n")
    return ssh_dir


class FakePodman(object):
    """Running containers with an address, sshd (or not) and a host key; records every exec."""

    def __init__(self, sshd=True, running=True, sshd_state="active"):
        self.sshd, self.running, self.sshd_state = sshd, running, sshd_state
        self.execs = []

    def __call__(self, *args, check=True):
        if args[:2] == ("container", "inspect") and "{{.State.Running}}" in args:
            return types.SimpleNamespace(returncode=0, stdout="true" if self.running else "false")
        if args[:2] == ("container", "inspect"):
            return types.SimpleNamespace(returncode=0, stdout=ADDRESSES.get(args[-1], "") + "\n")
        if args[0] == "exec":
            name, command = args[1], args[2:]
            self.execs.append((name,) + command)
            if command[:2] == ("test", "-x"):
                return types.SimpleNamespace(returncode=0 if self.sshd else 1, stdout="")
            if command[:2] == ("systemctl", "is-active"):
                return types.SimpleNamespace(returncode=0, stdout=self.sshd_state + "\n")
            if command[0] == "cat":
                assert command[1] == ssh.HOST_KEY
                return types.SimpleNamespace(returncode=0, stdout=HOST_KEYS[name] + "\n")
            if command[0] == "hostname":
                return types.SimpleNamespace(returncode=0, stdout=name + "\n")
            if command[0] == "sh":
                return types.SimpleNamespace(returncode=0, stdout="")
        raise AssertionError("unexpected podman call %r" % (args,))


@pytest.fixture
def logins(monkeypatch):
    """ssh from the controller: answers the hostname of the address it is given."""
    calls = []
    by_address = dict((a, n) for n, a in ADDRESSES.items())

    def run(cmd, **kwargs):
        calls.append(cmd)
        return types.SimpleNamespace(returncode=0, stdout=by_address[cmd[-2].split("@")[1]] + "\n", stderr="")
    monkeypatch.setattr(ssh.subprocess, "run", run)
    return calls


def test_authorize_installs_the_key_and_pins_each_hosts_own_key(state, logins, monkeypatch):
    podman = FakePodman()
    monkeypatch.setattr(common, "podman", podman)
    # an old line for lab-1's address (a host recreated since) and another host's line
    (state / "known_hosts").write_text("10.89.77.3 ssh-ed25519 AAAAstale\n10.89.77.50 ssh-ed25519 AAAAother\n")
    assert ssh.authorize(["lab-1", "roll-2"]) == ADDRESSES
    installs = [e for e in podman.execs if e[1] == "sh"]
    assert installs == [(n, "sh", "-c", ssh.INSTALL_KEY, "sh", "ssh-ed25519 AAAAC3lab aiops-lab") for n in ("lab-1", "roll-2")]
    assert (state / "known_hosts").read_text().splitlines() == [
        "10.89.77.50 ssh-ed25519 AAAAother", "10.89.77.3 ssh-ed25519 AAAAC3lab1", "10.89.77.9 ssh-ed25519 AAAAC3roll2"]
    assert [c[-2:] for c in logins] == [["root@10.89.77.3", "hostname"], ["root@10.89.77.9", "hostname"]]
    for cmd in logins:
        assert "StrictHostKeyChecking=yes" in cmd and "UserKnownHostsFile=" + ssh.KNOWN_HOSTS in cmd
        assert cmd[cmd.index("-i") + 1] == ssh.KEY and "BatchMode=yes" in cmd


def test_a_login_that_answers_another_host_fails(state, monkeypatch):
    monkeypatch.setattr(common, "podman", FakePodman())
    monkeypatch.setattr(ssh.subprocess, "run", lambda cmd, **kw: types.SimpleNamespace(returncode=0, stdout="lab-9\n", stderr=""))
    with pytest.raises(common.LabError, match=r"ssh root@10\.89\.77\.3 \(lab-1\) failed"):
        ssh.authorize(["lab-1"])


def test_a_refused_login_fails_with_sshs_words(state, monkeypatch):
    monkeypatch.setattr(common, "podman", FakePodman())
    monkeypatch.setattr(ssh.subprocess, "run", lambda cmd, **kw: types.SimpleNamespace(
        returncode=255, stdout="", stderr="root@10.89.77.3: Permission denied (publickey)."))
    with pytest.raises(common.LabError, match=r"failed \(255\): .*Permission denied \(publickey\)"):
        ssh.authorize(["lab-1"])


@pytest.mark.parametrize("podman,names,message", [
    (FakePodman(sshd=False), ["lab-1"], "lab-1 has no sshd: it was created from a lab image older than lab/image.packages"),
    (FakePodman(running=False), ["lab-1"], "lab-1 is not running"),
    (FakePodman(), ["stray"], "stray has no address on the aiops-lab network"),
    (FakePodman(sshd_state="failed"), ["lab-1"], r"sshd in lab-1 is not running \(systemctl is-active ssh: 'failed'\)"),
])
def test_refusals_name_the_host_and_the_way_out(state, logins, monkeypatch, podman, names, message):
    monkeypatch.setattr(common, "podman", podman)
    with pytest.raises(common.LabError, match=message):
        ssh.authorize(names)
    assert logins == [] and not (state / "known_hosts").exists()


def test_install_script_adds_the_key_once_and_keeps_it_private(tmp_path):
    home = tmp_path / "root"
    script = ssh.INSTALL_KEY.replace("/root/", str(home) + "/")
    assert script != ssh.INSTALL_KEY
    home.mkdir()
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAAowner owner@example\n")
    for _run in range(2):
        subprocess.run(["sh", "-c", script, "sh", "ssh-ed25519 AAAAC3lab aiops-lab"], check=True)
    assert (home / ".ssh" / "authorized_keys").read_text().splitlines() == [
        "ssh-ed25519 AAAAowner owner@example", "ssh-ed25519 AAAAC3lab aiops-lab"]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    subprocess.run(["sh", "-c", ssh.INSTALL_KEY.replace("/root/", str(fresh) + "/"), "sh", "ssh-ed25519 K x"], check=True)
    assert stat.S_IMODE(os.stat(fresh / ".ssh").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(fresh / ".ssh" / "authorized_keys").st_mode) == 0o600


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")
def test_the_lab_key_is_made_once_and_private(tmp_path, monkeypatch):
    monkeypatch.setattr(ssh, "SSH_DIR", str(tmp_path / "ssh"))
    monkeypatch.setattr(ssh, "KEY", str(tmp_path / "ssh" / "id_ed25519"))
    public = ssh.ensure_key()
    assert public.startswith("ssh-ed25519 ") and public.endswith(" aiops-lab")
    assert stat.S_IMODE(os.stat(tmp_path / "ssh" / "id_ed25519").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "ssh").st_mode) == 0o700
    assert ssh.ensure_key() == public


def test_the_image_ships_no_host_keys_and_only_key_logins(tmp_path):
    rootfs = tmp_path
    (rootfs / "etc/ssh/sshd_config.d").mkdir(parents=True)
    for name in ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_host_rsa_key", "moduli"):
        (rootfs / "etc/ssh" / name).write_text("x")
    image.customise_sshd(str(rootfs))
    assert sorted(os.listdir(rootfs / "etc/ssh")) == ["moduli", "sshd_config.d"]
    conf = (rootfs / "etc/ssh/sshd_config.d/aiops-lab.conf").read_text().splitlines()
    assert "PermitRootLogin prohibit-password" in conf and "PasswordAuthentication no" in conf
    unit = (rootfs / "etc/systemd/system/ssh.service.d/aiops-lab.conf").read_text().splitlines()
    assert unit[1:] == ["ExecStartPre=", "ExecStartPre=/usr/bin/ssh-keygen -A", "ExecStartPre=/usr/sbin/sshd -t"]


def test_up_authorizes_every_host_with_sshd_and_names_the_rest(monkeypatch, capsys):
    import importlib.util
    from labctl_lib import hosts, services
    spec = importlib.util.spec_from_file_location("labctl", os.path.join(common.LAB, "labctl.py"))
    labctl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(labctl)
    for module, name, value in [(hosts, "check_memory", lambda wanted: None), (image, "build_image", lambda os_name: None),
                                (services, "start_services", lambda os_name: None), (hosts, "lab_hosts", lambda: []),
                                (hosts, "start_host", lambda name, os_name: True), (hosts, "start_lb", lambda os_name: True),
                                (hosts, "wait_booted", lambda name: "running"), (hosts, "write_inventory", lambda *a: None),
                                (hosts, "container_address", lambda name: "10.89.77.5"),
                                (ssh, "has_sshd", lambda name: name != "lab-lb")]:
        monkeypatch.setattr(module, name, value)
    authorized = []
    monkeypatch.setattr(ssh, "authorize", authorized.append)
    labctl.up(2, "debian12")
    assert authorized == [["lab-1", "lab-2"]]
    out = capsys.readouterr().out
    assert "lab-lb has no sshd (made from an older lab image): recreate it for SSH (make lab-down lab-up)" in out
    assert "SSH as root with lab/.state/ssh/id_ed25519: lab-1 lab-2" in out
