# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durability and atomic-swap helpers shared by the modules that change Triton's model repository."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import ctypes
import errno
import os
import sys
import tempfile

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # linux/fs.h
# renameat2 answers these when the kernel (ENOSYS), the filesystem (EINVAL, EOPNOTSUPP) or a seccomp
# filter of an older container runtime (EPERM) does not offer the exchange; the caller falls back.
_NO_EXCHANGE = frozenset((errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP),
                          errno.EPERM))
_UNRESOLVED = object()
_renameat2 = _UNRESOLVED


def fsync_dir(path):
    """Persist a directory's entries (a rename into it survives a crash only after this)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _libc_renameat2():
    """glibc's (>= 2.28) or musl's renameat2, or None where the C library has none (or not Linux)."""
    global _renameat2  # pylint: disable=global-statement
    if _renameat2 is _UNRESOLVED:
        _renameat2 = None
        if sys.platform.startswith("linux"):
            try:
                func = ctypes.CDLL(None, use_errno=True).renameat2
            except (OSError, AttributeError):
                func = None
            if func is not None:
                func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
                func.restype = ctypes.c_int
                _renameat2 = func
    return _renameat2


def rename_exchange(first, second):
    """Swap two existing paths in one atomic step: renameat2(RENAME_EXCHANGE), Linux >= 3.15.

    Returns True when swapped: every lookup of either path, at any instant, finds one of the two
    complete entries. Returns False, having changed nothing, where the kernel, C library or
    filesystem (NFS, for one) cannot exchange; the caller then falls back to two renames.
    Raises OSError for any other failure (a missing path, permissions).
    """
    func = _libc_renameat2()
    if func is None:
        return False
    if func(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _NO_EXCHANGE:
        return False
    raise OSError(err, os.strerror(err), first)


def write_atomic(path, data, prefix, prepare=None):
    """Write ``data`` (bytes) to ``path`` so a reader sees the old file or the new one, never a part.

    A temp file named ``prefix``... in the same directory is written and fsynced, ``prepare(tmp)`` sets
    its attributes (mkstemp makes it 0600), then it is renamed over ``path`` and the directory fsynced.
    Standard library only: the host scripts (the drift and GPU health reporters) run it with the host's python3.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if prepare is not None:
            prepare(tmp)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(directory)
