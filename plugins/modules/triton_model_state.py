#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_model_state
short_description: Record a host's last verified model set and work out its rollback target
description:
  - Keeps the rollback bookkeeping of a Triton host in one place, outside the model repository
    (Triton treats every top-level entry of the repository as a model).
  - With O(state=recorded), writes one record per model of O(models) (its config, the versions that
    were verified, and C(verified), the versions verified on this host so far, most recent first), each
    atomically and only when it changes, and deletes the records of models no longer in O(models), so a
    dropped model is never restored.
  - With O(state=query), changes nothing and returns the rollback target (each recorded model's config
    pinned to its recorded versions that are still on disk, ensembles last) and, when O(models) is given,
    the models that are on disk or recorded but not in O(models) (to unload and delete, ensembles first).
version_added: "0.2.0"
author:
  - aiops.triton contributors (@aiops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  state:
    description:
      - V(recorded) writes the records of O(models) and drops the others.
      - V(query) reads them and computes the rollback target and the stale models.
    type: str
    choices: [recorded, query]
    default: query
  state_dir:
    description: Directory of the records (C(<model>.json), mode 0600, root only).
    type: path
    required: true
  repository:
    description: Triton's model repository, to see which version directories are on disk.
    type: path
    required: true
  models:
    description:
      - The model set. For V(recorded) the verified set (each with C(name), C(config), C(versions)).
      - For V(query) only the names matter; when omitted, RV(stale) is empty.
    type: list
    elements: dict
notes:
  - A record whose versions are all gone from disk is returned in RV(unrecoverable); nothing can restore it.
"""

EXAMPLES = r"""
- name: Record the verified model set (stale records dropped)
  aiops.triton.triton_model_state:
    state: recorded
    state_dir: /var/lib/triton/state
    repository: /var/lib/triton/models
    models:
      - name: anomaly_detector
        versions: [2]
        config: {name: anomaly_detector, platform: onnxruntime_onnx, max_batch_size: 32}

- name: What a rollback would restore
  aiops.triton.triton_model_state:
    state_dir: /var/lib/triton/state
    repository: /var/lib/triton/models
  register: __state
"""

RETURN = r"""
records:
  description: The records after the module ran, by model name (in check mode, what they would be).
  returned: always
  type: dict
  sample: {"anomaly_detector": {"config": {"name": "anomaly_detector"}, "versions": [2], "verified": [2, 1]}}
rollback:
  description:
    - The rollback target, ensembles last. C(config) is the recorded config pinned to C(versions), the
      recorded versions still on disk; C(missing) are recorded versions no longer on disk.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "anomaly_detector", "versions": [2], "missing": [], "ensemble": false, "config": {}}]
unrecoverable:
  description: Recorded models none of whose recorded versions is on disk any more.
  returned: always
  type: list
  elements: str
blocked:
  description:
    - Recorded ensembles that call a model in RV(unrecoverable) (directly or through another ensemble); they
      are not in RV(rollback) either.
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
refetch:
  description: Recorded models with a recorded version missing on disk, with all their recorded versions (to fetch again).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "anomaly_detector", "versions": [3]}]
  version_added: 0.2.0
unrecorded:
  description: Models with a directory in the repository but no record (never verified on this host).
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
stale:
  description: Models on disk or recorded but not in O(models), ensembles first (unload and delete these).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "metric_forecaster", "ensemble": false, "on_disk": true, "recorded": true}]
written:
  description: Records written (V(recorded) only).
  returned: always
  type: list
  elements: str
removed:
  description: Records deleted because their model left the set (V(recorded) only).
  returned: always
  type: list
  elements: str
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils.fleet import ensemble_steps, is_ensemble, pin_versions, record_plan
from ansible_collections.aiops.triton.plugins.module_utils.fs import fsync_dir, write_atomic

_VERSION_DIR = re.compile(r"^[1-9][0-9]*$")
_RECORD = re.compile(r"^(?P<name>[^./][^/]*)\.json$")


def _read_records(state_dir):
    records = {}
    if not os.path.isdir(state_dir):
        return records
    for entry in sorted(os.listdir(state_dir)):
        match = _RECORD.match(entry)
        if not match:
            continue
        with open(os.path.join(state_dir, entry)) as handle:
            try:
                record = json.load(handle)
            except ValueError as exc:
                raise ValueError("rollback record %s is not JSON (%s); delete it or restore it from backup"
                                 % (os.path.join(state_dir, entry), exc))
        versions = sorted(record.get("versions", []))
        records[match.group("name")] = {"config": record.get("config", {}), "versions": versions,
                                        "verified": record.get("verified", sorted(versions, reverse=True))}
    return records


