"""aiops.triton.s3_model_footprint run in-process against moto: read, record once (the first recorder wins, a
different later measurement is reported, not written), check mode and diff, and its argument checks."""

import json

import boto3
import pytest
from ansible.module_utils.testing import patch_module_args
from moto import mock_aws

from ansible_collections.aiops.triton.plugins.modules import s3_model_footprint

BUCKET = "models-bucket"
KEY = "models/add_sub/3/FOOTPRINT.json"
BASE = {"bucket": BUCKET, "prefix": "models", "model": "add_sub", "version": 3,
        "access_key": "testing", "secret_key": "testing"}
MEASURED = {"gpu_mib": None, "host_mib": 185, "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z"}


@pytest.fixture
def s3():
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def run(capsys, check=False, diff=False, **args):
    with patch_module_args(dict(BASE, _ansible_check_mode=check, _ansible_diff=diff, **args)):
        with pytest.raises(SystemExit):
            s3_model_footprint.main()
    return json.loads(capsys.readouterr().out)


def test_read_a_version_without_a_footprint(s3, capsys):
    result = run(capsys, state="read")
    assert (result["changed"], result["exists"], result["record"], result["footprint"], result["key"]) == (
        False, False, None, None, KEY)


def test_record_once_then_report_a_different_measurement(s3, capsys):
    check = run(capsys, check=True, diff=True, footprint=MEASURED, host="canary-1", details={"instances": 1})
    assert check["changed"] is True and '"host_mib": 185' in check["diff"]["after"]
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0  # check mode writes nothing

    first = run(capsys, footprint=MEASURED, host="canary-1", details={"instances": 1, "triton_version": "2.51.0"})
    assert first["changed"] is True and first["exists"] is False
    stored = json.loads(s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read())
    assert stored == {"schema": 1, "model": "add_sub", "version": 3, "footprint": {"gpu_mib": None, "host_mib": 185},
                      "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z", "host": "canary-1",
                      "instances": 1, "triton_version": "2.51.0"}
    assert first["record"] == stored and first["footprint"] == MEASURED

    same = run(capsys, footprint=MEASURED, host="other")
    assert (same["changed"], same["exists"], same["differs"]) == (False, True, False) and not same.get("warnings")

    other = run(capsys, footprint=dict(MEASURED, host_mib=400), host="other")
    assert (other["changed"], other["exists"], other["differs"]) == (False, True, True)
    # (in-process, a warning reaches the result only while no controller Display was loaded by an earlier test)
    assert "warnings" not in other or "already records gpu_mib unknown, host_mib 185 MiB" in json.dumps(other["warnings"])
    assert json.loads(s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()) == stored  # never overwritten

    read = run(capsys, state="read")
    assert read["exists"] is True and read["footprint"] == MEASURED


@pytest.mark.parametrize("args,message", [
    ({}, "state is present but all of the following are missing: footprint"),
    ({"footprint": {"gpu_mib": None, "host_mib": None}}, "nothing was measured"),
    ({"footprint": MEASURED, "model": "../etc"}, "not a usable Triton model directory name"),
    ({"state": "read", "timeout": 0}, "timeout must be >= 1"),
])
def test_bad_arguments_fail_before_s3(capsys, args, message):
    # no S3 here at all: the checks come first
    result = run(capsys, endpoint_url="http://127.0.0.1:9", **args)
    assert result["failed"] is True and message in result["msg"]


def test_an_unreachable_s3_fails_naming_it(capsys):
    result = run(capsys, state="read", endpoint_url="http://127.0.0.1:9", timeout=2)
    assert result["failed"] is True and "cannot reach the S3 endpoint while reading s3://%s/%s" % (BUCKET, KEY) in result["msg"]
