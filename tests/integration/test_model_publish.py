"""model_repository/publish.py against a real S3 endpoint (moto_server over HTTP)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from triton_fixtures import CHECKOUT

pytestmark = pytest.mark.integration

PUBLISH = os.path.join(CHECKOUT, "model_repository", "publish.py")
SECRET = "publish-test-secret-key"


def publish(moto, repository, bucket, *extra):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1")
    proc = subprocess.run([sys.executable, PUBLISH, "--endpoint-url", moto.endpoint, "--bucket", bucket,
                           "--prefix", "ops", "--repository", repository] + list(extra),
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert SECRET not in proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def expected_manifest(model, version, version_dir):
    """What MANIFEST.json must say, computed here (not by module_utils/manifest.py, which publish.py uses):
    every file of the version with its size and sha256, bytecode caches left out."""
    files = []
    for root, dirs, names in os.walk(version_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            path = os.path.join(root, name)
            if path == os.path.join(version_dir, "MANIFEST.json"):
                continue  # the manifest does not list itself
            with open(path, "rb") as handle:
                data = handle.read()
            files.append({"path": os.path.relpath(path, version_dir), "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return {"schema": 1, "model": model, "version": int(version), "files": sorted(files, key=lambda f: f["path"])}


def published(body):
    manifest = json.loads(body)
    return dict(manifest, files=sorted(manifest["files"], key=lambda f: f["path"]))


@pytest.fixture
def bucket(moto_server):
    name = "models-%s" % uuid.uuid4().hex[:8]
    moto_server.client().create_bucket(Bucket=name)
    return name


@pytest.fixture
def repo_copy(built_repository, tmp_path):
    """A private copy of the built repository that a test may damage."""
    dest = str(tmp_path / "model_repository")
    shutil.copytree(built_repository, dest)
    return dest


def _keys(client, bucket, prefix):
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))


def test_publishes_every_version_with_its_manifest_and_twice_uploads_nothing(moto_server, built_repository, bucket):
    rc, first, _err = publish(moto_server, built_repository, bucket)
    assert rc == 0, first
    assert sorted(first["published"]) == ["alert_classifier/1", "anomaly_detector/1", "anomaly_detector/2",
                                          "metric_forecaster/1", "metric_forecaster/2", "ops_pipeline/1"]
    client = moto_server.client()
    body = client.get_object(Bucket=bucket, Key="ops/alert_classifier/1/MANIFEST.json")["Body"].read()
    assert published(body) == expected_manifest("alert_classifier", 1, os.path.join(built_repository, "alert_classifier", "1"))
    listed = [f["path"] for f in json.loads(body)["files"]]
    assert _keys(client, bucket, "ops/alert_classifier/1/") == sorted("ops/alert_classifier/1/" + p for p in listed + ["MANIFEST.json"])
    assert "classifier.skops" in listed and "golden_cases.json" in listed
    assert first["uploaded_files"] == sum(
        len(expected_manifest(m, v, os.path.join(built_repository, m, v))["files"])
        for m in os.listdir(built_repository) for v in os.listdir(os.path.join(built_repository, m)) if v.isdigit())

    rc, second, err = publish(moto_server, built_repository, bucket)
    assert rc == 0
    assert second["uploaded_files"] == 0 and second["published"] == []
    assert len(second["unchanged"]) == 6
    assert "nothing to upload" in err


def test_a_version_with_a_missing_file_gets_no_manifest(moto_server, repo_copy, bucket):
    os.remove(os.path.join(repo_copy, "alert_classifier", "1", "classifier.skops"))
    rc, summary, err = publish(moto_server, repo_copy, bucket, "--model", "alert_classifier", "--model", "anomaly_detector")
    assert rc == 1
    assert "classifier.skops" in summary["failed"]["alert_classifier/1"]
    assert sorted(summary["published"]) == ["anomaly_detector/1", "anomaly_detector/2"]
    client = moto_server.client()
    assert _keys(client, bucket, "ops/alert_classifier/") == []
    assert "ops/anomaly_detector/2/MANIFEST.json" in _keys(client, bucket, "ops/anomaly_detector/2/")
    assert "error: alert_classifier/1: missing classifier.skops" in err


def test_published_versions_are_immutable_unless_forced(moto_server, repo_copy, bucket):
    assert publish(moto_server, repo_copy, bucket, "--model", "anomaly_detector", "--version", "1")[0] == 0
    with open(os.path.join(repo_copy, "anomaly_detector", "1", "golden_cases.json"), "a") as handle:
        handle.write("\n")
    rc, summary, _err = publish(moto_server, repo_copy, bucket, "--model", "anomaly_detector", "--version", "1")
    assert rc == 1 and "immutable" in summary["failed"]["anomaly_detector/1"] and summary["uploaded_files"] == 0
    rc, summary, _err = publish(moto_server, repo_copy, bucket, "--model", "anomaly_detector", "--version", "1", "--force")
    assert rc == 0 and summary["published"] == ["anomaly_detector/1"]
    body = moto_server.client().get_object(Bucket=bucket, Key="ops/anomaly_detector/1/MANIFEST.json")["Body"].read()
    assert published(body) == expected_manifest("anomaly_detector", 1, os.path.join(repo_copy, "anomaly_detector", "1"))


def test_missing_bucket_is_a_clear_error(moto_server, built_repository):
    rc, summary, err = publish(moto_server, built_repository, "no-such-bucket-%s" % uuid.uuid4().hex[:6])
    assert rc == 1 and summary["uploaded_files"] == 0
    assert "does not exist" in summary["failed"]["*"] and "does not exist" in err
