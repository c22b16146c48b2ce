#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: proc_hidepid
short_description: Hide other users' processes on a host (/proc hidepid=invisible) in one module call
description:
  - Makes O(group) (a system group) when it is missing, adds each user of O(members) to it, keeps the
    C(/proc) line of O(fstab) at C(hidepid=invisible) with that group's gid (systemd-remount-fs applies it at boot)
    and remounts the running C(/proc) with both when its options differ.
  - That is what M(ansible.builtin.group), M(ansible.builtin.user) with O(ansible.builtin.user#module:append=true),
    M(ansible.builtin.lineinfile) and two commands do, in one call. A no-change run reads C(/etc/group), the
    fstab and C(/proc/self/mountinfo) and starts nothing else.
  - With C(hidepid=invisible) a local user sees only their own processes, so none reads a secret from another
    process's command line (Triton takes its repository-API key only there). Members of O(group) (monitoring
    agents, C(polkitd)) still see every process.
  - The remount needs C(CAP_SYS_ADMIN); where it is refused the call fails, naming the host's answer.
version_added: "0.2.0"
author:
  - aiops.triton contributors (@aiops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - A group the run would create has no gid yet; the fstab line and the remount are then reported as
        changes without their gid.
  diff_mode:
    support: full
    details:
      - The fstab's text before and after.
  platform:
    platforms: posix
options:
  group:
    description: The group whose members see every process (made with C(groupadd --system) when missing).
    type: str
    required: true
  members:
    description: Existing users to add to O(group) (their other groups are kept). A user that does not exist fails the call.
    type: list
    elements: str
    default: []
  fstab:
    description:
      - The file whose C(/proc) line is kept (the last one when there are several, as M(ansible.builtin.lineinfile)
        replaces it; appended when there is none; the file is made when missing), root:root 0644.
    type: path
    default: /etc/fstab
  proc_options:
    description: The C(/proc) mount options of the fstab line before C(hidepid=invisible) and the gid.
    type: str
    default: nosuid,nodev,noexec
"""

EXAMPLES = r"""
- name: Hide other users' processes, the monitoring agent excepted
  aiops.triton.proc_hidepid:
    group: proc-view
    members: [prometheus]
"""

RETURN = r"""
gid:
  description: The gid of O(group); absent in check mode when the group would be made.
  returned: success, when the group exists or was made
  type: int
  sample: 998
changes:
  description: What changed (or would, in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["group proc-view made", "prometheus added to proc-view", "/etc/fstab /proc line", "/proc remounted"]
fstab_line:
  description: The C(/proc) line O(fstab) holds now; absent in check mode when the group would be made.
  returned: success, when the gid is known
  type: str
  sample: proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=998 0 0
"""

import grp
import os
import pwd
import re
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.aiops.triton.plugins.module_utils.fs import write_atomic

MOUNTINFO = "/proc/self/mountinfo"
# the line ansible.builtin.lineinfile's regexp matched: any source, mounted at /proc, type proc
PROC_LINE = re.compile(r"^\S+\s+/proc\s+proc\s")


def group_entry(name):
    """The group's entry (gr_gid, gr_mem), or None when there is no such group."""
    try:
        return grp.getgrnam(name)
    except KeyError:
        return None


def proc_mount_options():
    """The running /proc's options as findmnt shows them: the mount's own and its superblock's (mountinfo fields
    6 and after the separator); None when /proc is not mounted."""
    with open(MOUNTINFO) as handle:
        for line in handle:
            fields = line.split()
            if len(fields) > 5 and fields[4] == "/proc" and "-" in fields[6:]:
                tail = fields[fields.index("-", 6) + 1:]
                if tail and tail[0] == "proc":
                    return fields[5].split(",") + (tail[2].split(",") if len(tail) > 2 else [])
    return None


def fstab_with(text, line):
    """text with its last /proc line replaced by line (lineinfile's rule), or line appended when it has none."""
    lines = text.splitlines()
    at = [i for i, old in enumerate(lines) if PROC_LINE.match(old)]
    if at:
        lines[at[-1]] = line
    else:
        lines.append(line)
    return "\n".join(lines) + "\n"


def is_root_0644(path):
    info = os.stat(path)
    return info.st_uid == 0 and info.st_gid == 0 and stat.S_IMODE(info.st_mode) == 0o644


def root_0644(path):
    """The fstab's attributes as the role always set them: root:root 0644."""
    os.chown(path, 0, 0)
    os.chmod(path, 0o644)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            group=dict(type="str", required=True),
            members=dict(type="list", elements="str", default=[]),
            fstab=dict(type="path", default="/etc/fstab"),
            proc_options=dict(type="str", default="nosuid,nodev,noexec"),
        ),
        supports_check_mode=True,
    )
    group, fstab = module.params["group"], module.params["fstab"]
    changes = []
    result = dict(changed=False, changes=changes)

    def fail(msg):
        result["changed"] = bool(changes)  # what changed before the failure is still reported as changed
        module.fail_json(msg=msg, **result)

    for user in module.params["members"]:
        try:
            pwd.getpwnam(user)
        except KeyError:
            fail("%s is not a user on this host: only existing users are added to %s" % (user, group))

    entry = group_entry(group)
    if entry is None:
        changes.append("group %s made" % group)
        if not module.check_mode:
            module.run_command(["groupadd", "--system", group], check_rc=True)
            entry = group_entry(group)
            if entry is None:
                fail("groupadd --system %s succeeded but the group cannot be read" % group)
    gid = entry.gr_gid if entry else None

    have = set(entry.gr_mem) if entry else set()
    for user in module.params["members"]:
        if user not in have:
            changes.append("%s added to %s" % (user, group))
            if not module.check_mode:
                module.run_command(["usermod", "--append", "--groups", group, user], check_rc=True)

    if gid is None:  # check mode, the group yet to be made: its gid, the fstab line and the remount are unknown
        changes += ["%s /proc line" % fstab, "/proc remounted"]
        result.update(changed=True)
        module.exit_json(**result)
    result["gid"] = gid

    line = "proc /proc proc %s,hidepid=invisible,gid=%d 0 0" % (module.params["proc_options"], gid)
    result["fstab_line"] = line
    before = ""
    if os.path.exists(fstab):
        with open(fstab, "rb") as handle:
            before = to_text(handle.read(), errors="surrogate_or_strict")
    after = fstab_with(before, line)
    if after != before:
        changes.append("%s /proc line" % fstab)
        if module._diff:
            result["diff"] = dict(before=before, after=after, before_header=fstab, after_header=fstab)
        if not module.check_mode:
            write_atomic(fstab, to_bytes(after), ".fstab-", prepare=root_0644)
    elif not is_root_0644(fstab):
        changes.append("%s owner, group or mode" % fstab)
        if not module.check_mode:
            root_0644(fstab)

    options = proc_mount_options()
    if options is None:
        fail("/proc is not mounted on this host (%s has no proc mount at /proc)" % MOUNTINFO)
    if not ("hidepid=invisible" in options and "gid=%d" % gid in options):
        changes.append("/proc remounted")
        if not module.check_mode:
            rc, _out, err = module.run_command(["mount", "-o", "remount,hidepid=invisible,gid=%d" % gid, "/proc"])
            if rc != 0:
                fail((
                    "Could not remount /proc with hidepid=invisible (%s). It needs CAP_SYS_ADMIN: a container used as "
                    "a host must be started with it. Without it any local user can read the API key from Triton's "
                    "command line; set triton_server_proc_hidepid=false only if you accept that.") % to_text(err).strip())

    result["changed"] = bool(changes)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
