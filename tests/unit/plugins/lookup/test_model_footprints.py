"""The aiops.triton.model_footprints lookup (playbooks/validate.yml): the FOOTPRINT.json of each served version that
declares no footprint, read once per endpoint, bucket and key whatever the number of hosts; a missing file is
unknown, an unreachable S3 a warning; and the budget filter fed with them counts and names them "measured".
S3 is moto in-process."""

import boto3
import pytest
from moto import mock_aws

from ansible_collections.aiops.triton.plugins.filter import gpu_fit
from ansible_collections.aiops.triton.plugins.lookup import model_footprints as lookup
from ansible_collections.aiops.triton.plugins.module_utils import footprint_record as fr
from ansible_collections.aiops.triton.plugins.module_utils import s3_client

BUCKET = "models-bucket"
ERRORS = ((s3_client.BotoCoreError, s3_client.ClientError), s3_client.s3_error)
ADD_SUB = {"name": "add_sub", "backend": "python", "max_batch_size": 0,
           "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]}],
           "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}],
           "instance_group": [{"kind": "KIND_CPU", "count": 2}]}
PIPELINE = {"name": "pipeline", "platform": "ensemble", "max_batch_size": 0,
            "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [4]}],
            "output": [{"name": "SUM", "data_type": "TYPE_FP32", "dims": [4]}],
            "ensemble_scheduling": {"step": [{"model_name": "add_sub", "model_version": -1,
                                              "input_map": {"INPUT0": "A"}, "output_map": {"OUTPUT0": "SUM"}}]}}


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def record(s3, model, version, host_mib, host="canary-1"):
    built = fr.build_record(model, version, {"host_mib": host_mib}, host=host, measured="2026-12-06T09:44:20Z")
    fr.write_record(s3, BUCKET, "models", built, ERRORS)


def host(versions=(1,), memory=None, **values):
    data = {"triton_models_s3_bucket": BUCKET, "triton_models_s3_access_key": "testing",
            "triton_models_s3_secret_key": "testing",
            "triton_models_list": [{"name": "add_sub", "config": ADD_SUB, "versions": list(versions)},
                                   {"name": "pipeline", "config": PIPELINE, "versions": [1]}]}
    if memory:
        data["triton_host_memory_mib"] = memory
    data.update(values)
    return data


def groups(hostvars):
    return {"all": sorted(hostvars), "triton_servers": sorted(hostvars)}


def read(s3, hostvars, **kwargs):
    calls = []

    def make(args, timeout):
        calls.append(args)
        return s3
    result = lookup.read_footprints(hostvars, groups(hostvars), make_client=make, defaults=lookup.role_defaults(), **kwargs)
    return result, calls


def test_each_object_is_read_once_for_every_host_serving_it(s3):
    record(s3, "add_sub", 1, 185)
    hostvars = dict(("tw%d" % i, host()) for i in range(24))
    result, calls = read(s3, hostvars)
    assert result["reads"] == 1 and len(calls) == 1 and result["warnings"] == []
    assert not calls[0]["endpoint_url"] and calls[0]["region"] == "us-east-1" and calls[0]["validate_certs"] is True
    entry = result["footprints"]["tw7"]["add_sub"]["1"]
    assert entry == {"footprint": {"gpu_mib": None, "host_mib": 185, "source": "triton_footprint",
                                   "measured": "2026-12-06T09:44:20Z"},
                     "location": "s3://%s/models/add_sub/1/FOOTPRINT.json" % BUCKET, "host": "canary-1",
                     "measured": "2026-12-06T09:44:20Z"}
    assert "pipeline" not in result["footprints"]["tw7"]  # ensembles are never read


def test_a_version_without_a_footprint_is_unknown_and_a_declared_one_is_not_read(s3):
    record(s3, "add_sub", 2, 999)
    hostvars = {"a": host([1]), "b": host([2], triton_models_catalog={"add_sub": {"footprint": {"host_mib": 50}}})}
    result, _calls = read(s3, hostvars)
    assert result["footprints"] == {} and result["warnings"] == [] and result["reads"] == 1


def test_a_host_without_a_bucket_or_with_latest_is_not_read(s3):
    hostvars = {"a": host(triton_models_s3_bucket=""),
                "b": host(triton_models_list=[{"name": "add_sub", "config": ADD_SUB, "latest": 1}])}
    result, calls = read(s3, hostvars)
    assert (result["reads"], calls, result["warnings"]) == (0, [], [])


def test_an_unreachable_s3_is_one_warning_not_an_error():
    hostvars = dict(("tw%d" % i, host([1, 2], triton_models_s3_endpoint_url="http://127.0.0.1:9")) for i in range(3))
    result = lookup.read_footprints(hostvars, groups(hostvars), timeout=2)
    assert result["footprints"] == {} and result["reads"] == 0
    assert len(result["warnings"]) == 1
    assert result["warnings"][0].startswith("measured footprints not read from S3 (http://127.0.0.1:9 %s): cannot reach "
                                            "the S3 endpoint" % BUCKET)
    assert result["warnings"][0].endswith("versions without a declared footprint are unknown")


def test_a_malformed_footprint_is_a_warning_and_stays_unknown(s3):
    s3.put_object(Bucket=BUCKET, Key="models/add_sub/1/FOOTPRINT.json", Body=b"{")
    result, _calls = read(s3, {"a": host()})
    assert result["footprints"] == {}
    assert result["warnings"] == ["measured footprint of add_sub v1 ignored: s3://%s/models/add_sub/1/FOOTPRINT.json "
                                  "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
                                  "(char 1)" % BUCKET]


def test_the_budget_counts_measured_footprints_and_says_where_each_comes_from(s3):
    record(s3, "add_sub", 1, 185)
    hostvars = {"small": host([1], memory=600), "big": host([1], memory=100000),
                "declared": host([1], memory=100000, triton_models_catalog={"add_sub": {"footprint": {"host_mib": 10}}}),
                "new": host([3], memory=600)}
    result, _calls = read(s3, hostvars)
    budget = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars), measured=result["footprints"])
    assert budget["measured"] is True and budget["problems"] == []
    assert len(budget["refusals"]) == 1
    assert budget["refusals"][0].startswith("small host memory: serving add_sub v1 2×185 MiB measured = 370 MiB")
    assert "peak 740 MiB > 600 MiB" in budget["refusals"][0]
    assert budget["footprints"] == [
        "footprint add_sub v1: declared (per instance: GPU ?, host 10 MiB): declared",
        "footprint add_sub v1: measured (per instance: GPU ?, host 185 MiB; s3://%s/models/add_sub/1/FOOTPRINT.json, "
        "on canary-1 at 2026-12-06T09:44:20Z): big, small" % BUCKET,
        "footprint add_sub v3: unknown: new"]
    assert budget["lines"][-3:] == budget["footprints"]
    # without the lookup's answer the same inventory is unknown and refuses nothing
    plain = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars))
    assert plain["measured"] is False and plain["refusals"] == []
