"""aiops.triton.triton_model against a real tritonserver with the model-repository API restricted."""

import json
import os
import shutil
import subprocess
import threading
import time

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError, TritonClient
from triton_fixtures import (ADD_SUB_CONFIG, ADD_SUB_INPUTS, COLLECTIONS_PATH, TritonServer, run_module,
                             write_add_sub_version)

pytestmark = pytest.mark.integration

KEY = "model-test-key"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = str(tmp_path_factory.mktemp("repo"))
    write_add_sub_version(repo, 1)
    write_add_sub_version(repo, 2, init_delay=1.5)  # a slow load: the old version must serve meanwhile
    with TritonServer(repo, api_key=KEY) as srv:
        yield srv


@pytest.fixture
def client(server):
    return TritonClient(server.http_url, api_key=KEY)


def args(server, **extra):
    base = {"url": server.http_url, "name": "add_sub", "api_key": KEY}
    base.update(extra)
    return base


def ensure(client, versions):
    """Put the server into a known state without going through the module under test."""
    config = client.model_config("add_sub")
    client.load_model("add_sub", config=dict(config, version_policy={"specific": {"versions": versions}}))
    assert client.ready_versions("add_sub") == versions


class Hammer(object):
    """Clients sending requests in a loop, recording every failure with its time."""

    def __init__(self, url, versions):
        self.url, self.versions = url, versions
        self.stop_flag = threading.Event()
        self.ok, self.answered_by, self.failures = 0, set(), []
        self.threads = [threading.Thread(target=self._loop, args=(v,)) for v in versions]

    def _loop(self, version):
        client = TritonClient(self.url, timeout=10)
        while not self.stop_flag.is_set():
            try:
                out = client.infer("add_sub", ADD_SUB_INPUTS, version=version)
                self.answered_by.add((version, out["VERSION"]["data"][0]))
                self.ok += 1
            except TritonApiError as exc:
                self.failures.append((version, time.time(), str(exc)))

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        time.sleep(0.3)
        self.stop_flag.set()
        for thread in self.threads:
            thread.join()


def test_already_loaded_is_unchanged(server, client):
    ensure(client, [2])
    result = run_module("triton_model", args(server))
    assert result["changed"] is False
    assert result["action"] == "none"
    assert result["before"] == result["after"] == [2]


def test_check_mode_and_diff_change_nothing(server, client):
    ensure(client, [2])
    result = run_module("triton_model", args(server, versions=[1]), check_mode=True, diff=True)
    assert result["changed"] is True
    assert result["action"] == "load"
    assert result["diff"] == {"before": {"name": "add_sub", "ready_versions": [2]},
                              "after": {"name": "add_sub", "ready_versions": [1]}}
    assert client.ready_versions("add_sub") == [2]


def test_version_switch_without_a_failed_request(server, client):
    ensure(client, [1])
    with Hammer(server.http_url, [None, "1"]) as hammer:
        result = run_module("triton_model", args(server, versions=[2]), diff=True)
        load_returned = time.time()
    assert result["changed"] is True, result
    assert (result["before"], result["after"]) == ([1], [2])
    assert result["diff"]["after"]["ready_versions"] == [2]
    # unversioned requests never fail and are answered by v1, then v2
    assert [f for f in hammer.failures if f[0] is None] == []
    assert {(None, 1), (None, 2)} <= hammer.answered_by
    # requests pinned to the old version succeed until the load returned (v2's 1.5 s init included)
    early = [f for f in hammer.failures if f[1] < load_returned - 1.0]
    assert early == [], early[:3]
    assert ("1", 1) in hammer.answered_by
    assert hammer.ok > 50
    # idempotent
    again = run_module("triton_model", args(server, versions=[2]))
    assert again["changed"] is False


def test_two_versions_at_once(server, client):
    ensure(client, [2])
    result = run_module("triton_model", args(server, versions=[2, 1]))
    assert result["after"] == [1, 2]
    assert client.infer("add_sub", ADD_SUB_INPUTS, version=1)["VERSION"]["data"] == [1]
    assert client.infer("add_sub", ADD_SUB_INPUTS, version=2)["VERSION"]["data"] == [2]


def test_wrong_api_key_is_a_clear_error(server, client):
    for key in ("wrong-key", None):
        result = run_module("triton_model", args(server, api_key=key, versions=[1]))
        assert result["failed"] is True
        assert "api_key is wrong or missing" in result["msg"]
        assert "'triton-admin-key'" in result["msg"]
        assert "wrong-key" not in result["msg"]


def test_rejected_config_keeps_previous_version_serving(server, client):
    ensure(client, [2])
    config = client.model_config("add_sub")
    config["instance_group"] = [{"kind": "KIND_GPU", "count": 1}]  # no GPU on this host: Triton rejects it
    result = run_module("triton_model", args(server, config=config))
    assert result["failed"] is True
    assert "has kind KIND_GPU but no GPUs are available" in result["msg"]
    assert result["still_serving"] == [2]
    assert client.infer("add_sub", ADD_SUB_INPUTS)["VERSION"]["data"] == [2]


