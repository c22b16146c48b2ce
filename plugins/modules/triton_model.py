#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_model
short_description: Ensure a model is loaded at a set of versions, or unloaded, on a Triton server
description:
  - Drives Triton Inference Server's model-repository API (explicit model control mode) to load,
    reload or unload one model, and waits until the requested versions are C(READY).
  - When O(versions) is given the model is loaded with a configuration override whose C(version_policy)
    is C(specific) with exactly those versions; the rest of the configuration is the one Triton is
    serving (or O(config) when given). Such an override lasts until the next plain load or restart,
    where C(config.pbtxt) applies again; pin versions durably in C(config.pbtxt).
  - "Hot update behaviour observed on Triton 2.51.0 (PyPI C(nvidia-pytriton) 0.7.0, python backend):
    a load that switches versions returns only after the new versions are C(READY); until then the old
    versions keep answering, including requests addressed to the old version explicitly. Requests without
    a version never failed during a switch (about 900 requests per switch, two concurrent clients).
    Requests addressed to the old version fail with HTTP 503 from the moment the new version is ready,
    while the old version is C(UNLOADING). One or two requests arriving at the instant of the load call
    may wait until the load finishes. See docs/triton-hot-update.md."
  - When a load fails (the new version's files or configuration are broken) Triton keeps serving the
    versions that were C(READY) before; the module fails with Triton's own error text and lists them.
  - Triton answers a configuration it cannot parse with only C(failed to poll from model repository);
    the parse error itself is in Triton's log (C(journalctl -u tritonserver)).
version_added: "0.2.0"
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiops.triton.attributes.actiongroup_triton_api
  - aiops.triton.triton_api
author:
  - aiops.triton contributors (@aiops)
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  name:
    description:
      - Model name, as in the model repository.
      - Refused before Triton is contacted when it cannot be a model directory name
        (see M(aiops.triton.triton_model_config)'s O(aiops.triton.triton_model_config#module:name)).
      - Exactly one of O(name) and O(batch) is required.
    type: str
  batch:
    description:
      - Several models in one call (one module start-up on the host instead of one task per model), each element
        a O(name) with its own O(versions) and O(reload), over the other options (O(state), O(repository_config),
        O(timeout), the connection). Models are handled in the order given, so an ensemble listed after the models
        it calls loads after them.
      - Every element is handled, even after one failed, as a loop would; the task then fails naming each failed
        model. The per-model return values are in RV(results), in the order given.
    type: list
    elements: dict
    version_added: 0.2.0
    suboptions:
      name:
        description: As O(name).
        type: str
        required: true
      versions:
        description: As O(versions).
        type: list
        elements: int
      reload:
        description: As O(reload); the shared value when not set.
        type: bool
  state:
    description:
      - V(loaded) ensures the model serves (at O(versions) when given).
      - V(unloaded) unloads every version and waits until none is C(READY) or C(UNLOADING).
    type: str
    choices: [loaded, unloaded]
    default: loaded
  versions:
    description:
      - Exact set of versions that must be C(READY). Other versions are unloaded by the same load.
      - When omitted, any C(READY) version satisfies V(loaded), and a load uses the model's own version policy.
    type: list
    elements: int
  config:
    description:
      - Model configuration (Triton's JSON form, as returned by C(GET /v2/models/<name>/config)) to load
        the model with instead of C(config.pbtxt). Giving it always loads the model.
    type: dict
  repository_config:
    description:
      - Load with C(config.pbtxt) as it is in the model repository, never with an override; O(versions) is
        then only the set that must be C(READY) afterwards, so C(config.pbtxt) must pin exactly those
        versions (C(version_policy) C(specific)), as M(aiops.triton.triton_model_config) renders them for
        the C(triton_models) role. A changed C(config.pbtxt) then takes effect with the load.
    type: bool
    default: false
  reload:
    description:
      - Load the model even if it already serves the requested versions, so Triton picks up new version
        directories or changed files. A reload always reports C(changed).
    type: bool
    default: false
  timeout:
    description: Seconds to wait for a load or unload to finish.
    type: int
    default: 300
notes:
  - Supports check mode and diff mode. Check mode reads the repository index (needs O(api_key)) and changes nothing.
  - Triton must run with C(--model-control-mode=explicit).
"""

EXAMPLES = r"""
- name: Serve version 3 of the anomaly detector (version 2 keeps serving until 3 is ready)
  aiops.triton.triton_model:
    name: metric_anomaly
    versions: [3]
    api_key: "{{ triton_server_api_key }}"

- name: Pick up a newly synced version under the model's own version policy
  aiops.triton.triton_model:
    name: log_classifier
    reload: true
    api_key: "{{ triton_server_api_key }}"

- name: Every model of the host at its pinned versions in one call, reloading those whose files changed
  aiops.triton.triton_model:
    repository_config: true
    batch:
      - {name: metric_anomaly, versions: [3], reload: true}
      - {name: log_classifier, versions: [1]}
    api_key: "{{ triton_server_api_key }}"

- name: Take a model out of service
  aiops.triton.triton_model:
    name: capacity_forecast
    state: unloaded
    api_key: "{{ triton_server_api_key }}"
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
  sample: [{"item": {"name": "metric_anomaly", "versions": [3]}, "name": "metric_anomaly", "changed": false,
            "before": [3], "after": [3], "action": "none", "states": [{"version": 3, "state": "READY", "reason": ""}]}]
  version_added: 0.2.0
name:
  description: Model name.
  returned: always (with O(batch), in each element of RV(results))
  type: str
  sample: metric_anomaly
before:
  description: Versions that were C(READY) before the module ran.
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: int
  sample: [2]
after:
  description: Versions C(READY) when the module returned (in check mode, the versions it would leave).
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: int
  sample: [3]
action:
  description: What the module did, one of C(none), C(load), C(unload).
  returned: always (with O(batch), in each element of RV(results))
  type: str
  sample: load
states:
  description: Every version Triton knows of the model with its state and reason, after the change.
  returned: always (with O(batch), in each element of RV(results))
  type: list
  elements: dict
  sample: [{"version": 2, "state": "UNLOADING", "reason": ""}, {"version": 3, "state": "READY", "reason": ""}]
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils import batch
from ansible_collections.aiops.triton.plugins.module_utils.model_name import ModelNameError, check_model_name
from ansible_collections.aiops.triton.plugins.module_utils.triton_api import (
    CONNECTION_ARGSPEC, TritonApiError, TritonClient)

_POLL = 0.25


class TritonModelError(Exception):
    """A failure with a message a person can act on; ``details`` go into the result."""

    def __init__(self, message, **details):
        super(TritonModelError, self).__init__(message)
        self.details = details


def _index(client, name):
    """``{version: (state, reason)}`` for ``name`` from the repository index."""
    try:
        return client.model_index(name)
    except TritonApiError as exc:
        if exc.status in (401, 403):
            raise TritonModelError("Triton refused the model-repository API at %s: api_key is wrong or missing "
                                   "(sent in header %r). Triton said: %s" % (client.url, client.key_header, exc))
        raise TritonModelError("cannot read Triton's repository index: %s" % exc)


def _ready(index):
    return sorted(v for v, (state, _reason) in index.items() if state == "READY")


def _describe(index):
    return [{"version": v, "state": index[v][0], "reason": index[v][1]} for v in sorted(index)]


def _load(client, name, versions, config, timeout, repository_config=False):
    if versions and not repository_config:
        base = config
        if base is None:
            try:
                base = client.model_config(name)
            except TritonApiError:
                # not loaded: load it once under its own policy to learn its configuration
                _call_load(client, name, None)
                base = client.model_config(name)
        config = dict(base, version_policy={"specific": {"versions": sorted(versions)}})
    _call_load(client, name, config)
    deadline = time.time() + timeout
    while True:
        index = _index(client, name)
        ready = _ready(index)
        if (versions and ready == sorted(versions)) or (not versions and ready):
            return index
        if time.time() > deadline:
            raise TritonModelError("model %r was loaded but versions %s are not READY after %ss (states: %s)"
                                   % (name, sorted(versions or []), timeout, _describe(index)))
        time.sleep(_POLL)


def _call_load(client, name, config):
    try:
        client.load_model(name, config=config)
    except TritonApiError as exc:
        try:
            still = _ready(_index(client, name))
        except TritonModelError:
            still = []
        hint = ""
        if "failed to poll from model repository" in str(exc):
            hint = (" (Triton gives this for a missing model directory or a config.pbtxt it cannot parse;"
                    " its log has the details: journalctl -u tritonserver)")
        raise TritonModelError("Triton could not load model %r: %s%s. Versions still serving: %s"
                               % (name, exc, hint, still), still_serving=still)


def _unload(client, name, timeout):
    try:
        client.unload_model(name)
    except TritonApiError as exc:
        raise TritonModelError("Triton could not unload model %r: %s" % (name, exc))
    # unload returns at once; the versions drain in the background
    deadline = time.time() + timeout
    while True:
        index = _index(client, name)
        if not any(state in ("READY", "UNLOADING") for state, _reason in index.values()):
            return index
        if time.time() > deadline:
            raise TritonModelError("model %r still has versions in flight after %ss: %s" % (name, timeout, _describe(index)))
        time.sleep(_POLL)


def ensure(client, params, check_mode):
    name = params["name"]
    versions = sorted(set(params["versions"])) if params["versions"] is not None else None
    index = _index(client, name)
    before = _ready(index)
    if params["state"] == "unloaded":
        action = "unload" if before else "none"
        after = []
    else:
        satisfied = (before == versions) if versions else bool(before)
        action = "load" if (params["reload"] or params["config"] is not None or not satisfied) else "none"
        after = versions if (action == "load" and versions) else before
    if action != "none" and not check_mode:
        if action == "unload":
            index = _unload(client, name, params["timeout"])
        else:
            index = _load(client, name, versions, params["config"], params["timeout"], params["repository_config"])
        after = _ready(index)
    changed = action != "none" and (before != after or params["reload"] or params["config"] is not None or check_mode)
    return dict(changed=changed, name=name, before=before, after=after, action=action, states=_describe(index),
                diff=dict(before={"name": name, "ready_versions": before}, after={"name": name, "ready_versions": after}))


def runner(module, client):
    """``run_one(params)``: one model to its state, a failure as a batch.ItemFailed naming the model."""
    def run_one(params):
        try:
            check_model_name(params["name"], "name")
        except ModelNameError as exc:
            raise batch.ItemFailed(str(exc), name=params["name"])
        if params["versions"] is not None and not params["versions"]:
            raise batch.ItemFailed("versions must list at least one version; use state=unloaded to unload the model",
                                   name=params["name"])
        try:
            result = ensure(client, params, module.check_mode)
        except TritonModelError as exc:
            raise batch.ItemFailed(str(exc), name=params["name"], **exc.details)
        if not module._diff:
            result.pop("diff")
        return result
    return run_one


def main():
    module = AnsibleModule(
        argument_spec=dict(
            CONNECTION_ARGSPEC,
            name=dict(type="str"),
            state=dict(type="str", choices=["loaded", "unloaded"], default="loaded"),
            versions=dict(type="list", elements="int"),
            config=dict(type="dict"),
            reload=dict(type="bool", default=False),
            repository_config=dict(type="bool", default=False),
            timeout=dict(type="int", default=300),
            batch=dict(type="list", elements="dict", options=dict(
                name=dict(type="str", required=True),
                versions=dict(type="list", elements="int"),
                reload=dict(type="bool"),
            )),
        ),
        mutually_exclusive=[("name", "batch"), ("versions", "batch"), ("config", "batch")],
        required_one_of=[("name", "batch")],
        supports_check_mode=True,
    )
    params = module.params
    client = TritonClient(params["url"], api_key=params["api_key"], api_key_header=params["api_key_header"],
                          timeout=params["timeout"])
    run_one = runner(module, client)
    if params["batch"] is not None:
        batch.answer(module, batch.run(params, run_one))
    batch.answer_one(module, params, run_one)


if __name__ == "__main__":
    main()
