"""A placeholder or weak repository-API key stops the run in preflight, before any host changes, with a
message saying how to generate a key and never showing the key; a generated key passes both checks.

Runs the real roles with ansible-playbook on the controller (tests/integration/playbooks/key_checks.yml).
"""

import os
import secrets
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VAULT = os.path.join(ROOT, "inventories", "production", "group_vars", "all", "vault.yml")

pytestmark = pytest.mark.integration


def run(key):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), os.path.join(HERE, "playbooks", "key_checks.yml"),
         "-e", "triton_server_api_key=%s" % key],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc, proc.stdout + proc.stderr


def shipped_placeholder():
    with open(VAULT) as handle:
        return yaml.safe_load(handle)["vault_triton_server_api_key"]


def test_the_shipped_placeholder_stops_the_run_in_preflight():
    key = shipped_placeholder()
    proc, out = run(key)
    assert proc.returncode != 0, out
    assert "triton_server_api_key (vault_triton_server_api_key in the example inventory) is refused" in out, out
    assert "the key is a placeholder (it contains 'changeme')" in out
    assert "openssl rand -hex 32" in out and "ansible-vault encrypt_string" in out
    assert "PAST-TRITON-SERVER" not in out and "TASK [aiops.triton.preflight" not in out
    assert key not in out


def test_a_low_entropy_key_stops_the_run_in_preflight():
    key = "abcdefghijklmnopqrstuvwxyz012345"
    proc, out = run(key)
    assert proc.returncode != 0, out
    assert "the key has too little entropy" in out, out
    assert "PAST-TRITON-SERVER" not in out
    assert key not in out


@pytest.mark.parametrize("key", ["change-me-to-a-long-random-key", "1234567890" * 4])
def test_the_preflight_role_refuses_on_its_own(key):
    """site.yml's first host play (roles/preflight) refuses too, before its other checks."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), os.path.join(HERE, "playbooks", "key_checks.yml"),
         "--start-at-task", "Assert the repository-API key is not a placeholder and not weak", "-e", "triton_server_api_key=%s" % key],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "TASK [aiops.triton.preflight : Assert the repository-API key is not a placeholder and not weak]" in out, out
    assert "is refused: the key " in out and "openssl rand -hex 32" in out
    assert "Assert the operating system is supported" not in out
    assert key not in out


def test_a_generated_key_passes_both_checks():
    proc, out = run(secrets.token_hex(32))
    assert "PAST-TRITON-SERVER" in out, out
    key_task = out.split("TASK [aiops.triton.preflight : Assert the repository-API key is not a placeholder and not weak]")[1]
    assert key_task.split("TASK [")[0].strip().splitlines()[-1] == "ok: [localhost]", out
