"""nvidia_runtime_config on real files: change, no-change, check mode, diff, backup, refusal."""

import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.modules import nvidia_runtime_config

USER_DAEMON_JSON = '{\n  "log-driver": "journald",\n  "data-root": "/srv/docker"\n}\n'


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            nvidia_runtime_config.main()
    return json.loads(capsys.readouterr().out)


def test_docker_merge_then_no_change(capsys, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(USER_DAEMON_JSON)
    path.chmod(0o600)
    first = run_module(capsys, runtime="docker", path=str(path), enable_cdi=True, _ansible_diff=True)
    assert first["changed"] is True
    assert first["diff"]["before"] == USER_DAEMON_JSON
    data = json.loads(path.read_text())
    assert data["log-driver"] == "journald" and data["data-root"] == "/srv/docker"
    assert data["runtimes"]["nvidia"]["path"] == "/usr/bin/nvidia-container-runtime"
    assert data["features"]["cdi"] is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the user's mode survives
    second = run_module(capsys, runtime="docker", path=str(path), enable_cdi=True, _ansible_diff=True)
    assert second["changed"] is False
    assert "diff" not in second


def test_check_mode_reports_but_does_not_write(capsys, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(USER_DAEMON_JSON)
    result = run_module(capsys, runtime="docker", path=str(path), set_as_default=True, _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True
    assert json.loads(result["diff"]["after"])["default-runtime"] == "nvidia"
    assert path.read_text() == USER_DAEMON_JSON
    assert os.listdir(str(tmp_path)) == ["daemon.json"]


def test_missing_file_is_created_with_0644(capsys, tmp_path):
    path = tmp_path / "containerd" / "config.toml"
    result = run_module(capsys, runtime="containerd", path=str(path))
    assert result["changed"] is True
    assert path.read_text().startswith("version = 2\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_backup_keeps_previous_file(capsys, tmp_path):
    path = tmp_path / "containers.conf"
    path.write_text('[engine]\nruntime = "runc"\n')
    result = run_module(capsys, runtime="podman", path=str(path), backup=True)
    assert result["changed"] is True
    with open(result["backup_file"]) as handle:
        assert handle.read() == '[engine]\nruntime = "runc"\n'
    assert 'nvidia = ["/usr/bin/nvidia-container-runtime"]' in path.read_text()


def test_unmergeable_file_fails_without_touching_it(capsys, tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text("{broken")
    result = run_module(capsys, runtime="docker", path=str(path))
    assert result["failed"] is True
    assert result["msg"].startswith("cannot merge the nvidia runtime into %s: daemon.json is not valid JSON" % path)
    assert path.read_text() == "{broken"
