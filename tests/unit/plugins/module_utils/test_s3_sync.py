"""Planning, local state and recovery logic of the S3 sync engine (no network)."""

import errno
import os
import threading

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from ansible_collections.aiops.triton.plugins.module_utils import fs, model_repository_changes as repo_changes, s3_client, s3_plan
from ansible_collections.aiops.triton.plugins.module_utils.manifest import MARKER_NAME
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError


@pytest.mark.parametrize("wanted,remote,local,keep,expected", [
    # first sync
    ([1], {1: "a"}, {}, 1, {"add": [1], "replace": [], "unchanged": [], "retained": [], "remove": []}),
    # no-op
    ([1], {1: "a"}, {1: "a"}, 1, {"add": [], "replace": [], "unchanged": [1], "retained": [], "remove": []}),
    # republished version (different manifest) or a hand-placed dir without marker
    ([1, 2], {1: "b", 2: "c"}, {1: "a", 2: None}, 1, {"add": [], "replace": [1, 2], "unchanged": [], "retained": [], "remove": []}),
    # upgrade keeps the newest old versions for rollback, drops the rest
    ([4], {4: "d"}, {1: "a", 2: "b", 3: "c"}, 2, {"add": [4], "replace": [], "unchanged": [], "retained": [2, 3], "remove": [1]}),
    ([4], {4: "d"}, {1: "a", 3: "c"}, 0, {"add": [4], "replace": [], "unchanged": [], "retained": [], "remove": [1, 3]}),
    # rollback to an older version keeps the newer one as the retained version
    ([3], {3: "c"}, {3: "c", 4: "d"}, 1, {"add": [], "replace": [], "unchanged": [3], "retained": [4], "remove": []}),
])
def test_plan_sync(wanted, remote, local, keep, expected):
    plan = s3_plan.plan_sync(wanted, remote, local, keep)
    expected["kept"] = sorted(expected["unchanged"] + expected["retained"])
    assert plan == expected


@pytest.mark.parametrize("verified,keep,retained", [
    ([3, 2], 1, [3]),          # the failed 4 is never kept; the rollback target 3 is
    ([3, 2], 2, [2, 3]),
    ([2, 3], 1, [2]),          # most recently verified first, not newest number first
    ([], 1, []),               # nothing verified: nothing not wanted is kept
    ([3], 0, []),
])
def test_plan_sync_keeps_verified_versions_only(verified, keep, retained):
    plan = s3_plan.plan_sync([5], {5: "e"}, {2: "b", 3: "c", 4: "d"}, keep, verified)
    assert plan["retained"] == retained
    assert plan["remove"] == sorted(set([2, 3, 4]) - set(retained))


def test_plan_sync_without_pruning_removes_nothing():
    plan = s3_plan.plan_sync([3], {3: "c"}, {1: "a", 4: "d"}, 0, [3], prune=False)
    assert plan["add"] == [3] and plan["remove"] == [] and plan["retained"] == [1, 4]


def _rollouts(outcomes, keep, use_records):
    """Replay rollouts of versions 2, 3, ... each verified (True) or failing (False), as the role does:
    sync the new version (pruning), then on success record it, on failure roll back to the record.
    Returns, after each step, whether the last verified version was on disk when the rollback needed it."""
    disk, record = {1: "v1"}, {"versions": [1], "verified": [1]}
    found = []
    for step, ok in enumerate(outcomes):
        version = step + 2
        plan = s3_plan.plan_sync([version], {version: "v%d" % version}, disk, keep,
                                 record["verified"] if use_records else None)
        for v in plan["add"]:
            disk[v] = "v%d" % v
        for v in plan["remove"]:
            del disk[v]
        if ok:
            record = {"versions": [version], "verified": [version] + [v for v in record["verified"] if v != version]}
        else:
            found.append(all(v in disk for v in record["versions"]))
    return found


@pytest.mark.parametrize("outcomes", [[bit == "1" for bit in format(n, "05b")] for n in range(32)])
@pytest.mark.parametrize("keep", [1, 2])
def test_after_any_sequence_of_good_and_failed_versions_the_rollback_target_is_on_disk(outcomes, keep):
    assert all(_rollouts(outcomes, keep, use_records=True))


def test_keeping_the_newest_instead_deletes_the_rollback_target_after_two_failures():
    # issue 21: good 3 was deleted in favour of the failed 4 when 5 failed too
    assert _rollouts([True, False, False], 1, use_records=False) == [True, False]
    assert _rollouts([True, False, False], 1, use_records=True) == [True, True]


