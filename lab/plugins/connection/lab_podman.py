# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

# The lab's transport, not part of the collection: the lab's ansible.cfg puts lab/plugins/connection on
# the connection plugin path, so the lab inventory names it `lab_podman`.
DOCUMENTATION = r"""
name: lab_podman
short_description: Run tasks in a running podman container, with pipelining (the lab's transport)
description:
  - Runs commands in an existing podman container with C(podman exec) and copies files through the same
    command's standard input, so nothing is mounted and no extra tool is needed in the container.
  - Unlike C(containers.podman.podman) it supports pipelining (O(pipelining)), which the lab enables. A module
    then costs one C(podman exec) instead of four (make a temporary directory, copy, chmod, run); on a
    2-core controller running a fleet of containers, that is most of the time of a run that changes nothing.
  - With O(exec_method=nsenter) a command enters the container's namespaces directly (C(nsenter) on the
    container's PID 1, with the container's environment) instead of going through C(podman exec), which
    starts the OCI runtime's exec (0.1-0.2 s per call with runc). Same container, filesystem and systemd;
    the process runs with the controller's root capabilities and cgroup, as over SSH as root. A no-change
    C(site.yml) on the 3-host lab took 64.6 s with C(podman exec) and 47.2 s with C(nsenter)
    (docs/benchmarks.md). The lab inventory uses it; it needs root on the controller and no O(remote_user).
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
  exec_method:
    description:
      - How each command enters the container.
      - V(podman) runs C(podman exec); V(nsenter) reads the container's PID and environment with
        C(podman inspect) once per connection and runs C(nsenter) into its namespaces.
    type: str
    default: podman
    choices: [podman, nsenter]
    vars:
      - name: ansible_podman_exec_method
    env:
      - name: ANSIBLE_PODMAN_EXEC_METHOD
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
  - With O(exec_method=nsenter) a container that restarted (a reboot inside it brought back by podman's restart
    policy) is entered at its new PID 1; C(ansible.builtin.reboot) works (set its C(boot_time_command); a
    container shares the kernel's boot id).
"""

EXAMPLES = r"""
# inventory
# lab:
#   hosts:
#     lab-1:
#   vars:
#     ansible_connection: lab_podman   # lab/plugins/connection on the connection plugin path
#     ansible_pipelining: true
#     ansible_podman_exec_method: nsenter   # root controller: no OCI runtime exec per task
"""

import json
import os
import shlex
import subprocess

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.process import get_bin_path
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()


class Connection(ConnectionBase):
    """Each command is one ``podman exec`` (or one ``nsenter``); nothing persistent to open or close."""

    transport = "lab_podman"
    has_pipelining = True

    def __init__(self, *args, **kwargs):
        super(Connection, self).__init__(*args, **kwargs)
        self._target = None  # nsenter: (pid, env) of the container, read once per connection

    def _connect(self):
        super(Connection, self)._connect()
        self._connected = True
        return self

    def _run(self, argv, in_data=None):
        display.vvv("RUN %s" % argv, host=self.get_option("remote_addr"))
        proc = subprocess.Popen([to_bytes(a, errors="surrogate_or_strict") for a in argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate(in_data)
        return proc.returncode, stdout, stderr

    def _podman_argv(self, args):
        try:
            podman = get_bin_path(self.get_option("podman_executable"))
        except ValueError as exc:
            raise AnsibleConnectionFailure("podman is not installed on the controller: %s" % exc)
        return [podman] + shlex.split(self.get_option("podman_extra_args") or "") + list(args)

    def _nsenter_target(self):
        """The container's PID 1 on this machine and its environment (what podman exec would set)."""
        # A container that restarted (a reboot inside it, podman's restart policy) has a new PID 1: the
        # cached one is gone, so read it again (ansible.builtin.reboot also calls reset() between tries).
        if self._target is not None and not os.path.exists("/proc/%d/ns" % self._target[0]):
            self._target = None
        if self._target is None:
            name = self.get_option("remote_addr")
            if self.get_option("remote_user"):
                raise AnsibleConnectionFailure("exec_method nsenter runs commands as root in %s; unset remote_user "
                                               "(ansible_user) or use exec_method podman" % name)
            if os.geteuid() != 0:
                raise AnsibleConnectionFailure("exec_method nsenter needs root on the controller; use exec_method podman")
            inspect = ["inspect", "--type", "container", "--format", "{{json .State.Pid}} {{json .Config.Env}}", name]
            rc, stdout, stderr = self._run(self._podman_argv(inspect))
            if rc != 0:
                raise AnsibleConnectionFailure("cannot inspect container %s: %s" % (name, to_native(stderr).strip()))
            pid_text, env_text = to_native(stdout).strip().split(" ", 1)
            pid = json.loads(pid_text)
            if not pid:
                raise AnsibleConnectionFailure("container %s is not running" % name)
            env = json.loads(env_text) or []
            if not any(item.startswith("HOME=") for item in env):
                env.append("HOME=/root")  # what podman exec sets for root
            self._target = (pid, env)
        return self._target

    def _command(self, argv, interactive):
        """The controller's argv that runs ``argv`` in the container; ``interactive``: stdin is wired."""
        if self.get_option("exec_method") != "nsenter":
            args = ["exec"]
            if interactive:
                args.append("-i")  # stdin reaches the command: what pipelining and put_file need
            if self.get_option("remote_user"):
                args.extend(["--user", self.get_option("remote_user")])
            return self._podman_argv(args + [self.get_option("remote_addr")] + list(argv))
        pid, env = self._nsenter_target()
        try:
            nsenter = get_bin_path("nsenter")
        except ValueError as exc:
            raise AnsibleConnectionFailure("nsenter (util-linux) is not installed on the controller: %s" % exc)
        # every namespace of the container, its root and working directory, and only its environment
        return [nsenter, "--target", str(pid), "--all", "--root", "--wd", "--", "/usr/bin/env", "-i"] + env + list(argv)

    def _exec(self, argv, in_data=None):
        return self._run(self._command(argv, in_data is not None), in_data)

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        return self._exec(shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)

    def put_file(self, in_path, out_path):
        super(Connection, self).put_file(in_path, out_path)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as handle:
            data = handle.read()
        rc, stdout, stderr = self._exec(["/bin/sh", "-c", "cat > %s" % shlex.quote(out_path)], data)
        if rc != 0:
            raise AnsibleError("cannot copy %s to %s in container %s: %s"
                               % (in_path, out_path, self.get_option("remote_addr"), to_native(stderr or stdout).strip()))

    def fetch_file(self, in_path, out_path):
        super(Connection, self).fetch_file(in_path, out_path)
        rc, stdout, stderr = self._exec(["cat", in_path])
        if rc != 0:
            raise AnsibleError("cannot fetch %s from container %s: %s"
                               % (in_path, self.get_option("remote_addr"), to_native(stderr).strip()))
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as handle:
            handle.write(stdout)

    def reset(self):
        """Forget the container's PID and environment; the next command reads them again."""
        self._target = None

    def close(self):
        super(Connection, self).close()
        self._connected = False
