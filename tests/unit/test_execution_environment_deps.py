"""The collection's execution-environment dependencies (meta/execution-environment.yml -> requirements.txt,
bindep.txt) are what ansible-builder finds when the collection is installed, and pin the same versions the
checkout's own requirement files do (one place for a version)."""

import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pins(path):
    with open(path) as handle:
        return dict(re.match(r"([A-Za-z0-9_.\-\[\]]+)==(\S+)", line).groups() for line in handle
                    if re.match(r"[A-Za-z0-9_.\-\[\]]+==", line))


def test_ansible_builder_reads_the_collections_dependencies(tmp_path):
    link = tmp_path / "ansible_collections" / "aiops" / "triton"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT)
    builder = os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    out = subprocess.run([builder, "introspect", "--sanitize", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    found = yaml.safe_load(out.split("\n", 1)[1])
    assert [line.split("  #")[0] for line in found["python"]] == ["%s==%s" % item for item in pins(os.path.join(ROOT, "requirements.txt")).items()]
    assert "openssh-client [platform:dpkg]  # from collection aiops.triton" in found["system"]


def test_the_ee_pins_are_the_checkouts_pins():
    elsewhere = {}
    for folder in ("requirements", os.path.join("roles", "triton_server", "files")):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(".txt"):
                for package, version in pins(os.path.join(ROOT, folder, name)).items():
                    elsewhere.setdefault(package.split("[")[0].lower(), set()).add(version)
    ee = pins(os.path.join(ROOT, "requirements.txt"))
    assert ee, "requirements.txt pins nothing"
    for package, version in ee.items():
        assert elsewhere.get(package.split("[")[0].lower()) == {version}, (package, version, elsewhere.get(package.split("[")[0].lower()))
