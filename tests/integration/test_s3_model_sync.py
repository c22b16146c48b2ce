"""aiops.triton.s3_model_sync end to end: the module as a process, a real S3 endpoint (moto_server over HTTP)."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import boto3
import pytest

from ansible_collections.aiops.triton.plugins.module_utils import model_repository_changes as repo_changes, s3_client, s3_plan
from ansible_collections.aiops.triton.plugins.module_utils.manifest import MARKER_NAME
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError
from ansible_collections.aiops.triton.plugins.module_utils.s3_transfer import Transfer

from s3_fixtures import (BUCKET, CREDS, PREFIX, ROOT, SYNC_MODULE, MotoServer, assert_version, base_args, files_for, free_port,
                         module_args_file, publish_version, run_module, snapshot, work_dirs)

pytestmark = pytest.mark.integration

MODULE = SYNC_MODULE


def test_first_sync_then_noop_resync(moto, s3, repo, tmp_path):
    files = files_for(1)
    digest = publish_version(s3, BUCKET, PREFIX, "first", 1, files)

    result = run_module(tmp_path, base_args(moto, repo, "first", latest=1))
    assert result.get("failed") is None, result
    assert result["changed"] is True
    assert result["versions_added"] == [1]
    assert result["bytes_transferred"] == sum(len(b) for b in files.values())
    assert result["files_transferred"] == 3
    assert_version(repo / "first", 1, files, digest)
    assert work_dirs(repo / "first") == []

    again = run_module(tmp_path, base_args(moto, repo, "first", latest=1))
    assert again["changed"] is False
    assert (again["bytes_transferred"], again["files_transferred"]) == (0, 0)
    assert again["versions_kept"] == [1]


def test_upgrade_moves_only_new_bytes_and_retention_keeps_rollback(moto, s3, repo, tmp_path):
    digests = {}
    for version in (1, 2):
        digests[version] = publish_version(s3, BUCKET, PREFIX, "upg", version, files_for(version))
    assert run_module(tmp_path, base_args(moto, repo, "upg", latest=1))["versions_added"] == [2]

    v3 = files_for(3, big=3 * 1024 * 1024 + 17)
    digests[3] = publish_version(s3, BUCKET, PREFIX, "upg", 3, v3)
    up = run_module(tmp_path, base_args(moto, repo, "upg", latest=1, keep_versions=1, part_size_mb=1))
    assert up["versions_added"] == [3] and up["versions_removed"] == [] and up["versions_kept"] == [2]
    assert up["bytes_transferred"] == sum(len(b) for b in v3.values())
    assert_version(repo / "upg", 3, v3, digests[3])

    digests[4] = publish_version(s3, BUCKET, PREFIX, "upg", 4, files_for(4))
    up = run_module(tmp_path, base_args(moto, repo, "upg", latest=1, keep_versions=1))
    assert (up["versions_added"], up["versions_removed"], up["versions_kept"]) == ([4], [2], [3])
    assert sorted(os.listdir(str(repo / "upg"))) == sorted(["3", "4", repo_changes.LOCK_NAME])

    # Rolling back to the retained version moves nothing and keeps the newer one for roll-forward.
    back = run_module(tmp_path, base_args(moto, repo, "upg", versions=[3], keep_versions=1))
    assert (back["changed"], back["bytes_transferred"], back["versions_kept"]) == (False, 0, [3, 4])

    gone = run_module(tmp_path, base_args(moto, repo, "upg", versions=[3], keep_versions=0))
    assert gone["versions_removed"] == [4] and sorted(os.listdir(str(repo / "upg"))) == sorted(["3", repo_changes.LOCK_NAME])


def test_republished_version_is_replaced_atomically(moto, s3, repo, tmp_path):
    publish_version(s3, BUCKET, PREFIX, "repub", 1, files_for(1))
    run_module(tmp_path, base_args(moto, repo, "repub", versions=[1]))
    new_files = files_for(11)
    digest = publish_version(s3, BUCKET, PREFIX, "repub", 1, new_files)
    # The previous upload left objects the new manifest does not list; they must not be fetched.
    result = run_module(tmp_path, base_args(moto, repo, "repub", versions=[1]), diff=True)
    assert result["versions_replaced"] == [1] and result["versions_added"] == []
    assert_version(repo / "repub", 1, new_files, digest)
    assert work_dirs(repo / "repub") == []
    assert result["diff"]["after"] == "1 %s\n" % digest
    assert result["diff"]["before"] != result["diff"]["after"]


def test_corrupt_object_fails_naming_file_and_hashes(moto, s3, repo, tmp_path):
    good = files_for(1)
    digest = publish_version(s3, BUCKET, PREFIX, "corrupt", 1, good)
    run_module(tmp_path, base_args(moto, repo, "corrupt", versions=[1]))
    before = snapshot(repo)

    v2 = files_for(2)
    bad = bytearray(v2["tokenizer/vocab.txt"])
    bad[10] ^= 0xFF  # same size, one flipped byte
    publish_version(s3, BUCKET, PREFIX, "corrupt", 2, v2, override={"tokenizer/vocab.txt": bytes(bad)})
    result = run_module(tmp_path, base_args(moto, repo, "corrupt", latest=1))

    assert result["failed"] is True
    expected = hashlib.sha256(v2["tokenizer/vocab.txt"]).hexdigest()
    actual = hashlib.sha256(bytes(bad)).hexdigest()
    assert "tokenizer/vocab.txt" in result["msg"]
    assert "expected %s" % expected in result["msg"] and "actual %s" % actual in result["msg"]
    assert snapshot(repo) == before  # live v1 untouched, no staging left
    assert_version(repo / "corrupt", 1, good, digest)


def test_missing_manifest_is_refused_and_latest_skips_it(moto, s3, repo, tmp_path):
    publish_version(s3, BUCKET, PREFIX, "partial", 1, files_for(1))
    publish_version(s3, BUCKET, PREFIX, "partial", 2, files_for(2), manifest=False)

    refused = run_module(tmp_path, base_args(moto, repo, "partial", versions=[2]))
    assert refused["failed"] is True and "has no MANIFEST.json" in refused["msg"]
    assert os.listdir(str(repo)) == []

    resolved = run_module(tmp_path, base_args(moto, repo, "partial", latest=1), check=True)
    assert resolved["versions"] == [1] and os.listdir(str(repo)) == [], "check mode resolves latest, writes nothing"
    latest = run_module(tmp_path, base_args(moto, repo, "partial", latest=1))
    assert latest["versions_added"] == [1] and latest["versions"] == [1]

    missing = run_module(tmp_path, base_args(moto, repo, "partial", versions=[9]))
    assert missing["failed"] is True and "version 9 of model partial is not published" in missing["msg"]


def test_allow_unverified_uses_md5_etags_and_refuses_multipart(moto, s3, repo, tmp_path):
    files = files_for(5)
    publish_version(s3, BUCKET, PREFIX, "unver", 1, files, manifest=False)
    ok = run_module(tmp_path, base_args(moto, repo, "unver", versions=[1], allow_unverified=True))
    assert ok["versions_added"] == [1] and ok["files_transferred"] == 3
    marker = (repo / "unver" / "1" / MARKER_NAME).read_text()
    assert marker.startswith("unverified-")
    again = run_module(tmp_path, base_args(moto, repo, "unver", versions=[1], allow_unverified=True))
    assert again["changed"] is False

    publish_version(s3, BUCKET, PREFIX, "unver", 2, files_for(6, big=9 * 1024 * 1024), manifest=False)
    refused = run_module(tmp_path, base_args(moto, repo, "unver", versions=[2], allow_unverified=True))
    assert refused["failed"] is True
    assert "model.bin has ETag" in refused["msg"] and "multipart" in refused["msg"]
    assert sorted(os.listdir(str(repo / "unver"))) == sorted(["1", repo_changes.LOCK_NAME])


def test_server_down_or_missing_bucket_changes_nothing(moto, s3, repo, tmp_path):
    publish_version(s3, BUCKET, PREFIX, "down", 1, files_for(1))
    run_module(tmp_path, base_args(moto, repo, "down", versions=[1]))
    before = snapshot(repo)

    dead = "http://127.0.0.1:%d" % free_port()
    result = run_module(tmp_path, base_args(moto, repo, "down", latest=2, endpoint_url=dead))
    assert result["failed"] is True and "cannot reach the S3 endpoint" in result["msg"] and dead in result["msg"]
    assert snapshot(repo) == before

    result = run_module(tmp_path, base_args(moto, repo, "down", latest=1, bucket="no-such-bucket"))
    assert result["failed"] is True and "bucket does not exist" in result["msg"]
    assert snapshot(repo) == before


def test_wrong_credentials_are_named_and_change_nothing(repo, tmp_path, tmp_path_factory):
    # moto checks signatures only with IAM auth on; the first 4 requests set up a real key.
    server = MotoServer(str(tmp_path_factory.mktemp("moto-auth") / "moto.log"), env={"INITIAL_NO_AUTH_ACTION_COUNT": "4"})
    try:
        server.client().create_bucket(Bucket=BUCKET)
        iam = boto3.client("iam", endpoint_url=server.endpoint, **CREDS)
        iam.create_user(UserName="sync")
        iam.put_user_policy(UserName="sync", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="sync")["AccessKey"]
        good = {"access_key": key["AccessKeyId"], "secret_key": key["SecretAccessKey"]}
        publish_version(boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                                     aws_access_key_id=good["access_key"], aws_secret_access_key=good["secret_key"]),
                        BUCKET, PREFIX, "auth", 1, files_for(1))
        assert run_module(tmp_path, base_args(server, repo, "auth", versions=[1], **good))["versions_added"] == [1]
        before = snapshot(repo)
        for creds, code in (({"secret_key": "wrong"}, "SignatureDoesNotMatch"),
                            ({"access_key": "AKIAUNKNOWN", "secret_key": "x"}, "InvalidAccessKeyId")):
            result = run_module(tmp_path, base_args(server, repo, "auth", latest=1, **dict(good, **creds)))
            assert result["failed"] is True
            assert "S3 refused the credentials (%s)" % code in result["msg"]
            assert good["secret_key"] not in json.dumps(result)  # no_log: never echoed back
            assert snapshot(repo) == before
    finally:
        server.stop()


def test_sigkill_mid_transfer_leaves_no_partial_version_and_rerun_completes(moto, s3, repo, tmp_path):
    v1 = files_for(1)
    publish_version(s3, BUCKET, PREFIX, "killed", 1, v1)
    run_module(tmp_path, base_args(moto, repo, "killed", versions=[1]))
    live_before = snapshot(repo / "killed" / "1")

    v2 = files_for(2, big=64 * 1024 * 1024)
    digest = publish_version(s3, BUCKET, PREFIX, "killed", 2, v2)
    args = dict(base_args(moto, repo, "killed", latest=1, keep_versions=1, concurrency=1, part_size_mb=1),
                _ansible_check_mode=False, _ansible_diff=False)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, ".collection"))
    proc = subprocess.Popen([sys.executable, MODULE, module_args_file(tmp_path, args)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    model_dir = repo / "killed"
    deadline = time.time() + 60
    staged = None
    while time.time() < deadline and proc.poll() is None:
        staging = [n for n in os.listdir(str(model_dir)) if n.startswith(repo_changes.STAGING_PREFIX)]
        blob = model_dir / staging[0] / "model.bin" if staging else None
        if blob is not None and blob.exists():
            time.sleep(0.5)  # let some megabytes land
            staged = staging[0]
            break
        time.sleep(0.02)
    assert staged and proc.poll() is None, "the sync finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    assert sorted(os.listdir(str(model_dir))) == sorted(["1", staged, repo_changes.LOCK_NAME])  # no "2" visible
    assert snapshot(model_dir / "1") == live_before

    rerun = run_module(tmp_path, base_args(moto, repo, "killed", latest=1, keep_versions=1))
    assert rerun["versions_added"] == [2] and rerun["versions_kept"] == [1]
    assert_version(model_dir, 2, v2, digest)
    assert work_dirs(model_dir) == []


@pytest.fixture
def tiny_fs(tmp_path):
    """A real 4 MiB filesystem, to run out of space on (needs root to mount tmpfs)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True, check=False)
    # A real full disk needs a real small filesystem: this test needs root (CI and `make test` run as root).
    assert proc.returncode == 0, "cannot mount a tmpfs (run as root): %s" % proc.stderr.strip()
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_disk_full_is_a_clear_error_and_staging_is_removed(moto, s3, tmp_path, tiny_fs):
    repo = tiny_fs / "repository"
    repo.mkdir()
    small = files_for(1)
    publish_version(s3, BUCKET, PREFIX, "full", 1, small)
    assert run_module(tmp_path, base_args(moto, repo, "full", versions=[1]))["versions_added"] == [1]
    publish_version(s3, BUCKET, PREFIX, "full", 2, files_for(2, big=6 * 1024 * 1024))
    before = snapshot(repo)

    # Through the module: refused before a byte moves.
    result = run_module(tmp_path, base_args(moto, repo, "full", latest=1, keep_versions=0))
    assert result["failed"] is True and "disk full" in result["msg"] and "bytes free" in result["msg"]
    assert snapshot(repo) == before

    # Past the up-front check (space taken after it): ENOSPC while writing, staging removed.
    remote = s3_client.fetch_remote_version(s3, BUCKET, PREFIX, "full", 2, False)
    with repo_changes.ModelDir(str(repo), "full") as mdir:
        with pytest.raises(S3SyncError, match="disk full while writing .*model.bin"):
            mdir.install(Transfer(s3, BUCKET), s3_plan.version_prefix(PREFIX, "full", 2), remote)
    assert snapshot(repo) == before