def test_pick_latest_and_prefixes():
    assert s3_plan.pick_latest([1, 7, 3, 7, 12], 2) == [7, 12]
    assert s3_plan.version_prefix("", "m") == "m/"
    assert s3_plan.version_prefix("/a//b/", "m", 3) == "a/b/m/3/"


def make_version(model_dir, name, marker=None):
    path = model_dir / name
    path.mkdir(parents=True)
    if marker is not None:
        (path / MARKER_NAME).write_text(marker + "\n")
    return path


def test_local_versions_reads_markers_and_ignores_what_triton_ignores(tmp_path):
    make_version(tmp_path, "1", "abc")
    make_version(tmp_path, "2")
    make_version(tmp_path, "007", "x")  # Triton ignores leading zeros
    make_version(tmp_path, repo_changes.STAGING_PREFIX + "3-zz", "y")
    (tmp_path / "10").write_text("a file, not a version dir")
    assert s3_plan.local_versions(str(tmp_path)) == {1: "abc", 2: None}
    assert s3_plan.local_versions(str(tmp_path / "missing")) == {}


def test_render_diff_lists_versions_with_hashes():
    diff = s3_plan.render_diff("/r/m", {1: "a", 2: None}, {2: None, 3: "c"})
    assert diff["before"] == "1 a\n2 unmanaged\n" and diff["after"] == "2 unmanaged\n3 c\n"
    assert diff["before_header"] == "/r/m"


def test_recover_never_restores_a_version_being_deleted_only_one_caught_mid_swap(tmp_path):
    model_dir = tmp_path / "m"
    make_version(model_dir, repo_changes.STAGING_PREFIX + "5-abc", "partial")
    make_version(model_dir, repo_changes.OLD_PREFIX + "4-def", "old4")    # live 4 gone: killed while deleting it
    make_version(model_dir, repo_changes.OLD_PREFIX + "2-ghi", "old2")    # replaced, killed while deleting the old copy
    make_version(model_dir, "2", "new2")
    make_version(model_dir, repo_changes.SWAP_PREFIX + "3-jkl", "old3")   # fallback swap killed between its renames
    make_version(model_dir, repo_changes.SWAP_PREFIX + "2-mno", "older2")  # live 2 present: garbage
    assert repo_changes.local_versions_after_recovery(str(model_dir)) == {2: "new2", 3: "old3"}
    with repo_changes.ModelDir(str(tmp_path), "m") as mdir:
        assert mdir.recovered == sorted([repo_changes.OLD_PREFIX + "2-ghi", repo_changes.OLD_PREFIX + "4-def", repo_changes.STAGING_PREFIX + "5-abc",
                                         repo_changes.SWAP_PREFIX + "2-mno", repo_changes.SWAP_PREFIX + "3-jkl"])
    assert sorted(os.listdir(str(model_dir))) == sorted(["2", "3", repo_changes.LOCK_NAME])
    assert s3_plan.local_versions(str(model_dir)) == {2: "new2", 3: "old3"}
    with repo_changes.ModelDir(str(tmp_path), "m") as mdir:
        assert mdir.recovered == []


def test_model_dir_created_by_a_failed_sync_is_removed(tmp_path):
    with pytest.raises(RuntimeError):
        with repo_changes.ModelDir(str(tmp_path), "fresh"):
            raise RuntimeError("download failed")
    assert os.listdir(str(tmp_path)) == []


def test_remove_takes_version_out_of_sight_first(tmp_path):
    make_version(tmp_path / "m", "1", "a")
    make_version(tmp_path / "m", "2", "b")
    with repo_changes.ModelDir(str(tmp_path), "m") as mdir:
        mdir.remove(1)
    assert s3_plan.local_versions(str(tmp_path / "m")) == {2: "b"}
    assert [n for n in os.listdir(str(tmp_path / "m")) if n.startswith(repo_changes.OLD_PREFIX)] == []


def swap_scene(tmp_path):
    model_dir = tmp_path / "m"
    make_version(model_dir, "1", "old")
    (model_dir / "1" / "weights").write_text("old")
    return model_dir


def staged(model_dir, marker):
    staging = make_version(model_dir, repo_changes.STAGING_PREFIX + "1-" + marker, marker)
    (staging / "weights").write_text(marker)
    return str(staging)


