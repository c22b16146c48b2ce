# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
name: model_footprints
author: aiops.triton contributors (@aiops)
version_added: "0.2.0"
short_description: The measured footprints (FOOTPRINT.json in S3) of the model versions each Triton host serves
description:
  - For every host of C(triton_servers), every model version its C(triton_models_list) (over C(triton_models_catalog))
    serves with pinned C(versions) and no declared C(footprint) for that version, reads
    C(<prefix>/<model>/<version>/FOOTPRINT.json) from the host's S3 (C(triton_models_s3_*) variables, the
    C(triton_models) role's defaults where unset), as recorded by M(aiops.triton.s3_model_footprint) when the version
    was validated as a candidate.
  - Runs on the controller, before any host is contacted (C(playbooks/validate.yml)). Each object is read once per
    endpoint, bucket and key, whatever the number of hosts serving it.
  - A version without a FOOTPRINT.json is simply absent from the result (its footprint is unknown). An S3 that cannot
    be reached or read (or boto3 missing on the controller) is a warning, one per endpoint and bucket, never an error;
    its versions stay unknown.
  - Ensembles (no instances of their own) and C(latest) entries (which versions is not known before the rollout) are
    not read.
options:
  _terms:
    description: Not used.
    required: false
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  groups:
    description: C(groups) (its C(triton_servers) are read).
    type: dict
    required: true
  timeout:
    description: Seconds to wait for each S3 request (connect and read); an unreachable endpoint is tried once.
    type: int
    default: 5
notes:
  - The controller's Python needs boto3 (the collection's requirements.txt).
