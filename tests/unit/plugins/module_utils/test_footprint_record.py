"""Measured footprints kept beside a version's manifest (module_utils/footprint_record.py), and the budget's choice
between a declared, a measured and an unknown footprint (gpu_budget.merge_footprints). S3 is moto in-process."""

import json

import boto3
import pytest
from moto import mock_aws

from ansible_collections.aiops.triton.plugins.module_utils import footprint_record as fr
from ansible_collections.aiops.triton.plugins.module_utils import gpu_budget, s3_client
from ansible_collections.aiops.triton.plugins.module_utils.manifest import MANIFEST_NAME

ERRORS = ((s3_client.BotoCoreError, s3_client.ClientError), s3_client.s3_error)
BUCKET = "models-bucket"


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_the_footprint_lives_beside_the_manifest():
    assert fr.footprint_key("models", "add_sub", 3) == "models/add_sub/3/" + fr.FOOTPRINT_NAME
    assert fr.footprint_key("", "add_sub", 3) == "add_sub/3/FOOTPRINT.json"
    assert fr.FOOTPRINT_NAME != MANIFEST_NAME


def test_a_record_says_what_was_measured_and_how():
    record = fr.build_record("add_sub", "3", {"gpu_mib": None, "host_mib": 185, "source": "x", "measured": "t"},
                             measured="2026-12-06T09:44:20Z", host="tw1", details={"instances": 1, "triton_version": None})
    assert record == {"schema": 1, "model": "add_sub", "version": 3, "footprint": {"gpu_mib": None, "host_mib": 185},
                      "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z", "host": "tw1", "instances": 1}
    assert fr.load_record(fr.dump_record(record), "add_sub", 3) == record
    assert fr.budget_footprint(record) == {"gpu_mib": None, "host_mib": 185, "source": "triton_footprint",
                                           "measured": "2026-12-06T09:44:20Z"}


@pytest.mark.parametrize("footprint,message", [
    ({"gpu_mib": None, "host_mib": None}, "nothing was measured"),
    ({"host_mib": -1}, "host_mib must be MiB"),
    ({"host_mib": True}, "host_mib must be MiB"),
    ("185", "must be a mapping"),
])
def test_a_footprint_that_says_nothing_is_not_recorded(footprint, message):
    with pytest.raises(fr.FootprintError, match=message):
        fr.build_record("m", 1, footprint)


@pytest.mark.parametrize("data,message", [
    (b"{", "not valid JSON"),
    (b"[]", "must be a JSON object"),
    (json.dumps({"schema": 2}).encode(), "schema must be 1"),
    (json.dumps({"schema": 1, "model": "other", "version": 1, "footprint": {}}).encode(), "is for model 'other'"),
    (json.dumps({"schema": 1, "model": "m", "version": 2, "footprint": {}}).encode(), "is for version 2"),
    (json.dumps({"schema": 1, "model": "m", "version": 1, "footprint": {"host_mib": "lots"}}).encode(), "host_mib"),
])
def test_a_malformed_or_misplaced_record_is_refused(data, message):
    with pytest.raises(fr.FootprintError, match=message):
        fr.load_record(data, "m", 1)


def test_first_recorder_wins(s3):
    assert fr.read_record(s3, BUCKET, "models", "m", 1, ERRORS) is None
    first = fr.build_record("m", 1, {"host_mib": 100}, host="a")
    assert fr.write_record(s3, BUCKET, "models", first, ERRORS) is None
    later = fr.build_record("m", 1, {"host_mib": 120}, host="b")
    # a host that read "absent" just before another wrote: the conditional write keeps the first, returns it
    assert fr.write_record(s3, BUCKET, "models", later, ERRORS) == first
    assert fr.read_record(s3, BUCKET, "models", "m", 1, ERRORS) == first
    assert fr.same_footprint(first, {"host_mib": 100, "gpu_mib": None}) and not fr.same_footprint(first, later["footprint"])


