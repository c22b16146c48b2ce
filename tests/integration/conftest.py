"""Session fixtures for integration tests: the built model set, a real S3, a real Triton.

- ``built_repository``: the ops model set built once per session from source
  (``python -m model_repository._build``) into a temp dir; returns the path of the Triton
  repository (``<out>/model_repository``).  Set ``AIOPS_MODEL_BUILD=<out dir>`` to reuse a
  build made earlier in the same CI job instead (its ``model_repository`` must exist).
- ``moto_server``: ``moto_server`` on 127.0.0.1 and a free port (s3_fixtures.MotoServer):
  ``.endpoint`` and ``.client()``.  Shared by the session; use your own bucket names.
- ``ops_triton``: the real tritonserver (triton_fixtures.TritonServer) serving
  ``built_repository``; read-only use, shared by the session.
"""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from s3_fixtures import BUCKET, MotoServer  # noqa: E402
from triton_fixtures import CHECKOUT, TritonServer  # noqa: E402


@pytest.fixture(scope="session")
def built_repository(tmp_path_factory):
    prebuilt = os.environ.get("AIOPS_MODEL_BUILD")
    if prebuilt:
        repo = os.path.join(prebuilt, "model_repository")
        assert os.path.isdir(repo), "AIOPS_MODEL_BUILD=%s has no model_repository/" % prebuilt
        return repo
    out = str(tmp_path_factory.mktemp("model-build"))
    proc = subprocess.run([sys.executable, "-m", "model_repository._build", "--out", out, "--no-docs"],
                          cwd=CHECKOUT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, "model build failed:\n%s" % proc.stderr[-4000:]
    return os.path.join(out, "model_repository")


@pytest.fixture(scope="session")
def moto_server():
    server = MotoServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ops_triton(built_repository):
    with TritonServer(built_repository) as server:
        yield server


# The S3 sync tests' own endpoint (one per test module, bucket created) and an empty repository.
@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    server = MotoServer(str(tmp_path_factory.mktemp("moto") / "moto.log"))
    server.client().create_bucket(Bucket=BUCKET)
    yield server
    server.stop()


@pytest.fixture
def s3(moto):
    return moto.client()


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repository"
    path.mkdir()
    return path
