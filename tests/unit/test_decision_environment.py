"""decision-environment.yml (make de): ansible-builder accepts it and its Containerfile installs what the rulebook
needs on top of the execution environment - ansible-rulebook at the checkout's pin, Java 17 through the EE's apt
shim, JAVA_HOME - and fails the build when ansible-rulebook cannot start. Building it is `make de` (podman)."""

import os
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_ansible_builder_creates_a_context_that_installs_the_rulebook_and_java(tmp_path):
    builder = shutil.which("ansible-builder") or os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    proc = subprocess.run([builder, "create", "-f", os.path.join(ROOT, "decision-environment.yml"), "-c", str(tmp_path / "ctx"),
                           "--output-filename", "Containerfile"], capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (tmp_path / "ctx" / "Containerfile").read_text()
    assert 'ARG PKGMGR="/usr/local/sbin/apt-pkgmgr"' in containerfile
    assert "ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64" in containerfile
    assert containerfile.rstrip().count("RUN ansible-rulebook --version") == 1
    with open(os.path.join(ROOT, "requirements", "eda.txt")) as handle:
        pins = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    copied = (tmp_path / "ctx" / "_build" / "requirements.txt").read_text()
    assert pins == ["ansible-rulebook==1.3.2"] and pins[0] in copied
    assert "openjdk-17-jre-headless [platform:dpkg]" in (tmp_path / "ctx" / "_build" / "bindep.txt").read_text()


def test_the_de_builds_on_the_collections_ee():
    with open(os.path.join(ROOT, "decision-environment.yml")) as handle:
        de = yaml.safe_load(handle)
    assert de["version"] == 3 and de["images"]["base_image"]["name"].startswith("localhost/aiops-triton-ee:")
    with open(os.path.join(ROOT, "Makefile")) as handle:
        make = handle.read()
    # make de builds it FROM the EE make ee just built (the version tag), not whatever :latest holds
    assert "--build-arg EE_BASE_IMAGE=$(EE_IMAGE)" in make


def test_de_check_refuses_without_lab_before_touching_anything(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.run([os.path.join(ROOT, "tools", "de_check.sh")], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "usage:" in proc.stderr
    assert list(tmp_path.iterdir()) == []
