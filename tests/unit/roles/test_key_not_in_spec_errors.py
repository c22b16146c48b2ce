"""A failed argument check never prints the repository-API key. Ansible prints an entry point's defaults, templated,
when its argument check fails (argument_spec_data); a default that templated triton_server_api_key printed the key,
for example after a mistyped number. The roles resolve the key after the check instead."""

import glob
import os
import re
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SECRET = re.compile(r"\b\w*(api_key|secret_key|password|session_token)\b")
KEY = "k3y-" + "9f8e7d6c5b4a" * 4


@pytest.mark.parametrize("role, entry, bad", [
    ("triton_models", "health", {"triton_models_health_retries": "not-a-number"}),
    ("triton_models", "main", {"triton_models_prune": "not-a-bool"}),
    ("preflight", "main", {"preflight_min_free_mb": "many"}),
])
def test_a_failed_argument_check_does_not_print_the_key(tmp_path, role, entry, bad):
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "ansible.builtin.include_role": {"name": "aiops.triton.%s" % role, "tasks_from": entry},
        "vars": dict(bad, triton_server_api_key=KEY)}]}]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(["ansible-playbook", "-vvv", "-i", "localhost,", "-c", "local", str(path)],
                          capture_output=True, text=True, check=False, timeout=120, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "argument_spec_data" in out, out[-3000:]  # the check failed, and said why
    assert KEY not in out


def test_no_argument_spec_default_templates_a_secret():
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path) as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        for entry, spec in specs.items():
            for name, option in (spec.get("options") or {}).items():
                default = str(option.get("default", ""))
                assert "{{" not in default or not SECRET.search(default), (path, entry, name, default)
