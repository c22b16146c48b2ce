# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Engine of ``aiops.triton.s3_model_sync``: plan, download, verify and swap model versions.

Layout on the host (Triton's model repository)::

    <repository>/<model>/<version>/...                  live versions Triton loads
    <repository>/<model>/<version>/.aiops-manifest.sha256   digest of the manifest it came from
    <repository>/<model>/.aiops-staging-<v>-<random>/   downloads in progress
    <repository>/<model>/.aiops-old-<v>-<random>/       a version on its way out: only ever deleted
    <repository>/<model>/.aiops-swap-<v>-<random>/      fallback swap only: the whole live version,
                                                        moved aside for the instant between two renames
    <repository>/<model>/.aiops-sync.lock               one sync per model at a time

Work dirs live *inside the model dir* because that is the only place sure to be on the
repository's filesystem (so rename is atomic) that Triton ignores: it skips version dirs
that are not integers, but treats every top-level dir of the repository as a model and
refuses to start when one has no config (seen with Triton 2.51).

Every run that changes the host takes the lock, cleans what a killed run left, then reads the
local versions and plans: a plan made before the lock could be stale by the time it is held.
A version is deleted only under an ``.aiops-old-`` name, which recovery deletes and never
restores; only a complete ``.aiops-swap-`` dir whose live name is missing is put back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, wait, FIRST_EXCEPTION

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

from ansible_collections.aiops.triton.plugins.module_utils.fs import fsync_dir, rename_exchange
from ansible_collections.aiops.triton.plugins.module_utils.manifest import (
    MANIFEST_NAME,
    MARKER_NAME,
    ManifestError,
    load_manifest,
    manifest_digest,
)

STAGING_PREFIX = ".aiops-staging-"
OLD_PREFIX = ".aiops-old-"
SWAP_PREFIX = ".aiops-swap-"
LOCK_NAME = ".aiops-sync.lock"
CHECKSUM_MODES = ("when_required", "when_supported")
_READ_CHUNK = 1024 * 1024
# Triton reads a version dir name with stoll and ignores names with leading zeros.
_VERSION_RE = re.compile(r"^(0|[1-9][0-9]*)$")
_MD5_ETAG_RE = re.compile(r'^"?([0-9a-fA-F]{32})"?$')
_CREDENTIAL_CODES = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
                     "InvalidToken", "AuthorizationHeaderMalformed", "403")


class S3SyncError(Exception):
    """A sync failed; the message says what and where, for a person to act on."""


class IncompleteVersion(S3SyncError):
    """A version has objects but no manifest: still being published (or abandoned)."""


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


# ---------------------------------------------------------------- planning (pure)

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
        if _VERSION_RE.match(name) and os.path.isdir(path):
            found[int(name)] = _read_marker(path)
    return found


def _read_marker(version_dir):
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


# ---------------------------------------------------------------- S3 access

