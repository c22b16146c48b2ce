"""Argument handling of aiops.triton.s3_model_sync, run as Ansible runs it: a process given an args file."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MODULE = os.path.join(ROOT, "plugins", "modules", "s3_model_sync.py")


def run(tmp_path, check=False, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check)}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, ".collection")))
    return json.loads(proc.stdout)


@pytest.mark.parametrize("args,message", [
    ({"versions": [1], "latest": 1}, "mutually exclusive: versions|latest"),
    ({}, "state is present but any of the following are missing: versions, latest"),
    ({"latest": 0}, "latest must be >= 1"),
    ({"latest": 1, "keep_versions": -1}, "keep_versions must be >= 0"),
    ({"latest": 1, "model": "../etc"}, "not a usable Triton model directory name"),
    ({"latest": 1, "model": ".hidden"}, "not a usable Triton model directory name"),
    ({"latest": 1, "access_key": "AKIAEXAMPLEKEY"}, "parameters are required together: access_key, secret_key"),
    ({"state": "absent", "latest": 1}, "latest is only for state=present"),
])
def test_bad_arguments_fail_with_a_message(tmp_path, args, message):
    params = dict({"bucket": "b", "model": "m", "repository": str(tmp_path)}, **args)
    result = run(tmp_path, **params)
    assert result["failed"] is True and message in result["msg"]


def test_state_absent_needs_no_s3_and_honours_check_mode(tmp_path):
    repo = tmp_path / "repo"
    for version in ("1", "2"):
        (repo / "m" / version).mkdir(parents=True)
    # An endpoint nobody listens on: absent must not touch S3 at all.
    params = {"bucket": "b", "model": "m", "repository": str(repo), "state": "absent", "versions": [2],
              "endpoint_url": "http://127.0.0.1:9"}
    check = run(tmp_path, check=True, **params)
    assert (check["changed"], check["versions_removed"], check["versions_kept"]) == (True, [2], [1])
    assert (repo / "m" / "2").is_dir()
    real = run(tmp_path, **params)
    assert real["changed"] is True and not (repo / "m" / "2").exists() and (repo / "m" / "1").is_dir()
    assert run(tmp_path, **params)["changed"] is False
