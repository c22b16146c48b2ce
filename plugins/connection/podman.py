# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
name: podman
short_description: Run tasks in a running podman container, with pipelining
description:
  - Runs commands in an existing podman container with C(podman exec) and copies files through the same
    command's standard input, so nothing is mounted and no extra tool is needed in the container.
  - Unlike C(containers.podman.podman) it supports pipelining (O(pipelining)), which the lab enables. A module
    then costs one C(podman exec) instead of four (make a temporary directory, copy, chmod, run); on a
    2-core controller running a fleet of containers, that is most of the time of a run that changes nothing.
version_added: "1.1.0"
author:
  - aiops.triton contributors (@aiops)
extends_documentation_fragment:
  - connection_pipelining
options:
  remote_addr:
    description: Name or ID of the container.
    type: str
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_podman_host
  remote_user:
    description: User (name or UID) the commands run as inside the container; by default the container's user.
    type: str
    vars:
      - name: ansible_user
    env:
      - name: ANSIBLE_REMOTE_USER
    ini:
      - section: defaults
        key: remote_user
  podman_executable:
    description: The podman executable on the controller.
    type: str
    default: podman
    vars:
      - name: ansible_podman_executable
    env:
      - name: ANSIBLE_PODMAN_EXECUTABLE
  podman_extra_args:
    description: Extra arguments put between C(podman) and its subcommand (for example C(--root ...)).
    type: str
    default: ""
    vars:
      - name: ansible_podman_extra_args
    env:
      - name: ANSIBLE_PODMAN_EXTRA_ARGS
notes:
  - The controller must run podman with access to the container (root, or the rootless user that owns it).
"""

EXAMPLES = r"""
# inventory
# lab:
#   hosts:
#     lab-1:
#   vars:
#     ansible_connection: aiops.triton.podman
#     ansible_pipelining: true
"""

import shlex
import subprocess

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.process import get_bin_path
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()


class Connection(ConnectionBase):
    """Each command is one ``podman exec``; nothing persistent to open or close."""

    transport = "aiops.triton.podman"
    has_pipelining = True

    def _connect(self):
        super(Connection, self)._connect()
        self._connected = True
        return self

    def _podman(self, args, in_data=None):
        try:
            podman = get_bin_path(self.get_option("podman_executable"))
        except ValueError as exc:
            raise AnsibleConnectionFailure("podman is not installed on the controller: %s" % exc)
        argv = [podman] + shlex.split(self.get_option("podman_extra_args") or "") + list(args)
        display.vvv("RUN %s" % argv, host=self.get_option("remote_addr"))
        proc = subprocess.Popen([to_bytes(a, errors="surrogate_or_strict") for a in argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate(in_data)
        return proc.returncode, stdout, stderr

    def _exec_args(self, interactive):
        args = ["exec"]
        if interactive:
            args.append("-i")  # stdin reaches the command: what pipelining and put_file need
        if self.get_option("remote_user"):
            args.extend(["--user", self.get_option("remote_user")])
        return args + [self.get_option("remote_addr")]

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        argv = self._exec_args(in_data is not None) + shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        return self._podman(argv, in_data)

    def put_file(self, in_path, out_path):
        super(Connection, self).put_file(in_path, out_path)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as handle:
            data = handle.read()
        rc, stdout, stderr = self._podman(self._exec_args(True) + ["/bin/sh", "-c", "cat > %s" % shlex.quote(out_path)], data)
        if rc != 0:
            raise AnsibleError("cannot copy %s to %s in container %s: %s"
                               % (in_path, out_path, self.get_option("remote_addr"), to_native(stderr or stdout).strip()))

    def fetch_file(self, in_path, out_path):
        super(Connection, self).fetch_file(in_path, out_path)
        rc, stdout, stderr = self._podman(self._exec_args(False) + ["cat", in_path])
        if rc != 0:
            raise AnsibleError("cannot fetch %s from container %s: %s"
                               % (in_path, self.get_option("remote_addr"), to_native(stderr).strip()))
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as handle:
            handle.write(stdout)

    def close(self):
        super(Connection, self).close()
        self._connected = False
