"""execution-environment.yml (make ee): pins the checkout's ansible-core, and tools/ee/apt-pkgmgr turns
ansible-builder's dnf-style package manager calls into apt-get calls (apt-get is recorded, not run); the EE scripts
refuse a call they cannot read before touching anything."""

import os
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKGMGR = os.path.join(ROOT, "tools", "ee", "apt-pkgmgr")


def test_ee_pins_the_checkouts_ansible_core():
    with open(os.path.join(ROOT, "execution-environment.yml")) as handle:
        ee = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "requirements", "controller.txt")) as handle:
        core = [line.strip() for line in handle if line.startswith("ansible-core==")]
    assert ee["version"] == 3
    assert [ee["dependencies"]["ansible_core"]["package_pip"]] == core
    assert ee["options"]["package_manager_path"] == "/usr/local/sbin/apt-pkgmgr"


def run_pkgmgr(tmp_path, *args):
    """apt-pkgmgr with an apt-get on PATH that records its arguments."""
    log = tmp_path / "apt-get.log"
    fake = tmp_path / "bin" / "apt-get"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text('#!/bin/sh\necho "$*" >> "%s"\n' % log)
    fake.chmod(0o755)
    lists = tmp_path / "lists"
    lists.mkdir(exist_ok=True)
    (lists / "deb.debian.org_Packages").write_text("")
    env = dict(os.environ, PATH="%s:%s" % (fake.parent, os.environ["PATH"]), APT_PKGMGR_LISTS=str(lists))
    proc = subprocess.run([PKGMGR] + list(args), env=env, capture_output=True, text=True, check=False)
    return proc, log.read_text().splitlines() if log.exists() else []


def test_install_drops_dnf_options_and_installs_with_apt(tmp_path):
    proc, calls = run_pkgmgr(tmp_path, "install", "-y", "--nodocs", "--setopt", "install_weak_deps=0", "openssh-client", "python3-pip")
    assert proc.returncode == 0, proc.stderr
    assert calls == ["update -qq", "install -y -qq --no-install-recommends openssh-client python3-pip"]


def test_install_of_nothing_does_nothing(tmp_path):
    proc, calls = run_pkgmgr(tmp_path, "install", "-y")
    assert proc.returncode == 0 and calls == []


def test_clean_all_cleans_apts_cache_and_lists(tmp_path):
    proc, calls = run_pkgmgr(tmp_path, "clean", "all")
    assert proc.returncode == 0 and calls == ["clean"]
    assert list((tmp_path / "lists").iterdir()) == []


def test_an_unknown_call_fails_the_build(tmp_path):
    proc, calls = run_pkgmgr(tmp_path, "remove", "-y", "openssh-client")
    assert proc.returncode == 2 and calls == []
    assert "unsupported command 'remove'" in proc.stderr


def test_ee_check_refuses_an_unknown_mode_before_touching_anything(tmp_path):
    script = os.path.join(ROOT, "tools", "ee_check.sh")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("EE_IMAGE", None)
    proc = subprocess.run([script, "--labs"], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "usage:" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["inventories/lab"], ["no-such-dir", "roll-1"]], ids=["no host", "no inventory"])
def test_ee_site_refuses_an_inventory_without_hosts_before_touching_anything(tmp_path, args):
    """molecule/lb's no-change step names its inventory and hosts: a call without them is refused, not run against
    the lab's defaults."""
    script = os.path.join(ROOT, "tools", "ee_site.sh")
    env = dict(os.environ, TMPDIR=str(tmp_path), EE_IMAGE="localhost/none:0")
    proc = subprocess.run([script] + args, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 2 and "usage:" in proc.stderr
    assert list(tmp_path.iterdir()) == []
