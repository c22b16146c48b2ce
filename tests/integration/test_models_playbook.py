"""playbooks/models.yml end to end on this machine: a real Triton, a real S3 (moto over HTTP) and
the playbook run by ansible-playbook against localhost. The list is the desired state: exactly the
listed versions serve (older ones stay on disk for rollback only), a dropped model is unloaded and
deleted. A rollout whose new version Triton cannot load must fail, roll back by itself to the last
verified versions, and keep serving.

Runs as root (as CI does): the role writes the model repository owned by root.
"""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonClient
from s3_fixtures import publish_version
from triton_fixtures import (ADD_SUB_INPUTS, ADD_SUB_MODEL, CHECKOUT, COLLECTIONS_PATH, TritonServer,
                             add_sub_golden_case)

pytestmark = pytest.mark.integration

KEY = "rollout-test-key"
BUCKET = "rollout-models"
TENSOR = {"data_type": "TYPE_FP32", "dims": [4]}

ADD_SUB = {
    "name": "add_sub", "backend": "python", "max_batch_size": 0,
    "input": [dict(TENSOR, name="INPUT0"), dict(TENSOR, name="INPUT1")],
    "output": [dict(TENSOR, name="OUTPUT0"), dict(TENSOR, name="OUTPUT1"),
               {"name": "VERSION", "data_type": "TYPE_INT32", "dims": [1]}],
    "instance_group": [{"kind": "KIND_CPU", "count": 1}],
}
# An ensemble over add_sub: rollback must restore it too (without a version_policy, which Triton
# refuses on ensembles).
PIPELINE = {
    "name": "add_sub_pipeline", "platform": "ensemble", "max_batch_size": 0,
    "input": [dict(TENSOR, name="A"), dict(TENSOR, name="B")],
    "output": [dict(TENSOR, name="SUM")],
    "ensemble_scheduling": {"step": [{
        "model_name": "add_sub", "model_version": -1,
        "input_map": {"INPUT0": "A", "INPUT1": "B"}, "output_map": {"OUTPUT0": "SUM"}}]},
}
PIPELINE_GOLDEN = {"cases": [{
    "name": "pipeline-sum", "inputs": {"A": ADD_SUB_INPUTS["INPUT0"], "B": ADD_SUB_INPUTS["INPUT1"]},
    "expected": {"SUM": {"data": [1.5, 2.5, 3.5, 4.5], "atol": 1e-6}}}]}


def add_sub_files(version, init_error=None):
    return {"model.py": ADD_SUB_MODEL.format(delay=0.0, error=init_error).encode(),
            "golden_cases.json": json.dumps({"cases": [add_sub_golden_case(version)]}).encode()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, moto_server):
    """See rollout_lab (also used by test_models_failure_sequence, with a lab of its own)."""
    yield from rollout_lab(tmp_path_factory, moto_server)


def rollout_lab(tmp_path_factory, moto_server, bucket=BUCKET):
    """A Triton with an empty repository and a bucket holding add_sub v1, v2 and the pipeline.

    add_sub is triton_fixtures' ADD_SUB model, described here as data (ADD_SUB) for the role."""
    assert os.geteuid() == 0, "this test deploys root-owned files as the role does on hosts: run it as root"
    root = tmp_path_factory.mktemp("rollout")
    repo = root / "models"
    repo.mkdir()
    s3 = moto_server.client()
    s3.create_bucket(Bucket=bucket)
    for version in (1, 2):
        publish_version(s3, bucket, "models", "add_sub", version, add_sub_files(version))
    publish_version(s3, bucket, "models", "add_sub_pipeline", 1,
                    {"golden_cases.json": json.dumps(PIPELINE_GOLDEN).encode()})
    # Triton bound to one address that is not 127.0.0.1: the rollout finds it through triton_server's endpoint
    # fact (run_rollout sets only the triton_server_* binds and ports), as a host bound to its own address would.
    with TritonServer(str(repo), api_key=KEY, address="127.0.0.2") as server:
        yield {"root": root, "repo": repo, "s3": s3, "server": server, "moto": moto_server, "bucket": bucket}


def run_rollout(lab, add_sub_versions, pipeline=True, check=False, latest=None, extra_hosts="", keep_versions=None):
    server = lab["server"]
    inventory = lab["root"] / "hosts.ini"
    inventory.write_text("[triton_servers]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n%s"
                         % (sys.executable, extra_hosts))
    extra = {
        "triton_models_list": [dict({"name": "add_sub", "config": ADD_SUB},
                                    **({"latest": latest} if latest else {"versions": add_sub_versions}),
                                    **({} if keep_versions is None else {"keep_versions": keep_versions}))]
        + ([{"name": "add_sub_pipeline", "config": PIPELINE, "versions": [1]}] if pipeline else []),
        "triton_models_s3_bucket": lab["bucket"],
        "triton_models_s3_endpoint_url": lab["moto"].endpoint,
        "triton_models_s3_access_key": "testing",
        "triton_models_s3_secret_key": "testing",
        "triton_server_model_repository": str(lab["repo"]),
        "triton_models_state_dir": str(lab["root"] / "state"),
        "triton_server_address": server.address,
        "triton_server_http_port": server.http_port,
        "triton_server_grpc_port": server.grpc_port,
        "triton_models_api_key": KEY,
        "triton_models_python": sys.executable,
        # the canary bake reads this Triton's /metrics (a short window: these tests judge the rollout itself)
        "triton_rollout_bake_seconds": 2,
        "triton_rollout_bake_metrics_url": server.metrics_url,
    }
    extra_file = lab["root"] / "rollout.json"
    extra_file.write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="0")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
         os.path.join(CHECKOUT, "playbooks", "models.yml"), "-e", "@%s" % extra_file] + (["--check", "--diff"] if check else []),
        cwd=CHECKOUT, capture_output=True, text=True, env=env, timeout=900, check=False)
    return proc


