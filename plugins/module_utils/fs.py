# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durability helpers shared by the modules that swap files into Triton's model repository."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import os


def fsync_dir(path):
    """Persist a directory's entries (a rename into it survives a crash only after this)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
