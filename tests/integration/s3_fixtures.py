"""A real S3 endpoint for tests: ``moto_server`` over HTTP on 127.0.0.1, plus a test publisher.

The publisher here only mirrors the manifest contract (files first, MANIFEST.json last) so
the sync tests can stage scenarios, including broken ones a real publisher never writes.
"""

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import boto3
from botocore.config import Config

from ansible_collections.aiops.triton.plugins.module_utils import manifest as mf

BIN = os.path.dirname(sys.executable)
CREDS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}


def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MotoServer(object):
    """``moto_server`` as a child process; ``endpoint`` is its http URL."""

    def __init__(self, log_path=os.devnull, env=None):
        self.port = free_port()
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self._log = open(log_path, "wb")
        env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", **(env or {}))
        self.proc = subprocess.Popen([os.path.join(BIN, "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError("moto_server did not start on %s" % self.endpoint)
                time.sleep(0.1)

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint, config=Config(signature_version="s3v4"), **CREDS)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def publish_version(client, bucket, prefix, model, version, files, manifest=True, override=None):
    """Upload ``files`` ({relative path: bytes}) as one version; MANIFEST.json last.

    ``override`` ({relative path: bytes}) replaces object bodies *after* the manifest was
    computed from ``files``: a corrupt object, as a broken publish or bit rot would leave it.
    Returns the manifest digest (None without a manifest).
    """
    base = "/".join(p for p in (prefix.strip("/"), model, str(version)) if p)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, data in files.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
        for rel in sorted(files):
            body = (override or {}).get(rel, files[rel])
            if len(body) > 8 * 1024 * 1024:
                # Big files go up as multipart, as real publishers do (their ETags are not MD5s).
                with open(os.path.join(tmp, rel + ".upload"), "wb") as handle:
                    handle.write(body)
                client.upload_file(os.path.join(tmp, rel + ".upload"), bucket, base + "/" + rel)
                os.unlink(os.path.join(tmp, rel + ".upload"))
            else:
                client.put_object(Bucket=bucket, Key=base + "/" + rel, Body=body)
        if not manifest:
            return None
        data = mf.dump_manifest(mf.build_manifest(model, version, tmp))
    client.put_object(Bucket=bucket, Key=base + "/" + mf.MANIFEST_NAME, Body=data)
    return mf.manifest_digest(data)