def make_client(endpoint_url=None, region=None, access_key=None, secret_key=None, session_token=None, profile=None,
                validate_certs=True, ca_bundle=None, checksum_mode="when_required", concurrency=8, timeout=60):
    """An S3 client set up for S3-compatible stores.

    boto3 >= 1.36 sends CRC checksums on every request and asks for them on every response
    by default; MinIO/Ceph releases that predate this reject or mangle such requests, so the
    default is ``when_required``.  Path-style addressing whenever a custom endpoint is used.
    """
    kwargs = {"signature_version": "s3v4", "max_pool_connections": max(10, concurrency + 2),
              "retries": {"max_attempts": 3, "mode": "standard"}, "connect_timeout": min(10, timeout),
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
                if _VERSION_RE.match(name):
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
                if not obj["Key"].endswith("/"):
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


# ---------------------------------------------------------------- transfer

class _FileJob(object):
    """One file being written by one or more ranged GETs; hashed in order as parts land.

    The file is opened when its first part starts and closed when its last part is done, so
    open descriptors are bounded by the transfer's concurrency, not by the number of files.
    """

    def __init__(self, entry, key, path, part_size):
        self.entry = entry
        self.key = key
        self.path = path
        self.algo = "sha256" if "sha256" in entry else "md5"
        self.hasher = hashlib.new(self.algo)
        size = entry["size"]
        self.parts = [(off, min(part_size, size - off)) for off in range(0, size, part_size)] or [(0, 0)]
        self.done = set()
        self.next_part = 0
        self.lock = threading.Lock()
        self.fd = None
        self.created = False

    def open(self):
        """The descriptor to write to, creating and reserving the file on first use."""
        with self.lock:
            if self.fd is None:
                if self.created:
                    raise S3SyncError("%s: reopened after it was closed" % self.path)
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                self.created = True
                if self.entry["size"]:
                    _reserve(self.fd, self.entry["size"], self.path)
            return self.fd

    def close(self):
        with self.lock:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None


class Transfer(object):
    """Parallel, verified download of one version into a directory (threads, ranged GETs)."""

    def __init__(self, client, bucket, concurrency=8, part_size=16 * 1024 * 1024):
        self.client = client
        self.bucket = bucket
        self.concurrency = max(1, concurrency)
        self.part_size = max(1024 * 1024, part_size)
        self.bytes = 0
        self.files = 0
        self._lock = threading.Lock()
        self._abort = threading.Event()

    def download(self, base_key, remote, dest):
        jobs = []
        made = set([dest])
        try:
            for entry in remote.files:
                path = os.path.join(dest, *entry["path"].split("/"))
                parent = os.path.dirname(path)
                if parent not in made:
                    if not os.path.isdir(parent):
                        os.makedirs(parent)
                    made.add(parent)
                jobs.append(_FileJob(entry, base_key + entry["path"], path, self.part_size))
            # The pool takes parts in this order (file by file), so at most one file beyond those
            # with a part in flight is open at any time.
            tasks = [(job, index) for job in jobs for index in range(len(job.parts))]
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                futures = [pool.submit(self._fetch_part, job, index) for job, index in tasks]
                dummy, pending = wait(futures, return_when=FIRST_EXCEPTION)
                if pending:  # a part failed: stop the others at their next chunk
                    self._abort.set()
                    for future in pending:
                        future.cancel()
                for future in futures:
                    if future.done() and not future.cancelled() and future.exception() is not None:
                        raise future.exception()
        finally:
            for job in jobs:  # those a failure left open
                job.close()

    def _fetch_part(self, job, index):
        if self._abort.is_set():
            return
        offset, length = job.parts[index]
        kwargs = {"Bucket": self.bucket, "Key": job.key}
        if len(job.parts) > 1:
            kwargs["Range"] = "bytes=%d-%d" % (offset, offset + length - 1)
        try:
            fd = job.open()
            response = self.client.get_object(**kwargs)
            if len(job.parts) == 1 and response.get("ContentLength") != job.entry["size"]:
                raise S3SyncError("%s: size mismatch: manifest says %d bytes, S3 object has %s" % (
                    job.entry["path"], job.entry["size"], response.get("ContentLength")))
            body = response["Body"]
            position = offset
            inline = len(job.parts) == 1
            while True:
                if self._abort.is_set():
                    return
                chunk = body.read(_READ_CHUNK)
                if not chunk:
                    break
                _write_all(fd, chunk, position, job.path)
                if inline:
                    job.hasher.update(chunk)
                position += len(chunk)
                with self._lock:
                    self.bytes += len(chunk)
        except (BotoCoreError, ClientError) as exc:
            raise s3_error(exc, "downloading s3://%s/%s" % (self.bucket, job.key))
        except OSError as exc:
            raise _disk_error(exc, job.path)
        if position - offset != length:
            raise S3SyncError("%s: size mismatch: expected %d bytes at offset %d, got %d" % (
                job.entry["path"], length, offset, position - offset))
        self._part_done(job, index, inline)

    def _part_done(self, job, index, inline):
        with job.lock:
            job.done.add(index)
            if not inline:
                # Parts finish out of order; hash the contiguous run from the page cache.
                while job.next_part in job.done:
                    off, length = job.parts[job.next_part]
                    end = off + length
                    while off < end:
                        data = os.pread(job.fd, min(_READ_CHUNK, end - off), off)
                        job.hasher.update(data)
                        off += len(data)
                    job.next_part += 1
            if len(job.done) < len(job.parts):
                return
            os.fsync(job.fd)
            os.close(job.fd)
            job.fd = None
        actual = job.hasher.hexdigest()
        expected = job.entry[job.algo]
        if actual != expected:
            raise S3SyncError("%s: %s mismatch: expected %s, actual %s (s3://%s/%s)" % (
                job.entry["path"], job.algo, expected, actual, self.bucket, job.key))
        with self._lock:
            self.files += 1


def _write_all(fd, data, offset, path):
    view = memoryview(data)
    while view:
        try:
            written = os.pwrite(fd, view, offset)
        except OSError as exc:
            raise _disk_error(exc, path)
        view = view[written:]
        offset += written


def _reserve(fd, size, path):
    """Claim the file's blocks up front, so a full disk fails before any bytes move."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
            return  # filesystem cannot preallocate; pwrite will report ENOSPC instead
        raise _disk_error(exc, path)


def _disk_error(exc, path):
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return S3SyncError("disk full while writing %s: %s" % (path, os.strerror(exc.errno)))
    return S3SyncError("cannot write %s: %s" % (path, exc))


# ---------------------------------------------------------------- repository changes

def _fsync_tree(root):
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        fsync_dir(dirpath)


def _work_name(model_dir, prefix, version):
    """A fresh, unused work-dir path in the model dir (named, not created)."""
    target = tempfile.mkdtemp(prefix="%s%d-" % (prefix, version), dir=model_dir)
    os.rmdir(target)
    return target


def _delete(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def recovery_actions(model_dir):
    """What a killed run left in ``model_dir`` and what to do with it: [(action, name)].

    Staging and ``.aiops-old-`` dirs are deleted (an old dir may be half deleted: it is never
    put back). A ``.aiops-swap-`` dir is a complete live version moved aside by the fallback
    swap; it is restored when its version's live name is missing, deleted otherwise.
    """
    actions = []
    if not os.path.isdir(model_dir):
        return actions
    restored = set()
    for name in sorted(os.listdir(model_dir)):
        if name.startswith(SWAP_PREFIX):
            version = name[len(SWAP_PREFIX):].split("-", 1)[0]
            if _VERSION_RE.match(version) and version not in restored and not os.path.lexists(os.path.join(model_dir, version)):
                restored.add(version)
                actions.append(("restore", name))
            else:
                actions.append(("delete", name))
        elif name.startswith((STAGING_PREFIX, OLD_PREFIX)):
            actions.append(("delete", name))
    return actions


def local_versions_after_recovery(model_dir):
    """local_versions as they will be once recovery has run (read-only, for check mode)."""
    found = local_versions(model_dir)
    for action, name in recovery_actions(model_dir):
        if action == "restore":
            version = int(name[len(SWAP_PREFIX):].split("-", 1)[0])
            found[version] = _read_marker(os.path.join(model_dir, name))
    return found


def check_free_space(model_dir, needed):
    stats = os.statvfs(model_dir)
    free = stats.f_bavail * stats.f_frsize
    if needed > free:
        raise S3SyncError("disk full: the new versions need %d bytes but %s has %d bytes free" % (needed, model_dir, free))


class ModelDir(object):
    """A model's directory, locked for one sync; recovers what a killed run left behind."""

    def __init__(self, repository, model):
        self.path = os.path.join(repository, model)
        self.created = False
        self.recovered = []
        self._lock_fd = None

    def __enter__(self):
        if not os.path.isdir(self.path):
            os.makedirs(self.path)
            self.created = True
        self._lock_fd = os.open(os.path.join(self.path, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self.recovered = self.recover()
        return self

    def __exit__(self, *exc):
        os.close(self._lock_fd)
        if self.created and exc[0] is not None and not local_versions(self.path):
            shutil.rmtree(self.path, ignore_errors=True)

    def recover(self):
        """Under the lock every work dir is stale. Returns the names it dealt with."""
        actions = recovery_actions(self.path)
        for action, name in actions:
            path = os.path.join(self.path, name)
            if action == "restore":
                os.rename(path, os.path.join(self.path, name[len(SWAP_PREFIX):].split("-", 1)[0]))
            else:
                _delete(path)
        if actions:
            fsync_dir(self.path)
        return [name for _action, name in actions]

    def install(self, transfer, base_key, remote):
        """Download into staging, verify, then put it live in one atomic step; staging never outlives a failure."""
        staging = tempfile.mkdtemp(prefix="%s%d-" % (STAGING_PREFIX, remote.version), dir=self.path)
        previous = None
        try:
            transfer.download(base_key, remote, staging)
            with open(os.path.join(staging, MARKER_NAME), "w") as handle:
                handle.write(remote.digest + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(staging, 0o755)
            _fsync_tree(staging)
            live = os.path.join(self.path, str(remote.version))
            if os.path.lexists(live):
                previous = self._swap(staging, live, remote.version)
            else:
                os.rename(staging, live)
            fsync_dir(self.path)
        except BaseException:
            if previous is None:
                shutil.rmtree(staging, ignore_errors=True)
            raise
        if previous:
            self._discard(previous, remote.version)

    def _swap(self, staging, live, version):
        """Make ``staging`` the live version; returns where the previous live version now is.

        renameat2(RENAME_EXCHANGE) swaps the two names at once, so ``<model>/<v>`` always exists.
        Where the kernel or filesystem cannot, two renames: for an instant ``<v>`` is missing, and a
        run killed in that instant leaves the previous version under ``.aiops-swap-``, which the
        next run restores.
        """
        if rename_exchange(staging, live):
            return staging
        aside = _work_name(self.path, SWAP_PREFIX, version)
        os.rename(live, aside)
        try:
            os.rename(staging, live)
        except BaseException:
            os.rename(aside, live)
            raise
        return aside

    def _discard(self, path, version):
        """Delete a version that is out of Triton's sight, under a name recovery never restores."""
        old = _work_name(self.path, OLD_PREFIX, version)
        os.rename(path, old)
        fsync_dir(self.path)
        _delete(old)

    def remove(self, version):
        self._discard(os.path.join(self.path, str(version)), version)


# ---------------------------------------------------------------- entry points

def sync_present(client, bucket, prefix, model, repository, versions=None, latest=None, keep_versions=1,
                 concurrency=8, part_size=16 * 1024 * 1024, allow_unverified=False, check_mode=False,
                 verified=None, prune=True):
    started = time.time()
    if not os.path.isdir(repository):
        raise S3SyncError("repository %s does not exist" % repository)
    model_dir = os.path.join(repository, model)
    remotes = resolve_wanted(client, bucket, prefix, model, versions, latest, allow_unverified)
    digests = dict((v, r.digest) for v, r in remotes.items())
    # the wanted set, latest: N resolved (a rollout resolves it once, in check mode, and pins it everywhere)
    result = {"bytes_transferred": 0, "files_transferred": 0, "versions": sorted(remotes)}

    def planned(before, recovered):
        plan = plan_sync(list(remotes), digests, before, keep_versions, verified, prune)
        after = dict((v, before[v]) for v in plan["retained"])
        after.update(digests)
        result.update(changed=bool(plan["add"] or plan["replace"] or plan["remove"] or recovered), plan=plan,
                      recovered=recovered, diff=render_diff(model_dir, before, after))
        return plan

    if check_mode:
        planned(local_versions_after_recovery(model_dir), [name for _a, name in recovery_actions(model_dir)])
        result["seconds"] = round(time.time() - started, 3)
        return result
    transfer = Transfer(client, bucket, concurrency, part_size)
    try:
        # Even a run with nothing to download takes the lock (recovery runs under it), and plans
        # only once it holds it: a run that held it before may have installed what this one wants.
        with ModelDir(repository, model) as mdir:
            plan = planned(local_versions(mdir.path), mdir.recovered)
            fetch = plan["add"] + plan["replace"]
            if fetch:
                check_free_space(mdir.path, sum(remotes[v].size for v in fetch))
            for version in fetch:
                mdir.install(transfer, version_prefix(prefix, model, version), remotes[version])
            # Old versions go only after every new one is live.
            for version in plan["remove"]:
                mdir.remove(version)
    except OSError as exc:
        raise _disk_error(exc, model_dir)
    finally:
        result["bytes_transferred"] = transfer.bytes
        result["files_transferred"] = transfer.files
    result["seconds"] = round(time.time() - started, 3)
    return result


def sync_absent(repository, model, versions=None, check_mode=False):
    """Remove the given versions (all versions when None); config.pbtxt and the model dir stay."""
    started = time.time()
    model_dir = os.path.join(repository, model)
    result = {"bytes_transferred": 0, "files_transferred": 0}

    def planned(before, recovered):
        remove = sorted(v for v in before if versions is None or v in versions)
        after = dict((v, d) for v, d in before.items() if v not in remove)
        plan = {"add": [], "replace": [], "unchanged": [], "retained": sorted(after), "remove": remove, "kept": sorted(after)}
        result.update(changed=bool(remove or recovered), plan=plan, recovered=recovered,
                      diff=render_diff(model_dir, before, after))
        return plan

    if check_mode or not os.path.isdir(model_dir):
        planned(local_versions_after_recovery(model_dir), [name for _a, name in recovery_actions(model_dir)])
    else:
        try:
            with ModelDir(repository, model) as mdir:
                for version in planned(local_versions(mdir.path), mdir.recovered)["remove"]:
                    mdir.remove(version)
        except OSError as exc:
            raise _disk_error(exc, model_dir)
    result["seconds"] = round(time.time() - started, 3)
    return result
