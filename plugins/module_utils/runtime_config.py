# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge the NVIDIA container runtime into docker, containerd and podman configs.

The rule is that a user's keys, comments and formatting survive: docker's daemon.json is
rewritten only when its parsed content changes, and TOML files (containerd config.toml,
containers.conf) are edited line by line -- only the lines for the keys set here are touched,
missing keys are inserted into their table, missing tables are appended.  Target hosts may run
Python 3.8 without any TOML library, so the small TOML reader here covers what these settings
need (strings, booleans, integers, arrays) and refuses, rather than guesses, when a table it must
edit is written as an inline table or with dotted keys.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import json
import re

RUNTIMES = ("docker", "containerd", "podman")
DEFAULT_PATHS = {
    "docker": "/etc/docker/daemon.json",
    "containerd": "/etc/containerd/config.toml",
    "podman": "/etc/containers/containers.conf",
}
DEFAULT_RUNTIME_PATH = "/usr/bin/nvidia-container-runtime"
CDI_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"]
# CRI plugin table per containerd config version (1.x writes 2, 2.x writes 3).
CONTAINERD_CRI = {
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
}


class RuntimeConfigError(Exception):
    """The existing config cannot be merged safely; the message says what to fix."""


# --------------------------------------------------------------------------- docker


def merge_docker(text, runtime_path=DEFAULT_RUNTIME_PATH, set_as_default=False, enable_cdi=False):
    """Return daemon.json text with the nvidia runtime merged in (``text`` itself when nothing changes)."""
    if text.strip():
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RuntimeConfigError("daemon.json is not valid JSON (%s); fix it before adding the nvidia runtime" % exc)
        if not isinstance(data, dict):
            raise RuntimeConfigError("daemon.json must hold a JSON object")
    else:
        data = {}
    before = json.dumps(data, sort_keys=True)
    runtimes = data.setdefault("runtimes", {})
    if not isinstance(runtimes, dict):
        raise RuntimeConfigError("daemon.json 'runtimes' must be an object")
    nvidia = runtimes.setdefault("nvidia", {})
    if not isinstance(nvidia, dict):
        raise RuntimeConfigError("daemon.json 'runtimes.nvidia' must be an object")
    nvidia["path"] = runtime_path
    nvidia.setdefault("args", [])
    if set_as_default:
        data["default-runtime"] = "nvidia"
    if enable_cdi:
        features = data.setdefault("features", {})
        if not isinstance(features, dict):
            raise RuntimeConfigError("daemon.json 'features' must be an object")
        features["cdi"] = True
    if json.dumps(data, sort_keys=True) == before:
        return text
    return json.dumps(data, indent=4) + "\n"


# --------------------------------------------------------------------------- TOML subset

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"^\s*(\[\[?)(.*?)(\]\]?)\s*(#.*)?$")


class _Parser(object):
    """Reads one TOML value (string, literal string, bool, integer, array) from text at ``pos``."""

    def __init__(self, text, pos=0):
        self.text = text
        self.pos = pos

    def skip(self, newlines=False):
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            elif newlines and char == "#":
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.pos += 1
            else:
                break

    def value(self):
        self.skip()
        rest = self.text[self.pos:]
        if rest.startswith('"""') or rest.startswith("'''"):
            raise RuntimeConfigError("multi-line strings are not supported here")
        if rest.startswith('"'):
            match = re.match(r'"((?:[^"\\\n]|\\.)*)"', rest)
            if not match:
                raise RuntimeConfigError("unterminated string")
            self.pos += match.end()
            try:
                return json.loads(match.group(0))
            except ValueError:
                raise RuntimeConfigError("unsupported escape in %s" % match.group(0))
        if rest.startswith("'"):
            end = rest.find("'", 1)
            if end < 0 or "\n" in rest[:end]:
                raise RuntimeConfigError("unterminated literal string")
            self.pos += end + 1
            return rest[1:end]
        if rest.startswith("["):
            self.pos += 1
            items = []
            while True:
                self.skip(newlines=True)
                if self.text[self.pos:self.pos + 1] == "]":
                    self.pos += 1
                    return items
                items.append(self.value())
                self.skip(newlines=True)
                char = self.text[self.pos:self.pos + 1]
                if char == ",":
                    self.pos += 1
                elif char != "]":
                    raise RuntimeConfigError("malformed array")
        match = re.match(r"(true|false|[+-]?[0-9][0-9_]*)(?=\s|#|,|\]|$)", rest)
        if not match:
            raise RuntimeConfigError("unsupported value %r" % rest.split("\n", 1)[0])
        self.pos += match.end()
        word = match.group(1)
        if word in ("true", "false"):
            return word == "true"
        return int(word.replace("_", ""))


