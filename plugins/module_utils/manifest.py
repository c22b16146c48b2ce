# -*- coding: utf-8 -*-
# Copyright: aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model-version manifests: the contract between the publisher and s3_model_sync.

A published model version lives in S3 as::

    s3://<bucket>/<prefix>/<model>/<version>/<relative file path>...
    s3://<bucket>/<prefix>/<model>/<version>/MANIFEST.json   (uploaded last)

``MANIFEST.json`` lists every file of the version with its size and sha256.  Because
it is written only after every file is uploaded, its presence is what marks a version
complete; a version without one is an incomplete publish.  The version is identified by
the sha256 of the manifest's canonical bytes (``manifest_digest``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

MANIFEST_NAME = "MANIFEST.json"
MANIFEST_SCHEMA = 1
_CHUNK = 1024 * 1024


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
    """Describe every regular file under ``version_dir`` (the manifest itself excluded)."""
    files = []
    for root, dirs, names in os.walk(version_dir):
        dirs.sort()
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


def load_manifest(data):
    """Parse and validate manifest bytes; raise ManifestError naming what is wrong."""
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise ManifestError("manifest is not valid JSON: %s" % exc)
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise ManifestError("manifest schema must be %d" % MANIFEST_SCHEMA)
    files = manifest.get("files")
    if not isinstance(files, list) or not files:
        raise ManifestError("manifest lists no files")
    for index, entry in enumerate(files):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not path or path.startswith("/") or ".." in path.split("/") or path == MANIFEST_NAME:
            raise ManifestError("files[%d].path %r is not a safe relative path" % (index, path))
        if not isinstance(entry.get("size"), int) or entry["size"] < 0:
            raise ManifestError("files[%d].size must be a non-negative integer" % index)
        sha = entry.get("sha256")
        if not isinstance(sha, str) or len(sha) != 64:
            raise ManifestError("files[%d].sha256 must be 64 hex characters" % index)
    return manifest
