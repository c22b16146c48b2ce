#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: s3_model_sync
short_description: Sync Triton model versions from S3 into a model repository, verified and atomically
version_added: "0.2.0"
description:
  - Runs on the Triton host. Makes C(<repository>/<model>/<version>) match the versions published under
    C(s3://<bucket>/<prefix>/<model>/<version>/) by the collection's publisher, moving only what changed.
  - A published version is immutable and identified by the sha256 of its C(MANIFEST.json) (uploaded last by
    the publisher). A version already on disk whose marker file C(.aiops-manifest.sha256) holds the same
    manifest hash is not downloaded again; one with a different hash is replaced.
  - Files are downloaded in parallel (threads; files larger than O(part_size_mb) as parallel ranged GETs) into
    C(<repository>/<model>/.aiops-staging-<version>-<random>/) on the repository's filesystem. A file is open only
    while it is being written, so open descriptors stay bounded by O(concurrency) whatever the number of files.
    Every file's size and sha256 is checked against the manifest, files and directories are fsynced, the marker is
    written, and the directory is renamed into place in one atomic step, so a running Triton never sees a partial
    version. Triton ignores the staging directory because its name is not an integer.
  - Replacing a version is one atomic step, C(renameat2(RENAME_EXCHANGE)) of the staging and live directories, so
    C(<model>/<version>) always exists, holding either the whole old or the whole new version; the old one is
    then deleted. Where the kernel or filesystem has no exchange (Linux before 3.15, NFS, not Linux) it falls back
    to two renames, with an instant in which C(<model>/<version>) is missing; a run killed in that instant leaves
    the old version aside complete, and the next run puts it back. See C(docs/s3-sync-atomicity.md) in the
    collection for exactly what is atomic.
  - Removing a version renames it out of Triton's sight in one step, then deletes it. A removal is never undone;
    a run killed while deleting leaves a half-deleted directory that the next run deletes, never restores.
  - The manifest is checked before anything is written. Every entry needs a safe relative C(path) (a string,
    no NUL byte, no empty, C(.) or C(..) component, no duplicate, no file that is also another entry's directory,
    not C(MANIFEST.json) or the marker C(.aiops-manifest.sha256)), an integer C(size) and a lower-case hex
    C(sha256); its C(model) and C(version) must be where it is published. The error names the manifest and entry.
  - A version without C(MANIFEST.json) is an incomplete publish and is refused, unless O(allow_unverified=true),
    which checks each object by size and its MD5 ETag instead. Multipart and SSE-KMS ETags are not MD5s of the
    object, so such objects are refused even then.
  - After the wanted versions are in place, local versions that are not wanted are kept for rollback, newest
    first, up to O(keep_versions); the rest are removed. C(config.pbtxt) is not touched by this module.
  - On failure nothing live changes. S3 unreachable or refused credentials fail before anything is written.
    A file whose sha256 differs fails naming the file, the expected and the actual hash. A full disk fails with
    a clear message. Staging is removed in every case, and a run killed outright (SIGKILL) leaves only work
    directories that Triton ignores and the next run cleans up first (see RV(recovered)).
  - One run per model at a time, serialized by a lock file C(.aiops-sync.lock) in the model directory. Every run
    takes it, even one with nothing to download, and reads the local versions and plans only once it holds it,
    so a run queued behind another (an orphaned run still finishing) does not download again what that one
    installed.
  - In check mode it resolves and plans (listing S3 and reading manifests) but downloads and changes nothing.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiops.triton.attributes.actiongroup_s3
  - aiops.triton.s3
author:
  - aiops.triton contributors (@aiops)
requirements:
  - boto3 (installed into the collection's venv on the host by the roles)
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  model:
    description:
      - Model name, the directory name under O(repository) and under O(prefix).
      - Refused before anything is read or written when it cannot be a model directory name
        (see M(aiops.triton.triton_model_config)'s O(aiops.triton.triton_model_config#module:name)).
      - Exactly one of O(model) and O(batch) is required.
    type: str
  batch:
    description:
      - Several models in one call, each over the other options (one S3 client, one module start-up on the host,
        instead of one task per model). Each element's own values replace the shared ones.
      - Every element is synced, even after one failed, as a loop would; the task then fails naming each failed
        model. The per-model return values are in RV(results), in the order given.
      - Exactly one of O(model) and O(batch) is required; O(versions), O(latest) and O(verified_versions) then go in
        the elements.
    type: list
    elements: dict
    version_added: 0.2.0
    suboptions:
      model:
        description: As O(model).
        type: str
        required: true
      versions:
        description: As O(versions).
        type: list
        elements: int
      latest:
        description: As O(latest).
        type: int
      keep_versions:
        description: As O(keep_versions); the shared value when not set.
        type: int
      verified_versions:
        description: As O(verified_versions).
        type: list
        elements: int
  versions:
    description:
      - Exact versions to have. Each must be published; one without a manifest fails the task.
      - Mutually exclusive with O(latest). With O(state=absent), the versions to remove (all when omitted).
    type: list
    elements: int
  latest:
    description:
      - Have the newest N complete versions. Only a version without a manifest (still being published) is skipped;
        any other error reading a manifest (an S3 5xx, a timeout, access denied, a malformed manifest) fails the task,
        since skipping it would resolve to an older version and could remove the newer one.
      - Mutually exclusive with O(versions); only for O(state=present).
    type: int
  repository:
    description: Triton model repository directory on the host. It must exist.
    type: path
    required: true
  keep_versions:
    description:
      - How many local versions that are not wanted to keep for rollback.
      - With O(verified_versions), these count verified versions only, most recently verified first; without
        it, the newest versions on disk.
    type: int
    default: 1
  verified_versions:
    description:
      - Versions of this model that passed verification on this host, most recently verified first (the
        C(verified) list of the model's M(aiops.triton.triton_model_state) record).
      - When given, a version not wanted is kept only if it is one of these (up to O(keep_versions)), so a
        version that failed its checks never displaces the rollback target. Omit it to keep the newest.
    type: list
    elements: int
    version_added: 0.2.0
  prune_versions:
    description:
      - V(false) removes no version at all (O(keep_versions) is not applied); a rollback that fetches its
        target again uses this so that nothing else on disk goes.
    type: bool
    default: true
    version_added: 0.2.0
  state:
    description:
      - V(present) syncs the wanted versions and applies O(keep_versions).
      - V(absent) removes O(versions) (or every version) of the model from the host without contacting S3.
    type: str
    choices: [present, absent]
    default: present
  concurrency:
    description: Parallel S3 requests (download threads); also bounds the files open at once.
    type: int
    default: 8
  timeout:
    description:
      - Seconds to wait for each S3 request to connect (at most 10) and for each read to answer. A request that
        times out is retried twice, then the task fails.
    type: int
    default: 60
  part_size_mb:
    description: Files larger than this are fetched as parallel ranged GETs of this size.
    type: int
    default: 16
  allow_unverified:
    description:
      - Sync versions that have no C(MANIFEST.json), checking each object by size and single-part MD5 ETag.
        Objects with multipart or SSE-KMS ETags are refused.
    type: bool
    default: false
notes:
  - Supports check mode and diff mode; the diff lists each version with the manifest hash it came from.
  - Integrity does not depend on O(checksum_mode); every file is checked against the manifest's sha256.
  - C(bytes_transferred) counts model file bytes only; manifests (a few KiB each) are read on every run to
    compare hashes and are not counted.
"""

EXAMPLES = r"""
- name: Have the two newest versions of the anomaly detector, keep one older for rollback
  aiops.triton.s3_model_sync:
    bucket: models
    prefix: triton
    model: anomaly_detector
    latest: 2
    keep_versions: 1
    repository: /srv/triton/models
    endpoint_url: https://minio.internal:9000
    ca_bundle: /etc/ssl/certs/internal-ca.pem
    access_key: "{{ vault_s3_access_key }}"
    secret_key: "{{ vault_s3_secret_key }}"

- name: Pin exact versions
  aiops.triton.s3_model_sync:
    bucket: models
    model: log_classifier
    versions: [3, 4]
    repository: /srv/triton/models
    profile: models-readonly

- name: Sync every model of the host in one call
  aiops.triton.s3_model_sync:
    bucket: models
    repository: /srv/triton/models
    batch:
      - {model: anomaly_detector, versions: [2]}
      - {model: alert_classifier, latest: 1, keep_versions: 2}
  register: synced

- name: Drop a bad version from the host
  aiops.triton.s3_model_sync:
    bucket: models
    model: log_classifier
    versions: [4]
    state: absent
    repository: /srv/triton/models
"""

RETURN = r"""
results:
  description:
    - With O(batch), one result per element, in order, with the return values below (those of the element's model)
      and C(item), the element; a failed one has C(failed) and C(msg). Without O(batch) the values below are
      returned at the top level.
  returned: with O(batch)
  type: list
  elements: dict
  sample: [{"item": {"model": "anomaly_detector", "versions": [2]}, "model": "anomaly_detector", "changed": false,
            "versions": [2], "versions_added": [], "versions_replaced": [], "versions_removed": [], "versions_kept": [2],
            "bytes_transferred": 0, "files_transferred": 0, "seconds": 0.08, "recovered": [],
            "model_path": "/srv/triton/models/anomaly_detector"}]
  version_added: 0.2.0
model:
  description: The model this result is for.
  returned: always (with O(batch), in each element of RV(results))
  type: str
  sample: anomaly_detector
  version_added: 0.2.0
versions:
  description:
    - The versions this sync makes present (O(versions), or what O(latest) resolved to), also in check mode.
  returned: when O(state=present)
  type: list
  elements: int
  sample: [2, 3]
versions_added:
  description: Versions that were not on the host and were downloaded (or would be, in check mode).
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: int
  sample: [3]
versions_replaced:
  description: Versions present with a different manifest hash, swapped for the published one.
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: int
  sample: []
versions_removed:
  description: Versions removed (beyond O(keep_versions), or by O(state=absent)).
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: int
  sample: [1]
versions_kept:
  description: Versions left on the host untouched (wanted and unchanged, or kept for rollback).
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: int
  sample: [2]
bytes_transferred:
  description: Bytes of model files downloaded from S3 in this run (0 when nothing changed and in check mode).
  returned: always (with O(batch), in each element of RV(results))
  type: int
  sample: 104857600
files_transferred:
  description: Files downloaded and verified in this run.
  returned: always (with O(batch), in each element of RV(results))
  type: int
  sample: 2
seconds:
  description: Wall time of the sync.
  returned: always (with O(batch), in each element of RV(results))
  type: float
  sample: 1.42
recovered:
  description:
    - Work directories a killed run had left in the model directory that this run dealt with before anything else
      (staging and half-removed versions deleted, a version caught mid-swap by the fallback put back). In check
      mode, what it would deal with. Their presence makes the run report a change.
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: str
  sample: [".aiops-staging-3-k2j4x9a1"]
model_path:
  description: The model's directory in the repository.
  returned: always (with O(batch), in each element of RV(results))
  type: str
  sample: /srv/triton/models/anomaly_detector
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.aiops.triton.plugins.module_utils import batch, s3_client, s3_sync
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError
from ansible_collections.aiops.triton.plugins.module_utils.model_name import ModelNameError, check_model_name

BATCH_OPTIONS = dict(
    model=dict(type="str", required=True),
    versions=dict(type="list", elements="int"),
    latest=dict(type="int"),
    keep_versions=dict(type="int"),
    verified_versions=dict(type="list", elements="int"),
)


def make_client(params):
    return s3_client.make_client(
        endpoint_url=params["endpoint_url"], region=params["region"], access_key=params["access_key"],
        secret_key=params["secret_key"], session_token=params["session_token"], profile=params["profile"],
        validate_certs=params["validate_certs"], ca_bundle=params["ca_bundle"], checksum_mode=params["checksum_mode"],
        concurrency=params["concurrency"], timeout=params["timeout"])


def sync_one(params, client, check_mode):
    if params["state"] == "absent":
        return s3_sync.sync_absent(params["repository"], params["model"], params["versions"], check_mode)
    return s3_sync.sync_present(
        client(), params["bucket"], params["prefix"], params["model"], params["repository"],
        versions=params["versions"], latest=params["latest"], keep_versions=params["keep_versions"],
        concurrency=params["concurrency"], part_size=params["part_size_mb"] * 1024 * 1024,
        allow_unverified=params["allow_unverified"], check_mode=check_mode,
        verified=params["verified_versions"], prune=params["prune_versions"])


def validate(params):
    try:
        check_model_name(params["model"], "model")
    except ModelNameError as exc:
        raise S3SyncError(str(exc))
    if params["versions"] is not None and params["latest"] is not None:
        raise S3SyncError("versions and latest are mutually exclusive")
    if params["state"] == "present" and params["versions"] is None and params["latest"] is None:
        raise S3SyncError("state is present but any of the following are missing: versions, latest")
    if params["state"] == "absent" and params["latest"] is not None:
        raise S3SyncError("latest is only for state=present; list the versions to remove")
    for name in ("keep_versions", "latest", "concurrency", "part_size_mb", "timeout"):
        value = params[name]
        if value is not None and value < (0 if name == "keep_versions" else 1):
            raise S3SyncError("%s must be %s, got %d" % (name, ">= 0" if name == "keep_versions" else ">= 1", value))
    if any(v < 0 for v in params["versions"] or []):
        raise S3SyncError("versions must be non-negative integers")


def runner(module):
    """``run_one(params)`` for batch: one S3 client for every model, made when the first model needs it."""
    made = []

    def client():
        if not made:
            if not s3_client.HAS_BOTO3:
                module.fail_json(msg=missing_required_lib("boto3"), exception=s3_client.BOTO3_IMPORT_ERROR)
            made.append(make_client(module.params))
        return made[0]

    def run_one(params):
        try:
            validate(params)
            result = sync_one(params, client, module.check_mode)
        except S3SyncError as exc:
            raise batch.ItemFailed(str(exc), model=params["model"])
        plan = result.pop("plan")
        diff = result.pop("diff")
        result.update(versions_added=plan["add"], versions_replaced=plan["replace"], versions_removed=plan["remove"],
                      versions_kept=plan["kept"], model_path=diff["before_header"], model=params["model"])
        if module._diff:
            result["diff"] = diff
        return result
    return run_one


def main():
    module = AnsibleModule(
        argument_spec=dict(
            s3_client.CONNECTION_ARGSPEC,
            model=dict(type="str"),
            versions=dict(type="list", elements="int"),
            latest=dict(type="int"),
            repository=dict(type="path", required=True),
            keep_versions=dict(type="int", default=1),
            verified_versions=dict(type="list", elements="int"),
            prune_versions=dict(type="bool", default=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            concurrency=dict(type="int", default=8),
            timeout=dict(type="int", default=60),
            part_size_mb=dict(type="int", default=16),
            allow_unverified=dict(type="bool", default=False),
            batch=dict(type="list", elements="dict", options=BATCH_OPTIONS),
        ),
        mutually_exclusive=[("versions", "latest"), ("profile", "access_key"), ("profile", "secret_key"),
                            ("model", "batch"), ("versions", "batch"), ("latest", "batch"), ("verified_versions", "batch")],
        required_one_of=[("model", "batch")],
        required_together=[("access_key", "secret_key")],
        supports_check_mode=True,
    )
    run_one = runner(module)
    if module.params["batch"] is not None:
        batch.answer(module, batch.run(module.params, run_one))
    batch.answer_one(module, module.params, run_one)


if __name__ == "__main__":
    main()