def split_key(text):
    """'plugins."io.containerd.grpc.v1.cri".containerd' -> ('plugins', 'io.containerd.grpc.v1.cri', 'containerd')."""
    parts = []
    pos = 0
    text = text.strip()
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] in "\"'":
            parser = _Parser(text, pos)
            parts.append(parser.value())
            pos = parser.pos
        else:
            match = _BARE_KEY.match(text, pos)
            if not match:
                raise RuntimeConfigError("cannot read key %r" % text)
            parts.append(match.group(0))
            pos = match.end()
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text):
            return tuple(parts)
        if text[pos] != ".":
            raise RuntimeConfigError("cannot read key %r" % text)
        pos += 1


def render_key(part):
    return part if _BARE_KEY.fullmatch(part) else json.dumps(part)


def render_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_value(item) for item in value) + "]"
    return json.dumps(str(value))


class TomlDocument(object):
    """Line-preserving editor for the tables and keys this module sets."""

    def __init__(self, text):
        self.lines = text.splitlines()

    def text(self):
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def _headers(self):
        """[(line index, key tuple, is_array_table)] for every table header."""
        found = []
        for number, line in enumerate(self.lines):
            match = _HEADER.match(line)
            if not match or line.lstrip().startswith("#"):
                continue
            try:
                found.append((number, split_key(match.group(2)), match.group(1) == "[["))
            except RuntimeConfigError:
                continue  # an array value on its own line, not a header
        return found

    def _body(self, table):
        """(first, end) line range of a table's keys; None when the table has no [header]."""
        headers = self._headers()
        if table == ():
            return 0, headers[0][0] if headers else len(self.lines)
        for position, (number, key, is_array) in enumerate(headers):
            if key == table and not is_array:
                end = headers[position + 1][0] if position + 1 < len(headers) else len(self.lines)
                return number + 1, end
        return None

    def _find_key(self, first, end, key):
        """(line index, column where the value starts) of ``key =`` in a body, or None."""
        for number in range(first, end):
            line = self.lines[number]
            stripped = line.strip()
            if not stripped or stripped.startswith("#") or "=" not in line:
                continue
            name, _sep, _rest = line.partition("=")
            try:
                parts = split_key(name)
            except RuntimeConfigError:
                continue
            if parts == (key,):
                return number, len(name) + 1
            if parts[0] == key:
                raise RuntimeConfigError("key %r is written with dotted keys (%s); rewrite it as a [table] section" % (key, stripped))
        return None

    def _value_extent(self, number, column):
        """Parse the value starting at (line, column); returns (value, last line index)."""
        text = "\n".join(self.lines[number:])
        offset = column
        parser = _Parser(text, offset)
        value = parser.value()
        return value, number + text[:parser.pos].count("\n")

    def get(self, table, key):
        body = self._body(tuple(table))
        if body is None:
            return None
        found = self._find_key(body[0], body[1], key)
        if not found:
            return None
        return self._value_extent(*found)[0]

    def _check_not_inline(self, table):
        # A parent that defines the next component inline ({...}) or dotted would be redefined by a new [header].
        for depth in range(len(table)):
            parent, child = table[:depth], table[depth]
            body = self._body(parent)
            if body is not None:
                found = self._find_key(body[0], body[1], child)
                if found:
                    raise RuntimeConfigError("[%s] is written as an inline value of %s; rewrite it as a [table] section"
                                             % (".".join(render_key(p) for p in table), ".".join(render_key(p) for p in parent) or "the top level"))

    def set(self, table, key, value):
        """Ensure ``table.key = value``; return True when a line changed."""
        table = tuple(table)
        rendered = "%s = %s" % (render_key(key), render_value(value))
        body = self._body(table)
        if body is None:
            self._check_not_inline(table)
            header = "[%s]" % ".".join(render_key(part) for part in table)
            addition = [header, ("  " if self._indents() else "") + rendered]
            if self.lines and self.lines[-1].strip():
                addition.insert(0, "")
            self.lines.extend(addition)
            return True
        first, end = body
        found = self._find_key(first, end, key)
        if found:
            number, column = found
            current, last = self._value_extent(number, column)
            if current == value and type(current) is type(value):
                return False
            indent = re.match(r"\s*", self.lines[number]).group(0)
            self.lines[number:last + 1] = [indent + rendered]
            return True
        # Insert after the table's last non-blank line, indented like its other keys.
        insert_at = end
        while insert_at > first and not self.lines[insert_at - 1].strip():
            insert_at -= 1
        keys = [line for line in self.lines[first:end] if line.strip() and not line.strip().startswith("#")]
        if keys:
            indent = re.match(r"\s*", keys[0]).group(0)
        elif table and first > 0:
            indent = re.match(r"\s*", self.lines[first - 1]).group(0) + ("  " if self._indents() else "")
        else:
            indent = ""
        self.lines.insert(insert_at, indent + rendered)
        return True

    def _indents(self):
        """Does this file indent keys under headers (containerd's generated style)?"""
        for first, end in (self._body(key) for _n, key, is_array in self._headers() if not is_array):
            for line in self.lines[first:end]:
                if line.strip() and not line.strip().startswith("#"):
                    return line[:1] in (" ", "\t")
        return False

    def insert_top(self, key, value):
        self.lines.insert(0, "%s = %s" % (render_key(key), render_value(value)))


