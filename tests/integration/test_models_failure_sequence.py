"""Rollouts that stay right after failures (issue 21), on a real Triton and a real S3 (moto over HTTP),
playbooks/models.yml run by ansible-playbook, as one sequence the way an operator meets it:

good 2 -> corrupt 3 (cannot load) -> regressed 4 (loads, computes wrong outputs, fails its golden
cases: two failures in a row) -> good 6 -> corrupt 7 with keep_versions 0 (the rollback target is not on disk: fetched again) ->
10, which passes its own golden cases but breaks the ensemble over it -> corrupt 8 with the target gone from
S3 too (unrestorable: unloaded with the ensemble, named).

After every failed step: exactly the last verified version serves, /v2/health/ready is 200, no candidate is
left behind, and a client polling throughout never got an answer from a failed version nor a wrong answer.
During every failed step (read by the poller after each of its requests): the last verified versions stay
READY, and /v2/health/ready is 200 but while the candidate loads, fails or unloads (Triton's strict readiness
counts a loading model as not ready: a load balancer may take the host out for that moment). A poller that dies or
stops before the rollout ends fails the step: its record would be short. Why a host was rolled back is read
from its own line of the rollout summary, not from anywhere in the log.
"""

import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError, TritonClient
from s3_fixtures import publish_version
from test_models_playbook import (ADD_SUB_INPUTS, KEY, add_sub_files, infer_version, record, rollout_lab,
                                  run_rollout, versions_on_disk)
from triton_fixtures import add_sub_golden_case

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "molecule"))
import scenario_checks  # noqa: E402  (molecule/scenario_checks.py: the rollout summary's lines, unit-tested)

pytestmark = pytest.mark.integration
# what every good add_sub version answers for ADD_SUB_INPUTS (OUTPUT0 = INPUT0 + INPUT1)
SUM = [1.5, 2.5, 3.5, 4.5]


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory, moto_server):
    """A Triton and a bucket of this module's own: the sequence starts from an empty host."""
    yield from rollout_lab(tmp_path_factory, moto_server, bucket="failure-sequence-models")


class Poller(threading.Thread):
    """A client calling add_sub (and the pipeline) over and over while a rollout runs: which versions
    answered, answers that were not the sum, failures, and /v2/health/ready after every round, between two
    reads of the repository index. serving ({model: version}, a rollout that must stop at its candidate):
    those versions stay READY at every read, and readiness is 200 but while the candidate loads, fails or
    unloads (scenario_checks.readiness_problem); every other probe is kept in `unexplained`. Anything else that
    goes wrong ends the poller and is kept (problem()), as is whether it still ran when the rollout ended."""

    def __init__(self, server, serving=None):
        super().__init__(daemon=True)
        self.server, self.serving = server, serving
        self.client = TritonClient(server.http_url)
        self.admin = TritonClient(server.http_url, api_key=KEY)
        self.stop = threading.Event()
        self.versions, self.failures, self.wrong, self.not_ready, self.unexplained = set(), [], [], [], []
        self.requests = self.ready_checks = self.index_races = 0
        self.error = self.alive_at_stop = None

    def run(self):
        try:
            while not self.stop.is_set():
                self.requests += 1
                try:
                    answer = self.client.infer("add_sub", ADD_SUB_INPUTS)
                    self.versions.update(answer["VERSION"]["data"])
                    if answer["OUTPUT0"]["data"] != SUM:
                        self.wrong.append((answer["VERSION"]["data"], answer["OUTPUT0"]["data"]))
                    self.client.infer("add_sub_pipeline", {"A": ADD_SUB_INPUTS["INPUT0"], "B": ADD_SUB_INPUTS["INPUT1"]})
                except TritonApiError as exc:
                    self.failures.append(str(exc))
                before = self.index()
                status = ready_status(self.server)
                after = self.index()
                self.ready_checks += 1
                if status != 200:
                    self.not_ready.append(status)
                why = scenario_checks.readiness_problem(status, [before, after], self.serving) if self.serving else None
                if why:
                    self.unexplained.append(why)
        except Exception as exc:  # kept: a poller that dies must fail the step, not leave a short record
            self.error = "%s: %s" % (type(exc).__name__, exc)

    def index(self):
        """The repository index. Triton lists the repository directory, then stats each entry: a candidate directory
        the role removes in between fails that one listing with HTTP 500 "failed to stat file .../<name>__candidate"
        (Triton's race, not a serving failure). Such a listing is counted and read again; any other error is not."""
        for attempt in range(5):
            try:
                return self.admin.repository_index()
            except TritonApiError as exc:
                if attempt == 4 or not re.search(r"HTTP 500: failed to stat file \S*__candidate(/\S*)?$", str(exc).strip()):
                    raise
                self.index_races += 1
                time.sleep(0.05)

    def problem(self):
        """None when the poller ran the whole rollout, else why its record cannot be trusted."""
        if self.error:
            return "the poller died: %s" % self.error
        if not self.alive_at_stop:
            return "the poller stopped before the rollout ended"
        if self.requests < 2 or self.ready_checks < 2:
            return "the poller made %d requests and %d readiness checks" % (self.requests, self.ready_checks)
        return None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.alive_at_stop = self.is_alive()
        self.stop.set()
        self.join(10)


