# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading published model versions from S3: the client, listings, manifests, and errors that say what to fix."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re
import traceback

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError
    HAS_BOTO3 = True
    BOTO3_IMPORT_ERROR = None
except ImportError:
    HAS_BOTO3 = False
    BOTO3_IMPORT_ERROR = traceback.format_exc()

    class BotoCoreError(Exception):
        pass

    class ClientError(Exception):
        pass

from ansible_collections.aiops.triton.plugins.module_utils.footprint_record import FOOTPRINT_NAME
from ansible_collections.aiops.triton.plugins.module_utils.manifest import (
    MANIFEST_NAME,
    ManifestError,
    load_manifest,
    manifest_digest,
)
from ansible_collections.aiops.triton.plugins.module_utils.s3_plan import VERSION_RE, version_prefix
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import IncompleteVersion, S3SyncError

CHECKSUM_MODES = ("when_required", "when_supported")
# Where the published models live and how to reach them, the options every S3 module takes; documented by the
# aiops.triton.s3 doc fragment. Each module adds its own timeout (a different default).
CONNECTION_ARGSPEC = dict(
    bucket=dict(type="str", required=True),
    prefix=dict(type="str", default=""),
    endpoint_url=dict(type="str"),
    region=dict(type="str"),
    access_key=dict(type="str", aliases=["aws_access_key_id"], no_log=True),
    secret_key=dict(type="str", aliases=["aws_secret_access_key"], no_log=True),
    session_token=dict(type="str", aliases=["aws_session_token"], no_log=True),
    profile=dict(type="str"),
    validate_certs=dict(type="bool", default=True),
    ca_bundle=dict(type="path"),
    checksum_mode=dict(type="str", choices=list(CHECKSUM_MODES), default="when_required"),
)
_MD5_ETAG_RE = re.compile(r'^"?([0-9a-fA-F]{32})"?$')
_CREDENTIAL_CODES = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
                     "InvalidToken", "AuthorizationHeaderMalformed", "403")


class RemoteVersion(object):
    """One published version: its identity (digest) and the files to fetch.

    ``files`` entries are dicts with path, size and either sha256 (from the manifest) or
    md5 (unverified mode, from a single-part ETag).
    """

    def __init__(self, version, digest, files, verified):
        self.version = version
        self.digest = digest
        self.files = files
        self.verified = verified

    @property
    def size(self):
        return sum(entry["size"] for entry in self.files)


def make_client(endpoint_url=None, region=None, access_key=None, secret_key=None, session_token=None, profile=None,
                validate_certs=True, ca_bundle=None, checksum_mode="when_required", concurrency=8, timeout=60, attempts=3):
    """An S3 client set up for S3-compatible stores.

    boto3 >= 1.36 sends CRC checksums on every request and asks for them on every response
    by default; MinIO/Ceph releases that predate this reject or mangle such requests, so the
    default is ``when_required``.  Path-style addressing whenever a custom endpoint is used.
    """
    kwargs = {"signature_version": "s3v4", "max_pool_connections": max(10, concurrency + 2),
              "retries": {"max_attempts": attempts, "mode": "standard"}, "connect_timeout": min(10, timeout),
              "read_timeout": timeout}
    if endpoint_url:
        kwargs["s3"] = {"addressing_style": "path"}
    try:
        config = Config(request_checksum_calculation=checksum_mode, response_checksum_validation=checksum_mode,
                        **kwargs)
    except TypeError:  # botocore < 1.36 knows neither knob and never sends default checksums
        config = Config(**kwargs)
    try:
        session = boto3.session.Session(profile_name=profile) if profile else boto3.session.Session()
        return session.client("s3", endpoint_url=endpoint_url or None,
                              region_name=region or session.region_name or "us-east-1",
                              aws_access_key_id=access_key or None, aws_secret_access_key=secret_key or None,
                              aws_session_token=session_token or None,
                              verify=ca_bundle if ca_bundle else bool(validate_certs), config=config)
    except (BotoCoreError, ValueError) as exc:
        raise S3SyncError("cannot set up the S3 client: %s" % exc)


