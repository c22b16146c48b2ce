"""host_files on real paths: create, no change, attributes, check mode, diff, validate, remote_src, trees, refusals."""

import hashlib
import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.modules import host_files


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            host_files.main()
    return json.loads(capsys.readouterr().out)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_creates_then_changes_nothing(capsys, tmp_path):
    conf = tmp_path / "etc" / "deep"
    unit = tmp_path / "etc" / "unit.service"
    args = dict(directories=[{"path": str(conf), "mode": "0750"}, {"path": str(tmp_path / "etc"), "mode": "0711"}],
                files=[{"dest": str(unit), "content": "[Service]\nExecStart=/bin/true\n", "mode": "0644"}])
    first = run_module(capsys, **args)
    assert first["changed"] is True
    assert first["changed_paths"] == [str(conf), str(tmp_path / "etc"), str(unit)]
    assert mode(conf) == 0o750 and mode(tmp_path / "etc") == 0o711 and mode(unit) == 0o644
    assert unit.read_text() == "[Service]\nExecStart=/bin/true\n"
    second = run_module(capsys, **args)
    assert second["changed"] is False and second["changed_paths"] == []


def test_mode_drift_is_fixed_and_named(capsys, tmp_path):
    unit = tmp_path / "unit"
    unit.write_text("x\n")
    unit.chmod(0o666)
    result = run_module(capsys, files=[{"dest": str(unit), "content": "x\n", "mode": "0644"}], _ansible_diff=True)
    assert result["changed_paths"] == [str(unit)]
    assert result["diff"][0]["before"]["mode"] == "0666" and result["diff"][0]["after"]["mode"] == "0644"
    assert mode(unit) == 0o644


def test_check_mode_reports_and_writes_nothing(capsys, tmp_path):
    unit = tmp_path / "unit"
    unit.write_text("old\n")
    new_dir = tmp_path / "new"
    result = run_module(capsys, directories=[{"path": str(new_dir)}],
                        files=[{"dest": str(unit), "content": "new\n"}, {"dest": str(new_dir / "f"), "content": "y"}],
                        _ansible_check_mode=True, _ansible_diff=True)
    assert result["changed"] is True
    assert result["changed_paths"] == [str(new_dir), str(unit), str(new_dir / "f")]
    assert unit.read_text() == "old\n" and not new_dir.exists()
    assert result["diff"][1]["before"] == "old\n" and result["diff"][1]["after"] == "new\n"


def test_secret_content_stays_out_of_the_answer(capsys, tmp_path):
    env = tmp_path / "env"
    result = run_module(capsys, files=[{"dest": str(env), "secret_content": "KEY=s3cr3t-value\n", "mode": "0600"}],
                        _ansible_diff=True)
    assert env.read_text() == "KEY=s3cr3t-value\n" and mode(env) == 0o600
    assert "s3cr3t-value" not in json.dumps(result)
    assert "not shown" in result["diff"][0]["after"]


def test_a_failed_validate_leaves_the_old_file(capsys, tmp_path):
    unit = tmp_path / "unit"
    unit.write_text("good\n")
    result = run_module(capsys, files=[{"dest": str(unit), "content": "bad\n", "validate": "grep -q good %s"}])
    assert result["failed"] is True
    assert "was not installed" in result["msg"] and "nothing was changed" in result["msg"]
    assert unit.read_text() == "good\n"
    assert sorted(os.listdir(tmp_path)) == ["unit"]  # no temporary file left behind
    ok = run_module(capsys, files=[{"dest": str(unit), "content": "good too\n", "validate": "grep -q good %s"}])
    assert ok["changed"] is True and unit.read_text() == "good too\n"


def test_remote_src_copies_bytes_and_keeps_an_equal_file(capsys, tmp_path):
    src = tmp_path / "stub"
    src.write_bytes(b"\x7fELF\x00\x01binary")
    dest = tmp_path / "installed"
    first = run_module(capsys, files=[{"dest": str(dest), "remote_src": str(src), "mode": "0755"}], _ansible_diff=True)
    assert first["changed"] is True and dest.read_bytes() == src.read_bytes() and mode(dest) == 0o755
    assert "copied from" in first["diff"][0]["after"]
    assert run_module(capsys, files=[{"dest": str(dest), "remote_src": str(src), "mode": "0755"}])["changed"] is False


def test_a_later_failure_names_what_changed_before_it(capsys, tmp_path):
    made = tmp_path / "made"
    result = run_module(capsys, directories=[{"path": str(made)}],
                        files=[{"dest": str(tmp_path / "missing" / "f"), "content": "x"}])
    assert result["failed"] is True
    assert "does not exist" in result["msg"] and "changed before it: %s" % made in result["msg"]
    assert result["changed_paths"] == [str(made)]


@pytest.mark.parametrize("entry, message", [
    ({"content": "a", "remote_src": "/etc/hostname"}, "exactly one of"),
    ({}, "exactly one of"),
    ({"remote_src": "/nonexistent/stub"}, "is not a file on this host"),
    ({"content": "a", "validate": "true"}, "must contain %s"),
])
def test_bad_entries_are_refused_and_write_nothing(capsys, tmp_path, entry, message):
    dest = tmp_path / "f"
    result = run_module(capsys, files=[dict(entry, dest=str(dest))])
    assert result["failed"] is True and message in result["msg"]
    assert not dest.exists()


