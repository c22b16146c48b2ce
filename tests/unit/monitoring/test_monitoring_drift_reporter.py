"""roles/triton_monitoring/files/triton_model_drift.py without a server (the integration tests run it
against a real Triton): rendering, pins, key file, and its refusals."""

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

import host_lib
from monitoring_render import ROLE

SCRIPT = os.path.join(ROLE, "files", "triton_model_drift.py")
spec = importlib.util.spec_from_file_location("triton_model_drift", SCRIPT)
drift = importlib.util.module_from_spec(spec)
spec.loader.exec_module(drift)


def samples(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_served_and_pinned_versions_are_paired():
    text = drift.render(True, {"m": {"1", "2"}, "extra": {"1"}}, {"m": {"2", "3"}}, 1700000000)
    assert samples(text) == [
        "aiops_triton_server_ready 1",
        "aiops_triton_drift_index_success 1",
        "aiops_triton_drift_last_run_timestamp_seconds 1700000000",
        'aiops_triton_model_version{model="extra",version="1",served="true",pinned="false"} 1',
        'aiops_triton_model_version{model="m",version="1",served="true",pinned="false"} 1',
        'aiops_triton_model_version{model="m",version="2",served="true",pinned="true"} 1',
        'aiops_triton_model_version{model="m",version="3",served="false",pinned="true"} 1',
    ]


def test_latest_n_pins_the_newest_served_versions():
    text = drift.render(True, {"m": {"3", "10", "9"}}, {"m": 2}, 0)
    assert samples(text)[3:] == ['aiops_triton_model_version{model="m",version="3",served="true",pinned="false"} 1',
                                 'aiops_triton_model_version{model="m",version="9",served="true",pinned="true"} 1',
                                 'aiops_triton_model_version{model="m",version="10",served="true",pinned="true"} 1']


def test_pins_file_accepts_lists_and_counts(tmp_path):
    pins = tmp_path / "pins.json"
    pins.write_text(json.dumps({"a": [1, "2"], "b": 3}))
    assert drift.read_pins(str(pins)) == {"a": {"1", "2"}, "b": 3}


def test_versions_sort_numerically():
    text = drift.render(True, {"m": {"10", "9"}}, {"m": {"9", "10"}}, 0)
    assert [line.split('version="')[1].split('"')[0] for line in samples(text)[3:]] == ["9", "10"]


def test_unknown_index_writes_no_version_series():
    text = drift.render(False, None, {"m": {"1"}}, 0)
    assert samples(text) == ["aiops_triton_server_ready 0", "aiops_triton_drift_index_success 0",
                             "aiops_triton_drift_last_run_timestamp_seconds 0"]


def test_label_values_are_escaped():
    text = drift.render(True, {'a"b\\c': {"1"}}, {}, 0)
    assert 'model="a\\"b\\\\c"' in text


def test_key_is_read_from_the_server_roles_env_file(tmp_path):
    env = tmp_path / "tritonserver.env"
    env.write_text("OTHER=x\nTRITON_API_KEY=s3cret-key=with-equals\n")
    assert drift.read_key(str(env)) == "s3cret-key=with-equals"
    assert drift.read_key(str(tmp_path / "missing")) is None


# The host's python3, as the unit runs it: no Ansible there (a venv python finds ansible_collections).
HOST_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The script beside its lib/ (the collection's fs.py under its collection path), as drift_reporter.yml lays it out."""
    base = str(tmp_path_factory.mktemp("drift"))
    host_lib.lay_out("triton_monitoring", base)
    shutil.copy(SCRIPT, base)
    return os.path.join(base, os.path.basename(SCRIPT))


@pytest.fixture
def run(installed):
    def run(*args):
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        return subprocess.run([HOST_PYTHON, installed] + list(args), capture_output=True, text=True, env=env, check=False)
    return run


def test_the_role_installs_every_module_util_the_script_imports():
    needed = host_lib.needed_module_utils(SCRIPT)
    assert "fs.py" in needed, needed
    entries = host_lib.module_util_entries("triton_monitoring")
    assert sorted(entries) == needed
    for name, entry in entries.items():
        assert host_lib.module_util_source("triton_monitoring", entry) == os.path.join(host_lib.MODULE_UTILS, name)


def test_bad_pins_are_refused_and_nothing_is_written(run, tmp_path):
    pins = tmp_path / "pins.json"
    pins.write_text(json.dumps({"m": "1"}))
    out = tmp_path / "out.prom"
    proc = run("--url", "http://127.0.0.1:9", "--pins", str(pins), "--output", str(out))
    assert proc.returncode == 2
    assert "expected a JSON object of model name -> list of versions" in proc.stderr
    assert not out.exists()


def test_output_must_be_a_prom_file(run, tmp_path):
    pins = tmp_path / "pins.json"
    pins.write_text("{}")
    proc = run("--url", "http://127.0.0.1:9", "--pins", str(pins), "--output", str(tmp_path / "out.txt"))
    assert proc.returncode == 2
    assert "--output must end in .prom" in proc.stderr
    assert os.listdir(str(tmp_path)) == ["pins.json"]


def test_unreachable_triton_is_reported_not_ready(run, tmp_path):
    pins = tmp_path / "pins.json"
    pins.write_text(json.dumps({"m": [1]}))
    out = tmp_path / "out.prom"
    proc = run("--url", "http://127.0.0.1:9", "--pins", str(pins), "--output", str(out), "--timeout", "2")
    assert proc.returncode == 0, proc.stderr
    assert samples(out.read_text())[:2] == ["aiops_triton_server_ready 0", "aiops_triton_drift_index_success 0"]
    # Written by the collection's fs.write_atomic: readable by node_exporter (not mkstemp's 0600), no temp file left.
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o644
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith(".")] == []


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", '{"m": 0}', '{"m": true}'])
def test_malformed_pins_are_refused(run, tmp_path, content):
    pins = tmp_path / "pins.json"
    pins.write_text(content)
    proc = run("--url", "http://127.0.0.1:9", "--pins", str(pins), "--output", str(tmp_path / "o.prom"))
    assert proc.returncode == 2 and "cannot read pins" in proc.stderr
