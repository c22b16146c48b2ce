"""Measured footprints end to end (issue 33): a rollout measures each version it validates as a candidate and records
FOOTPRINT.json beside its MANIFEST.json in S3 (from the controller), never rewriting one that exists; validate.yml,
with Triton stopped, reads it and refuses a host whose memory it does not fit, saying the footprint was measured.

A real Triton serving the python-backend add_sub, moto over HTTP, playbooks/models.yml and validate.yml by
ansible-playbook against localhost (test_models_playbook's lab, with a bucket of its own).
"""

import json
import os
import subprocess
import sys

import pytest

from test_models_playbook import ADD_SUB, rollout_lab, run_rollout
from triton_fixtures import CHECKOUT, COLLECTIONS_PATH

pytestmark = pytest.mark.integration

BUCKET = "footprint-models"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, moto_server):
    yield from rollout_lab(tmp_path_factory, moto_server, bucket=BUCKET)


def footprint(lab, version):
    """(record, ETag) of add_sub's FOOTPRINT.json, (None, None) when it has none."""
    key = "models/add_sub/%d/FOOTPRINT.json" % version
    try:
        obj = lab["s3"].get_object(Bucket=BUCKET, Key=key)
    except lab["s3"].exceptions.NoSuchKey:
        return None, None
    return json.loads(obj["Body"].read()), obj["ETag"]


def validate(lab, versions, host_memory_mib):
    inventory = lab["root"] / "validate.ini"
    inventory.write_text("[triton_servers]\ntw1 ansible_host=192.0.2.1\n")  # never contacted: validate runs on the controller
    extra = lab["root"] / "validate.json"
    extra.write_text(json.dumps({
        "triton_models_list": [{"name": "add_sub", "config": ADD_SUB, "versions": versions}],
        "triton_models_s3_bucket": BUCKET, "triton_models_s3_endpoint_url": lab["moto"].endpoint,
        "triton_models_s3_access_key": "testing", "triton_models_s3_secret_key": "testing",
        "triton_server_api_key": "f" * 32, "triton_host_memory_mib": host_memory_mib,
        "triton_gpu_budget_headroom": "0%"}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
         os.path.join(CHECKOUT, "playbooks", "validate.yml"), "-e", "@%s" % extra],
        cwd=CHECKOUT, capture_output=True, text=True, env=env, timeout=300, check=False)


def test_a_rollout_records_footprints_once_and_validate_reads_them_without_triton(lab):
    first = run_rollout(lab, [1], pipeline=False)
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    v1, etag = footprint(lab, 1)
    assert v1 is not None, "no FOOTPRINT.json beside MANIFEST.json:\n" + first.stdout[-6000:]
    assert v1["model"] == "add_sub" and v1["version"] == 1 and v1["host"] == "localhost"
    assert v1["source"] == "triton_footprint" and v1["measured_as"] == "add_sub__candidate"
    # one KIND_CPU instance per group staged: a python-backend stub whose RSS is its host memory; no GPU here
    assert v1["footprint"]["host_mib"] > 0 and v1["instances"] == 1
    assert v1["triton_version"] and v1["measured"]

    # v1 and v2 staged together: v1 is recorded, so only v2 is measured; v1's file is not written again
    second = run_rollout(lab, [1, 2], pipeline=False)
    assert second.returncode == 0, second.stdout[-6000:] + second.stderr[-2000:]
    assert footprint(lab, 1) == (v1, etag)
    v2, _etag = footprint(lab, 2)
    assert v2 is not None and v2["footprint"]["host_mib"] > 0

    lab["server"].stop()  # nothing below may load a model
    serving = 2 * 1 * v1["footprint"]["host_mib"]  # one instance of each version
    too_small = serving  # the set fits, a rollout's peak (its reload) does not
    refused = validate(lab, [1, 2], too_small)
    out = refused.stdout
    assert refused.returncode != 0, out[-4000:]
    assert "tw1 host memory: serving add_sub v1 1×{:,} MiB measured".format(v1["footprint"]["host_mib"]) in out, out[-4000:]
    assert "> {:,} MiB".format(too_small) in out
    assert "footprint add_sub v1: measured (per instance: GPU ?, host {:,} MiB; s3://{}/models/add_sub/1/FOOTPRINT.json, " \
           "on localhost at {}): tw1".format(v1["footprint"]["host_mib"], BUCKET, v1["measured"]) in out