def test_broken_new_version_keeps_previous_version_serving(server, client):
    ensure(client, [2])
    repo = server.repository
    write_add_sub_version(repo, 3, init_error="weights file missing: model.onnx")
    try:
        with Hammer(server.http_url, [None]) as hammer:
            result = run_module("triton_model", args(server, reload=True))
        assert result["failed"] is True
        assert "version 3 is at UNAVAILABLE state" in result["msg"]
        assert "weights file missing: model.onnx" in result["msg"]
        assert "Versions still serving: [2]" in result["msg"]
        assert hammer.failures == []
        assert hammer.answered_by == {(None, 2)}
    finally:
        shutil.rmtree(os.path.join(repo, "add_sub", "3"))


def test_unparsable_config_file_points_at_the_log(server, client):
    ensure(client, [2])
    path = os.path.join(server.repository, "add_sub", "config.pbtxt")
    # Triton re-reads a loaded model's files on load only when their mtime moved past what it recorded: a write in
    # the same timestamp tick as the previous test's (coarse kernel clock, a loaded machine) read as unchanged, the
    # load succeeded on the old config and this test failed once (fresh clone, integration on both cores).
    time.sleep(1.1)
    with open(path, "w") as handle:
        handle.write(ADD_SUB_CONFIG.replace("TYPE_FP32", "TYPE_NOPE", 1))
    try:
        result = run_module("triton_model", args(server, reload=True))
    finally:
        time.sleep(1.1)  # the restored file, too, must read as changed to the next test's load
        with open(path, "w") as handle:
            handle.write(ADD_SUB_CONFIG)
    assert result.get("failed") is True, result
    assert "failed to poll from model repository" in result["msg"]
    assert "journalctl -u tritonserver" in result["msg"]
    assert client.ready_versions("add_sub") == [2]


def test_batch_goes_on_after_a_failed_model_and_names_it(server, client):
    ensure(client, [2])
    base = {"url": server.http_url, "api_key": KEY}
    batch = [{"name": "no_such_model", "versions": [1]}, {"name": "add_sub", "versions": [1]}]
    check = run_module("triton_model", dict(base, batch=batch), check_mode=True)
    assert check["results"][1]["action"] == "load" and client.ready_versions("add_sub") == [2]
    result = run_module("triton_model", dict(base, batch=batch, repository_config=False))
    assert result["failed"] is True and result["changed"] is True
    missing, add_sub = result["results"]
    assert missing["failed"] is True and "no_such_model" in missing["msg"] and missing["msg"] in result["msg"]
    assert missing["item"] == {"name": "no_such_model", "versions": [1]}
    # the model after the failed one was still loaded, as a loop would have
    assert (add_sub["name"], add_sub["before"], add_sub["after"], add_sub["changed"]) == ("add_sub", [2], [1], True)
    assert client.infer("add_sub", ADD_SUB_INPUTS)["VERSION"]["data"] == [1]
    again = run_module("triton_model", dict(base, batch=[{"name": "add_sub", "versions": [1]}]))
    assert again["changed"] is False and again["results"][0]["action"] == "none"
    # an element's reload replaces the shared one
    reload = run_module("triton_model", dict(base, reload=False, batch=[{"name": "add_sub", "versions": [1], "reload": True}]))
    assert reload["changed"] is True and reload["results"][0]["action"] == "load"


def test_unload_and_load_again(server, client):
    ensure(client, [2])
    result = run_module("triton_model", args(server, state="unloaded"))
    assert (result["changed"], result["before"], result["after"]) == (True, [2], [])
    assert {s["state"] for s in result["states"]} == {"UNAVAILABLE"}
    assert 2 in [s["version"] for s in result["states"]]
    assert client.model_ready("add_sub") is False
    assert run_module("triton_model", args(server, state="unloaded"))["changed"] is False
    # from unloaded straight to a pinned version
    result = run_module("triton_model", args(server, versions=[1]))
    assert (result["changed"], result["before"], result["after"]) == (True, [], [1])
    assert client.infer("add_sub", ADD_SUB_INPUTS)["VERSION"]["data"] == [1]


def test_runs_through_ansible_by_fqcn(server, client):
    ensure(client, [1])
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_PYTHON_INTERPRETER=os.path.realpath(os.sys.executable))
    module_args = json.dumps(args(server, versions=[2]))
    proc = subprocess.run(["ansible", "localhost", "-m", "aiops.triton.triton_model", "-a", module_args, "--diff"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert (result["changed"], result["before"], result["after"]) == (True, [1], [2])
    assert KEY not in proc.stdout  # the key is no_log
    assert client.ready_versions("add_sub") == [2]
