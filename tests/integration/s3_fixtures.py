"""A real S3 endpoint for tests: ``moto_server`` over HTTP on 127.0.0.1, plus a test publisher.

The publisher here only mirrors the manifest contract (files first, MANIFEST.json last) so
the sync tests can stage scenarios, including broken ones a real publisher never writes.
``FaultProxy`` sits between a client and moto on loopback and answers chosen requests with
what a sick S3 sends (503, AccessDenied, silence), or holds them until a test lets them go.
"""

import contextlib
import hashlib
import http.client
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


BIN = os.path.dirname(sys.executable)
CREDS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYNC_MODULE = os.path.join(ROOT, "plugins", "modules", "s3_model_sync.py")
BUCKET = "models"
PREFIX = "triton"
MARKER_NAME = ".aiops-manifest.sha256"


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


def publish_version(client, bucket, prefix, model, version, files, manifest=True, override=None, workers=1):
    """Upload ``files`` ({relative path: bytes}) as one version; MANIFEST.json last.

    ``override`` ({relative path: bytes}) replaces object bodies *after* the manifest was
    computed from ``files``: a corrupt object, as a broken publish or bit rot would leave it.
    ``workers`` > 1 uploads small files in parallel (versions of thousands of files).
    Returns the manifest digest (None without a manifest).
    """
    base = "/".join(p for p in (prefix.strip("/"), model, str(version)) if p)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, data in files.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
        small = [rel for rel in sorted(files) if len((override or {}).get(rel, files[rel])) <= 8 * 1024 * 1024]
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(lambda rel: client.put_object(Bucket=bucket, Key=base + "/" + rel,
                                                            Body=(override or {}).get(rel, files[rel])), small))
        for rel in sorted(files):
            if workers > 1 and rel in small:
                continue
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
        data = manifest_bytes(model, version, files)
    client.put_object(Bucket=bucket, Key=base + "/MANIFEST.json", Body=data)
    return hashlib.sha256(data).hexdigest()


def manifest_bytes(model, version, files):
    """MANIFEST.json for ``files`` in the format (schema 1: model, version, and path, size, sha256 per file, in
    canonical JSON), written here and not by module_utils/manifest.py: the sync under test checks against it."""
    entries = [{"path": rel, "size": len(files[rel]), "sha256": hashlib.sha256(files[rel]).hexdigest()} for rel in sorted(files)]
    manifest = {"schema": 1, "model": model, "version": int(version), "files": entries}
    return (json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


S3_ERRORS = {
    "503": (503, "ServiceUnavailable", "Service is unable to handle request."),
    "403": (403, "AccessDenied", "Access Denied"),
}


class FaultProxy(object):
    """An HTTP proxy on 127.0.0.1 in front of ``upstream`` (moto_server) that injects faults.

    ``rules`` is a list of ``(method, path regex, fault)``, matched against the request's
    unquoted path (``/<bucket>/<key>`` with path-style addressing); the first match wins:

    - ``"503"``, ``"403"``: that status with S3's XML error body (ServiceUnavailable, AccessDenied);
    - ``"hang"``: read the request, answer nothing until the proxy stops (a client read timeout);
    - ``"hold"``: forward only after ``release`` is set (the request stays in flight meanwhile).

    Everything else is forwarded unchanged (headers too, so signatures still match).
    ``hits`` counts the requests each rule matched; ``held`` is set once a request is held.
    """

    def __init__(self, upstream, rules=()):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.rules = [(method, re.compile(pattern), fault) for method, pattern, fault in rules]
        self.hits = [0] * len(self.rules)
        self.release = threading.Event()
        self.held = threading.Event()
        self._stopping = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                fault = proxy.match(self.command, urllib.parse.unquote(urllib.parse.urlsplit(self.path).path))
                if fault == "hang":
                    proxy._stopping.wait()
                    self.close_connection = True
                    return
                if fault == "hold":
                    proxy.held.set()
                    while not proxy.release.wait(0.1):
                        if proxy._stopping.is_set():
                            self.close_connection = True
                            return
                if fault in S3_ERRORS:
                    status, code, message = S3_ERRORS[fault]
                    data = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>"
                            "<RequestId>fault-proxy</RequestId></Error>" % (code, message)).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                    return
                self._forward(body)

            def _forward(self, body):
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=120)
                try:
                    headers = dict((k, v) for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive"))
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status, resp.reason)
                for key, value in resp.getheaders():
                    if key.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def handle_one_request(self):
                try:
                    super().handle_one_request()
                except (BrokenPipeError, ConnectionResetError):  # the client was killed or gave up: expected here
                    self.close_connection = True

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def match(self, method, path):
        for index, (rule_method, pattern, fault) in enumerate(self.rules):
            if rule_method == method and pattern.search(path):
                self.hits[index] += 1
                return fault
        return None

    def stop(self):
        self._stopping.set()
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------- running aiops.triton.s3_model_sync

def files_for(seed, big=0):
    """A version's files: a weights blob, nested small files; different per seed."""
    rnd = hashlib.sha256(b"seed-%d" % seed).digest()
    files = {"model.bin": rnd * 4096, "tokenizer/vocab.txt": b"token-%d\n" % seed * 100, "labels.json": b"[]"}
    if big:
        files["model.bin"] = os.urandom(big)
    return files


def module_args_file(tmp_path, args):
    path = tmp_path / ("args-%d.json" % time.monotonic_ns())
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    return str(path)


def base_args(moto, repo, model, **extra):
    args = {"bucket": BUCKET, "prefix": PREFIX, "model": model, "repository": str(repo),
            "endpoint_url": moto.endpoint, "access_key": "testing", "secret_key": "testing"}
    args.update(extra)
    return args


def module_command(tmp_path, args, check=False, diff=False):
    """argv and env that run the module as Ansible runs it: a process given an args file."""
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, ".collection"))
    return [sys.executable, SYNC_MODULE, module_args_file(tmp_path, args)], env


def run_module(tmp_path, args, check=False, diff=False, timeout=120, **popen):
    argv, env = module_command(tmp_path, args, check, diff)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False, **popen)
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def snapshot(path):
    """Every path under ``path`` with its content hash: what 'nothing changed' is checked against."""
    state = {}
    for root, dirs, names in os.walk(str(path)):
        for name in dirs:
            state[os.path.relpath(os.path.join(root, name), str(path))] = "dir"
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as handle:
                state[os.path.relpath(full, str(path))] = hashlib.sha256(handle.read()).hexdigest()
    return state


def work_dirs(model_dir):
    """The module's work dirs (staging, versions on their way out) left in a model dir."""
    return sorted(n for n in os.listdir(str(model_dir)) if n.startswith(".aiops-") and os.path.isdir(os.path.join(str(model_dir), n)))


def assert_version(model_dir, version, files, digest):
    vdir = model_dir / str(version)
    for rel, data in files.items():
        assert (vdir / rel).read_bytes() == data
    assert (vdir / MARKER_NAME).read_text().strip() == digest
    on_disk = sorted(os.path.relpath(os.path.join(r, n), str(vdir)) for r, _d, ns in os.walk(str(vdir)) for n in ns)
    assert on_disk == sorted(list(files) + [MARKER_NAME])