def ready_status(server):
    """The HTTP status of /v2/health/ready, or why there was none (refused, reset, timed out)."""
    try:
        with urllib.request.urlopen(server.http_url + "/v2/health/ready", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError as exc:
        return "no answer: %s" % exc


def rolled_back_because(out, host="localhost"):
    """The reason the host's own rollout summary line gives for its rollback ('' when it says none)."""
    lines = [line for line in scenario_checks.summary_lines(out, host) if line.startswith("%s [" % host)
             and "]: rolled back" in line]
    assert lines, "%s is not rolled back in the rollout summary:\n%s" % (host, out[-6000:])
    return lines[-1].split(" -- ", 1)[1] if " -- " in lines[-1] else ""


def rollout(lab, version, keep=None, serving=None):
    """One rollout under the poller; serving: the add_sub version a failure must leave serving throughout."""
    with Poller(lab["server"], serving=None if serving is None else {"add_sub": serving, "add_sub_pipeline": 1}) as poller:
        proc = run_rollout(lab, [version], keep_versions=keep)
    return proc, proc.stdout + proc.stderr, poller


def assert_serves_only(lab, version, poller, out, failed=()):
    client = TritonClient(lab["server"].http_url, api_key=KEY)
    assert client.ready_versions("add_sub") == [version], out[-6000:]
    assert client.ready_versions("add_sub_pipeline") == [1], out[-6000:]
    assert infer_version(lab["server"]) == [version]
    assert ready_status(lab["server"]) == 200, "readiness must stay 200 after a failed rollout:\n" + out[-4000:]
    assert poller.problem() is None, poller.problem()
    if failed:  # sampled throughout: the served versions stayed READY, readiness 200 but for the candidate's load
        assert poller.serving, "a failure step must say what keeps serving during it"
        assert not poller.unexplained, "during the rollout (%d probes, %d not 200): %s" % (
            poller.ready_checks, len(poller.not_ready), sorted(set(poller.unexplained))[:5])
    assert not poller.failures, poller.failures[:5]
    assert not poller.wrong, "a client got a wrong answer (version, OUTPUT0): %s" % poller.wrong[:5]
    assert not poller.versions & set(failed), "a client got an answer from a failed version: %s" % sorted(poller.versions)
    assert not [p for p in lab["repo"].iterdir() if p.name.endswith("__candidate")], "a candidate was left behind"
    assert record(lab, "add_sub")["versions"] == [version]


def regressed_files(version):
    """A retrain that computes wrong outputs: OUTPUT0 is a + b + 0.5, where every good version answers a + b.
    Its golden case is the right one for `version` (its VERSION included), so only what it computes fails."""
    files = add_sub_files(version)
    source = files["model.py"].decode()
    assert source.count("(a + b)") == 1
    files["model.py"] = source.replace("(a + b)", "(a + b + 0.5)").encode()
    files["golden_cases.json"] = json.dumps({"cases": [dict(add_sub_golden_case(version), name="regressed-v%d-case" % version)]}).encode()
    return files


def answers_of(files, version, where):
    """What a version's model.py answers for ADD_SUB_INPUTS, run here (imported from where/) with a stand-in for
    Triton's python backend utilities (the model only reads its two inputs and builds tensors)."""
    import importlib.util
    import numpy as np

    class Tensor(object):
        def __init__(self, name, data):
            self.name, self.data = name, data

        def as_numpy(self):
            return self.data

    utils = type(sys)("triton_python_backend_utils")
    utils.Tensor = Tensor
    utils.InferenceResponse = lambda tensors: dict((t.name, t.data.tolist()) for t in tensors)
    utils.get_input_tensor_by_name = lambda request, name: Tensor(name, np.array(request[name]["data"], dtype=np.float32))
    path = where / ("model_v%d_%d.py" % (version, len(list(where.iterdir()))))
    path.write_bytes(files["model.py"])
    saved = sys.modules.get("triton_python_backend_utils")
    sys.modules["triton_python_backend_utils"] = utils
    try:
        spec = importlib.util.spec_from_file_location(path.stem, str(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("triton_python_backend_utils")
        else:
            sys.modules["triton_python_backend_utils"] = saved
    model = module.TritonPythonModel()
    model.initialize({"model_version": str(version)})
    return model.execute([ADD_SUB_INPUTS])[0]


def test_the_regressed_version_computes_other_outputs_than_the_good_one(tmp_path):
    """Not only its VERSION differs: what it computes does, and its golden case expects its own VERSION."""
    good, regressed = answers_of(add_sub_files(4), 4, tmp_path), answers_of(regressed_files(4), 4, tmp_path)
    assert good["OUTPUT0"] == SUM and good["VERSION"] == regressed["VERSION"] == [4]
    assert regressed["OUTPUT0"] != SUM and regressed["OUTPUT1"] == good["OUTPUT1"]
    case = json.loads(regressed_files(4)["golden_cases.json"])["cases"][0]
    assert case["expected"]["VERSION"]["data"] == [4] and case["expected"]["OUTPUT0"]["data"] == SUM


def test_failure_sequence_keeps_serving_the_last_verified_version(lab):
    s3 = lab["s3"]
    for version in (2, 6):  # the lab's bucket holds 1 and 2 already (rollout_lab); 2 is republished unchanged
        publish_version(s3, lab["bucket"], "models", "add_sub", version, add_sub_files(version))
    for version in (3, 7, 8):
        publish_version(s3, lab["bucket"], "models", "add_sub", version, add_sub_files(version, init_error="v%d cannot start" % version))
    regressed = regressed_files(4)
    publish_version(s3, lab["bucket"], "models", "add_sub", 4, regressed)

    # the first install (nothing serves before it: no client to count); a good upgrade under a polling client is
    # step 6's, 2 -> 6
    proc = run_rollout(lab, [2])
    assert proc.returncode == 0, proc.stdout[-6000:]

    # corrupt: the candidate cannot load; the real model never sees v3
    proc, out, poller = rollout(lab, 3, serving=2)
    assert proc.returncode != 0, out[-6000:]
    why = rolled_back_because(out)
    assert "add_sub version(s) 3 failed at load as a candidate (add_sub__candidate) and never served" in why, why
    assert "v3 cannot start" in out
    assert_serves_only(lab, 2, poller, out, failed=[3])

    # regressed, the second failure in a row (issue 21's case: the failed 3 must not be kept in place of the
    # verified 2): loads, answers wrongly; no client is ever answered by it
    proc, out, poller = rollout(lab, 4, serving=2)
    assert proc.returncode != 0, out[-6000:]
    why = rolled_back_because(out)
    assert "add_sub version(s) 4 failed at verify as a candidate (add_sub__candidate) and never served (golden cases: regressed-v4-case)" in why, why
    # its VERSION is its own (4, as its case expects): what failed is what it computed
    assert "output OUTPUT0[" in why and "output VERSION" not in why, why
    assert_serves_only(lab, 2, poller, out, failed=[3, 4])
    assert versions_on_disk(lab, "add_sub") == [2, 4], "retention keeps the verified 2, not the failed 3"

    proc, out, poller = rollout(lab, 6)
    assert proc.returncode == 0, out[-6000:]
    assert_serves_only(lab, 6, poller, out)
    assert record(lab, "add_sub")["verified"][:2] == [6, 2]

    # keep_versions 0: the sync removes the verified 6; the failure of 7 fetches it again from S3
    proc, out, poller = rollout(lab, 7, keep=0, serving=6)
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
    proc, out, poller = rollout(lab, 10, serving=6)
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