def ensembles_calling(records, names):
    """Recorded ensembles that call any of ``names``, directly or through another ensemble."""
    blocked, grew = set(), True
    while grew:
        grew = False
        for name, record in records.items():
            config = record["config"]
            if name in blocked or name in names or not is_ensemble(config):
                continue
            if any(step.get("model_name") in set(names) | blocked for step in ensemble_steps(config)):
                blocked.add(name)
                grew = True
    return sorted(blocked)


def _on_disk(repository):
    """name -> sorted version numbers with a directory in the repository (hidden entries are staging)."""
    models = {}
    if not os.path.isdir(repository):
        return models
    for name in sorted(os.listdir(repository)):
        path = os.path.join(repository, name)
        if name.startswith(".") or not os.path.isdir(path) or os.path.islink(path):
            continue
        models[name] = sorted(int(v) for v in os.listdir(path) if _VERSION_DIR.match(v) and os.path.isdir(os.path.join(path, v)))
    return models


def rollback_target(records, disk):
    """The models to restore (ensembles last), those with no recorded version on disk, and the recorded
    ensembles that call one of those (they cannot be restored either)."""
    target, unrecoverable = [], []
    for name in sorted(records, key=lambda n: (is_ensemble(records[n]["config"]), n)):
        record = records[name]
        present = [v for v in record["versions"] if v in disk.get(name, [])]
        if not present:
            unrecoverable.append(name)
            continue
        target.append({"name": name, "versions": present, "missing": [v for v in record["versions"] if v not in present],
                       "ensemble": is_ensemble(record["config"]), "config": pin_versions(record["config"], present)})
    blocked = ensembles_calling(records, unrecoverable)
    return [t for t in target if t["name"] not in blocked], unrecoverable, blocked


def stale_models(records, disk, wanted):
    if wanted is None:
        return []
    names = (set(records) | set(disk)) - set(wanted)

    def config_of(name):
        if name in records:
            return records[name]["config"]
        return {}

    # ensembles first: they must be unloaded before the models they call
    return [{"name": n, "ensemble": is_ensemble(config_of(n)), "on_disk": n in disk, "recorded": n in records}
            for n in sorted(names, key=lambda n: (not is_ensemble(config_of(n)), n))]


def record(params, check_mode):
    state_dir = params["state_dir"]
    before = _read_records(state_dir)
    after, written, removed = record_plan(before, params["models"] or [])
    if (written or removed) and not check_mode:
        if not os.path.isdir(state_dir):
            os.makedirs(state_dir, 0o700)
        for name in written:
            data = (json.dumps(after[name], indent=2, sort_keys=True) + "\n").encode("utf-8")
            write_atomic(os.path.join(state_dir, name + ".json"), data, ".record-", lambda tmp: os.chmod(tmp, 0o600))
        for name in removed:
            os.unlink(os.path.join(state_dir, name + ".json"))
        fsync_dir(state_dir)
    return before, after, written, removed


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["recorded", "query"], default="query"),
            state_dir=dict(type="path", required=True),
            repository=dict(type="path", required=True),
            models=dict(type="list", elements="dict"),
        ),
        required_if=[("state", "recorded", ("models",))],
        supports_check_mode=True,
    )
    params = module.params
    wanted = [m.get("name") for m in params["models"]] if params["models"] is not None else None
    written, removed = [], []
    try:
        if params["state"] == "recorded":
            before, records, written, removed = record(params, module.check_mode)
        else:
            before = records = _read_records(params["state_dir"])
        disk = _on_disk(params["repository"])
    except (IOError, OSError, ValueError) as exc:
        module.fail_json(msg="rollback records in %s: %s" % (params["state_dir"], exc))
    target, unrecoverable, blocked = rollback_target(records, disk)
    changed = bool(written or removed)
    result = dict(changed=changed, records=records, rollback=target, unrecoverable=unrecoverable, blocked=blocked,
                  unrecorded=sorted(set(disk) - set(records)),
                  refetch=[{"name": n, "versions": r["versions"]} for n, r in sorted(records.items())
                           if any(v not in disk.get(n, []) for v in r["versions"])],
                  stale=stale_models(before, disk, wanted), written=written, removed=removed)
    if module._diff:
        result["diff"] = dict(before=json.dumps(before, indent=2, sort_keys=True) + "\n",
                              after=json.dumps(records, indent=2, sort_keys=True) + "\n")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
