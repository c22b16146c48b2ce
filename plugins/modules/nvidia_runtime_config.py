#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_runtime_config
short_description: Merge the NVIDIA container runtime into docker, containerd or podman configuration
version_added: "0.2.0"
description:
  - Adds the C(nvidia) runtime to docker's C(daemon.json), containerd's C(config.toml) (config version 2 or 3)
    or podman's C(containers.conf) without dropping anything the file already holds.
  - C(daemon.json) is rewritten only when its parsed content changes. TOML files are edited line by line,
    so comments, ordering and unrelated keys stay as they are.
  - Refuses, with a message saying what to change, files it cannot merge safely (invalid JSON, containerd
    config version 1, the runtimes table written inline or with dotted keys).
  - Does not restart the runtime; notify a handler on RV(ignore:changed).
author:
  - aiops.triton contributors (@aiops)
options:
  runtime:
    description:
      - Container engine whose configuration is edited.
    type: str
    required: true
    choices: [docker, containerd, podman]
  path:
    description:
      - Configuration file. Defaults to C(/etc/docker/daemon.json), C(/etc/containerd/config.toml) or
        C(/etc/containers/containers.conf) for the chosen O(runtime). Created (mode C(0644)) when missing.
    type: path
  runtime_path:
    description:
      - Path of C(nvidia-container-runtime) written into the configuration.
    type: path
    default: /usr/bin/nvidia-container-runtime
  set_as_default:
    description:
      - Also make C(nvidia) the engine's default runtime. When false, an existing default is left alone.
    type: bool
    default: false
  enable_cdi:
    description:
      - Turn on CDI device injection (docker C(features.cdi), containerd C(enable_cdi) and C(cdi_spec_dirs)).
        Podman reads CDI specs natively, so this changes nothing for podman.
    type: bool
    default: false
  backup:
    description:
      - Keep a timestamped copy of the previous file when it changes.
    type: bool
    default: false
notes:
  - The containerd nvidia runtime follows the C(SystemdCgroup) setting of the C(runc) runtime when one is set.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Add the nvidia runtime to docker, keeping daemon.json's other keys
  aiops.triton.nvidia_runtime_config:
    runtime: docker
    enable_cdi: true
  notify: Restart docker

- name: Make nvidia containerd's default runtime
  aiops.triton.nvidia_runtime_config:
    runtime: containerd
    set_as_default: true
    backup: true
  notify: Restart containerd
"""

RETURN = r"""
path:
  description: The configuration file that was checked or edited.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
backup_file:
  description: Copy of the previous file, when O(backup=true) and the file changed.
  returned: changed and backup requested
  type: str
  sample: /etc/docker/daemon.json.12345.2026-12-02@10:41:07~
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils import runtime_config as rc


def read_text(path):
    if not os.path.exists(path):
        return None
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def write_text(module, path, text):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = os.path.join(directory, ".%s.aiops-triton.tmp" % os.path.basename(path))
    with open(tmp, "wb") as handle:
        handle.write(text.encode("utf-8"))
    # atomic_move keeps the old file's owner, mode and SELinux context.
    module.atomic_move(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runtime=dict(type="str", required=True, choices=list(rc.RUNTIMES)),
            path=dict(type="path"),
            runtime_path=dict(type="path", default=rc.DEFAULT_RUNTIME_PATH),
            set_as_default=dict(type="bool", default=False),
            enable_cdi=dict(type="bool", default=False),
            backup=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = params["path"] or rc.DEFAULT_PATHS[params["runtime"]]
    result = dict(changed=False, path=path)
    try:
        before = read_text(path)
        after = rc.merge(
            params["runtime"], before or "",
            runtime_path=params["runtime_path"],
            set_as_default=params["set_as_default"],
            enable_cdi=params["enable_cdi"],
        )
    except (rc.RuntimeConfigError, IOError, OSError, UnicodeDecodeError) as exc:
        module.fail_json(msg="cannot merge the nvidia runtime into %s: %s" % (path, exc), **result)

    if before is not None and after == before:
        module.exit_json(**result)
    result["changed"] = True
    if module._diff:
        result["diff"] = dict(before=before or "", after=after, before_header=path, after_header=path)
    if module.check_mode:
        module.exit_json(**result)
    try:
        if before is not None and params["backup"]:
            result["backup_file"] = module.backup_local(path)
        write_text(module, path, after)
        if before is None:
            module.set_mode_if_different(path, "0644", False)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write %s: %s" % (path, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
