# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exceptions of the S3 sync engine (kept apart so its parts import them without cycles)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os


class S3SyncError(Exception):
    """A sync failed; the message says what and where, for a person to act on."""


class IncompleteVersion(S3SyncError):
    """A version has objects but no manifest: still being published (or abandoned)."""


def disk_error(exc, path):
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return S3SyncError("disk full while writing %s: %s" % (path, os.strerror(exc.errno)))
    return S3SyncError("cannot write %s: %s" % (path, exc))
