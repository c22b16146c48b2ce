"""Rollouts that stay right after failures (issue 21), on a real Triton and a real S3 (moto over HTTP),
playbooks/models.yml run by ansible-playbook, as one sequence the way an operator meets it:

good 1 -> good 2 -> corrupt 3 (cannot load) -> regressed 4 (loads, fails its golden cases: two failures in
a row) -> good 6 -> corrupt 7 with keep_versions 0 (the rollback target is not on disk: fetched again) ->
10, which passes its own golden cases but breaks the ensemble over it -> corrupt 8 with the target gone from
S3 too (unrestorable: unloaded with the ensemble, named).

After every failed step: exactly the last verified version serves, /v2/health/ready stays 200, no
candidate is left behind, and a client polling throughout never got an answer from a failed version.
"""

import json
import threading
import urllib.request

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError, TritonClient
from s3_fixtures import publish_version
from test_models_playbook import (ADD_SUB_INPUTS, KEY, add_sub_files, infer_version, record, rollout_lab,
                                  run_rollout, versions_on_disk)
from triton_fixtures import add_sub_golden_case

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory, moto_server):
    """A Triton and a bucket of this module's own: the sequence starts from an empty host."""
    yield from rollout_lab(tmp_path_factory, moto_server, bucket="failure-sequence-models")