def test_a_file_where_a_directory_should_be_is_refused(capsys, tmp_path):
    (tmp_path / "d").write_text("x")
    result = run_module(capsys, directories=[{"path": str(tmp_path / "d")}])
    assert result["failed"] is True and "is not a directory" in result["msg"]


def test_relative_paths_are_refused(capsys):
    result = run_module(capsys, directories=[{"path": "relative/dir"}])
    assert result["failed"] is True and "must be absolute" in result["msg"]


def _backend_tree(root):
    """A tree shaped like the wheel's python backend: a library, a module, and a __pycache__ below."""
    (root / "__pycache__").mkdir(parents=True)
    (root / "libtriton_python.so").write_bytes(b"\x7fELF\x00" + os.urandom(64))
    (root / "utils.py").write_text("X = 1\n")
    (root / "__pycache__" / "utils.pyc").write_bytes(b"\x00pyc")
    (root / "libtriton_python.so").chmod(0o755)
    (root / "utils.py").chmod(0o640)
    return root


def test_a_tree_is_copied_with_its_modes_then_changes_nothing(capsys, tmp_path):
    src = _backend_tree(tmp_path / "wheel" / "python")
    dest = tmp_path / "opt" / "backends" / "python"
    (dest.parent).mkdir(parents=True)
    args = dict(trees=[{"src": str(src), "dest": str(dest)}],
                files=[{"dest": str(dest / "stub"), "content": "stub", "mode": "0755"}])
    first = run_module(capsys, _ansible_diff=True, **args)
    assert first["changed_paths"] == [str(dest), str(dest / "stub")]
    assert first["diff"][0]["after"].splitlines() == [
        "libtriton_python.so (copied from %s)" % src, "utils.py (copied from %s)" % src,
        "__pycache__/utils.pyc (copied from %s)" % src]
    assert (dest / "libtriton_python.so").read_bytes() == (src / "libtriton_python.so").read_bytes()
    assert mode(dest / "libtriton_python.so") == 0o755 and mode(dest / "utils.py") == 0o640
    assert (dest / "__pycache__" / "utils.pyc").read_bytes() == b"\x00pyc"
    second = run_module(capsys, **args)
    assert second["changed"] is False and second["changed_paths"] == []


def test_a_tree_repairs_a_changed_file_and_its_mode_and_keeps_extra_files(capsys, tmp_path):
    src = _backend_tree(tmp_path / "src")
    dest = tmp_path / "dest"
    run_module(capsys, trees=[{"src": str(src), "dest": str(dest)}])
    (dest / "utils.py").write_text("tampered\n")
    (dest / "libtriton_python.so").chmod(0o777)
    (dest / "extra").write_text("mine")
    result = run_module(capsys, trees=[{"src": str(src), "dest": str(dest)}], _ansible_diff=True)
    assert result["changed_paths"] == [str(dest)]
    assert result["diff"][0]["after"] == ("libtriton_python.so (owner, group or mode set)\n"
                                          "utils.py (copied from %s)\n" % src)
    assert (dest / "utils.py").read_text() == "X = 1\n" and mode(dest / "libtriton_python.so") == 0o755
    assert (dest / "extra").read_text() == "mine"


def test_a_tree_in_check_mode_writes_nothing(capsys, tmp_path):
    src = _backend_tree(tmp_path / "src")
    dest = tmp_path / "dest"
    result = run_module(capsys, trees=[{"src": str(src), "dest": str(dest)}], _ansible_check_mode=True)
    assert result["changed"] is True and result["changed_paths"] == [str(dest)]
    assert not dest.exists()


@pytest.mark.parametrize("case, message", [
    ("missing", "is not a directory on this host"),
    ("symlink", "is not a regular file or directory"),
    ("inside", "must not be inside src"),
])
def test_bad_trees_are_refused(capsys, tmp_path, case, message):
    src = _backend_tree(tmp_path / "src")
    dest = tmp_path / "dest"
    if case == "missing":
        src = tmp_path / "nowhere"
    elif case == "symlink":
        (src / "link").symlink_to("/etc/shadow")
    else:
        dest = src / "copy"
    result = run_module(capsys, trees=[{"src": str(src), "dest": str(dest)}])
    assert result["failed"] is True and message in result["msg"]
    if case == "symlink":
        assert not (dest / "link").exists()


def test_checksums_are_read_after_the_directories_and_change_nothing(capsys, tmp_path):
    venv = tmp_path / "venv"
    stamp = venv / ".aiops-installed"
    args = dict(directories=[{"path": str(venv), "mode": "0755"}], checksum_paths=[str(stamp)])
    first = run_module(capsys, **args)
    assert first["changed_paths"] == [str(venv)] and first["checksums"] == {str(stamp): None}
    stamp.write_text("python 3.11.2 /usr/bin/python3\n")
    second = run_module(capsys, **args)
    assert second["changed"] is False
    assert second["checksums"] == {str(stamp): hashlib.sha1(b"python 3.11.2 /usr/bin/python3\n").hexdigest()}
    checked = run_module(capsys, _ansible_check_mode=True, checksum_paths=[str(stamp), str(tmp_path / "none")])
    assert checked["changed"] is False and checked["checksums"][str(tmp_path / "none")] is None


def test_a_relative_checksum_path_is_refused(capsys):
    result = run_module(capsys, checksum_paths=["venv/.aiops-installed"])
    assert result["failed"] is True and "must be absolute" in result["msg"]