def test_a_malformed_record_in_s3_names_its_location(s3):
    s3.put_object(Bucket=BUCKET, Key="models/m/1/FOOTPRINT.json", Body=b"nope")
    with pytest.raises(fr.FootprintError, match="s3://models-bucket/models/m/1/FOOTPRINT.json not valid JSON"):
        fr.read_record(s3, BUCKET, "models", "m", 1, ERRORS)


def test_an_unverified_sync_never_takes_the_footprint_for_a_file_of_the_version(s3):
    s3.put_object(Bucket=BUCKET, Key="models/m/1/model.py", Body=b"x")
    fr.write_record(s3, BUCKET, "models", fr.build_record("m", 1, {"host_mib": 1}), ERRORS)
    remote = s3_client.fetch_remote_version(s3, BUCKET, "models", "m", 1, allow_unverified=True)
    assert [f["path"] for f in remote.files] == ["model.py"]
    # a version with only a footprint is not a published version
    fr.write_record(s3, BUCKET, "models", fr.build_record("m", 2, {"host_mib": 1}), ERRORS)
    assert s3_client.fetch_remote_version(s3, BUCKET, "models", "m", 2, allow_unverified=True) is None


# --- declared > measured > unknown ------------------------------------------------------------------------------------

CPU = {"name": "m", "backend": "python", "instance_group": [{"kind": "KIND_CPU", "count": 2}]}
MEASURED = {"gpu_mib": None, "host_mib": 185, "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z"}


@pytest.mark.parametrize("declared,measured,sources,host_mib", [
    (None, {}, {"1": "unknown", "2": "unknown"}, {"1": None, "2": None}),
    (None, {"1": MEASURED}, {"1": "measured", "2": "unknown"}, {"1": 185, "2": None}),
    ({"host_mib": 300}, {"1": MEASURED}, {"1": "declared", "2": "declared"}, {"1": 300, "2": 300}),
    ({"2": {"host_mib": 300}}, {"1": MEASURED, "2": MEASURED}, {"1": "measured", "2": "declared"}, {"1": 185, "2": 300}),
    ({"1": "unknown"}, {"1": MEASURED}, {"1": "measured", "2": "unknown"}, {"1": 185, "2": None}),
    ({"gpu_mib": 1000, "host_mib": "unknown"}, {"1": MEASURED}, {"1": "declared", "2": "declared"}, {"1": None, "2": None}),
])
def test_declared_wins_over_measured_which_wins_over_unknown(declared, measured, sources, host_mib):
    model = {"name": "m", "versions": [1, 2], "config": CPU, "footprint": declared}
    merged = gpu_budget.merge_footprints(model, measured)
    assert merged["footprint_sources"] == sources
    assert dict((v, gpu_budget.footprint(merged["footprint"], v)["host_mib"]) for v in ("1", "2")) == host_mib
    assert model["footprint"] == declared  # the inventory's model is not changed


def test_latest_and_ensembles_keep_what_the_inventory_declares():
    latest = {"name": "m", "latest": 1, "config": CPU, "footprint": {"host_mib": 5}}
    ensemble = {"name": "e", "versions": [1], "config": {"platform": "ensemble"}}
    assert gpu_budget.merge_footprints(latest, {"1": MEASURED}) is latest
    assert gpu_budget.merge_footprints(ensemble, {"1": MEASURED}) is ensemble


def test_a_measured_footprint_is_counted_and_named_in_a_refusal():
    model = gpu_budget.merge_footprints({"name": "m", "versions": [1], "config": CPU}, {"1": MEASURED})
    result = gpu_budget.budget({"h": {"gpus": [], "host_memory_mib": 500, "models": [model], "headroom": "0%"}})
    assert result["rows"][0]["serving_mib"] == 370
    assert result["refusals"] and "m v1 2×185 MiB measured" in result["refusals"][0]
    assert "peak 740 MiB > 500 MiB" in result["refusals"][0]
