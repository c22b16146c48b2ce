#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_footprint
short_description: Measure what each served model version of a Triton host costs per instance
description:
  - Reads, without changing anything, the memory each version of O(models) takes on a live Triton host.
  - Host memory is the RSS (C(VmRSS) of C(/proc/<pid>/status)) of the python-backend stubs
    (C(triton_python_backend_stub)) under the tritonserver process; each stub is one instance, attributed to its
    model and version by the model file path of its command line.
  - GPU memory is the C(used_memory) that C(nvidia-smi --query-compute-apps) reports for those stubs; on a host
    without nvidia-smi it is null with the reason C(nvidia-smi not installed).
  - Triton's own C(memory_usage) statistics (C(GET /v2/models/<name>/versions/<v>/stats)) are returned as Triton
    reports them; the backends of the collection's models report none.
  - Instances that run inside tritonserver itself (C++ backends) are not measured; their footprint is unknown
    with that reason.
  - RV(models[].footprint) is per instance, in MiB, the shape of a model's C(footprint) in the inventory that the
    GPU memory budget reads.
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
    support: none
  platform:
    platforms: posix
options:
  models:
    description: The model versions to measure.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - Model name.
          - Refused before Triton is contacted when it cannot be a model directory name
            (see M(aiops.triton.triton_model_config)'s O(aiops.triton.triton_model_config#module:name)).
        type: str
        required: true
      versions:
        description: Versions to measure. Default, the versions Triton reports C(READY) in its repository index.
        type: list
        elements: int
  nvidia_smi_path:
    description: Path of nvidia-smi. Default, the one on C(PATH) or in C(/usr/bin).
    type: path
  pid:
    description:
      - PID of the tritonserver process.
      - Default, the C(MainPID) of O(unit), else the one process named C(tritonserver), else, among several, the one
        listening on the port of O(url), else the one whose python-backend stubs serve one of O(models).
    type: int
  unit:
    description: The systemd unit whose C(MainPID) is tritonserver, when O(pid) is not given.
    type: str
    default: tritonserver.service
  timeout:
    description: Seconds for each HTTP request.
    type: int
    default: 30
notes:
  - Supports check mode; the module never changes anything (C(changed) is always false).
  - RSS counts the shared libraries each stub maps, so the host footprint errs high.
"""

EXAMPLES = r"""
- name: Measure the serving versions of the ops models
  aiops.triton.triton_footprint:
    url: http://127.0.0.1:8000
    api_key: "{{ triton_api_key }}"
    models:
      - name: alert_classifier
      - name: metric_forecaster
        versions: [2]
  register: __footprint

- name: Show each version's footprint per instance
  ansible.builtin.debug:
    msg: "{{ __footprint.models | map(attribute='footprint') | list }}"
"""

RETURN = r"""
server_pid:
  description: The tritonserver PID measured under; null when none was found.
  returned: always
  type: int
  sample: 9796
triton_version:
  description: The version Triton reports (C(GET /v2)); null when unreadable.
  returned: always
  type: str
  sample: 2.51.0
models:
  description: One entry per measured model version.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Model name.
      type: str
    version:
      description: Version number.
      type: int
    instances:
      description: Python-backend stubs found for this version (one per instance).
      type: int
    host_mib:
      description: RSS of all its stubs in MiB, rounded up; null when unknown.
      type: int
    gpu_mib:
      description: GPU memory of all its stubs in MiB (0 when nvidia-smi lists none of them); null when unknown.
      type: int
    per_instance:
      description: Each stub, with C(instance) (Triton's instance name), C(pid), C(rss_kib), C(host_mib) and C(gpu_mib).
      type: list
      elements: dict
    triton_memory_usage:
      description:
        - Triton's C(memory_usage) statistics of the version (C(type), C(id), C(byte_size)), possibly empty; null
          when unreadable (the reason is in RV(models[].unknown)).
      type: list
      elements: dict
    footprint:
      description:
        - Per instance, the largest instance in MiB rounded up (C(gpu_mib), C(host_mib), null where unknown), with
          C(source) and C(measured) (UTC time); the shape of an inventory model's C(footprint).
      type: dict
    unknown:
      description: Why a value is null.
      type: list
      elements: str
  sample: [{"name": "alert_classifier", "version": 1, "instances": 2, "host_mib": 369, "gpu_mib": null,
            "per_instance": [{"instance": "alert_classifier_0_0", "pid": 10122, "rss_kib": 187840,
                              "host_mib": 183.4, "gpu_mib": null}],
            "triton_memory_usage": [],
            "footprint": {"gpu_mib": null, "host_mib": 185, "source": "triton_footprint",
                          "measured": "2026-12-06T09:44:20Z"},
            "unknown": ["GPU memory: nvidia-smi not installed"]}]
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils import footprint as fp
from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi
from ansible_collections.aiops.triton.plugins.module_utils.triton_api import (
    CONNECTION_ARGSPEC, TritonApiError, TritonClient)
from ansible_collections.aiops.triton.plugins.module_utils.model_name import ModelNameError, check_model_name


def server_pid(module, procs, proc=fp.PROC):
    """(pid, None) of tritonserver: O(pid), the unit's MainPID, else the one process so named, else among several the
    one listening on O(url)'s port (or running stubs of O(models)); (None, why) otherwise."""
    params = module.params
    if params["pid"]:
        if params["pid"] not in procs:
            return None, "no process %s" % params["pid"]
        return params["pid"], None
    systemctl = module.get_bin_path("systemctl")
    if systemctl:
        rc, out, _err = module.run_command([systemctl, "show", "-p", "MainPID", "--value", params["unit"]])
        if rc == 0 and out.strip().isdigit() and int(out.strip()) in procs:
            return int(out.strip()), None
    named = fp.server_pids(procs)
    if len(named) > 1:
        # several servers (a test machine, a second instance): the one listening where the module talks to Triton,
        listening = fp.listening_pids(named, fp.url_port(params.get("url")), proc) if params.get("url") else []
        if len(listening) == 1:
            return listening[0], None
        # else the one running stubs of the models asked about
        wanted = set(m["name"] for m in params.get("models") or [])
        serving = [pid for pid in named if any(s["model"] in wanted for s in fp.stubs(procs, pid))]
        named = serving if len(serving) == 1 else named
    if len(named) == 1:
        return named[0], None
    if not named:
        return None, "no tritonserver process (%s has no MainPID and none is named tritonserver)" % params["unit"]
    return None, "several tritonserver processes (%s): give pid" % ", ".join(map(str, named))


def gpu_apps(module):
    """(compute apps, None), or (None, why) when nvidia-smi cannot say."""
    binary = smi.find(module, module.params["nvidia_smi_path"])
    if not binary:
        return None, fp.NO_NVIDIA_SMI
    try:
        return smi.compute_apps(module, binary), None
    except smi.NvidiaSmiError as exc:
        return None, str(exc)


def main():
    argument_spec = dict(CONNECTION_ARGSPEC)
    argument_spec.update(
        models=dict(type="list", elements="dict", required=True, options=dict(
            name=dict(type="str", required=True),
            versions=dict(type="list", elements="int"),
        )),
        nvidia_smi_path=dict(type="path"),
        pid=dict(type="int"),
        unit=dict(type="str", default="tritonserver.service"),
        timeout=dict(type="int", default=30),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    client = TritonClient(params["url"], api_key=params["api_key"], api_key_header=params["api_key_header"],
                          timeout=params["timeout"])
    measured = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    models, usage, stats_errors = [], {}, {}
    for spec in params["models"]:
        try:
            check_model_name(spec["name"])
            versions = spec["versions"] or client.ready_versions(spec["name"])
        except (ModelNameError, TritonApiError) as exc:
            module.fail_json(msg="%s: %s" % (spec["name"], exc), changed=False)
        models.append({"name": spec["name"], "versions": versions})
        for version in versions:
            try:
                stats = client.model_statistics(spec["name"], version)
                usage[(spec["name"], int(version))] = fp.memory_usage(stats, version)
            except TritonApiError as exc:
                usage[(spec["name"], int(version))] = None
                stats_errors[(spec["name"], int(version))] = "Triton's statistics: %s" % exc.cause
    try:
        triton_version = (client.server_metadata() or {}).get("version")
    except TritonApiError:
        triton_version = None  # kept with a recorded footprint for people to read; the measurement stands without it
    procs = fp.processes()
    pid, why = server_pid(module, procs)
    apps, gpu_reason = gpu_apps(module)
    stub_list = fp.stubs(procs, pid) if pid else []
    results = fp.measure(models, stub_list, apps, gpu_reason, usage, pid, measured)
    for entry in results:
        if (entry["name"], entry["version"]) in stats_errors:
            entry["unknown"].append(stats_errors[(entry["name"], entry["version"])])
        if why:
            entry["unknown"].insert(0, why)
    module.exit_json(changed=False, server_pid=pid, triton_version=triton_version, models=results)


if __name__ == "__main__":
    main()
