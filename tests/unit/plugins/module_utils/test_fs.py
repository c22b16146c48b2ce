"""fs: the atomic exchange the version swap is built on, on this machine's real kernel and filesystem."""

import errno
import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import fs


def test_rename_exchange_swaps_two_directories(tmp_path):
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "old").write_text("1")
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / "new").write_text("2")
    assert fs.rename_exchange(str(tmp_path / "staging"), str(tmp_path / "live")) is True
    assert os.listdir(str(tmp_path / "live")) == ["new"] and os.listdir(str(tmp_path / "staging")) == ["old"]


def test_rename_exchange_reports_real_failures(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(OSError) as caught:
        fs.rename_exchange(str(tmp_path / "a"), str(tmp_path / "missing"))
    assert caught.value.errno == errno.ENOENT
    assert os.path.isdir(str(tmp_path / "a"))


def test_rename_exchange_says_false_where_the_c_library_has_none(tmp_path, monkeypatch):
    monkeypatch.setattr(fs, "_renameat2", None)  # as on a libc older than glibc 2.28, or not Linux
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x").write_text("")
    assert fs.rename_exchange(str(tmp_path / "a"), str(tmp_path / "b")) is False
    assert os.listdir(str(tmp_path / "a")) == ["x"] and os.listdir(str(tmp_path / "b")) == []


def test_fsync_dir(tmp_path):
    fs.fsync_dir(str(tmp_path))
    with pytest.raises(OSError):
        fs.fsync_dir(str(tmp_path / "missing"))
