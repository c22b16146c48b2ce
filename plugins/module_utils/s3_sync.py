# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Entry points of ``aiops.triton.s3_model_sync``: plan, download, verify and swap model versions.

The parts: ``s3_plan`` decides, ``s3_client`` reads S3, ``s3_transfer`` downloads, ``model_repository_changes``
changes the model dir (its docstring has the on-disk layout and the recovery rules).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.aiops.triton.plugins.module_utils.model_repository_changes import (
    ModelDir,
    check_free_space,
    local_versions_after_recovery,
    recovery_actions,
)
from ansible_collections.aiops.triton.plugins.module_utils.s3_client import resolve_wanted
from ansible_collections.aiops.triton.plugins.module_utils.s3_plan import local_versions, plan_sync, render_diff, version_prefix
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError, disk_error
from ansible_collections.aiops.triton.plugins.module_utils.s3_transfer import Transfer


def sync_present(client, bucket, prefix, model, repository, versions=None, latest=None, keep_versions=1,
                 concurrency=8, part_size=16 * 1024 * 1024, allow_unverified=False, check_mode=False,
                 verified=None, prune=True):
    started = time.time()
    if not os.path.isdir(repository):
        raise S3SyncError("repository %s does not exist" % repository)
    model_dir = os.path.join(repository, model)
    remotes = resolve_wanted(client, bucket, prefix, model, versions, latest, allow_unverified)
    digests = dict((v, r.digest) for v, r in remotes.items())
    # the wanted set, latest: N resolved (a rollout resolves it once, in check mode, and pins it everywhere)
    result = {"bytes_transferred": 0, "files_transferred": 0, "versions": sorted(remotes)}

    def planned(before, recovered):
        plan = plan_sync(list(remotes), digests, before, keep_versions, verified, prune)
        after = dict((v, before[v]) for v in plan["retained"])
        after.update(digests)
        result.update(changed=bool(plan["add"] or plan["replace"] or plan["remove"] or recovered), plan=plan,
                      recovered=recovered, diff=render_diff(model_dir, before, after))
        return plan

    if check_mode:
        planned(local_versions_after_recovery(model_dir), [name for _a, name in recovery_actions(model_dir)])
        result["seconds"] = round(time.time() - started, 3)
        return result
    transfer = Transfer(client, bucket, concurrency, part_size)
    try:
        # Even a run with nothing to download takes the lock (recovery runs under it), and plans
        # only once it holds it: a run that held it before may have installed what this one wants.
        with ModelDir(repository, model) as mdir:
            plan = planned(local_versions(mdir.path), mdir.recovered)
            fetch = plan["add"] + plan["replace"]
            if fetch:
                check_free_space(mdir.path, sum(remotes[v].size for v in fetch))
            for version in fetch:
                mdir.install(transfer, version_prefix(prefix, model, version), remotes[version])
            # Old versions go only after every new one is live.
            for version in plan["remove"]:
                mdir.remove(version)
    except OSError as exc:
        raise disk_error(exc, model_dir)
    finally:
        result["bytes_transferred"] = transfer.bytes
        result["files_transferred"] = transfer.files
    result["seconds"] = round(time.time() - started, 3)
    return result


def sync_absent(repository, model, versions=None, check_mode=False):
    """Remove the given versions (all versions when None); config.pbtxt and the model dir stay."""
    started = time.time()
    model_dir = os.path.join(repository, model)
    result = {"bytes_transferred": 0, "files_transferred": 0}

    def planned(before, recovered):
        remove = sorted(v for v in before if versions is None or v in versions)
        after = dict((v, d) for v, d in before.items() if v not in remove)
        plan = {"add": [], "replace": [], "unchanged": [], "retained": sorted(after), "remove": remove, "kept": sorted(after)}
        result.update(changed=bool(remove or recovered), plan=plan, recovered=recovered,
                      diff=render_diff(model_dir, before, after))
        return plan

    if check_mode or not os.path.isdir(model_dir):
        planned(local_versions_after_recovery(model_dir), [name for _a, name in recovery_actions(model_dir)])
    else:
        try:
            with ModelDir(repository, model) as mdir:
                for version in planned(local_versions(mdir.path), mdir.recovered)["remove"]:
                    mdir.remove(version)
        except OSError as exc:
            raise disk_error(exc, model_dir)
    result["seconds"] = round(time.time() - started, 3)
    return result
