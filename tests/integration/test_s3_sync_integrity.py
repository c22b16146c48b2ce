"""aiops.triton.s3_model_sync under attack: kill -9 mid-removal, a sick S3, thousands of files, hostile
manifests, orphaned runs.  The module runs as a process against a real S3 over HTTP (moto_server on
loopback, with FaultProxy in front where S3 has to misbehave)."""

import json
import os
import resource
import signal
import subprocess
import time

import pytest

from s3_fixtures import (BUCKET, PREFIX, FaultProxy, assert_version, base_args, files_for, module_command,
                         publish_version, run_module, snapshot, work_dirs)

pytestmark = pytest.mark.integration

OLD_PREFIX = ".aiops-old-"
STAGING_PREFIX = ".aiops-staging-"
LOCK_NAME = ".aiops-sync.lock"


def start_module(tmp_path, args):
    argv, env = module_command(tmp_path, args)
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(predicate, proc, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = predicate()
        if found:
            return found
        assert proc.poll() is None, "the module exited (rc %s) before %s: %s" % (proc.returncode, what, proc.communicate())
        time.sleep(0.005)
    raise AssertionError("timed out waiting for %s" % what)


def count_files(path):
    return sum(len(names) for _root, _dirs, names in os.walk(str(path)))


# ---------------------------------------------------------------- 1. a removal killed halfway stays removed

@pytest.mark.parametrize("how", ["state_absent", "keep_versions_pruning"])
def test_sigkill_during_removal_never_brings_the_version_back(moto, s3, repo, tmp_path, how):
    model = "rm-" + how.replace("_", "-")
    model_dir = repo / model
    digests = dict((v, publish_version(s3, BUCKET, PREFIX, model, v, files_for(v))) for v in (1, 2))
    assert run_module(tmp_path, base_args(moto, repo, model, versions=[1, 2]))["versions_added"] == [1, 2]
    # Many files (ONNX external data, tokenizers): the deletion takes long enough to be killed in.
    bulk = model_dir / "1" / "bulk"
    for d in range(100):
        (bulk / str(d)).mkdir(parents=True)
        for f in range(200):
            (bulk / str(d) / str(f)).write_bytes(b"x")
    total = count_files(model_dir / "1")

    args = (base_args(moto, repo, model, state="absent", versions=[1]) if how == "state_absent"
            else base_args(moto, repo, model, versions=[2], keep_versions=0))
    proc = start_module(tmp_path, args)
    doomed = wait_for(lambda: [n for n in os.listdir(str(model_dir)) if n.startswith(OLD_PREFIX)], proc, "the removal")
    time.sleep(0.05)  # let the deletion get going
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    left = count_files(model_dir / doomed[0]) if (model_dir / doomed[0]).exists() else 0
    assert 0 < left < total, "not killed mid-deletion (%d of %d files left); the test proves nothing" % (left, total)
    assert not (model_dir / "1").exists()

    # A run with nothing else to do still cleans up, and never revives the half-deleted version.
    idle = run_module(tmp_path, base_args(moto, repo, model, versions=[2], keep_versions=1))
    assert idle.get("failed") is None, idle
    assert (idle["versions_added"], idle["versions_removed"], idle["versions_kept"]) == ([], [], [2])
    assert idle["recovered"] == [doomed[0]] and idle["changed"] is True
    assert work_dirs(model_dir) == [] and sorted(os.listdir(str(model_dir))) == sorted(["2", LOCK_NAME])

    digests[3] = publish_version(s3, BUCKET, PREFIX, model, 3, files_for(3))
    up = run_module(tmp_path, base_args(moto, repo, model, latest=1, keep_versions=1))
    assert (up["versions_added"], up["versions_kept"], up["recovered"]) == ([3], [2], [])
    assert sorted(os.listdir(str(model_dir))) == sorted(["2", "3", LOCK_NAME])
    assert_version(model_dir, 3, files_for(3), digests[3])


# ---------------------------------------------------------------- 2. latest: only a missing manifest is skipped

@pytest.mark.parametrize("fault,message", [
    ("503", "S3 error ServiceUnavailable while reading s3://models/triton/%s/2/MANIFEST.json"),
    ("hang", "S3 request timed out while reading s3://models/triton/%s/2/MANIFEST.json"),
    ("403", "S3 refused the credentials (AccessDenied) while reading s3://models/triton/%s/2/MANIFEST.json"),
    ("malformed", "s3://models/triton/%s/2/MANIFEST.json: manifest is not valid JSON"),
])
def test_latest_fails_on_any_manifest_error_but_a_missing_one(moto, s3, repo, tmp_path, fault, message):
    model = "lat-" + fault
    for version in (1, 2):
        publish_version(s3, BUCKET, PREFIX, model, version, files_for(version))
    assert run_module(tmp_path, base_args(moto, repo, model, latest=1, keep_versions=1))["versions_added"] == [2]
    publish_version(s3, BUCKET, PREFIX, model, 3, files_for(3), manifest=False)  # still being published
    before = snapshot(repo)

    # A missing manifest is the one error that means "not complete yet": v3 is skipped, nothing to do.
    idle = run_module(tmp_path, base_args(moto, repo, model, latest=1, keep_versions=0))
    assert idle.get("failed") is None, idle
    assert (idle["changed"], idle["versions_kept"], idle["versions_removed"]) == (False, [2], [])
    assert snapshot(repo) == before

    rules = []
    if fault == "malformed":
        s3.put_object(Bucket=BUCKET, Key="%s/%s/2/MANIFEST.json" % (PREFIX, model), Body=b'{"schema": 1, "files": [')
    else:
        rules = [("GET", r"^/%s/%s/%s/2/MANIFEST\.json$" % (BUCKET, PREFIX, model), fault)]
    with FaultProxy(moto.endpoint, rules) as proxy:
        result = run_module(tmp_path, base_args(proxy, repo, model, latest=1, keep_versions=0, timeout=2))
    assert result.get("failed") is True, result
    assert message % model in result["msg"]
    assert snapshot(repo) == before  # v1 not installed, v2 not deleted
    if rules:
        assert proxy.hits[0] >= 1


# ---------------------------------------------------------------- 3. many files, few descriptors

@pytest.mark.slow
def test_5000_file_version_under_ulimit_1024_keeps_open_files_bounded(moto, s3, repo, tmp_path):
    files = dict(("shard-%02d/part-%04d.bin" % (i % 50, i), b"%d\n" % i * 32) for i in range(5000))
    files["model.bin"] = os.urandom(3 * 1024 * 1024 + 5)  # ranged parts too
    digest = publish_version(s3, BUCKET, PREFIX, "many", 1, files, workers=8)

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    argv, env = module_command(tmp_path, base_args(moto, repo, "many", versions=[1], concurrency=8, part_size_mb=1))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, len(os.listdir("/proc/%d/fd" % proc.pid)))
        except OSError:
            pass
        time.sleep(0.01)
    out, err = proc.communicate()
    assert proc.returncode == 0, out + err
    assert '"files_transferred": 5001' in out
    assert_version(repo / "many", 1, files, digest)
    # Interpreter + lock + connection pool (10) + at most concurrency + 1 files being written.
    assert 0 < peak <= 40, "peak of %d open descriptors" % peak


