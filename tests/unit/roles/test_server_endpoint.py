"""Where Triton runs is worked out once: triton_server's endpoint fact, read by triton_models, triton_rolling and
the drift reporter, for wildcard and specific binds (IPv4 and IPv6), through ansible-playbook."""

import json
import os
import re
import subprocess

import pytest
import yaml

from lb_harness import ROOT, write_inventory

PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "render_endpoint.yml")
HOSTS = {
    "wild": {},
    "v4": {"triton_server_http_address": "10.1.2.3", "triton_server_grpc_address": "10.1.2.4",
           "triton_server_http_port": 9000, "triton_server_metrics_address": "10.1.2.5"},
    "v6wild": {"triton_server_address": "::"},
    "v6": {"triton_server_address": "fd00::5", "triton_server_config_dir": "/etc/triton-b",
           "triton_server_api_key_header": "x-key", "triton_server_tools_venv": "/opt/tools",
           "triton_server_model_repository": "/srv/models"},
    # set by an earlier triton_server run in the same play run: the readers take it as it is
    "preset": {"triton_server_endpoint": {"http_url": "http://192.0.2.9:8100", "grpc_target": "192.0.2.9:8101",
                                          "repository": "/r", "api_key_header": "h", "tools_python": "/p/bin/python",
                                          "unit": "triton-b.service", "key_file": "/k.env"}},
}


@pytest.fixture(scope="module")
def resolved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("endpoint")
    inventory = write_inventory(folder / "hosts.yml", HOSTS)
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), PLAYBOOK, "-e", json.dumps({"out_dir": str(folder)})],
                          capture_output=True, text=True, check=False, timeout=180, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return dict((host, (json.loads((folder / (host + ".json")).read_text()),
                        (folder / (host + ".drift.service")).read_text())) for host in HOSTS)


def exec_args(unit):
    line = [text for text in unit.splitlines() if text.startswith("ExecStart=")][0]
    words = line.split()
    return dict(zip(words[2::2], words[3::2]))


def test_a_wildcard_bind_is_reached_on_loopback_as_before(resolved):
    facts, unit = resolved["wild"]
    endpoint = facts["endpoint"]
    assert endpoint["http_url"] == "http://127.0.0.1:8000"
    assert endpoint["grpc_target"] == "127.0.0.1:8001"
    assert endpoint["metrics_url"] == "http://127.0.0.1:8002/metrics"
    assert (endpoint["http_address"], endpoint["http_port"], endpoint["metrics_port"]) == ("0.0.0.0", 8000, 8002)
    assert endpoint["unit"] == "tritonserver.service" and endpoint["method"] == "native"
    assert facts["models"] == {"url": "http://127.0.0.1:8000", "grpc_url": "127.0.0.1:8001",
                               "repository": "/var/lib/triton/models", "api_key_header": "triton-admin-key",
                               "python": "/opt/aiops-triton/venv/bin/python"}
    assert facts["rolling"] == {"url": "http://127.0.0.1:8000", "unit": "tritonserver.service"}
    # the drift unit exactly as the literals rendered it before the fact existed
    assert "After=tritonserver.service\n" in unit
    assert exec_args(unit)["--url"] == "http://127.0.0.1:8000"
    assert exec_args(unit)["--key-file"] == "/etc/tritonserver/tritonserver.env"
    assert exec_args(unit)["--key-header"] == "triton-admin-key"
    assert "api_key" not in json.dumps(endpoint).replace("api_key_header", "")


def test_a_server_bound_to_one_address_is_reached_there_by_every_reader(resolved):
    facts, unit = resolved["v4"]
    assert facts["endpoint"]["http_url"] == "http://10.1.2.3:9000"
    assert facts["endpoint"]["grpc_target"] == "10.1.2.4:8001"
    assert facts["endpoint"]["metrics_url"] == "http://10.1.2.5:8002/metrics"
    assert facts["models"]["url"] == facts["rolling"]["url"] == exec_args(unit)["--url"] == "http://10.1.2.3:9000"
    assert facts["models"]["grpc_url"] == "10.1.2.4:8001"