seealso:
  - module: aiops.triton.s3_model_footprint
  - plugin: aiops.triton.gpu_memory_budget
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Add up the GPU and host memory of each host's model set, measured footprints included
  ansible.builtin.debug:
    msg: "{{ (hostvars | aiops.triton.gpu_memory_budget(groups, measured=__measured.footprints)).lines }}"
  vars:
    __measured: "{{ lookup('aiops.triton.model_footprints', hostvars=hostvars, groups=groups) }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description: One mapping.
  type: list
  elements: dict
  contains:
    footprints:
      description: >-
        Host -> model -> version (a string) -> {footprint (gpu_mib, host_mib, source, measured: per instance, MiB),
        location (s3://bucket/key), host (where it was measured), measured (when)}; the C(measured) argument of the
        aiops.triton.gpu_memory_budget filter.
      type: dict
    warnings:
      description: Why some footprints could not be read (S3 unreachable, refused credentials, a malformed file).
      type: list
      elements: str
    reads:
      description: S3 objects read (each endpoint, bucket and key once).
      type: int
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

try:
    import yaml
    from ansible_collections.aiops.triton.plugins.module_utils import fleet
    from ansible_collections.aiops.triton.plugins.module_utils import footprint_record as fr
    from ansible_collections.aiops.triton.plugins.module_utils import gpu_budget
    from ansible_collections.aiops.triton.plugins.module_utils import s3_client
    from ansible_collections.aiops.triton.plugins.module_utils.s3_sync_errors import S3SyncError
except ImportError as exc:  # pragma: no cover - only when the collection is broken
    raise AnsibleLookupError("aiops.triton.model_footprints cannot load: %s" % to_native(exc))

display = Display()
ROLE_DEFAULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "roles", "triton_models", "defaults", "main.yml")
# The role's S3 variables and the client argument each feeds.
S3_VARS = (("triton_models_s3_endpoint_url", "endpoint_url"), ("triton_models_s3_bucket", "bucket"),
           ("triton_models_s3_prefix", "prefix"), ("triton_models_s3_region", "region"),
           ("triton_models_s3_access_key", "access_key"), ("triton_models_s3_secret_key", "secret_key"),
           ("triton_models_s3_session_token", "session_token"), ("triton_models_s3_validate_certs", "validate_certs"),
           ("triton_models_s3_ca_bundle", "ca_bundle"), ("triton_models_s3_checksum_mode", "checksum_mode"))


def role_defaults(path=ROLE_DEFAULTS):
    """The triton_models role's literal S3 defaults (what a host gets where the inventory is silent)."""
    try:
        with open(path) as handle:
            loaded = yaml.safe_load(handle) or {}
    except (IOError, OSError, yaml.YAMLError):
        loaded = {}
    return dict((name, loaded.get(name)) for name, _arg in S3_VARS)


def _get(hostvars, host, name, default=None):
    value = (hostvars.get(host) or {}).get(name)
    return default if value in (None, "") else value


def s3_settings(hostvars, host, defaults):
    """The client arguments of one host (its triton_models_s3_* variables over the role's defaults)."""
    settings = dict((arg, _get(hostvars, host, name, defaults.get(name))) for name, arg in S3_VARS)
    settings["validate_certs"] = boolean(True if settings["validate_certs"] is None else settings["validate_certs"],
                                         strict=False)
    return settings


def wanted(hostvars, groups, cache=None):
    """[(host, model, version)] of every served version that declares no footprint (only those are read)."""
    cache = {} if cache is None else cache
    found = []
    for host in groups.get(fleet.SERVERS_GROUP) or []:
        for model in fleet.present_models(_get(hostvars, host, "triton_models_list", []),
                                          _get(hostvars, host, "triton_models_catalog", {}), cache):
            if (model.get("config") or {}).get("platform") == "ensemble" or not model.get("versions"):
                continue
            for version in model["versions"]:
                try:
                    declared = gpu_budget.footprint(model.get("footprint"), version)
                except gpu_budget.BudgetError:
                    continue  # the budget reports it
                if all(declared[k] is None for k in gpu_budget.FOOTPRINT_KEYS):
                    found.append((host, model["name"], int(version)))
    return found


def read_footprints(hostvars, groups, timeout=5, make_client=None, defaults=None):
    """{footprints, warnings, reads}: see RETURN. ``make_client``: settings -> S3 client (tests)."""
    defaults = role_defaults() if defaults is None else defaults
    result = {"footprints": {}, "warnings": [], "reads": 0}
    todo = wanted(hostvars, groups)
    if todo and not s3_client.HAS_BOTO3:
        result["warnings"].append("measured footprints not read: boto3 is not installed on the controller; "
                                  "versions without a declared footprint are unknown")
        return result
    clients, failed, objects = {}, {}, {}
    for host, model, version in todo:
        settings = s3_settings(hostvars, host, defaults)
        if not settings["bucket"]:
            continue  # nothing to read from: its footprints are unknown
        store = (settings["endpoint_url"] or "", settings["bucket"])
        if store in failed:
            continue
        key = fr.footprint_key(settings["prefix"], model, version)
        location = "s3://%s/%s" % (settings["bucket"], key)
        if (store, key) not in objects:
            try:
                if store not in clients:
                    args = dict((k, v) for k, v in settings.items() if k not in ("bucket", "prefix"))
                    clients[store] = (make_client or _client)(args, timeout)
                objects[(store, key)] = _read(clients[store], settings, model, version)
                result["reads"] += 1
            except (S3SyncError, fr.FootprintError) as exc:
                where = "%s%s" % (settings["endpoint_url"] + " " if settings["endpoint_url"] else "", settings["bucket"])
                if isinstance(exc, fr.FootprintError):
                    objects[(store, key)] = None
                    result["warnings"].append("measured footprint of %s v%s ignored: %s" % (model, version, exc))
                    continue
                failed[store] = str(exc)
                result["warnings"].append("measured footprints not read from S3 (%s): %s; versions without a declared "
                                          "footprint are unknown" % (where, exc))
                continue
        record = objects[(store, key)]
        if record is None:
            continue
        result["footprints"].setdefault(host, {}).setdefault(model, {})[str(version)] = {
            "footprint": fr.budget_footprint(record), "location": location, "host": record.get("host"),
            "measured": record.get("measured")}
    return result


def _read(client, settings, model, version):
    return fr.read_record(client, settings["bucket"], settings["prefix"], model, version,
                          ((s3_client.BotoCoreError, s3_client.ClientError), s3_client.s3_error))


def _client(args, timeout):
    # one small object per version, tried once: an unreachable endpoint costs validate seconds, not minutes
    return s3_client.make_client(timeout=timeout, attempts=1, **args)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        hostvars, groups = self.get_option("hostvars"), self.get_option("groups")
        if not isinstance(groups, dict):
            raise AnsibleLookupError("model_footprints: groups must be a mapping (Ansible's groups)")
        result = read_footprints(hostvars, groups, timeout=self.get_option("timeout"))
        for warning in result["warnings"]:
            display.warning(warning)
        return [result]
