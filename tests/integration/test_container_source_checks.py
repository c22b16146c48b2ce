"""The container method's image source is checked in the role's preflight, before any host changes: an
archive source needs an http(s) URL and the archive's sha256, and the digest (the image ID it must load)
is required either way. Runs the role's real preflight on the controller (playbooks/key_checks.yml)."""

import json
import os
import secrets
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHA = "sha256:" + "ab" * 32
GOOD = {"triton_server_install_method": "container", "triton_server_container_source": "archive",
        "triton_server_container_digest": SHA, "triton_server_container_archive_checksum": SHA,
        "triton_server_container_archive_url": "http://mirror.example/images/triton.oci-archive.tar"}

pytestmark = pytest.mark.integration


def preflight(**overrides):
    extra = dict(GOOD, triton_server_api_key=secrets.token_hex(32), **overrides)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), os.path.join(HERE, "playbooks", "key_checks.yml"),
         "-e", json.dumps(extra)],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc, proc.stdout + proc.stderr


def test_a_pinned_archive_passes():
    proc, out = preflight()
    assert "PAST-TRITON-SERVER" in out, out


@pytest.mark.parametrize("overrides", [
    {"triton_server_container_archive_url": ""},
    {"triton_server_container_archive_url": "file:///srv/triton.tar"},
    {"triton_server_container_archive_checksum": ""},
    {"triton_server_container_archive_checksum": "md5:0123456789abcdef0123456789abcdef"},
    {"triton_server_container_digest": ""},
    {"triton_server_container_source": "ftp"},
], ids=["no-url", "file-url", "no-checksum", "md5-checksum", "no-digest", "bad-source"])
def test_a_bad_source_stops_the_run_in_preflight(overrides):
    proc, out = preflight(**overrides)
    assert proc.returncode != 0, out
    assert "triton_server_install_method=container needs triton_server_container_digest" in out, out
    assert "the archive source needs" in out
    assert "PAST-TRITON-SERVER" not in out


def test_a_registry_source_needs_no_archive():
    proc, out = preflight(triton_server_container_source="registry", triton_server_container_archive_url="",
                          triton_server_container_archive_checksum="")
    assert "PAST-TRITON-SERVER" in out, out
