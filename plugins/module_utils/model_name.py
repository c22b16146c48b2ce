# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one check every module makes on a model name before it touches a path or a URL.

A Triton model name is the name of a directory directly under the model repository.
Triton core (commit 73aad7c, ``src/model_repository_manager/model_repository_manager.cc``
ValidateModelName, and ``src/filesystem/implementations/local.h`` GetDirectoryContents)
refuses a name that is empty or only whitespace, that is ``..`` or that contains ``/``,
and never sees ``.`` as a model because the repository scan skips ``.`` and ``..``.
A NUL byte, or a name longer than NAME_MAX (255 bytes), cannot be a directory at all.

Stricter than Triton, on purpose (Triton would load these from a directory, but they
are never what an operator meant and each breaks something downstream):

- a leading ``.``: a hidden directory (``.git``, ``.ipynb_checkpoints``, this collection's
  own ``.aiops-*`` work directories) is not a model;
- control characters (newline, tab, DEL, ...): they forge log lines and break the
  line-oriented tools that read the repository;
- leading or trailing whitespace: Triton trims it when it checks a name, so `` x`` and
  ``x`` would name different directories but read as the same model.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

NAME_MAX_BYTES = 255

STRICTER_THAN_TRITON = "a leading '.', control characters (newline, tab, ...) and leading or trailing whitespace"


class ModelNameError(ValueError):
    """A model name that cannot be a directory in a Triton model repository."""


def model_name_problem(name):
    """Why ``name`` is not a usable model directory name, or '' when it is."""
    if not isinstance(name, str):
        return "must be a string, got %s" % type(name).__name__
    if not name.strip():
        return "must not be empty or only whitespace"
    if name in (".", ".."):
        return "%r is the repository itself or its parent, not a model directory" % name
    if "/" in name:
        return "must not contain '/' (a model is one directory directly under the repository)"
    if "\x00" in name:
        return "must not contain a NUL byte"
    control = [c for c in name if ord(c) < 0x20 or ord(c) == 0x7f]
    if control:
        return "must not contain control characters (found %r)" % control[0]
    if name != name.strip():
        return "must not start or end with whitespace (Triton trims it, the directory name keeps it)"
    if name.startswith("."):
        return "must not start with '.' (hidden directories are not models)"
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > NAME_MAX_BYTES:
        return "is %d bytes long; a directory name holds at most %d" % (size, NAME_MAX_BYTES)
    return ""


def check_model_name(name, option="name"):
    """Raise ModelNameError naming ``option`` when ``name`` is not a usable model directory name."""
    problem = model_name_problem(name)
    if problem:
        raise ModelNameError("%s: model name %r is not a usable Triton model directory name: %s" % (option, name, problem))
    return name