def record(lab, model):
    return json.loads((lab["root"] / "state" / ("%s.json" % model)).read_text())


def infer_version(server):
    return TritonClient(server.http_url).infer("add_sub", ADD_SUB_INPUTS)["VERSION"]["data"]


def versions_on_disk(lab, model):
    return sorted(int(n) for n in os.listdir(lab["repo"] / model) if n.isdigit())


def given(lab, add_sub_versions, pipeline):
    """Each test's own set-up: the host serves add_sub at these versions (with the pipeline, or without it)
    and records them, so the test holds when run alone. In file order the previous test left exactly this
    state and nothing runs; otherwise a rollout brings the host there."""
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    state = lab["root"] / "state" / "add_sub.json"

    def there():
        return (client.ready_versions("add_sub") == add_sub_versions
                and client.ready_versions("add_sub_pipeline") == ([1] if pipeline else [])
                and state.exists() and record(lab, "add_sub")["versions"] == add_sub_versions)
    if not there():
        proc = run_rollout(lab, add_sub_versions, pipeline=pipeline)
        assert proc.returncode == 0, "set-up rollout failed:\n" + proc.stdout[-6000:] + proc.stderr[-2000:]
        assert there(), "set-up rollout did not reach add_sub %s, pipeline %s" % (add_sub_versions, pipeline)


def test_good_rollout_is_verified_and_recorded(lab):
    proc = run_rollout(lab, [1])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    assert client.ready_versions("add_sub") == [1]
    assert client.ready_versions("add_sub_pipeline") == [1]
    assert record(lab, "add_sub")["versions"] == [1]
    assert record(lab, "add_sub_pipeline")["versions"] == [1]
    # the summary counts per rollout group and names each version change once (hosts only where a person is needed)
    assert "triton_servers: 1 hosts, 1 changed, 0 rolled back, 0 left drained" in proc.stdout, proc.stdout[-4000:]
    assert "triton_servers: add_sub [] -> [1] on 1 host" in proc.stdout, proc.stdout[-4000:]


def test_upgrade_serves_exactly_the_listed_versions(lab):
    """1 -> latest: 1, which the rollout resolves once to 2 (the newest in the bucket) and pins exactly [2]: version 1
    stays on disk for rollback (keep_versions 1) but no longer serves."""
    given(lab, [1], pipeline=True)
    proc = run_rollout(lab, None, latest=1)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "(item=add_sub latest 1)" in proc.stdout, proc.stdout[-6000:]
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    assert client.ready_versions("add_sub") == [2]
    assert versions_on_disk(lab, "add_sub") == [1, 2]
    assert infer_version(lab["server"]) == [2]
    assert record(lab, "add_sub")["versions"] == [2]
    assert "add_sub [1] -> [2]" in proc.stdout, proc.stdout[-4000:]
    assert "specific {\n    versions: [ 2 ]\n  }" in (lab["repo"] / "add_sub" / "config.pbtxt").read_text()


def test_broken_version_rolls_back_by_itself(lab):
    given(lab, [2], pipeline=True)
    publish_version(lab["s3"], BUCKET, "models", "add_sub", 3, add_sub_files(3, init_error="v3 cannot start"))
    proc = run_rollout(lab, [3])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-6000:]
    assert "was rolled back" in out, out[-6000:]
    assert "v3 cannot start" in out, "the failure must carry Triton's own error text:\n" + out[-6000:]
    assert "localhost [triton_servers]: rolled back" in out, out[-6000:]
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    # v2 stays on disk (keep_versions 1), so the rollback returns to exactly what was verified.
    assert versions_on_disk(lab, "add_sub") == [2, 3]
    assert client.ready_versions("add_sub") == [2]
    assert client.ready_versions("add_sub_pipeline") == [1]
    config = (lab["repo"] / "add_sub" / "config.pbtxt").read_text()
    assert "specific {\n    versions: [ 2 ]\n  }" in config, config
    assert infer_version(lab["server"]) == [2]
    pipeline = TritonClient(lab["server"].http_url).infer(
        "add_sub_pipeline", {"A": ADD_SUB_INPUTS["INPUT0"], "B": ADD_SUB_INPUTS["INPUT1"]})
    assert pipeline["SUM"]["data"] == [1.5, 2.5, 3.5, 4.5]
    assert record(lab, "add_sub")["versions"] == [2], "a failed rollout must not become the rollback target"


