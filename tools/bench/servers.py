"""Bring up the servers a benchmark compares: Triton as the collection deploys it (the integration
harness's real ``tritonserver`` with the python-based onnxruntime backend) and the FastAPI baseline.
"""

import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(CHECKOUT, "tests", "integration"))
from triton_fixtures import TritonServer, free_port  # noqa: E402  (the harness the integration tests use)

BENCH_MODELS = ("anomaly_detector", "alert_classifier", "ops_pipeline")
FORECASTER = "metric_forecaster"  # served only when a benchmark asks for it (its stubs load Prophet: ~100 MB each)


def read_config(path):
    with open(path, encoding="utf-8") as handle:
        msg = text_format.Parse(handle.read(), model_config_pb2.ModelConfig())
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def write_config(path, config):
    msg = json_format.ParseDict(config, model_config_pb2.ModelConfig())
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text_format.MessageToString(msg))


def apply_overrides(config, override):
    """Top-level fields of ``override`` replace the config's; a value of None removes the field."""
    config = copy.deepcopy(config)
    for key, value in override.items():
        if value is None:
            config.pop(key, None)
        elif key == "parameters":
            config.setdefault("parameters", {}).update(value)
        else:
            config[key] = copy.deepcopy(value)
    return config


def triton_repository(src, dest, overrides=None, models=BENCH_MODELS):
    """Copy ``models`` of the built repository ``src`` to ``dest``, configs overridden."""
    overrides = overrides or {}
    for model in models:
        shutil.copytree(os.path.join(src, model), os.path.join(dest, model),
                        ignore=shutil.ignore_patterns("__pycache__"))
        if model in overrides:
            path = os.path.join(dest, model, "config.pbtxt")
            write_config(path, apply_overrides(read_config(path), overrides[model]))
    return dest


class Triton(object):
    """The real tritonserver serving ``models`` (the bench models by default) with ``overrides`` applied."""

    def __init__(self, build_repo, overrides=None, backend_src=None, models=BENCH_MODELS):
        self.build_repo, self.overrides, self.backend_src, self.models = build_repo, overrides, backend_src, models
        self.tmp = self.server = None

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-triton-")
        repo = triton_repository(self.build_repo, os.path.join(self.tmp, "repo"), self.overrides, self.models)
        kwargs = {"backend_src": self.backend_src} if self.backend_src else {}
        self.server = TritonServer(repo, ready_timeout=600, **kwargs).start()
        self.pids = [self.server.pid]
        self.http = "127.0.0.1:%d" % self.server.http_port
        self.grpc = self.server.grpc_url
        return self

    def __exit__(self, *exc):
        if self.server is not None:
            self.server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


class FastAPIServer(object):
    """uvicorn serving tools/bench/fastapi_app.py with ``workers`` processes."""

    def __init__(self, build_repo, workers):
        self.build_repo, self.workers = build_repo, workers
        self.proc = None

    def __enter__(self):
        self.port = free_port()
        env = dict(os.environ, BENCH_MODEL_REPOSITORY=self.build_repo)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", os.path.join(CHECKOUT, "tools", "bench"), "fastapi_app:app",
             "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers),
             "--no-access-log", "--log-level", "warning"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.pids = [self.proc.pid]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError("uvicorn exited: %s" % self.log.read().decode("utf-8", "replace")[-2000:])
            try:
                # every worker must have loaded the models: ask more times than there are workers
                for _attempt in range(4 * self.workers):
                    urllib.request.urlopen("http://127.0.0.1:%d/health" % self.port, timeout=5).read()
                return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        raise RuntimeError("uvicorn not ready after 120 s")

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(10)
        self.log.close()