def s3_error(exc, doing):
    """Turn a boto error into an S3SyncError that says what to fix."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _CREDENTIAL_CODES:
            return S3SyncError("S3 refused the credentials (%s) while %s: check access_key/secret_key/profile and the "
                               "bucket policy" % (code, doing))
        if code == "NoSuchBucket":
            return S3SyncError("S3 bucket does not exist (while %s)" % doing)
        return S3SyncError("S3 error %s while %s: %s" % (code, doing, exc))
    name = type(exc).__name__
    if "Credentials" in name:
        return S3SyncError("no S3 credentials found while %s: %s" % (doing, exc))
    if "ReadTimeout" in name:
        return S3SyncError("S3 request timed out while %s (no answer within the timeout, after retries): %s" % (doing, exc))
    if "Connect" in name or "Endpoint" in name or "Timeout" in name:
        return S3SyncError("cannot reach the S3 endpoint while %s: %s" % (doing, exc))
    return S3SyncError("S3 request failed while %s: %s" % (doing, exc))


def _not_found(exc):
    return isinstance(exc, ClientError) and str(exc.response.get("Error", {}).get("Code")) in ("NoSuchKey", "404")


def list_remote_versions(client, bucket, prefix, model):
    """Version numbers that have any object under <prefix>/<model>/<version>/."""
    base = version_prefix(prefix, model)
    found = set()
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=base, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(base):].rstrip("/")
                if VERSION_RE.match(name):
                    found.add(int(name))
    except (BotoCoreError, ClientError) as exc:
        raise s3_error(exc, "listing s3://%s/%s" % (bucket, base))
    return found


def fetch_remote_version(client, bucket, prefix, model, version, allow_unverified):
    """Read a version's manifest; None when the version has no objects at all.

    Raises IncompleteVersion when objects exist but the manifest does not (and unverified
    versions are not allowed); any other failure to read or parse the manifest is an S3SyncError.
    """
    key = version_prefix(prefix, model, version) + MANIFEST_NAME
    try:
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except (BotoCoreError, ClientError) as exc:
        if not _not_found(exc):
            raise s3_error(exc, "reading s3://%s/%s" % (bucket, key))
        data = None
    if data is not None:
        try:
            manifest = load_manifest(data, model=model, version=version)
        except ManifestError as exc:
            raise S3SyncError("s3://%s/%s: %s" % (bucket, key, exc))
        files = [{"path": f["path"], "size": f["size"], "sha256": f["sha256"]} for f in manifest["files"]]
        return RemoteVersion(version, manifest_digest(data), files, True)
    objects = _list_version_objects(client, bucket, prefix, model, version)
    if not objects:
        return None
    if not allow_unverified:
        raise IncompleteVersion("s3://%s/%s has no %s: an incomplete publish is refused (allow_unverified=true syncs it "
                                "checked by size and MD5 ETag)" % (bucket, version_prefix(prefix, model, version), MANIFEST_NAME))
    return _unverified_version(bucket, prefix, model, version, objects)


def _list_version_objects(client, bucket, prefix, model, version):
    base = version_prefix(prefix, model, version)
    objects = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=base):
            for obj in page.get("Contents", []):
                # FOOTPRINT.json is recorded beside a version after it is published (footprint_record.py): not a file of it
                if not obj["Key"].endswith("/") and obj["Key"][len(base):] != FOOTPRINT_NAME:
                    objects.append({"path": obj["Key"][len(base):], "size": obj["Size"], "etag": obj.get("ETag", "")})
    except (BotoCoreError, ClientError) as exc:
        raise s3_error(exc, "listing s3://%s/%s" % (bucket, base))
    return objects


def _unverified_version(bucket, prefix, model, version, objects):
    """Checked by size and MD5 only: a multipart ETag is an MD5 of part MD5s, not of the file."""
    files = []
    for obj in sorted(objects, key=lambda o: o["path"]):
        match = _MD5_ETAG_RE.match(obj["etag"])
        if not match:
            raise S3SyncError("s3://%s/%s%s has ETag %s, which is not an MD5 of the object (multipart upload or "
                              "SSE-KMS); it cannot be verified without a %s" % (
                                  bucket, version_prefix(prefix, model, version), obj["path"], obj["etag"], MANIFEST_NAME))
        parts = obj["path"].split("/")
        if ".." in parts or obj["path"].startswith("/"):
            raise S3SyncError("unsafe object path %r under version %s" % (obj["path"], version))
        files.append({"path": obj["path"], "size": obj["size"], "md5": match.group(1).lower()})
    # Identity of an unverified version: the listing it was fetched from.
    digest = "unverified-" + hashlib.sha256(json.dumps(files, sort_keys=True).encode("utf-8")).hexdigest()
    return RemoteVersion(version, digest, files, False)


def resolve_wanted(client, bucket, prefix, model, versions, latest, allow_unverified):
    """{version: RemoteVersion} for the versions the host should have."""
    resolved = {}
    if versions:
        for version in sorted(set(versions)):
            remote = fetch_remote_version(client, bucket, prefix, model, version, allow_unverified)
            if remote is None:
                raise S3SyncError("version %s of model %s is not published under s3://%s/%s" % (
                    version, model, bucket, version_prefix(prefix, model)))
            resolved[version] = remote
        return resolved
    # latest N: newest complete versions. Only a missing manifest means "still being published";
    # any other error (5xx, timeout, access denied, a malformed manifest) fails, since skipping it
    # would resolve to an older version and could delete the newer one.
    for version in sorted(list_remote_versions(client, bucket, prefix, model), reverse=True):
        if len(resolved) >= latest:
            break
        try:
            remote = fetch_remote_version(client, bucket, prefix, model, version, allow_unverified)
        except IncompleteVersion:
            continue
        if remote is not None:
            resolved[version] = remote
    if not resolved:
        raise S3SyncError("no complete version of model %s under s3://%s/%s" % (model, bucket, version_prefix(prefix, model)))
    return resolved