def test_ipv6_binds_are_bracketed(resolved):
    assert resolved["v6wild"][0]["endpoint"]["http_url"] == "http://[::1]:8000"
    assert resolved["v6wild"][0]["endpoint"]["grpc_target"] == "[::1]:8001"
    facts, unit = resolved["v6"]
    assert facts["models"]["url"] == "http://[fd00::5]:8000"
    assert facts["models"]["grpc_url"] == "[fd00::5]:8001"
    assert facts["models"]["repository"] == "/srv/models"
    assert facts["models"]["python"] == "/opt/tools/bin/python"
    assert exec_args(unit)["--key-file"] == "/etc/triton-b/tritonserver.env"
    assert exec_args(unit)["--key-header"] == facts["models"]["api_key_header"] == "x-key"


def test_a_fact_already_set_is_read_not_worked_out_again(resolved):
    facts, unit = resolved["preset"]
    assert facts["models"]["url"] == facts["rolling"]["url"] == "http://192.0.2.9:8100"
    assert facts["rolling"]["unit"] == "triton-b.service"
    assert "After=triton-b.service\n" in unit
    assert exec_args(unit)["--key-file"] == "/k.env"


# --- static: no reader works out where Triton runs by itself -----------------------------------------------
READERS = {"triton_models": ("triton_models_url", "triton_models_grpc_url", "triton_models_repository",
                             "triton_models_api_key_header", "triton_models_python"),
           "triton_rolling": ("triton_rolling_url", "_triton_rolling_unit", "_triton_rolling_not_ready")}


def _task_text(role, name, seen=None):
    """A task file's text with the files it imports or includes in the same role."""
    seen = set() if seen is None else seen
    path = os.path.join(ROOT, "roles", role, "tasks", name if name.endswith(".yml") else name + ".yml")
    if path in seen or not os.path.exists(path):
        return ""
    seen.add(path)
    with open(path) as handle:
        text = handle.read()
    for other in re.findall(r"(?:import|include)_tasks:\s*(?:\n\s+file:\s*)?\"?([\w{}. ]+\.yml)", text):
        if "{{" in other:  # operation_{{ ... }}.yml: every operation file
            pattern = re.compile(re.escape(other.split("{{")[0]) + r"\w+\.yml$")
            for candidate in os.listdir(os.path.dirname(path)):
                if pattern.match(candidate):
                    text += _task_text(role, candidate, seen)
        else:
            text += _task_text(role, other, seen)
    return text


def _entry_points(role):
    found = {"main"}
    for folder in ("roles", "playbooks", "molecule", os.path.join("tests", "integration")):
        for base, _dirs, files in os.walk(os.path.join(ROOT, folder)):
            for file_name in files:
                if file_name.endswith(".yml"):
                    with open(os.path.join(base, file_name)) as handle:
                        text = handle.read()
                    found.update(re.findall(r"name: aiops\.triton\.%s\n\s+tasks_from: ([\w.]+)" % role, text))
    return sorted(name[:-4] if name.endswith(".yml") else name for name in found)


@pytest.mark.parametrize("role", sorted(READERS))
def test_every_entry_point_that_reads_the_endpoint_sets_it_first(role):
    readers = []
    for entry in _entry_points(role):
        if any(name in _task_text(role, entry) for name in READERS[role]):
            readers.append(entry)
            with open(os.path.join(ROOT, "roles", role, "tasks", entry + ".yml")) as handle:
                tasks = yaml.safe_load(handle)
            assert tasks[0].get("ansible.builtin.import_tasks") == "server_endpoint.yml", (role, entry)
    assert "main" in readers


def test_no_role_reads_another_roles_defaults_or_vars():
    offenders = []
    for base, _dirs, files in os.walk(os.path.join(ROOT, "roles")):
        for file_name in files:
            path = os.path.join(base, file_name)
            with open(path, errors="replace") as handle:
                text = handle.read()
            role = os.path.relpath(path, os.path.join(ROOT, "roles")).split(os.sep)[0]
            for other in re.findall(r"(\w+)/(?:defaults|vars)/main\.yml", text):
                if other != role:
                    offenders.append("%s reads %s" % (os.path.relpath(path, ROOT), other))
    assert not offenders, offenders