class Poller(threading.Thread):
    """A client calling add_sub (and the pipeline) over and over: which versions answered, and failures."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.client = TritonClient(server.http_url)
        self.stop = threading.Event()
        self.versions, self.failures, self.requests = set(), [], 0

    def run(self):
        while not self.stop.is_set():
            self.requests += 1
            try:
                self.versions.update(self.client.infer("add_sub", ADD_SUB_INPUTS)["VERSION"]["data"])
                self.client.infer("add_sub_pipeline", {"A": ADD_SUB_INPUTS["INPUT0"], "B": ADD_SUB_INPUTS["INPUT1"]})
            except TritonApiError as exc:
                self.failures.append(str(exc))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.join(10)


def ready_status(server):
    try:
        with urllib.request.urlopen(server.http_url + "/v2/health/ready", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def rollout(lab, version, keep=None):
    with Poller(lab["server"]) as poller:
        proc = run_rollout(lab, [version], keep_versions=keep)
    return proc, proc.stdout + proc.stderr, poller


def assert_serves_only(lab, version, poller, out, failed=()):
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    assert client.ready_versions("add_sub") == [version], out[-6000:]
    assert client.ready_versions("add_sub_pipeline") == [1], out[-6000:]
    assert infer_version(lab["server"]) == [version]
    assert ready_status(lab["server"]) == 200, "readiness must stay 200 after a failed rollout:\n" + out[-4000:]
    assert not poller.failures, poller.failures[:5]
    assert poller.requests > 0
    assert not poller.versions & set(failed), "a client got an answer from a failed version: %s" % sorted(poller.versions)
    assert not [p for p in lab["repo"].iterdir() if p.name.endswith("__candidate")], "a candidate was left behind"
    assert record(lab, "add_sub")["versions"] == [version]


def test_failure_sequence_keeps_serving_the_last_verified_version(lab):
    s3 = lab["s3"]
    for version in (1, 2, 6):
        publish_version(s3, lab["bucket"], "models", "add_sub", version, add_sub_files(version))
    for version in (3, 7, 8):
        publish_version(s3, lab["bucket"], "models", "add_sub", version, add_sub_files(version, init_error="v%d cannot start" % version))
    regressed = add_sub_files(4)
    # a retrain that answers wrongly: its own golden cases (written for what v2 answered) fail
    regressed["golden_cases.json"] = json.dumps({"cases": [dict(add_sub_golden_case(2), name="regressed-v4-case")]}).encode()
    publish_version(s3, lab["bucket"], "models", "add_sub", 4, regressed)

    proc = run_rollout(lab, [1])  # nothing serves before this one: no client to count
    assert proc.returncode == 0, proc.stdout[-6000:]
    proc, out, poller = rollout(lab, 2)
    assert proc.returncode == 0, out[-6000:]
    assert_serves_only(lab, 2, poller, out)

    # corrupt: the candidate cannot load; the real model never sees v3
    proc, out, poller = rollout(lab, 3)
    assert proc.returncode != 0, out[-6000:]
    assert "add_sub version(s) 3 failed at load as a candidate (add_sub__candidate) and never served" in out, out[-6000:]
    assert "v3 cannot start" in out
    assert_serves_only(lab, 2, poller, out, failed=[3])

    # regressed, the second failure in a row (issue 21's case: the failed 3 must not be kept in place of the
    # verified 2): loads, answers wrongly; no client is ever answered by it
    proc, out, poller = rollout(lab, 4)
    assert proc.returncode != 0, out[-6000:]
    assert "add_sub version(s) 4 failed at verify as a candidate (add_sub__candidate) and never served (golden cases: regressed-v4-case)" in out, out[-6000:]
    assert_serves_only(lab, 2, poller, out, failed=[3, 4])
    assert versions_on_disk(lab, "add_sub") == [2, 4], "retention keeps the verified 2, not the failed 3"

    proc, out, poller = rollout(lab, 6)
    assert proc.returncode == 0, out[-6000:]
    assert_serves_only(lab, 6, poller, out)
    assert record(lab, "add_sub")["verified"][:2] == [6, 2]

    # keep_versions 0: the sync removes the verified 6; the failure of 7 fetches it again from S3
    proc, out, poller = rollout(lab, 7, keep=0)
    assert proc.returncode != 0, out[-6000:]
    assert_serves_only(lab, 6, poller, out, failed=[7])
    assert 6 in versions_on_disk(lab, "add_sub")


def test_a_version_that_breaks_its_ensemble_never_serves(lab):
    """Runs after the sequence above: 6 serves. Version 10 is consistent with its own golden cases (it adds 1
    more, and they expect so), but the pipeline's golden cases fail over it: the ensemble candidate, wired to
    the staged add_sub candidate, catches it before either serves."""
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    if client.ready_versions("add_sub") != [6]:
        proc = run_rollout(lab, [6])
        assert proc.returncode == 0, proc.stdout[-6000:]
    files = add_sub_files(10)
    files["model.py"] = files["model.py"].replace(b"(a + b)", b"(a + b + 1)")
    case = add_sub_golden_case(10)
    case["expected"]["OUTPUT0"]["data"] = [v + 1 for v in case["expected"]["OUTPUT0"]["data"]]
    files["golden_cases.json"] = json.dumps({"cases": [case]}).encode()
    publish_version(lab["s3"], lab["bucket"], "models", "add_sub", 10, files)
    proc, out, poller = rollout(lab, 10)
    assert proc.returncode != 0, out[-6000:]
    assert ("add_sub_pipeline version(s) 1 failed at verify as a candidate (add_sub_pipeline__candidate) and never served "
            "(golden cases: pipeline-sum)") in out, out[-6000:]
    assert_serves_only(lab, 6, poller, out, failed=[10])


def test_a_model_that_cannot_be_restored_is_unloaded_with_its_ensembles(lab):
    """Runs after the sequence above (same module lab): 6 serves and is the rollback target."""
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    if client.ready_versions("add_sub") != [6]:
        proc = run_rollout(lab, [6])
        assert proc.returncode == 0, proc.stdout[-6000:]
    for obj in lab["s3"].list_objects_v2(Bucket=lab["bucket"], Prefix="models/add_sub/6/")["Contents"]:
        lab["s3"].delete_object(Bucket=lab["bucket"], Key=obj["Key"])
    proc = run_rollout(lab, [8], keep_versions=0)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-6000:]
    assert "Cannot roll back add_sub" in out and "add_sub_pipeline" in out, out[-6000:]
    assert client.ready_versions("add_sub") == []
    assert client.ready_versions("add_sub_pipeline") == []
    assert ready_status(lab["server"]) == 200
