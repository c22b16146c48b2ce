"""Hostile model names, given to every module that takes one, through AnsibleModule. Each is refused
with a message naming the option, before anything is written (the whole tree around the repository is
compared before and after) or any server is contacted."""

import importlib
import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

NOBODY_LISTENS = "http://127.0.0.1:9"  # the discard port: a module that got this far would fail differently

CONFIG = {"backend": "python", "max_batch_size": 0,
          "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [1]}],
          "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}]}


def run(module, capsys, args, check=False):
    main = importlib.import_module("ansible_collections.aiops.triton.plugins.modules." + module).main
    with patch_module_args(dict(args, _ansible_check_mode=check)):
        with pytest.raises(SystemExit):
            main()
    return json.loads(capsys.readouterr().out)


def snapshot(top):
    """Every path under ``top`` with its type, size and mtime: any write shows."""
    seen = {}
    for base, dirs, files in os.walk(str(top)):
        for entry in dirs + files:
            full = os.path.join(base, entry)
            info = os.lstat(full)
            seen[os.path.relpath(full, str(top))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return seen


@pytest.fixture
def tree(tmp_path):
    """<top>/outside/file, <top>/a/b/repo/existing/config.pbtxt: a repository with neighbours to spoil."""
    top = tmp_path / "top"
    repo = top / "a" / "b" / "repo"
    (repo / "existing").mkdir(parents=True)
    (repo / "existing" / "config.pbtxt").write_text('name: "existing"\n')
    (top / "outside").mkdir()
    (top / "outside" / "file").write_text("keep\n")
    return top, repo


def hostile(top):
    return [
        ("../../x", "must not contain '/'"),
        ("../../../outside", "must not contain '/'"),
        (str(top / "outside" / "abs"), "must not contain '/'"),  # an absolute path replaces the repository in os.path.join
        ("a/b", "must not contain '/'"),
        ("x\nname: \"forged\"", "control characters"),
        ("a\x00b", "NUL byte"),
        (".", "the repository itself or its parent"),
        ("..", "the repository itself or its parent"),
        ("", "must not be empty"),
        (" existing", "whitespace"),
        (".aiops-staging", "must not start with '.'"),
    ]


@pytest.mark.parametrize("check", [False, True], ids=["run", "check_mode"])
def test_triton_model_config_refuses_hostile_names_and_writes_nothing(capsys, tree, check):
    top, repo = tree
    before = snapshot(top)
    for name, words in hostile(top):
        result = run("triton_model_config", capsys, {"repository": str(repo), "name": name, "config": CONFIG}, check=check)
        assert result.get("failed") is True, (name, result)
        assert result["msg"].startswith("name: model name %r is not a usable Triton model directory name: " % name), result["msg"]
        assert words in result["msg"]
        assert snapshot(top) == before, name


def test_triton_model_config_refuses_a_hostile_name_inside_the_config(capsys):
    # validate_only takes the name from the config; it is checked the same way.
    result = run("triton_model_config", capsys, {"config": dict(CONFIG, name="../x"), "validate_only": True})
    assert result["failed"] is True
    assert result["msg"].startswith("name: model name '../x' is not a usable Triton model directory name")


def test_triton_model_refuses_hostile_names_before_calling_triton(capsys, tree):
    top, _repo = tree
    for name, words in hostile(top):
        result = run("triton_model", capsys, {"name": name, "url": NOBODY_LISTENS, "timeout": 2})
        assert result.get("failed") is True, (name, result)
        assert result["msg"].startswith("name: model name %r is not a usable" % name) and words in result["msg"], result["msg"]


def test_triton_verify_refuses_hostile_names_before_calling_triton(capsys, tree):
    top, _repo = tree
    for name, words in hostile(top):
        models = [{"name": "fine"}, {"name": name}]
        result = run("triton_verify", capsys, {"models": models, "url": NOBODY_LISTENS, "ready_timeout": 1, "timeout": 2})
        assert result.get("failed") is True, (name, result)
        assert result["msg"].startswith("models[1].name: model name %r is not a usable" % name) and words in result["msg"], result["msg"]
        assert result["failures"] == [result["msg"]]


@pytest.mark.parametrize("state", ["present", "absent"])
def test_s3_model_sync_refuses_hostile_names_and_touches_nothing(capsys, tree, state):
    top, repo = tree
    before = snapshot(top)
    for name, words in hostile(top):
        args = {"bucket": "b", "model": name, "repository": str(repo), "state": state, "endpoint_url": NOBODY_LISTENS,
                "access_key": "AKIAEXAMPLEKEY", "secret_key": "not-a-secret"}
        args["latest" if state == "present" else "versions"] = 1 if state == "present" else [1]
        result = run("s3_model_sync", capsys, args)
        assert result.get("failed") is True, (name, result)
        assert result["msg"].startswith("model: model name %r is not a usable" % name) and words in result["msg"], result["msg"]
        assert snapshot(top) == before, name
