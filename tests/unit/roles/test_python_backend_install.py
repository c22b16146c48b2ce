"""triton_server's backends: the wheel's python backend tree, the stub for the host's Python and the onnxruntime
backend, in the host_files call that also installs the unit, and the failure that names a wheel without a stub
for that Python.

The very block of roles/triton_server/tasks/configure.yml runs under ansible-playbook on this machine (-c local)
against a wheel laid out in a temporary directory the way nvidia-pytriton ships it. Its unit, key and drop-in
entries are left out (extra vars: __triton_server_files=[]); tests/unit/roles/test_native_unit_variants.py and
molecule cover those.
"""

import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "triton_server")
BLOCK = "Install the backends, the unit, the key and logind's drop-in"
RESTART = "Restart Triton when its backends, unit or key changed"


def play(tmp_path, **variables):
    with open(os.path.join(ROLE, "tasks", "configure.yml")) as handle:
        tasks = [t for t in yaml.safe_load(handle) if t["name"] in (BLOCK, RESTART)]
    # The block's file lookup resolves against the play's files/, as it does against the role's.
    files = tmp_path / "files" / "backends" / "onnxruntime"
    files.mkdir(parents=True, exist_ok=True)
    with open(os.path.join(ROLE, "files", "backends", "onnxruntime", "model.py")) as handle:
        (files / "model.py").write_text(handle.read())
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump([{
        "name": "python backend", "hosts": "localhost", "gather_facts": False, "tasks": tasks,
        "handlers": [{"name": "Restart tritonserver", "ansible.builtin.debug": {"msg": "restart"}},
                     {"name": "Note the step", "ansible.builtin.debug": {"msg": "noted"},
                      "listen": "triton_server configure changed"}]}]))
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(dict(
        variables, __triton_server_files=[], triton_server_install_method="native", _triton_server_venv_pending=False,
        _triton_server_check_mode=False,
        _triton_server_logind_dropin="/etc/systemd/system/systemd-logind.service.d/x.conf")))
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", "@%s" % extra, str(path)],
                          capture_output=True, text=True, check=False, timeout=300)
    return proc, " ".join(proc.stdout.split())


@pytest.fixture
def wheel(tmp_path):
    """A pytriton tree as the wheel installs it, with a stub built for Python 3.11 only."""
    root = tmp_path / "pytriton"
    (root / "backends" / "python").mkdir(parents=True)
    (root / "backends" / "python" / "libtriton_python.so").write_bytes(b"\x7fELF" + os.urandom(256))
    (root / "backends" / "python" / "triton_python_backend_utils.py").write_text("TRITONSERVER = 1\n")
    (root / "python_backend_stubs" / "3.11").mkdir(parents=True)
    (root / "python_backend_stubs" / "3.11" / "triton_python_backend_stub").write_bytes(b"\x7fELF-stub")
    backends = tmp_path / "backends"
    (backends / "onnxruntime").mkdir(parents=True)
    return root, backends


def variables(wheel, version):
    root, backends = wheel
    return {"_triton_server_pytriton": str(root), "_triton_server_python_version": version,
            "_triton_server_stub": "%s/python_backend_stubs/%s/triton_python_backend_stub" % (root, version),
            "triton_server_backend_dir": str(backends), "ansible_python_interpreter": sys.executable}


def test_installs_the_backend_then_changes_nothing(tmp_path, wheel):
    root, backends = wheel
    proc, out = play(tmp_path, **variables(wheel, "3.11"))
    assert proc.returncode == 0 and "changed=2" in out and "RUNNING HANDLER [Restart tritonserver]" in out, out[-2000:]
    python = backends / "python"
    assert (python / "libtriton_python.so").read_bytes() == (root / "backends" / "python" / "libtriton_python.so").read_bytes()
    assert (python / "triton_python_backend_utils.py").read_text() == "TRITONSERVER = 1\n"
    assert (python / "triton_python_backend_stub").read_bytes() == b"\x7fELF-stub"
    assert stat.S_IMODE(os.stat(python / "triton_python_backend_stub").st_mode) == 0o755
    assert "class TritonPythonModel" in (backends / "onnxruntime" / "model.py").read_text()
    again, out = play(tmp_path, **variables(wheel, "3.11"))
    assert again.returncode == 0 and "changed=0" in out, out[-2000:]


def test_a_wheel_without_a_stub_for_the_hosts_python_is_named(tmp_path, wheel):
    proc, out = play(tmp_path, **variables(wheel, "3.13"))
    assert proc.returncode == 2, out[-2000:]
    assert "nvidia-pytriton has no python backend stub for Python 3.13; use a host Python the wheel supports" in out
    assert not (wheel[1] / "onnxruntime" / "model.py").exists()


def test_any_other_failure_is_reported_as_host_files_gave_it(tmp_path, wheel):
    (wheel[1] / "onnxruntime").rmdir()
    proc, out = play(tmp_path, **variables(wheel, "3.11"))
    assert proc.returncode == 2, out[-2000:]
    assert "its directory %s does not exist" % (wheel[1] / "onnxruntime") in out
    assert "no python backend stub" not in out
