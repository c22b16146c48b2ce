"""Start the real ``tritonserver`` (Triton 2.51, from PyPI ``nvidia-pytriton``) for tests.

Usage::

    from triton_fixtures import TritonServer

    with TritonServer(repo_dir, api_key="s3cret") as server:
        urlopen(server.http_url + "/v2/health/ready")

The server runs exactly as the ``triton_server`` role runs it on hosts: explicit model
control loading every model (``--load-model=*``), strict readiness, exit on error, and
optionally the model-repository API restricted to a key.  Ports are free ports picked at
start.  The backend directory is a temporary copy laid out like the role lays it out:

    <backends>/python/        libtriton_python.so, triton_python_backend_utils.py and the
                              triton_python_backend_stub built for the running Python
    <backends>/onnxruntime/   model.py from roles/triton_server/files/backends/onnxruntime/
                              (the python-based onnxruntime backend), when that file exists

The stub links the wheel's bundled CUDA runtime, so it needs LD_LIBRARY_PATH to point at
``nvidia_pytriton.libs`` once it runs outside the wheel's own directory.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BACKEND_SRC = os.path.join(CHECKOUT, "roles", "triton_server", "files", "backends")
API_KEY_HEADER = "triton-admin-key"  # lower case: gRPC metadata keys must be


def pytriton_paths():
    """Return (tritonserver binary, wheel python backend dir, stub, libs dir) or raise."""
    try:
        import pytriton  # noqa: F401  (only its location matters)
    except ImportError as exc:  # pragma: no cover - environment problem, not a test result
        raise RuntimeError("nvidia-pytriton is not installed in this Python: %s" % exc)
    pkg = os.path.dirname(pytriton.__file__)
    root = os.path.join(pkg, "tritonserver")
    pyver = "%d.%d" % sys.version_info[:2]
    paths = (
        os.path.join(root, "bin", "tritonserver"),
        os.path.join(root, "backends", "python"),
        os.path.join(root, "python_backend_stubs", pyver, "triton_python_backend_stub"),
        os.path.join(os.path.dirname(pkg), "nvidia_pytriton.libs"),
    )
    for path in paths:
        if not os.path.exists(path):
            raise RuntimeError("nvidia-pytriton install lacks %s" % path)
    return paths


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_backend_dir(dest, backend_src=DEFAULT_BACKEND_SRC):
    """Lay out ``dest`` as a Triton backend directory (see module docstring)."""
    _binary, wheel_python, stub, _libs = pytriton_paths()
    python_dir = os.path.join(dest, "python")
    shutil.copytree(wheel_python, python_dir, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(stub, os.path.join(python_dir, "triton_python_backend_stub"))
    ort_model = os.path.join(backend_src, "onnxruntime", "model.py")
    if os.path.isfile(ort_model):
        os.makedirs(os.path.join(dest, "onnxruntime"))
        shutil.copy2(ort_model, os.path.join(dest, "onnxruntime", "model.py"))
    return dest


class TritonServer(object):
    """A real tritonserver process serving ``repository``; a context manager.

    Attributes after ``start()``: ``http_url``, ``grpc_url`` (host:port, as gRPC clients
    want it), ``metrics_url``, ``pid``, ``log_path``, ``backend_dir``, ``api_key``,
    ``api_key_header``.
    """

    def __init__(self, repository, *, extra_args=(), api_key=None, backend_src=DEFAULT_BACKEND_SRC,
                 api_key_header=API_KEY_HEADER, ready_timeout=120, address="127.0.0.1"):
        # address: what all three endpoints bind (any 127.x.y.z is loopback on Linux, so a specific bind that
        # is not 127.0.0.1 needs no setup)
        self.address = address
        self.repository = os.path.abspath(repository)
        self.extra_args = list(extra_args)
        self.api_key = api_key
        self.api_key_header = api_key_header
        self.backend_src = backend_src
        self.ready_timeout = ready_timeout
        self.proc = None
        self.pid = None
        self._tmp = None
        self._log = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self):
        binary, _python, _stub, libs = pytriton_paths()
        self._tmp = tempfile.mkdtemp(prefix="triton-test-")
        self.backend_dir = build_backend_dir(os.path.join(self._tmp, "backends"), self.backend_src)
        self.log_path = os.path.join(self._tmp, "tritonserver.log")
        http, grpc, metrics = free_port(), free_port(), free_port()
        self.http_port, self.grpc_port, self.metrics_port = http, grpc, metrics
        self.http_url = "http://%s:%d" % (self.address, http)
        self.grpc_url = "%s:%d" % (self.address, grpc)
        self.metrics_url = "http://%s:%d/metrics" % (self.address, metrics)
        args = [
            binary,
            "--model-repository=%s" % self.repository,
            "--backend-directory=%s" % self.backend_dir,
            "--model-control-mode=explicit",
            "--load-model=*",
            "--strict-readiness=true",
            "--exit-on-error=true",
            "--http-address=%s" % self.address, "--http-port=%d" % http,
            "--grpc-address=%s" % self.address, "--grpc-port=%d" % grpc,
            "--metrics-address=%s" % self.address, "--metrics-port=%d" % metrics,
            "--allow-sagemaker=false", "--allow-vertex-ai=false",
        ]
        if self.api_key is not None:
            guard = "model-repository:%s=%s" % (self.api_key_header, self.api_key)
            args += ["--http-restricted-api=%s" % guard, "--grpc-restricted-protocol=%s" % guard]
        args += self.extra_args
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libs, env.get("LD_LIBRARY_PATH")) if p)
        # The stub embeds Python in isolated mode (PYTHONPATH is ignored) and finds its prefix
        # by looking up "python3" on PATH; this venv's bin first makes it see this venv's packages.
        env["PATH"] = os.pathsep.join(p for p in (os.path.dirname(sys.executable), env.get("PATH")) if p)
        self._log = open(self.log_path, "wb")
        # own process group, so stop() also reaches the python backend stubs
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        self.pid = self.proc.pid
        try:
            self.wait_ready(self.ready_timeout)
        except Exception:
            self.stop()
            raise
        return self

    def stop(self, timeout=30):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None
        # the log is kept with the temp dir until here, so failures can still read it
        if self._tmp and os.environ.get("TRITON_TEST_KEEP_LOGS") != "1":
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- helpers -------------------------------------------------------------------
    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except (OSError, AttributeError):
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def status(self, path):
        """HTTP status of a GET on ``path`` (0 when the server does not answer)."""
        try:
            with urllib.request.urlopen(self.http_url + path, timeout=5) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except (urllib.error.URLError, OSError):
            return 0

    def wait_ready(self, timeout=120):
        """Block until /v2/health/ready is 200; raise with the log tail on exit or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("tritonserver exited with %s before ready; log tail:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            if self.status("/v2/health/ready") == 200:
                return
            time.sleep(0.2)
        raise RuntimeError("tritonserver not ready after %ss; log tail:\n%s" % (timeout, self.log_tail()))


# -- a tiny python-backend model for tests that must not depend on the trained model set ----
ADD_SUB_CONFIG = """\
backend: "python"
max_batch_size: 0
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "VERSION" data_type: TYPE_INT32 dims: [ 1 ] }
]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""

# OUTPUT0 = a + b, OUTPUT1 = a - b, VERSION = the version that answered (tells versions apart).
# INIT_DELAY widens the window in which a new version loads while the old one serves.
ADD_SUB_MODEL = """\
import time
import numpy as np
import triton_python_backend_utils as pb_utils

INIT_DELAY = {delay!r}
INIT_ERROR = {error!r}


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(INIT_DELAY)
        if INIT_ERROR:
            raise RuntimeError(INIT_ERROR)
        self.version = int(args["model_version"])

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", (a + b).astype(np.float32)),
                pb_utils.Tensor("OUTPUT1", (a - b).astype(np.float32)),
                pb_utils.Tensor("VERSION", np.array([self.version], dtype=np.int32)),
            ]))
        return responses
