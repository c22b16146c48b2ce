"""triton_api against a real tritonserver (Triton 2.51 from nvidia-pytriton)."""

import os
import sys
import time

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError, TritonClient

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "integration"))
from triton_fixtures import ADD_SUB_INPUTS, TritonServer, free_port, write_add_sub_version, write_upper_model  # noqa: E402

pytestmark = pytest.mark.integration

KEY = "api-test-key"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = str(tmp_path_factory.mktemp("repo"))
    write_add_sub_version(repo, 1)
    write_add_sub_version(repo, 2)
    write_upper_model(repo, dims="-1")
    with TritonServer(repo, api_key=KEY) as srv:
        yield srv


@pytest.fixture
def client(server):
    return TritonClient(server.http_url, api_key=KEY, api_key_header=server.api_key_header)


def test_health_and_metadata(client):
    assert client.live() is True
    assert client.ready() is True
    meta = client.server_metadata()
    assert meta["version"] == "2.51.0"
    assert "model_repository" in meta["extensions"]


def test_index_shows_latest_version_ready(client):
    assert client.model_versions("add_sub") == {2: "READY"}
    assert client.ready_versions("upper") == [1]


def test_infer_fp32_returns_computed_tensors(client):
    outputs = client.infer("add_sub", ADD_SUB_INPUTS)
    assert outputs["OUTPUT0"] == {"datatype": "FP32", "shape": [4], "data": [1.5, 2.5, 3.5, 4.5]}
    assert outputs["OUTPUT1"]["data"] == [0.5, 1.5, 2.5, 3.5]
    assert outputs["VERSION"]["data"] == [2]


def test_infer_bytes(client):
    outputs = client.infer("upper", {"TEXT": {"datatype": "BYTES", "shape": [2], "data": ["disk full", "oom"]}},
                           outputs=["UPPER"])
    assert outputs["UPPER"]["data"] == ["DISK FULL", "OOM"]


def test_bad_infer_carries_tritons_text(client):
    with pytest.raises(TritonApiError) as err:
        client.infer("add_sub", {"INPUT0": ADD_SUB_INPUTS["INPUT0"]})
    assert err.value.status == 400
    assert "missing required input(s) ['INPUT1']" in str(err.value)


def test_model_config_and_ready_per_version(client):
    config = client.model_config("add_sub")
    assert config["backend"] == "python"
    assert [g["kind"] for g in config["instance_group"]] == ["KIND_CPU"]
    assert client.model_ready("add_sub", 2) is True
    assert client.model_ready("add_sub", 1) is False


def test_load_with_version_override_then_plain_reload_reverts(client):
    config = client.model_config("add_sub")
    client.load_model("add_sub", config=dict(config, version_policy={"specific": {"versions": [1, 2]}}))
    assert client.ready_versions("add_sub") == [1, 2]
    assert client.infer("add_sub", ADD_SUB_INPUTS, version=1)["VERSION"]["data"] == [1]
    assert client.model_metadata("add_sub")["versions"] == ["1", "2"]
    client.load_model("add_sub")  # config.pbtxt again: latest 1
    assert client.ready_versions("add_sub") == [2]


def test_unload_drains_in_background(client):
    client.unload_model("upper")
    deadline = time.time() + 30
    while client.model_versions("upper").get(1) != "UNAVAILABLE" and time.time() < deadline:
        time.sleep(0.2)
    assert client.model_versions("upper") == {1: "UNAVAILABLE"}
    assert client.model_ready("upper") is False
    client.load_model("upper")
    assert client.ready_versions("upper") == [1]


def test_restricted_api_needs_the_key(server):
    for key in (None, "wrong"):
        anonymous = TritonClient(server.http_url, api_key=key)
        with pytest.raises(TritonApiError) as err:
            anonymous.repository_index()
        assert err.value.status == 403
        assert "expecting header 'triton-admin-key'" in str(err.value)
    # inference is not restricted
    assert TritonClient(server.http_url).infer("add_sub", ADD_SUB_INPUTS)["VERSION"]["data"] == [2]


def test_load_unknown_model_reports_triton_error(client):
    with pytest.raises(TritonApiError) as err:
        client.load_model("no_such_model")
    assert "failed to load 'no_such_model'" in str(err.value)


def test_unreachable_server_has_no_status():
    client = TritonClient("http://127.0.0.1:%d" % free_port(), timeout=2)
    with pytest.raises(TritonApiError) as err:
        client.live()
    assert err.value.status is None
    assert "cannot reach Triton" in str(err.value)
