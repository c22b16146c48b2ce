# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a sync should do to a model's versions, decided from what is published and what is on disk; changes nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.aiops.triton.plugins.module_utils.manifest import MARKER_NAME

# Triton reads a version dir name with stoll and ignores names with leading zeros.
VERSION_RE = re.compile(r"^(0|[1-9][0-9]*)$")


def plan_sync(wanted, remote_digests, local, keep_versions, verified=None, prune=True):
    """Decide what to do; touches nothing.

    wanted: versions to have; remote_digests: {version: digest} for them;
    local: {version: marker digest or None} found on disk.
    verified: versions that passed verification on this host, most recently verified first (the
    rollback records). When given, only those are kept among the versions not wanted, in that order,
    up to ``keep_versions``: a version that was never verified (one that failed) is never kept, and
    the rollback target is never deleted in its favour. When None, the newest ``keep_versions`` are kept.
    prune: False keeps every version not wanted (a rollback fetching its target removes nothing).
    """
    wanted = sorted(set(wanted))
    add = [v for v in wanted if v not in local]
    replace = [v for v in wanted if v in local and local[v] != remote_digests[v]]
    unchanged = [v for v in wanted if v in local and local[v] == remote_digests[v]]
    others = sorted((v for v in local if v not in wanted), reverse=True)
    if not prune:
        keep = others
    elif verified is None:
        keep = others[:max(keep_versions, 0)]
    else:
        rank = {}
        for index, version in enumerate(verified):
            rank.setdefault(version, index)
        keep = sorted((v for v in others if v in rank), key=rank.get)[:max(keep_versions, 0)]
    retained = sorted(keep)
    remove = sorted(v for v in others if v not in keep)
    return {"add": add, "replace": replace, "unchanged": unchanged, "retained": retained, "remove": remove,
            "kept": sorted(unchanged + retained)}


def pick_latest(candidates, count):
    """The ``count`` highest versions of ``candidates`` (versions that are complete)."""
    return sorted(sorted(set(candidates), reverse=True)[:count])


def version_prefix(prefix, model, version=None):
    parts = [p for p in (prefix or "").split("/") if p] + [model]
    if version is not None:
        parts.append(str(version))
    return "/".join(parts) + "/"


def local_versions(model_dir):
    """{version: manifest digest from the marker, or None} for the live version dirs."""
    found = {}
    if not os.path.isdir(model_dir):
        return found
    for name in os.listdir(model_dir):
        path = os.path.join(model_dir, name)
        if VERSION_RE.match(name) and os.path.isdir(path):
            found[int(name)] = read_marker(path)
    return found


def read_marker(version_dir):
    """The manifest digest a version dir was installed from; None for a dir this module did not write."""
    try:
        with open(os.path.join(version_dir, MARKER_NAME)) as handle:
            return handle.read().strip() or None
    except (IOError, OSError):
        return None


def render_diff(model_dir, before, after):
    """Ansible diff: one line per version with the manifest digest it came from."""
    def lines(state):
        return "".join("%d %s\n" % (v, state[v] or "unmanaged") for v in sorted(state))
    return {"before_header": model_dir, "after_header": model_dir, "before": lines(before), "after": lines(after)}