"""

ADD_SUB_INPUTS = {
    "INPUT0": {"datatype": "FP32", "shape": [4], "data": [1.0, 2.0, 3.0, 4.0]},
    "INPUT1": {"datatype": "FP32", "shape": [4], "data": [0.5, 0.5, 0.5, 0.5]},
}


def add_sub_golden_case(version):
    """A correct golden case for ``ADD_SUB_INPUTS`` answered by ``version``."""
    return {"name": "add-sub-v%d" % version, "inputs": ADD_SUB_INPUTS,
            "expected": {"OUTPUT0": {"data": [1.5, 2.5, 3.5, 4.5], "atol": 1e-6},
                         "OUTPUT1": {"data": [0.5, 1.5, 2.5, 3.5]},
                         "VERSION": {"data": [version], "equals": True}}}


def write_add_sub_version(repository, version, name="add_sub", init_delay=0.0, init_error=None, golden=True):
    """Add version ``version`` of the add_sub model (config written once per model)."""
    model_dir = os.path.join(repository, name)
    version_dir = os.path.join(model_dir, str(version))
    os.makedirs(version_dir)
    config = os.path.join(model_dir, "config.pbtxt")
    if not os.path.exists(config):
        with open(config, "w") as handle:
            handle.write(ADD_SUB_CONFIG)
    with open(os.path.join(version_dir, "model.py"), "w") as handle:
        handle.write(ADD_SUB_MODEL.format(delay=init_delay, error=init_error))
    if golden:
        with open(os.path.join(version_dir, "golden_cases.json"), "w") as handle:
            json.dump({"cases": [add_sub_golden_case(version)]}, handle)
    return version_dir


# -- a string model: UPPER = TEXT upper-cased, for BYTES tensors over HTTP and gRPC --------------
UPPER_MODEL = """\
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            upper = np.vectorize(lambda t: t.decode("utf-8").upper().encode("utf-8"), otypes=[np.object_])(text)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("UPPER", upper)]))
        return out
