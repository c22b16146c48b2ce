# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Changes to a model's directory in Triton's repository: locked, recoverable, atomic version swaps.

Layout on the host (Triton's model repository)::

    <repository>/<model>/<version>/...                  live versions Triton loads
    <repository>/<model>/<version>/.aiops-manifest.sha256   digest of the manifest it came from
    <repository>/<model>/.aiops-staging-<v>-<random>/   downloads in progress
    <repository>/<model>/.aiops-old-<v>-<random>/       a version on its way out: only ever deleted
    <repository>/<model>/.aiops-swap-<v>-<random>/      fallback swap only: the whole live version,
                                                        moved aside for the instant between two renames
    <repository>/<model>/.aiops-sync.lock               one sync per model at a time

Work dirs live *inside the model dir* because that is the only place sure to be on the
repository's filesystem (so rename is atomic) that Triton ignores: it skips version dirs
that are not integers, but treats every top-level dir of the repository as a model and
refuses to start when one has no config (seen with Triton 2.51).

Every run that changes the host takes the lock, cleans what a killed run left, then reads the
local versions and plans: a plan made before the lock could be stale by the time it is held.
A version is deleted only under an ``.aiops-old-`` name, which recovery deletes and never
restores; only a complete ``.aiops-swap-`` dir whose live name is missing is put back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import os
import shutil
import tempfile

from ansible_collections.aiops.triton.plugins.module_utils.fs import fsync_dir, rename_exchange
from ansible_collections.aiops.triton.plugins.module_utils.manifest import MARKER_NAME
from ansible_collections.aiops.triton.plugins.module_utils.s3_plan import VERSION_RE, local_versions, read_marker
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError

STAGING_PREFIX = ".aiops-staging-"
OLD_PREFIX = ".aiops-old-"
SWAP_PREFIX = ".aiops-swap-"
LOCK_NAME = ".aiops-sync.lock"


def _fsync_tree(root):
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        fsync_dir(dirpath)


def _work_name(model_dir, prefix, version):
    """A fresh, unused work-dir path in the model dir (named, not created)."""
    target = tempfile.mkdtemp(prefix="%s%d-" % (prefix, version), dir=model_dir)
    os.rmdir(target)
    return target


def _delete(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def recovery_actions(model_dir):
    """What a killed run left in ``model_dir`` and what to do with it: [(action, name)].

    Staging and ``.aiops-old-`` dirs are deleted (an old dir may be half deleted: it is never
    put back). A ``.aiops-swap-`` dir is a complete live version moved aside by the fallback
    swap; it is restored when its version's live name is missing, deleted otherwise.
    """
    actions = []
    if not os.path.isdir(model_dir):
        return actions
    restored = set()
    for name in sorted(os.listdir(model_dir)):
        if name.startswith(SWAP_PREFIX):
            version = name[len(SWAP_PREFIX):].split("-", 1)[0]
            if VERSION_RE.match(version) and version not in restored and not os.path.lexists(os.path.join(model_dir, version)):
                restored.add(version)
                actions.append(("restore", name))
            else:
                actions.append(("delete", name))
        elif name.startswith((STAGING_PREFIX, OLD_PREFIX)):
            actions.append(("delete", name))
    return actions


def local_versions_after_recovery(model_dir):
    """local_versions as they will be once recovery has run (read-only, for check mode)."""
    found = local_versions(model_dir)
    for action, name in recovery_actions(model_dir):
        if action == "restore":
            version = int(name[len(SWAP_PREFIX):].split("-", 1)[0])
            found[version] = read_marker(os.path.join(model_dir, name))
    return found


def check_free_space(model_dir, needed):
    stats = os.statvfs(model_dir)
    free = stats.f_bavail * stats.f_frsize
    if needed > free:
        raise S3SyncError("disk full: the new versions need %d bytes but %s has %d bytes free" % (needed, model_dir, free))


class ModelDir(object):
    """A model's directory, locked for one sync; recovers what a killed run left behind."""

    def __init__(self, repository, model):
        self.path = os.path.join(repository, model)
        self.created = False
        self.recovered = []
        self._lock_fd = None

    def __enter__(self):
        if not os.path.isdir(self.path):
            os.makedirs(self.path)
            self.created = True
        self._lock_fd = os.open(os.path.join(self.path, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self.recovered = self.recover()
        return self

    def __exit__(self, *exc):
        os.close(self._lock_fd)
        if self.created and exc[0] is not None and not local_versions(self.path):
            shutil.rmtree(self.path, ignore_errors=True)

    def recover(self):
        """Under the lock every work dir is stale. Returns the names it dealt with."""
        actions = recovery_actions(self.path)
        for action, name in actions:
            path = os.path.join(self.path, name)
            if action == "restore":
                os.rename(path, os.path.join(self.path, name[len(SWAP_PREFIX):].split("-", 1)[0]))
            else:
                _delete(path)
        if actions:
            fsync_dir(self.path)
        return [name for _action, name in actions]

    def install(self, transfer, base_key, remote):
        """Download into staging, verify, then put it live in one atomic step; staging never outlives a failure."""
        staging = tempfile.mkdtemp(prefix="%s%d-" % (STAGING_PREFIX, remote.version), dir=self.path)
        previous = None
        try:
            transfer.download(base_key, remote, staging)
            with open(os.path.join(staging, MARKER_NAME), "w") as handle:
                handle.write(remote.digest + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(staging, 0o755)
            _fsync_tree(staging)
            live = os.path.join(self.path, str(remote.version))
            if os.path.lexists(live):
                previous = self._swap(staging, live, remote.version)
            else:
                os.rename(staging, live)
            fsync_dir(self.path)
        except BaseException:
            if previous is None:
                shutil.rmtree(staging, ignore_errors=True)
            raise
        if previous:
            self._discard(previous, remote.version)

    def _swap(self, staging, live, version):
        """Make ``staging`` the live version; returns where the previous live version now is.

        renameat2(RENAME_EXCHANGE) swaps the two names at once, so ``<model>/<v>`` always exists.
        Where the kernel or filesystem cannot, two renames: for an instant ``<v>`` is missing, and a
        run killed in that instant leaves the previous version under ``.aiops-swap-``, which the
        next run restores.
        """
        if rename_exchange(staging, live):
            return staging
        aside = _work_name(self.path, SWAP_PREFIX, version)
        os.rename(live, aside)
        try:
            os.rename(staging, live)
        except BaseException:
            os.rename(aside, live)
            raise
        return aside

    def _discard(self, path, version):
        """Delete a version that is out of Triton's sight, under a name recovery never restores."""
        old = _work_name(self.path, OLD_PREFIX, version)
        os.rename(path, old)
        fsync_dir(self.path)
        _delete(old)

    def remove(self, version):
        self._discard(os.path.join(self.path, str(version)), version)