def test_check_mode_plans_without_downloading_and_diff_lists_versions(moto, s3, repo, tmp_path):
    d1 = publish_version(s3, BUCKET, PREFIX, "plan", 1, files_for(1))
    d2 = publish_version(s3, BUCKET, PREFIX, "plan", 2, files_for(2))

    check = run_module(tmp_path, base_args(moto, repo, "plan", latest=2), check=True, diff=True)
    assert check["changed"] is True and check["versions_added"] == [1, 2]
    assert (check["bytes_transferred"], check["files_transferred"]) == (0, 0)
    assert check["diff"]["before"] == "" and check["diff"]["after"] == "1 %s\n2 %s\n" % (d1, d2)
    assert os.listdir(str(repo)) == []

    run_module(tmp_path, base_args(moto, repo, "plan", latest=2))
    d3 = publish_version(s3, BUCKET, PREFIX, "plan", 3, files_for(3))
    before = snapshot(repo)
    check = run_module(tmp_path, base_args(moto, repo, "plan", latest=1, keep_versions=0), check=True, diff=True)
    assert (check["versions_added"], check["versions_removed"]) == ([3], [1, 2])
    assert check["diff"]["before"] == "1 %s\n2 %s\n" % (d1, d2) and check["diff"]["after"] == "3 %s\n" % d3
    assert snapshot(repo) == before

    real = run_module(tmp_path, base_args(moto, repo, "plan", latest=1, keep_versions=0), diff=True)
    assert real["diff"] == check["diff"] and sorted(os.listdir(str(repo / "plan"))) == sorted(["3", repo_changes.LOCK_NAME])