# ---------------------------------------------------------------- 4. every run takes the lock and plans under it

def test_run_with_nothing_to_do_cleans_staging_left_by_a_killed_run(moto, s3, repo, tmp_path):
    publish_version(s3, BUCKET, PREFIX, "idle", 1, files_for(1))
    publish_version(s3, BUCKET, PREFIX, "idle", 2, files_for(2, big=8 * 1024 * 1024))
    assert run_module(tmp_path, base_args(moto, repo, "idle", versions=[1]))["versions_added"] == [1]
    model_dir = repo / "idle"
    rules = [("GET", r"^/%s/%s/idle/2/model\.bin$" % (BUCKET, PREFIX), "hold")]
    with FaultProxy(moto.endpoint, rules) as proxy:
        proc = start_module(tmp_path, base_args(proxy, repo, "idle", versions=[2], keep_versions=1))
        wait_for(proxy.held.is_set, proc, "the download")
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    staging = [n for n in os.listdir(str(model_dir)) if n.startswith(STAGING_PREFIX)]
    assert len(staging) == 1 and os.path.getsize(str(model_dir / staging[0] / "model.bin")) == 8 * 1024 * 1024

    # Version 1 is all that is wanted: nothing to download, but the killed run's staging goes.
    idle = run_module(tmp_path, base_args(moto, repo, "idle", versions=[1], keep_versions=1))
    assert idle.get("failed") is None, idle
    assert (idle["changed"], idle["recovered"], idle["bytes_transferred"]) == (True, staging, 0)
    assert sorted(os.listdir(str(model_dir))) == sorted(["1", LOCK_NAME])
    again = run_module(tmp_path, base_args(moto, repo, "idle", versions=[1], keep_versions=1))
    assert (again["changed"], again["recovered"]) == (False, [])


