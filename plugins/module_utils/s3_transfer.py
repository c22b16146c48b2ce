# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parallel, verified download of one model version into a directory (threads, ranged GETs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait, FIRST_EXCEPTION

from ansible_collections.aiops.triton.plugins.module_utils.s3_client import BotoCoreError, ClientError, s3_error
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError, disk_error

_READ_CHUNK = 1024 * 1024


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
            raise disk_error(exc, job.path)
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
            raise disk_error(exc, path)
        view = view[written:]
        offset += written


def _reserve(fd, size, path):
    """Claim the file's blocks up front, so a full disk fails before any bytes move."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
            return  # filesystem cannot preallocate; pwrite will report ENOSPC instead
        raise disk_error(exc, path)