def test_state_absent_removes_versions_but_not_config(moto, s3, repo, tmp_path):
    for version in (1, 2):
        publish_version(s3, BUCKET, PREFIX, "absent", version, files_for(version))
    run_module(tmp_path, base_args(moto, repo, "absent", latest=2))
    (repo / "absent" / "config.pbtxt").write_text('name: "absent"\n')

    check = run_module(tmp_path, base_args(moto, repo, "absent", state="absent", versions=[1]), check=True)
    assert check["changed"] is True and check["versions_removed"] == [1] and (repo / "absent" / "1").is_dir()
    gone = run_module(tmp_path, base_args(moto, repo, "absent", state="absent", versions=[1]))
    assert gone["versions_removed"] == [1] and gone["versions_kept"] == [2]
    everything = run_module(tmp_path, base_args(moto, repo, "absent", state="absent"))
    assert everything["versions_removed"] == [2]
    assert sorted(os.listdir(str(repo / "absent"))) == sorted([repo_changes.LOCK_NAME, "config.pbtxt"])
    assert run_module(tmp_path, base_args(moto, repo, "absent", state="absent"))["changed"] is False


def test_boto_default_checksums_also_work_when_chosen(moto, s3, repo, tmp_path):
    files = files_for(7)
    digest = publish_version(s3, BUCKET, PREFIX, "crc", 1, files)
    result = run_module(tmp_path, base_args(moto, repo, "crc", versions=[1], checksum_mode="when_supported"))
    assert result["versions_added"] == [1]
    assert_version(repo / "crc", 1, files, digest)