def merge_containerd(text, runtime_path=DEFAULT_RUNTIME_PATH, set_as_default=False, enable_cdi=False):
    """Return config.toml text with the nvidia runtime under the CRI plugin of its config version."""
    doc = TomlDocument(text)
    version = doc.get((), "version")
    if version is None and not text.strip():
        doc.insert_top("version", 2)
        version = 2
    if version not in CONTAINERD_CRI:
        raise RuntimeConfigError("containerd config version %s is not supported; run 'containerd config migrate' to get version 2 or 3" % version)
    cri = CONTAINERD_CRI[version]
    runtimes = cri + ("containerd", "runtimes")
    doc.set(runtimes + ("nvidia",), "runtime_type", "io.containerd.runc.v2")
    doc.set(runtimes + ("nvidia", "options"), "BinaryName", runtime_path)
    # Follow runc's cgroup driver so nvidia containers land in the same cgroup tree as the rest.
    systemd_cgroup = doc.get(runtimes + ("runc", "options"), "SystemdCgroup")
    if isinstance(systemd_cgroup, bool):
        doc.set(runtimes + ("nvidia", "options"), "SystemdCgroup", systemd_cgroup)
    if set_as_default:
        doc.set(cri + ("containerd",), "default_runtime_name", "nvidia")
    if enable_cdi:
        doc.set(cri, "enable_cdi", True)
        doc.set(cri, "cdi_spec_dirs", list(CDI_SPEC_DIRS))
    merged = doc.text()
    return text if merged.rstrip("\n") == text.rstrip("\n") else merged


def merge_podman(text, runtime_path=DEFAULT_RUNTIME_PATH, set_as_default=False, enable_cdi=False):
    """Return containers.conf text with an ``nvidia`` OCI runtime; podman reads CDI specs natively."""
    doc = TomlDocument(text)
    doc.set(("engine", "runtimes"), "nvidia", [runtime_path])
    if set_as_default:
        doc.set(("engine",), "runtime", "nvidia")
    merged = doc.text()
    return text if merged.rstrip("\n") == text.rstrip("\n") else merged


MERGERS = {"docker": merge_docker, "containerd": merge_containerd, "podman": merge_podman}


def merge(runtime, text, **options):
    if runtime not in MERGERS:
        raise RuntimeConfigError("unknown runtime %r; choose one of %s" % (runtime, ", ".join(RUNTIMES)))
    return MERGERS[runtime](text, **options)