"""


def write_upper_model(repository, dims="-1", name="upper"):
    """Add version 1 of the upper model; ``dims`` as config.pbtxt writes them (e.g. "-1, 1")."""
    version_dir = os.path.join(repository, name, "1")
    os.makedirs(version_dir)
    with open(os.path.join(repository, name, "config.pbtxt"), "w") as handle:
        handle.write('backend: "python"\nmax_batch_size: 0\n'
                     'input [ { name: "TEXT" data_type: TYPE_STRING dims: [ %s ] } ]\n'
                     'output [ { name: "UPPER" data_type: TYPE_STRING dims: [ %s ] } ]\n' % (dims, dims))
    with open(os.path.join(version_dir, "model.py"), "w") as handle:
        handle.write(UPPER_MODEL)
    return version_dir


# -- running the collection's modules for real ----------------------------------------------
COLLECTIONS_PATH = os.path.join(CHECKOUT, ".collection")


def run_module(module, args, check_mode=False, diff=False, timeout=300):
    """Run ``aiops.triton.<module>`` as Ansible runs it on a host: a Python process reading
    ``ANSIBLE_MODULE_ARGS``.  Returns the module's JSON result (``failed`` set on failure)."""
    payload = dict(args)
    payload["_ansible_check_mode"] = check_mode
    payload["_ansible_diff"] = diff
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": payload}, handle)
        args_path = handle.name
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (COLLECTIONS_PATH, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.run([sys.executable, "-m", "ansible_collections.aiops.triton.plugins.modules." + module, args_path],
                              capture_output=True, text=True, env=env, timeout=timeout, check=False)
    finally:
        os.unlink(args_path)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("module %s printed no JSON (rc=%s):\n%s\n%s" % (module, proc.returncode, proc.stdout, proc.stderr))
    assert bool(result.get("failed")) == (proc.returncode != 0), (proc.returncode, result)
    return result
