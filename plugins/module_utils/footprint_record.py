# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measured footprints kept in S3 beside the version they describe.

A version published as ``<prefix>/<model>/<version>/MANIFEST.json`` (module_utils/manifest.py) gets, once a host has
validated it as a candidate and measured it (module_utils/footprint.py), ``<prefix>/<model>/<version>/FOOTPRINT.json``:
per instance, GPU and host memory in MiB, with what measured it and where. It is not listed in the manifest, so it
never changes the version's identity and s3_model_sync never downloads it. The first recorder wins: a version's
footprint is never overwritten (a later, different measurement is reported, not written), so every host and every
later run reads the same numbers without loading the model.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.aiops.triton.plugins.module_utils.s3_plan import version_prefix

FOOTPRINT_NAME = "FOOTPRINT.json"
FOOTPRINT_SCHEMA = 1
KEYS = ("gpu_mib", "host_mib")
_MIB_RE = re.compile(r"^[0-9]+$")


class FootprintError(Exception):
    """A FOOTPRINT.json that cannot be read, or a footprint that cannot be recorded; the message says which."""


def footprint_key(prefix, model, version):
    """<prefix>/<model>/<version>/FOOTPRINT.json, beside MANIFEST.json."""
    return version_prefix(prefix, model, version) + FOOTPRINT_NAME


def _mib(value, what):
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not _MIB_RE.match(str(value).strip()):
        raise FootprintError("%s must be MiB (a non-negative integer) or null, got %r" % (what, value))
    return int(str(value).strip())


def build_record(model, version, footprint, source="triton_footprint", measured=None, host=None, details=None):
    """The FOOTPRINT.json document: ``footprint`` ({gpu_mib, host_mib}, per instance, MiB, null where unknown)
    and how it was measured; ``details`` (instances, per_instance, gpus, triton_version, unknown...) kept as given."""
    if not isinstance(footprint, dict):
        raise FootprintError("footprint must be a mapping of gpu_mib and host_mib, got %r" % (footprint,))
    values = dict((key, _mib(footprint.get(key), "footprint %s" % key)) for key in KEYS)
    if all(values[key] is None for key in KEYS):
        raise FootprintError("footprint of %s version %s has neither gpu_mib nor host_mib: nothing was measured"
                             % (model, version))
    record = {"schema": FOOTPRINT_SCHEMA, "model": model, "version": int(version), "footprint": values,
              "source": source or "triton_footprint"}
    if measured:
        record["measured"] = measured
    if host:
        record["host"] = host
    for key, value in sorted((details or {}).items()):
        if key not in record and value is not None:
            record[key] = value
    return record


def dump_record(record):
    """Readable bytes (a person reads these in the bucket): sorted keys, indented, trailing newline."""
    return (json.dumps(record, sort_keys=True, indent=2) + "\n").encode("utf-8")


def load_record(data, model=None, version=None):
    """Parse a FOOTPRINT.json; raise FootprintError naming what is wrong. ``model``/``version``: where it was found."""
    try:
        record = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise FootprintError("not valid JSON: %s" % exc)
    if not isinstance(record, dict):
        raise FootprintError("must be a JSON object, not %s" % type(record).__name__)
    if record.get("schema") != FOOTPRINT_SCHEMA:
        raise FootprintError("schema must be %d, got %r" % (FOOTPRINT_SCHEMA, record.get("schema")))
    if model is not None and record.get("model") != model:
        raise FootprintError("is for model %r but is stored under model %r" % (record.get("model"), model))
    if version is not None and str(record.get("version")) != str(version):
        raise FootprintError("is for version %r but is stored under version %s" % (record.get("version"), version))
    footprint = record.get("footprint")
    if not isinstance(footprint, dict):
        raise FootprintError("footprint must be a mapping of gpu_mib and host_mib")
    record["footprint"] = dict((key, _mib(footprint.get(key), "footprint %s" % key)) for key in KEYS)
    return record


def budget_footprint(record):
    """The per-instance shape module_utils/gpu_budget.py reads (gpu_mib, host_mib, source, measured)."""
    result = dict(record["footprint"])
    result["source"] = record.get("source") or "triton_footprint"
    if record.get("measured"):
        result["measured"] = record["measured"]
    return result


def same_footprint(record, footprint):
    """Whether ``footprint`` ({gpu_mib, host_mib}) says what the recorded one says."""
    return all(record["footprint"].get(key) == _mib((footprint or {}).get(key), key) for key in KEYS)


def _code(exc):
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def read_record(client, bucket, prefix, model, version, errors):
    """The recorded footprint of a version (load_record's dict), or None when it has none.

    ``errors``: (boto errors to catch, function(exc, doing) -> exception to raise), so that this module does not
    import boto3 itself (a lookup on a controller without it still loads).
    """
    catch, wrap = errors
    key = footprint_key(prefix, model, version)
    try:
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except catch as exc:
        if _code(exc) in ("NoSuchKey", "404"):
            return None
        raise wrap(exc, "reading s3://%s/%s" % (bucket, key))
    try:
        return load_record(data, model, version)
    except FootprintError as exc:
        raise FootprintError("s3://%s/%s %s" % (bucket, key, exc))


def write_record(client, bucket, prefix, record, errors):
    """Write FOOTPRINT.json only if none exists (If-None-Match: *, so two hosts measuring at once cannot both win).

    Returns None when written, or the record that got there first. A store that does not implement conditional
    writes (older MinIO/Ceph answer NotImplemented) is written plainly: the caller read it as absent just before.
    """
    catch, wrap = errors
    key = footprint_key(prefix, record["model"], record["version"])
    body = dump_record(record)
    args = {"Bucket": bucket, "Key": key, "Body": body, "ContentType": "application/json"}
    try:
        client.put_object(IfNoneMatch="*", **args)
        return None
    except catch as exc:
        code = _code(exc)
        if code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
            return read_record(client, bucket, prefix, record["model"], record["version"], errors)
        if code not in ("NotImplemented", "501"):
            raise wrap(exc, "writing s3://%s/%s" % (bucket, key))
    try:
        client.put_object(**args)
    except catch as exc:
        raise wrap(exc, "writing s3://%s/%s" % (bucket, key))
    return None