def lock_waiters(lock_path):
    """Pids blocked on a flock of ``lock_path`` (``->`` lines of /proc/locks)."""
    inode = os.stat(lock_path).st_ino
    pids = []
    with open("/proc/locks") as handle:
        for line in handle:
            fields = line.split()
            if "->" in fields and fields[fields.index("->") + 1] == "FLOCK":
                rest = fields[fields.index("->") + 1:]
                if int(rest[4].split(":")[-1]) == inode:
                    pids.append(int(rest[3]))
    return pids


def test_rerun_behind_an_orphaned_run_plans_under_the_lock_and_downloads_nothing(moto, s3, repo, tmp_path):
    publish_version(s3, BUCKET, PREFIX, "orphan", 1, files_for(1))
    v2 = files_for(2, big=4 * 1024 * 1024)
    digest = publish_version(s3, BUCKET, PREFIX, "orphan", 2, v2)
    assert run_module(tmp_path, base_args(moto, repo, "orphan", versions=[1]))["versions_added"] == [1]
    model_dir = repo / "orphan"
    rules = [("GET", r"^/%s/%s/orphan/2/model\.bin$" % (BUCKET, PREFIX), "hold")]
    with FaultProxy(moto.endpoint, rules) as proxy:
        # The orphan: a run whose controller went away, still downloading v2 under the lock.
        orphan = start_module(tmp_path, base_args(proxy, repo, "orphan", versions=[2], keep_versions=1))
        wait_for(proxy.held.is_set, orphan, "the orphan's download")
        rerun = start_module(tmp_path, base_args(moto, repo, "orphan", versions=[2], keep_versions=1))
        wait_for(lambda: rerun.pid in lock_waiters(str(model_dir / LOCK_NAME)), rerun, "the rerun to wait on the lock")
        proxy.release.set()
        orphan_out, _err = orphan.communicate(timeout=60)
        rerun_out, rerun_err = rerun.communicate(timeout=60)
    assert '"versions_added": [2]' in orphan_out
    assert rerun.returncode == 0, rerun_out + rerun_err
    assert '"changed": false' in rerun_out and '"bytes_transferred": 0' in rerun_out, rerun_out
    assert_version(model_dir, 2, v2, digest)


# ---------------------------------------------------------------- 5. a hostile manifest is named and changes nothing

@pytest.mark.parametrize("entries,entry_message", [
    ([{"path": "a", "size": 1, "sha256": "0" * 64}, {"path": "a/b", "size": 1, "sha256": "0" * 64}],
     "files[1] ('a/b'): 'a' is a file (files[0]), so it cannot be a directory"),
    ([{"path": ".aiops-manifest.sha256", "size": 1, "sha256": "0" * 64}],
     "files[0] ('.aiops-manifest.sha256'): the name is reserved for s3_model_sync's marker file"),
])
def test_hostile_manifest_fails_naming_manifest_and_entry(moto, s3, repo, tmp_path, entries, entry_message):
    publish_version(s3, BUCKET, PREFIX, "hostile", 1, files_for(1))
    assert run_module(tmp_path, base_args(moto, repo, "hostile", versions=[1]))["versions_added"] == [1]
    before = snapshot(repo)
    manifest = {"schema": 1, "model": "hostile", "version": 2, "files": entries}
    s3.put_object(Bucket=BUCKET, Key="%s/hostile/2/MANIFEST.json" % PREFIX, Body=json.dumps(manifest).encode())
    for args in ({"versions": [2]}, {"latest": 1}):
        result = run_module(tmp_path, base_args(moto, repo, "hostile", keep_versions=0, **args))
        assert result.get("failed") is True, result
        assert "s3://models/triton/hostile/2/MANIFEST.json: " + entry_message in result["msg"]
        assert snapshot(repo) == before