def test_dropped_model_is_unloaded_deleted_and_forgotten(lab):
    # the model to drop is served, on disk and recorded first (run alone, before, it never existed and
    # every assertion below held without a drop)
    given(lab, [2], pipeline=True)
    assert (lab["repo"] / "add_sub_pipeline").exists() and (lab["root"] / "state" / "add_sub_pipeline.json").exists()
    proc = run_rollout(lab, [2], pipeline=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    assert client.ready_versions("add_sub_pipeline") == []
    assert not (lab["repo"] / "add_sub_pipeline").exists()
    assert not (lab["root"] / "state" / "add_sub_pipeline.json").exists()
    assert client.ready_versions("add_sub") == [2]


def _recap_changed(out):
    line = [l for l in out.splitlines() if l.startswith("localhost ") and "changed=" in l][-1]
    return int(line.split("changed=")[1].split()[0])


def test_check_mode_on_a_converged_host_reports_no_change(lab):
    given(lab, [2], pipeline=False)
    proc = run_rollout(lab, [2], pipeline=False, check=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert _recap_changed(proc.stdout) == 0, proc.stdout[-6000:]


def test_drift_is_named_in_check_mode_and_nothing_changes(lab):
    """A hand-edited config.pbtxt, a version loaded through the API, a deleted version directory."""
    given(lab, [2], pipeline=False)
    repo, client = lab["repo"], TritonClient(lab["server"].http_url, api_key=KEY)
    config_path = repo / "add_sub" / "config.pbtxt"
    edited = config_path.read_text() + 'parameters {\n  key: "drift_probe"\n  value {\n    string_value: "edit"\n  }\n}\n'
    config_path.write_text(edited)
    # an unpinned version 5 (a copy of 2) loaded through the API next to the pinned 2
    import shutil
    shutil.copytree(repo / "add_sub" / "2", repo / "add_sub" / "5")
    client.load_model("add_sub", config=dict(client.model_config("add_sub"), version_policy={"specific": {"versions": [2, 5]}}))
    assert client.ready_versions("add_sub") == [2, 5]
    # the pinned version's directory deleted by hand (Triton still serves it from memory)
    shutil.rmtree(repo / "add_sub" / "2")

    proc = run_rollout(lab, [2], pipeline=False, check=True)
    out = proc.stdout
    (lab["root"] / "drift-check.log").write_text(out)
    assert proc.returncode == 0, out[-6000:] + proc.stderr[-2000:]
    assert _recap_changed(out) > 0, out[-6000:]
    tasks = dict((chunk.split("]", 1)[0], chunk) for chunk in out.split("TASK [")[1:])

    def task(title):
        return next(body for name, body in tasks.items() if title in name)
    # each difference under its task, with the host and the model
    config = task("Validate every model config")  # check mode renders each config once, in the preflight
    assert "changed: [localhost]" in config and '-  key: "drift_probe"' in config, config
    load = task("Load each model at exactly its pinned versions")
    assert "changed: [localhost]" in load and '"ready_versions": [\n-        2,\n-        5\n+        2' in load, load
    sync = task("Sync model versions")
    assert "changed: [localhost]" in sync and "\n+2 " in sync, sync
    # the batch tasks name the host; this names each model and what would change
    named = task("Name each model that changed")
    for line in ("add_sub: files - fetch [2]", "add_sub: config.pbtxt - %s is not what the inventory renders" % config_path,
                 "add_sub: READY versions [2, 5] -> [2] (load)"):
        assert line in named, (line, named)
    # and nothing changed
    assert config_path.read_text() == edited
    assert client.ready_versions("add_sub") == [2, 5]
    assert 2 not in versions_on_disk(lab, "add_sub")

    # a real run puts the desired state back
    proc = run_rollout(lab, [2], pipeline=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert client.ready_versions("add_sub") == [2]
    assert "drift_probe" not in config_path.read_text()
    assert 2 in versions_on_disk(lab, "add_sub")


def test_an_unreachable_host_stops_the_rollout_before_any_host_changes(lab):
    """The parallel check pass cannot rescue an unreachable host; the rollout must not go on without it."""
    given(lab, [2], pipeline=False)
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    before = client.ready_versions("add_sub")
    config = (lab["repo"] / "add_sub" / "config.pbtxt").read_text()
    wanted = [1] if before != [1] else [2]
    proc = run_rollout(lab, wanted, pipeline=False,
                       extra_hosts="ghost ansible_host=127.0.0.2 ansible_port=1 ansible_connection=ssh\n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-6000:]
    assert "Not checked: ghost (unreachable); no host was changed" in out, out[-6000:]
    assert client.ready_versions("add_sub") == before
    assert (lab["repo"] / "add_sub" / "config.pbtxt").read_text() == config
