# -*- coding: utf-8 -*-
# Copyright: aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model-version manifests: the contract between the publisher and s3_model_sync.

A published model version lives in S3 as::

    s3://<bucket>/<prefix>/<model>/<version>/<relative file path>...
    s3://<bucket>/<prefix>/<model>/<version>/MANIFEST.json   (uploaded last)

``MANIFEST.json`` lists every file of the version with its size and sha256 (``__pycache__`` left out).  Because
it is written only after every file is uploaded, its presence is what marks a version
complete; a version without one is an incomplete publish.  The version is identified by
the sha256 of the manifest's canonical bytes (``manifest_digest``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re

MANIFEST_NAME = "MANIFEST.json"
MANIFEST_SCHEMA = 1
# Written by s3_model_sync into each version dir it installs; no published file may take its name.
MARKER_NAME = ".aiops-manifest.sha256"
_CHUNK = 1024 * 1024
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_NAME_MAX = 255  # bytes in one path component on Linux filesystems
# Bytecode caches an interpreter writes beside the sources it imports (a test, or Triton's python backend
# serving the build): interpreter-specific and rewritten at will, so never part of a published version.
_UNPUBLISHED_DIRS = frozenset(["__pycache__"])


class ManifestError(Exception):
    """A manifest is malformed or does not match the files it describes."""


def sha256_file(path):
    """Return the hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_manifest(model, version, version_dir):
    """Describe every regular file under ``version_dir`` (the manifest and bytecode caches excluded)."""
    files = []
    for root, dirs, names in os.walk(version_dir):
        dirs[:] = sorted(d for d in dirs if d not in _UNPUBLISHED_DIRS)
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, version_dir).replace(os.sep, "/")
            if rel == MANIFEST_NAME or not os.path.isfile(full):
                continue
            files.append({"path": rel, "size": os.path.getsize(full), "sha256": sha256_file(full)})
    return {"schema": MANIFEST_SCHEMA, "model": model, "version": int(version), "files": files}


def dump_manifest(manifest):
    """Canonical bytes: sorted keys, no insignificant whitespace, trailing newline."""
    return (json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def manifest_digest(manifest_bytes):
    return hashlib.sha256(manifest_bytes).hexdigest()


def _path_problem(path):
    """Why ``path`` cannot be a file of a version dir, or None."""
    if not isinstance(path, str):
        return "path must be a string, not %s" % type(path).__name__
    if not path:
        return "path is empty"
    if "\x00" in path:
        return "path contains a NUL byte"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "path is not valid UTF-8"
    if path.startswith("/"):
        return "path is absolute; it must be relative to the version dir"
    parts = path.split("/")
    if "" in parts:
        return "path has an empty component (a trailing '/' or '//'); it must name a file"
    if "." in parts or ".." in parts:
        return "path has a '.' or '..' component; it must be a plain relative path"
    if any(len(part.encode("utf-8")) > _NAME_MAX for part in parts):
        return "path has a component longer than %d bytes" % _NAME_MAX
    if path == MANIFEST_NAME:
        return "the name is reserved for the manifest itself"
    if path == MARKER_NAME:
        return "the name is reserved for s3_model_sync's marker file"
    return None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def load_manifest(data, model=None, version=None):
    """Parse and validate manifest bytes; raise ManifestError naming what is wrong and where.

    ``model`` and ``version``, when given, are where the manifest was found; its own fields
    must say the same (a manifest copied to the wrong place is refused).
    """
    try:
        manifest = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ManifestError("manifest is not valid JSON: %s" % exc)
    if not isinstance(manifest, dict):
        raise ManifestError("manifest must be a JSON object, not %s" % type(manifest).__name__)
    if not _is_int(manifest.get("schema")) or manifest["schema"] != MANIFEST_SCHEMA:
        raise ManifestError("manifest schema must be %d, got %r" % (MANIFEST_SCHEMA, manifest.get("schema")))
    if model is not None and manifest.get("model") != model:
        raise ManifestError("manifest is for model %r but is published under model %r" % (manifest.get("model"), model))
    if version is not None and (not _is_int(manifest.get("version")) or manifest["version"] != int(version)):
        raise ManifestError("manifest is for version %r but is published under version %d" % (manifest.get("version"), int(version)))
    files = manifest.get("files")
    if not isinstance(files, list) or not files:
        raise ManifestError("manifest lists no files")
    seen = {}
    for index, entry in enumerate(files):
        if not isinstance(entry, dict):
            raise ManifestError("files[%d] must be an object with path, size and sha256" % index)
        path = entry.get("path")
        label = "files[%d] (%r)" % (index, path) if isinstance(path, str) else "files[%d]" % index
        problem = _path_problem(path)
        if problem:
            raise ManifestError("%s: %s" % (label, problem))
        if path in seen:
            raise ManifestError("%s: duplicate of files[%d]" % (label, seen[path]))
        seen[path] = index
        size = entry.get("size")
        if not _is_int(size) or size < 0:
            raise ManifestError("%s: size must be a non-negative integer, got %r" % (label, size))
        sha = entry.get("sha256")
        if not isinstance(sha, str) or not _SHA256_RE.match(sha):
            raise ManifestError("%s: sha256 must be 64 lower-case hex characters, got %r" % (label, sha))
    # A file cannot also be a directory of another entry ("a" and "a/b").
    for path, index in seen.items():
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in seen:
                raise ManifestError("files[%d] (%r): %r is a file (files[%d]), so it cannot be a directory" % (
                    index, path, parent, seen[parent]))
    return manifest