def test_real_triton_serves_synced_versions_and_ignores_work_dirs(moto, s3, repo, tmp_path):
    from triton_fixtures import ADD_SUB_CONFIG, ADD_SUB_INPUTS, ADD_SUB_MODEL, TritonServer

    model_py = ADD_SUB_MODEL.format(delay=0.0, error=None).encode()
    for version in (1, 2):
        publish_version(s3, BUCKET, PREFIX, "add_sub", version, {"model.py": model_py})
    (repo / "add_sub").mkdir()
    (repo / "add_sub" / "config.pbtxt").write_text(ADD_SUB_CONFIG)
    assert run_module(tmp_path, base_args(moto, repo, "add_sub", versions=[1]))["versions_added"] == [1]
    # What a SIGKILLed sync leaves behind: Triton (exit-on-error) must still start.
    stale = repo / "add_sub" / (repo_changes.STAGING_PREFIX + "2-killed")
    stale.mkdir()
    (stale / "model.py").write_bytes(model_py[:40])

    def infer_version(server):
        body = json.dumps({"inputs": [dict(v, name=k) for k, v in ADD_SUB_INPUTS.items()]}).encode()
        request = urllib.request.Request(server.http_url + "/v2/models/add_sub/infer", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=30) as resp:
            outputs = json.loads(resp.read())["outputs"]
        return [o["data"] for o in outputs if o["name"] == "VERSION"][0][0]

    with TritonServer(str(repo)) as server:
        assert infer_version(server) == 1
        up = run_module(tmp_path, base_args(moto, repo, "add_sub", versions=[2], keep_versions=1))
        assert up["versions_added"] == [2] and up["versions_kept"] == [1]
        load = urllib.request.Request(server.http_url + "/v2/repository/models/add_sub/load", data=b"{}", method="POST")
        urllib.request.urlopen(load, timeout=60).close()
        assert infer_version(server) == 2
        assert server.status("/v2/models/add_sub/versions/2/ready") == 200
