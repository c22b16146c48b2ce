#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_files
short_description: Ensure a host's directories and small files in one module call
description:
  - Creates the directories of O(directories), writes the files of O(files) (from text the controller
    rendered, or from a file already on the host) and copies the small directory trees of O(trees) that are
    already on the host, and sets each one's owner, group and mode. That is
    what M(ansible.builtin.file), M(ansible.builtin.copy) and M(ansible.builtin.template) do, for a whole
    set in one call. A role that manages a dozen paths per host pays one module start-up on the host instead
    of one or two per path, which is most of a no-change run's cost on a large fleet.
  - Directories first, then trees, then files, each in the order given. A file is written to a temporary file in its
    own directory, checked with its O(files[].validate) command, and renamed over the old one, so a reader
    sees the old file or the new one, never a part, and a file that fails its check is never installed.
  - The first path that cannot be set stops the call; the paths changed before it are named in the failure.
  - RV(changed_paths) names each path that changed (or would, in check mode), so the next task can notify
    only the handlers that path concerns.
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
    details:
      - Text files show their content before and after; files from O(files[].remote_src) and secrets show no content.
      - A tree shows the relative paths of the files it copied or whose owner, group or mode it set.
  platform:
    platforms: posix
options:
  directories:
    description: Directories to create (with their missing parents) and set the attributes of.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the directory.
        type: path
        required: true
      owner:
        description: Owner; unchanged when omitted.
        type: str
      group:
        description: Group; unchanged when omitted.
        type: str
      mode:
        description: Mode as an octal string such as V("0755"); unchanged when omitted.
        type: raw
  checksum_paths:
    description:
      - Files to report the SHA-1 of in RV(checksums), read after the directories, trees and files are set; a
        missing file reports none. Nothing is changed for them.
      - For a stamp that decides whether a later, costlier task runs, read in the same call.
    type: list
    elements: path
    default: []
  trees:
    description:
      - Directory trees already on the host to copy, as M(ansible.builtin.copy) with O(ansible.builtin.copy#module:remote_src=true)
        and O(ansible.builtin.copy#module:mode=preserve) copies a directory's contents.
      - Each regular file under O(trees[].src) is written to the same relative path under O(trees[].dest) when its
        bytes differ, atomically as a file of O(files) is; files and directories keep the source's mode.
      - Files under O(trees[].dest) that O(trees[].src) does not have are left alone.
      - Only regular files and directories are copied; a symbolic link or other special file in O(trees[].src) fails the call.
    type: list
    elements: dict
    default: []
    suboptions:
      src:
        description: Absolute path of the directory on the host whose contents are copied.
        type: path
        required: true
      dest:
        description: Absolute path of the directory to copy them into; created, with missing parents, when missing.
        type: path
        required: true
      owner:
        description: Owner of every directory and file copied; unchanged when omitted.
        type: str
      group:
        description: Group of every directory and file copied; unchanged when omitted.
        type: str
  files:
    description: Files to write. Exactly one of O(files[].content), O(files[].secret_content) and O(files[].remote_src) per file.
    type: list
    elements: dict
    default: []
    suboptions:
      dest:
        description: Absolute path of the file. Its directory must exist (list it in O(directories)).
        type: path
        required: true
      content:
        description: The file's text (for example a template rendered on the controller).
        type: str
      secret_content:
        description:
          - The file's text, kept out of logs, the diff and the module's answer (a key, a password).
        type: str
      remote_src:
        description: A file on the host to copy (its bytes; binaries are fine).
        type: path
      owner:
        description: Owner; unchanged when omitted (root for a new file written as root).
        type: str
      group:
        description: Group; unchanged when omitted.
        type: str
      mode:
        description: Mode as an octal string such as V("0644"); a new file without one gets 0600.
        type: raw
      validate:
        description:
          - Command that checks the new file before it replaces the old one; C(%s) stands for the temporary file.
          - Run without a shell. A non-zero exit leaves the old file in place and fails the call.
        type: str
notes:
  - Owner, group and mode are set the way M(ansible.builtin.file) sets them; SELinux contexts are not managed.
  - A symbolic link at O(files[].dest) whose target differs is replaced by a regular file, not followed.
  - Not for large trees or archives (each file is read whole); use M(ansible.builtin.copy) or M(ansible.builtin.unarchive).
seealso:
  - module: ansible.builtin.file
  - module: ansible.builtin.copy
  - module: ansible.builtin.template
"""

EXAMPLES = r"""
- name: Lay out Triton's directories
  aiops.triton.host_files:
    directories:
      - {path: /opt/tritonserver, owner: root, group: root, mode: "0755"}
      - {path: /etc/tritonserver, owner: root, group: root, mode: "0755"}

- name: Copy the python backend out of the installed wheel and install the stub built for this host's Python
  aiops.triton.host_files:
    trees:
      - src: /opt/tritonserver/venv/lib/python3.11/site-packages/pytriton/tritonserver/backends/python
        dest: /opt/tritonserver/backends/python
        owner: root
        group: root
    files:
      - dest: /opt/tritonserver/backends/python/triton_python_backend_stub
        remote_src: /opt/tritonserver/venv/lib/python3.11/site-packages/pytriton/tritonserver/python_backend_stubs/3.11/triton_python_backend_stub
        owner: root
        group: root
        mode: "0755"

- name: Create the venv's directory and read its install stamp in the same call
  aiops.triton.host_files:
    directories:
      - {path: /opt/tritonserver/venv, owner: root, group: root, mode: "0755"}
    checksum_paths: [/opt/tritonserver/venv/.aiops-installed]
  register: triton_dirs

- name: Install the unit and its key file in one call
  aiops.triton.host_files:
    files:
      - dest: /etc/tritonserver/tritonserver.env
        secret_content: "TRITON_API_KEY={{ triton_server_api_key }}\n"
        owner: root
        group: root
        mode: "0600"
      - dest: /etc/systemd/system/tritonserver.service
        content: "{{ lookup('ansible.builtin.template', 'tritonserver.service.j2') }}"
        owner: root
        group: root
        mode: "0644"
        validate: systemd-analyze verify --man=no %s:tritonserver.service
  register: triton_files

- name: Restart Triton when one of its files changed
  ansible.builtin.debug:
    msg: "{{ triton_files.changed_paths }}"
  changed_when: triton_files.changed_paths | length > 0
  notify: Restart tritonserver
"""

RETURN = r"""
changed_paths:
  description:
    - The paths that changed (or would change, in check mode), directories, then trees, then files, in the order given.
    - A tree is named by its O(trees[].dest) when any directory or file in it changed.
  returned: always
  type: list
  elements: str
  sample: [/etc/tritonserver, /etc/systemd/system/tritonserver.service]
checksums:
  description: The SHA-1 of each file of O(checksum_paths), by path; V(null) for a file that does not exist.
  returned: always
  type: dict
  sample: {/opt/tritonserver/venv/.aiops-installed: 0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33}
diff:
  description: One entry per changed path (with C(--diff)), as M(ansible.builtin.copy) and M(ansible.builtin.file) give.
  returned: changed, with --diff
  type: list
  elements: dict
"""

import filecmp
import os
import shlex
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text

from ansible_collections.aiops.triton.plugins.module_utils.fs import write_atomic

_ATTRS = dict(owner=dict(type="str"), group=dict(type="str"), mode=dict(type="raw"))
# A diff shows text up to this size, as ansible.builtin.copy's default (max_file_size_for_diff).
_MAX_DIFF_BYTES = 104448


class PathFailed(Exception):
    """One path could not be set; the message names it."""


def _file_args(module, path, entry):
    return module.load_file_common_arguments(
        {"path": path, "owner": entry.get("owner"), "group": entry.get("group"), "mode": entry.get("mode")})


def _attrs_diff(path):
    return {"before": {"path": path}, "after": {"path": path}}


def ensure_directory(module, entry):
    """(changed, diff) for one directory: created with its parents when missing, attributes set."""
    path = entry["path"]
    diff = _attrs_diff(path)
    created = False
    if os.path.lexists(path) and not os.path.isdir(path):
        raise PathFailed("%s exists and is not a directory" % path)
    if not os.path.isdir(path):
        created = True
        diff["before"]["state"] = "absent"
        diff["after"]["state"] = "directory"
        if module.check_mode:
            return True, diff
        try:
            os.makedirs(path)
        except OSError as exc:
            raise PathFailed("cannot create %s: %s" % (path, to_native(exc)))
    changed = module.set_fs_attributes_if_different(_file_args(module, path, entry), created, diff=diff, expand=False)
    return changed, diff


def _source(entry):
    """('bytes', data) or ('path', host path) for a file entry; exactly one source is allowed."""
    given = [key for key in ("content", "secret_content", "remote_src") if entry.get(key) is not None]
    if len(given) != 1:
        raise PathFailed("%s: give exactly one of content, secret_content and remote_src (got %s)"
                         % (entry["dest"], ", ".join(given) or "none"))
    if given[0] == "remote_src":
        src = entry["remote_src"]
        if not os.path.isfile(src):
            raise PathFailed("%s: remote_src %s is not a file on this host" % (entry["dest"], src))
        return "path", src
    return "bytes", to_bytes(entry[given[0]], errors="surrogate_or_strict")


def _same(kind, source, dest):
    if not os.path.isfile(dest):
        return False
    if kind == "path":
        return filecmp.cmp(source, dest, shallow=False)
    if os.path.getsize(dest) != len(source):
        return False
    with open(dest, "rb") as handle:
        return handle.read() == source


def _text_for_diff(data):
    if data is None or len(data) > _MAX_DIFF_BYTES or b"\x00" in data:
        return None
    try:
        return to_text(data, errors="strict")
    except UnicodeError:
        return None


def _content_diff(entry, kind, source, dest):
    diff = {"before_header": dest, "after_header": dest, "before": "", "after": ""}
    if entry.get("secret_content") is not None or kind == "path":
        what = "secret" if kind == "bytes" else "copied from %s" % entry["remote_src"]
        diff["before"] = "(content not shown: %s)\n" % what if os.path.exists(dest) else ""
        diff["after"] = "(content not shown: %s)\n" % what
        return diff
    before = b""
    if os.path.isfile(dest) and os.path.getsize(dest) <= _MAX_DIFF_BYTES:
        with open(dest, "rb") as handle:
            before = handle.read()
    diff["before"] = _text_for_diff(before) or ""
    diff["after"] = _text_for_diff(source) or "(not shown: binary or large)\n"
    return diff


def _validate(module, command, tmp, dest):
    if "%s" not in command:
        raise PathFailed("%s: validate must contain %%s (the file to check): %s" % (dest, command))
    argv = [arg.replace("%s", tmp) for arg in shlex.split(command)]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        raise PathFailed("%s was not installed: %s failed (rc %d): %s" % (dest, command, rc, (err or out).strip()))


def _write(module, entry, kind, source):
    dest = entry["dest"]
    directory = os.path.dirname(dest)
    if not os.path.isdir(directory):
        raise PathFailed("%s: its directory %s does not exist" % (dest, directory))
    if kind == "path":
        with open(source, "rb") as src:
            source = src.read()

    def prepare(tmp):
        # An existing file keeps what the entry does not name (as copy does); mkstemp's is 0600 root.
        if os.path.exists(dest):
            current = os.stat(dest)
            os.chmod(tmp, current.st_mode & 0o7777)
            os.chown(tmp, current.st_uid, current.st_gid)
        module.set_fs_attributes_if_different(_file_args(module, tmp, entry), False, expand=False)
        if entry.get("validate"):
            _validate(module, entry["validate"], tmp, dest)

    write_atomic(dest, source, ".%s.aiops-" % os.path.basename(dest), prepare)


def ensure_file(module, entry):
    """(changed, diff) for one file: written when its content differs, attributes set."""
    dest = entry["dest"]
    if os.path.isdir(dest):
        raise PathFailed("%s is a directory" % dest)
    kind, source = _source(entry)
    if _same(kind, source, dest):
        diff = _attrs_diff(dest)
        changed = module.set_fs_attributes_if_different(_file_args(module, dest, entry), False, diff=diff, expand=False)
        return changed, diff
    diff = _content_diff(entry, kind, source, dest)
    if not module.check_mode:
        try:
            _write(module, entry, kind, source)
        except (OSError, IOError) as exc:
            raise PathFailed("cannot write %s: %s" % (dest, to_native(exc)))
    return True, diff


def _like(entry, mode, **path):
    """A directory or file entry for a path in a tree: the tree's owner and group, the source's mode."""
    return dict(path, owner=entry.get("owner"), group=entry.get("group"), mode="%04o" % stat.S_IMODE(mode))


def ensure_tree(module, entry):
    """(changed, diff) for one tree: src's directories and regular files copied under dest with src's modes."""
    src, dest = entry["src"], entry["dest"]
    if not os.path.isabs(src):
        raise PathFailed("%s: src %s must be absolute" % (dest, src))
    if os.path.islink(src) or not os.path.isdir(src):
        raise PathFailed("%s: src %s is not a directory on this host" % (dest, src))
    if os.path.commonpath([os.path.realpath(src), os.path.realpath(dest)]) == os.path.realpath(src):
        raise PathFailed("%s: dest must not be inside src %s" % (dest, src))
    changed = False
    copied = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        rel = os.path.relpath(root, src)
        target = dest if rel == os.curdir else os.path.join(dest, rel)
        changed |= ensure_directory(module, _like(entry, os.stat(root).st_mode, path=target))[0]
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise PathFailed("%s: %s is not a regular file or directory (trees copy only those)" % (dest, path))
            file_changed, file_diff = ensure_file(
                module, _like(entry, info.st_mode, dest=os.path.join(target, name), remote_src=path))
            if file_changed:
                how = "copied from %s" % src if "after_header" in file_diff else "owner, group or mode set"
                copied.append("%s (%s)\n" % (os.path.normpath(os.path.join(rel, name)), how))
                changed = True
    diff = {"before_header": dest, "after_header": dest, "before": "", "after": "".join(copied)}
    return changed, diff


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[],
                             options=dict(path=dict(type="path", required=True), **_ATTRS)),
            files=dict(type="list", elements="dict", default=[],
                       options=dict(dest=dict(type="path", required=True), content=dict(type="str"),
                                    secret_content=dict(type="str", no_log=True), remote_src=dict(type="path"),
                                    validate=dict(type="str"), **_ATTRS)),
            checksum_paths=dict(type="list", elements="path", default=[]),
            trees=dict(type="list", elements="dict", default=[],
                       options=dict(src=dict(type="path", required=True), dest=dict(type="path", required=True),
                                    owner=dict(type="str"), group=dict(type="str"))),
        ),
        supports_check_mode=True,
    )
    changed_paths = []
    diffs = []
    for path in module.params["checksum_paths"]:
        if not os.path.isabs(path):
            module.fail_json(msg="%s: the path must be absolute" % path, changed=False, changed_paths=[])
    steps = [(ensure_directory, entry["path"], entry) for entry in module.params["directories"]]
    steps += [(ensure_tree, entry["dest"], entry) for entry in module.params["trees"]]
    steps += [(ensure_file, entry["dest"], entry) for entry in module.params["files"]]
    for ensure, path, entry in steps:
        if not os.path.isabs(path):
            module.fail_json(msg="%s: the path must be absolute" % path, changed=bool(changed_paths),
                             changed_paths=changed_paths)
        try:
            changed, diff = ensure(module, entry)
        except PathFailed as exc:
            done = "; changed before it: %s" % ", ".join(changed_paths) if changed_paths else "; nothing was changed"
            module.fail_json(msg="%s%s" % (exc, done), changed=bool(changed_paths), changed_paths=changed_paths)
        if changed:
            changed_paths.append(path)
            diffs.append(diff)
    checksums = {}
    for path in module.params["checksum_paths"]:
        checksums[path] = module.sha1(path) if os.path.isfile(path) else None
    result = dict(changed=bool(changed_paths), changed_paths=changed_paths, checksums=checksums)
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
