#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: s3_model_footprint
short_description: Record or read a model version's measured footprint beside its manifest in S3
description:
  - Keeps what one instance of a published model version costs, GPU and host memory in MiB, as
    C(<prefix>/<model>/<version>/FOOTPRINT.json), beside the version's C(MANIFEST.json), so that every later run and
    every other host knows it without loading the model (the GPU memory budget of C(playbooks/validate.yml) reads it).
  - The file is not listed in the manifest, so it never changes the version's identity and
    M(aiops.triton.s3_model_sync) never downloads it.
  - V(present) writes the footprint only when the version has none. The first recorder wins; a footprint is never
    overwritten. A different measurement later is returned in RV(differs) and a warning, and nothing is written.
    The write is conditional (C(If-None-Match), so two hosts measuring at once cannot both write) where the store
    supports it.
  - V(read) only reads. A version without a footprint is not an error; RV(exists) is then false.
  - Hosts usually hold read-only S3 credentials; the C(aiops.triton.triton_models) role runs V(present) on the
    controller (C(delegate_to) localhost).
version_added: "0.2.0"
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiops.triton.s3
author:
  - aiops.triton contributors (@aiops)
requirements:
  - boto3
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
      - V(present) records O(footprint) unless the version already has a footprint; its credentials need write
        access to O(bucket).
      - V(read) returns the recorded footprint, if any, and changes nothing.
    type: str
    choices: [present, read]
    default: present
  model:
    description:
      - Model name, the directory name under O(prefix).
      - Refused before S3 is contacted when it cannot be a model directory name
        (see M(aiops.triton.triton_model_config)'s O(aiops.triton.triton_model_config#module:name)).
    type: str
    required: true
  version:
    description: Version number.
    type: int
    required: true
  footprint:
    description:
      - What one instance costs, in MiB, the largest instance rounded up (M(aiops.triton.triton_footprint)'s
        RV(aiops.triton.triton_footprint#module:models[].footprint)). Required with O(state=present).
      - At least one of C(gpu_mib) and C(host_mib) must be known; C(source) and C(measured) are taken from it where
        O(source) and O(measured) are not given; other keys are ignored.
    type: dict
  source:
    description: What measured it. Default, C(footprint.source), else C(triton_footprint).
    type: str
  measured:
    description: When it was measured (UTC, ISO 8601). Default, C(footprint.measured).
    type: str
  host:
    description: The host it was measured on.
    type: str
  details:
    description:
      - Anything else worth keeping with the footprint (C(instances), C(per_instance), C(gpus), C(triton_version),
        C(unknown)), stored as given under its own keys.
    type: dict
  timeout:
    description: Seconds to wait for S3 (connect and read, each request).
    type: int
    default: 30
notes:
  - In check mode V(present) reads S3 and reports whether it would write, and writes nothing.
  - With C(--diff), V(present) shows the file it writes.
seealso:
  - module: aiops.triton.triton_footprint
  - module: aiops.triton.s3_model_sync
"""

EXAMPLES = r"""
- name: Measure a staged candidate on the host
  aiops.triton.triton_footprint:
    url: http://127.0.0.1:8000
    models:
      - name: alert_classifier__candidate
        versions: [3]
  register: __measured

- name: Record it beside the version's manifest, from the controller (hosts hold read-only credentials)
  aiops.triton.s3_model_footprint:
    bucket: models
    prefix: models
    model: alert_classifier
    version: 3
    footprint: "{{ __measured.models[0].footprint }}"
    host: "{{ inventory_hostname }}"
    details:
      instances: "{{ __measured.models[0].instances }}"
    endpoint_url: https://minio.example:9000
  delegate_to: localhost

- name: Read what version 3 costs, without loading it
  aiops.triton.s3_model_footprint:
    state: read
    bucket: models
    prefix: models
    model: alert_classifier
    version: 3
  register: __recorded
"""

RETURN = r"""
key:
  description: The object's key.
  returned: always
  type: str
  sample: models/alert_classifier/3/FOOTPRINT.json
exists:
  description: Whether the version had a footprint before this call.
  returned: always
  type: bool
  sample: true
record:
  description:
    - The version's FOOTPRINT.json after this call (in check mode, as it would be); null when it has none.
    - C(footprint) holds C(gpu_mib) and C(host_mib) per instance (null where unknown); C(source), C(measured),
      C(host) and the O(details) say how it was measured.
  returned: always
  type: dict
  sample: {"schema": 1, "model": "alert_classifier", "version": 3, "footprint": {"gpu_mib": null, "host_mib": 185},
           "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z", "host": "triton-a1", "instances": 1}
footprint:
  description: The recorded footprint in the shape of an inventory model's C(footprint) (C(gpu_mib), C(host_mib),
    C(source), C(measured)); null when the version has none.
  returned: always
  type: dict
  sample: {"gpu_mib": null, "host_mib": 185, "source": "triton_footprint", "measured": "2026-12-06T09:44:20Z"}
differs:
  description: With O(state=present), true when the version already had a footprint other than O(footprint) (kept).
  returned: always
  type: bool
  sample: false
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.aiops.triton.plugins.module_utils import footprint_record as fr
from ansible_collections.aiops.triton.plugins.module_utils import s3_client
from ansible_collections.aiops.triton.plugins.module_utils.model_name import ModelNameError, check_model_name
from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError

ERRORS = ((s3_client.BotoCoreError, s3_client.ClientError), s3_client.s3_error)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            s3_client.CONNECTION_ARGSPEC,
            # the key id is no secret, and masking it would hide it wherever it stands in the messages and results
            access_key=dict(s3_client.CONNECTION_ARGSPEC["access_key"], no_log=False),
            state=dict(type="str", choices=["present", "read"], default="present"),
            model=dict(type="str", required=True),
            version=dict(type="int", required=True),
            footprint=dict(type="dict"),
            source=dict(type="str"),
            measured=dict(type="str"),
            host=dict(type="str"),
            details=dict(type="dict"),
            timeout=dict(type="int", default=30),
        ),
        required_if=[("state", "present", ["footprint"])],
        required_together=[("access_key", "secret_key")],
        supports_check_mode=True,
    )
    params = module.params
    result = {"changed": False, "exists": False, "record": None, "footprint": None, "differs": False}
    try:
        check_model_name(params["model"])
        result["key"] = fr.footprint_key(params["prefix"], params["model"], params["version"])
        wanted = None
        if params["state"] == "present":
            given = params["footprint"]
            wanted = fr.build_record(params["model"], params["version"], given,
                                     source=params["source"] or given.get("source"),
                                     measured=params["measured"] or given.get("measured"),
                                     host=params["host"], details=params["details"])
    except (ModelNameError, fr.FootprintError) as exc:
        module.fail_json(msg=str(exc), **result)
    if params["timeout"] < 1:
        module.fail_json(msg="timeout must be >= 1", **result)
    if not s3_client.HAS_BOTO3:
        module.fail_json(msg=missing_required_lib("boto3"), exception=s3_client.BOTO3_IMPORT_ERROR, **result)
    where = "s3://%s/%s" % (params["bucket"], result["key"])
    try:
        client = s3_client.make_client(params["endpoint_url"], params["region"], params["access_key"],
                                       params["secret_key"], params["session_token"], params["profile"],
                                       params["validate_certs"], params["ca_bundle"], params["checksum_mode"],
                                       timeout=params["timeout"])
        recorded = fr.read_record(client, params["bucket"], params["prefix"], params["model"], params["version"], ERRORS)
        result["exists"] = recorded is not None
        if wanted is not None and recorded is None:
            if module._diff:
                result["diff"] = {"before": "", "after": fr.dump_record(wanted).decode("utf-8"),
                                  "before_header": where, "after_header": where}
            if not module.check_mode:
                recorded = fr.write_record(client, params["bucket"], params["prefix"], wanted, ERRORS)
                result["exists"] = recorded is not None  # another host recorded it first
                if recorded is not None:
                    result.pop("diff", None)
            if recorded is None:
                result["changed"] = True
                recorded = wanted
    except (S3SyncError, fr.FootprintError) as exc:
        module.fail_json(msg=str(exc), **result)
    if wanted is not None and not result["changed"] and not fr.same_footprint(recorded, wanted["footprint"]):
        result["differs"] = True
        module.warn("%s already records %s per instance (measured %s on %s); this measurement, %s, is not written: "
                    "the first recorder wins" % (where, _text(recorded["footprint"]), recorded.get("measured", "?"),
                                                 recorded.get("host", "?"), _text(wanted["footprint"])))
    result["record"] = recorded
    result["footprint"] = fr.budget_footprint(recorded) if recorded else None
    module.exit_json(**result)


def _text(footprint):
    return ", ".join("%s %s" % (key, "unknown" if footprint.get(key) is None else "%s MiB" % footprint[key])
                     for key in fr.KEYS)


if __name__ == "__main__":
    main()