def test_replace_is_one_exchange_and_a_watcher_never_misses_the_version(tmp_path):
    model_dir = swap_scene(tmp_path)
    live = str(model_dir / "1")
    seen, stop = [], threading.Event()

    def watch():  # what Triton's repository poll would see, as fast as it can look
        while not stop.is_set():
            seen.append(s3_plan.read_marker(live))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with repo_changes.ModelDir(str(tmp_path), "m") as mdir:
            for round_ in range(200):
                marker = "v%d" % round_
                previous = mdir._swap(staged(model_dir, marker), live, 1)
                assert s3_plan.read_marker(live) == marker and os.path.basename(previous).startswith(repo_changes.STAGING_PREFIX)
                mdir._discard(previous, 1)
    finally:
        stop.set()
        watcher.join()
    assert len(seen) > 200 and None not in seen  # never absent, never a dir without its marker
    assert sorted(os.listdir(str(model_dir))) == sorted(["1", repo_changes.LOCK_NAME])
    assert (model_dir / "1" / "weights").read_text() == "v199"


def test_replace_falls_back_to_two_renames_without_exchange_and_undoes_a_failed_second(tmp_path, monkeypatch):
    monkeypatch.setattr(fs, "_renameat2", None)  # a C library without renameat2 (or not Linux)
    model_dir = swap_scene(tmp_path)
    live = str(model_dir / "1")
    with repo_changes.ModelDir(str(tmp_path), "m") as mdir:
        previous = mdir._swap(staged(model_dir, "new"), live, 1)
        assert os.path.basename(previous).startswith(repo_changes.SWAP_PREFIX) and s3_plan.read_marker(previous) == "old"
        assert s3_plan.read_marker(live) == "new"
        mdir._discard(previous, 1)
        assert sorted(os.listdir(str(model_dir))) == sorted(["1", repo_changes.LOCK_NAME])

        real_rename = os.rename
        failing = staged(model_dir, "newer")

        def rename(src, dst):
            if src == failing:
                raise OSError(errno.EIO, "injected")
            return real_rename(src, dst)

        monkeypatch.setattr(repo_changes.os, "rename", rename)
        with pytest.raises(OSError, match="injected"):
            mdir._swap(failing, live, 1)
        monkeypatch.undo()
    assert s3_plan.read_marker(live) == "new"  # put back as it was
    assert [n for n in os.listdir(str(model_dir)) if n.startswith(repo_changes.SWAP_PREFIX)] == []


def test_unverified_accepts_md5_etags_and_refuses_multipart():
    version = s3_client._unverified_version("b", "p", "m", 1, [
        {"path": "x/model.bin", "size": 3, "etag": '"900150983cd24fb0d6963f7d28e17f72"'}])
    assert version.files == [{"path": "x/model.bin", "size": 3, "md5": "900150983cd24fb0d6963f7d28e17f72"}]
    assert version.digest.startswith("unverified-") and not version.verified
    with pytest.raises(S3SyncError, match="not an MD5 of the object"):
        s3_client._unverified_version("b", "p", "m", 1, [{"path": "big", "size": 9, "etag": '"0123456789abcdef0123456789abcdef-3"'}])
    with pytest.raises(S3SyncError, match="unsafe object path"):
        s3_client._unverified_version("b", "p", "m", 1, [{"path": "../x", "size": 1, "etag": '"900150983cd24fb0d6963f7d28e17f72"'}])


def client_error(code):
    return ClientError({"Error": {"Code": code, "Message": code}}, "GetObject")


@pytest.mark.parametrize("exc,message", [
    (client_error("InvalidAccessKeyId"), "S3 refused the credentials (InvalidAccessKeyId) while reading"),
    (client_error("AccessDenied"), "S3 refused the credentials (AccessDenied)"),
    (client_error("NoSuchBucket"), "S3 bucket does not exist (while reading"),
    (client_error("SlowDown"), "S3 error SlowDown while reading"),
    (EndpointConnectionError(endpoint_url="http://x"), "cannot reach the S3 endpoint while reading"),
    (NoCredentialsError(), "no S3 credentials found"),
])
def test_s3_errors_say_what_to_fix(exc, message):
    assert message in str(s3_client.s3_error(exc, "reading s3://b/k"))


def test_checksum_default_is_when_required():
    client = s3_client.make_client(endpoint_url="http://127.0.0.1:9", access_key="a", secret_key="b")
    config = client.meta.config
    assert config.request_checksum_calculation == "when_required"
    assert config.response_checksum_validation == "when_required"
    assert config.s3["addressing_style"] == "path"
    client = s3_client.make_client(endpoint_url="http://127.0.0.1:9", access_key="a", secret_key="b", checksum_mode="when_supported")
    assert client.meta.config.request_checksum_calculation == "when_supported"


def test_free_space_check(tmp_path):
    repo_changes.check_free_space(str(tmp_path), 1)
    with pytest.raises(S3SyncError, match="disk full: the new versions need"):
        repo_changes.check_free_space(str(tmp_path), 1 << 60)
