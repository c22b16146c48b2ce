# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Triton ``config.pbtxt`` as data: schema check, load-time rules, canonical text.

A model configuration is handled as a plain dict whose keys are the field names of
Triton's ``inference.ModelConfig`` protobuf and whose enum values are the enum names
(``"TYPE_FP32"``, ``"KIND_GPU"``).  The schema is Triton's own proto as shipped in
``tritonclient.grpc.model_config_pb2``, so an unknown field, a wrong type or an unknown
enum name is caught exactly where Triton's text parser would reject it, but with a
message that names the path (``input[0].data_type: 'FP23' is not a valid DataType ...``).

``render`` is canonical: protobuf's text printer emits fields in field-number order and
map entries sorted by key, so equal configs give byte-identical files.  ``parse`` reads
such a file back into the same dict shape, and ``parse(render(x)) == normalize(x)``.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import copy
import difflib
import importlib.util
import os
import struct
import sys

from ansible_collections.aiops.triton.plugins.module_utils.model_config_errors import ModelConfigError
from ansible_collections.aiops.triton.plugins.module_utils import model_config_rules

# protobuf and Triton's proto are imported on first use (_require_pb2), and the proto straight from its file:
# importing tritonclient.grpc runs its package __init__ (grpc, numpy, ml_dtypes: ~0.15 s), and every Ansible
# worker that loads one of the collection's filters, and every module that imports this file only for its
# helpers, paid that per host and task.
text_encoding = text_format = FieldDescriptor = model_config_pb2 = None
_PB2_MODULE = "tritonclient.grpc.model_config_pb2"


def _find_model_config_pb2():
    """(path of tritonclient's model_config_pb2.py, None) or (None, ImportError); nothing is imported."""
    try:
        if importlib.util.find_spec("google.protobuf") is None:
            return None, ImportError("No module named 'google.protobuf'")
        spec = importlib.util.find_spec("tritonclient")
    except (ImportError, ValueError) as exc:
        return None, ImportError(str(exc))
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(base, "grpc", "model_config_pb2.py")
        if os.path.isfile(path):
            return path, None
    return None, ImportError("No module named '%s'" % _PB2_MODULE)


_PB2_PATH, IMPORT_ERROR = _find_model_config_pb2()
HAS_MODEL_CONFIG_PB2 = IMPORT_ERROR is None


def _import_model_config_pb2():
    """Triton's model_config_pb2 under its own name, without running tritonclient.grpc's package __init__.

    A later ``import tritonclient.grpc`` in the same process finds it in sys.modules and uses this one."""
    if _PB2_MODULE in sys.modules:
        return sys.modules[_PB2_MODULE]
    spec = importlib.util.spec_from_file_location(_PB2_MODULE, _PB2_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_PB2_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_PB2_MODULE]
        raise
    return module


__all__ = [
    "ModelConfigError", "HAS_MODEL_CONFIG_PB2", "IMPORT_ERROR", "HEADER",
    "to_message", "to_dict", "normalize", "validate", "apply_host_overrides", "render", "parse",
]

HEADER = "# Rendered by aiops.triton.triton_model_config; edits by hand are overwritten.\n"

_INT_TYPES = ("CPPTYPE_INT32", "CPPTYPE_INT64", "CPPTYPE_UINT32", "CPPTYPE_UINT64")


def _require_pb2():
    """Import protobuf and Triton's proto once; raise ModelConfigError when they are missing."""
    global text_encoding, text_format, FieldDescriptor, model_config_pb2  # pylint: disable=global-statement
    if model_config_pb2 is not None:
        return
    if not HAS_MODEL_CONFIG_PB2:
        raise ModelConfigError("tritonclient (model_config_pb2) and protobuf are required: %s" % IMPORT_ERROR)
    try:
        from google.protobuf import text_encoding as _text_encoding, text_format as _text_format
        from google.protobuf.descriptor import FieldDescriptor as _field_descriptor
        pb2 = _import_model_config_pb2()
    except ImportError as exc:
        raise ModelConfigError("tritonclient (model_config_pb2) and protobuf are required: %s" % exc)
    text_encoding, text_format, FieldDescriptor = _text_encoding, _text_format, _field_descriptor
    model_config_pb2 = pb2


def _join(path, name):
    return "%s.%s" % (path, name) if path else name


def _cpp_type(field):
    return {
        FieldDescriptor.CPPTYPE_INT32: "CPPTYPE_INT32", FieldDescriptor.CPPTYPE_INT64: "CPPTYPE_INT64",
        FieldDescriptor.CPPTYPE_UINT32: "CPPTYPE_UINT32", FieldDescriptor.CPPTYPE_UINT64: "CPPTYPE_UINT64",
        FieldDescriptor.CPPTYPE_DOUBLE: "CPPTYPE_DOUBLE", FieldDescriptor.CPPTYPE_FLOAT: "CPPTYPE_FLOAT",
        FieldDescriptor.CPPTYPE_BOOL: "CPPTYPE_BOOL", FieldDescriptor.CPPTYPE_ENUM: "CPPTYPE_ENUM",
        FieldDescriptor.CPPTYPE_STRING: "CPPTYPE_STRING", FieldDescriptor.CPPTYPE_MESSAGE: "CPPTYPE_MESSAGE",
    }[field.cpp_type]


def _is_map(field):
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _is_repeated(field):
    # FieldDescriptor.label is deprecated in newer protobuf; is_repeated replaces it.
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return flag
    return field.label == FieldDescriptor.LABEL_REPEATED


def _enum_names(enum_type):
    return [v.name for v in enum_type.values if not v.name.endswith("_INVALID")]


def _scalar(field, value, path):
    """Check one scalar against the proto field type and convert it."""
    kind = _cpp_type(field)
    if kind in _INT_TYPES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelConfigError("%s: expected an integer, got %s %r" % (path, type(value).__name__, value))
        return value
    if kind in ("CPPTYPE_DOUBLE", "CPPTYPE_FLOAT"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ModelConfigError("%s: expected a number, got %s %r" % (path, type(value).__name__, value))
        return float(value)
    if kind == "CPPTYPE_BOOL":
        if not isinstance(value, bool):
            raise ModelConfigError("%s: expected true or false, got %s %r" % (path, type(value).__name__, value))
        return value
    if kind == "CPPTYPE_ENUM":
        names = _enum_names(field.enum_type)
        if not isinstance(value, str) or field.enum_type.values_by_name.get(value) is None:
            raise ModelConfigError("%s: %r is not a valid %s (%s)" % (path, value, field.enum_type.name, ", ".join(names)))
        return field.enum_type.values_by_name[value].number
    if not isinstance(value, str):
        raise ModelConfigError("%s: expected a string, got %s %r" % (path, type(value).__name__, value))
    if field.type == FieldDescriptor.TYPE_BYTES:
        return value.encode("utf-8")
    return value


def _map_key(field, key, path):
    key_field = field.message_type.fields_by_name["key"]
    if _cpp_type(key_field) in _INT_TYPES and isinstance(key, str) and key.lstrip("-").isdigit():
        key = int(key)  # JSON (module args) turns integer map keys into strings
    return _scalar(key_field, key, "%s[%r]" % (path, key))


def _fill(message, data, path):
    if not isinstance(data, dict):
        raise ModelConfigError("%s: expected a mapping for %s, got %s" % (path or "config", message.DESCRIPTOR.name, type(data).__name__))
    descriptor = message.DESCRIPTOR
    oneofs_seen = {}
    for name in data:
        value = data[name]
        field = descriptor.fields_by_name.get(name) if isinstance(name, str) else None
        here = _join(path, str(name))
        if field is None:
            valid = [f.name for f in descriptor.fields]
            close = difflib.get_close_matches(str(name), valid, n=1)
            hint = " (did you mean %r?)" % close[0] if close else ""
            raise ModelConfigError("%s: unknown field %r in %s%s; valid fields: %s" % (here, name, descriptor.name, hint, ", ".join(valid)))
        if field.containing_oneof is not None:
            group = field.containing_oneof.name
            if group in oneofs_seen:
                raise ModelConfigError("%s: only one of %s may be set, got %s and %s" % (
                    here, ", ".join(f.name for f in field.containing_oneof.fields), oneofs_seen[group], name))
            oneofs_seen[group] = name
        _set_field(message, field, value, here)


def _set_field(message, field, value, path):
    try:
        if _is_map(field):
            if not isinstance(value, dict):
                raise ModelConfigError("%s: expected a mapping, got %s" % (path, type(value).__name__))
            target = getattr(message, field.name)
            value_field = field.message_type.fields_by_name["value"]
            for key in sorted(value, key=str):
                mkey = _map_key(field, key, path)
                item_path = "%s[%r]" % (path, key)
                if value_field.message_type is not None:
                    _fill(target[mkey], value[key], item_path)
                else:
                    target[mkey] = _scalar(value_field, value[key], item_path)
        elif _is_repeated(field):
            if not isinstance(value, (list, tuple)):
                raise ModelConfigError("%s: expected a list, got %s %r" % (path, type(value).__name__, value))
            target = getattr(message, field.name)
            for index, item in enumerate(value):
                item_path = "%s[%d]" % (path, index)
                if field.message_type is not None:
                    _fill(target.add(), item, item_path)
                else:
                    target.append(_scalar(field, item, item_path))
        elif field.message_type is not None:
            sub = getattr(message, field.name)
            sub.SetInParent()  # an empty mapping still switches the feature on (dynamic_batching: {})
            _fill(sub, value, path)
        else:
            setattr(message, field.name, _scalar(field, value, path))
    except (ValueError, TypeError) as exc:  # protobuf range checks (e.g. negative uint)
        raise ModelConfigError("%s: %s" % (path, exc))


def to_message(config):
    """Build a ``ModelConfig`` proto from a dict; raise ModelConfigError naming the path."""
    _require_pb2()
    message = model_config_pb2.ModelConfig()
    _fill(message, config, "")
    return message


def _short_float(value):
    """Shortest decimal that reads back to the same float32 (as protobuf's text printer does)."""
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        text = "%.*g" % (digits, value)
        if struct.pack("<f", float(text)) == packed:
            return float(text)
    return value


def _value_to_data(field, value):
    if field.message_type is not None:
        return to_dict(value)
    kind = _cpp_type(field)
    if kind == "CPPTYPE_ENUM":
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else value
    if kind == "CPPTYPE_FLOAT":
        return _short_float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value


def to_dict(message):
    """The dict form of a proto: only set fields, proto field order, map keys sorted."""
    data = {}
    for field, value in message.ListFields():
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            data[field.name] = dict((k, _value_to_data(value_field, value[k])) for k in sorted(value))
        elif _is_repeated(field):
            data[field.name] = [_value_to_data(field, item) for item in value]
        else:
            data[field.name] = _value_to_data(field, value)
    return data


def normalize(config):
    """Schema-check a dict and return its canonical form (defaults dropped, enums as names)."""
    return to_dict(to_message(config))


def _scalar_text(field, value):
    kind = _cpp_type(field)
    if kind == "CPPTYPE_STRING":
        raw = value if isinstance(value, bytes) else value
        return '"%s"' % text_encoding.CEscape(raw, as_utf8=not isinstance(value, bytes))
    if kind == "CPPTYPE_BOOL":
        return "true" if value else "false"
    if kind == "CPPTYPE_ENUM":
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else str(value)
    if kind == "CPPTYPE_FLOAT":
        return repr(_short_float(value))
    if kind == "CPPTYPE_DOUBLE":
        return repr(value)
    return str(value)


def _print_message(message, indent, lines):
    """Triton's documentation style: lists as ``[ ... ]``, fields in field-number order."""
    pad = "  " * indent
    for field, value in message.ListFields():
        if _is_map(field):
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            lines.append("%s%s [" % (pad, field.name))
            keys = sorted(value)
            for position, key in enumerate(keys):
                lines.append("%s  {" % pad)
                lines.append("%s    key: %s" % (pad, _scalar_text(key_field, key)))
                if value_field.message_type is not None:
                    lines.append("%s    value {" % pad)
                    _print_message(value[key], indent + 3, lines)
                    lines.append("%s    }" % pad)
                else:
                    lines.append("%s    value: %s" % (pad, _scalar_text(value_field, value[key])))
                lines.append("%s  }%s" % (pad, "," if position < len(keys) - 1 else ""))
            lines.append("%s]" % pad)
        elif _is_repeated(field) and field.message_type is not None:
            lines.append("%s%s [" % (pad, field.name))
            for position, item in enumerate(value):
                lines.append("%s  {" % pad)
                _print_message(item, indent + 2, lines)
                lines.append("%s  }%s" % (pad, "," if position < len(value) - 1 else ""))
            lines.append("%s]" % pad)
        elif _is_repeated(field):
            lines.append("%s%s: [ %s ]" % (pad, field.name, ", ".join(_scalar_text(field, item) for item in value)))
        elif field.message_type is not None:
            lines.append("%s%s {" % (pad, field.name))
            _print_message(value, indent + 1, lines)
            lines.append("%s}" % pad)
        else:
            lines.append("%s%s: %s" % (pad, field.name, _scalar_text(field, value)))


def render(config):
    """Canonical config.pbtxt text for a dict (schema-checked, not rule-checked).

    Printed by this module rather than protobuf's printer so the bytes do not change
    with the protobuf version installed on a host.
    """
    message = to_message(config)
    lines = []
    _print_message(message, 0, lines)
    return HEADER + "\n".join(lines) + "\n"


def parse(text):
    """Load config.pbtxt text into the dict form ``render`` accepts."""
    _require_pb2()
    message = model_config_pb2.ModelConfig()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise ModelConfigError("config.pbtxt: %s" % exc)
    return to_dict(message)


def validate(config, gpus=None, models=None, version_files=None):
    """Schema check plus the checks Triton makes when it loads the model.

    ``gpus``: GPU indexes the host has (None: no host check).  ``models``: name -> config
    of the other models in the repository, used to check an ensemble's steps; None skips
    that check (an empty mapping means "no other models", so every step is missing).
    ``version_files``: names in the model's first version directory, for a config that leaves
    'platform'/'backend' to Triton (None: not known, the choice is left to Triton).
    Returns what Triton fills in at load (model_config_rules.auto_complete).
    """
    message = to_message(config)
    others = None  # None, not {}: without models the ensemble wiring check is skipped, not failed
    if models is not None:
        others = {}
        for name, other in sorted(models.items()):
            try:
                others[name] = to_message(other)
            except ModelConfigError as exc:
                raise ModelConfigError("models[%r].%s" % (name, exc))
    return model_config_rules.check(message, gpus=gpus, models=others, version_files=version_files)


def first_version_files(model_dir):
    """Names in the model's first version directory as Triton picks it (its subdirectories in byte
    order, whatever their names), or None when the model directory has none yet."""
    try:
        subdirs = sorted(entry for entry in os.listdir(model_dir) if os.path.isdir(os.path.join(model_dir, entry)))
    except OSError:
        return None
    return sorted(os.listdir(os.path.join(model_dir, subdirs[0]))) if subdirs else None


def apply_host_overrides(config, gpus, pci_gpus=None, changes=None):
    """Fit instance groups to a host's GPUs.

    With no GPUs, KIND_GPU and KIND_AUTO groups become KIND_CPU (their ``gpus`` dropped),
    which is what lets the same model load on a CPU-only host.  That happens only on a host with
    no NVIDIA GPU at all: ``pci_gpus`` (the NVIDIA GPUs its PCI bus shows, driver or not) non-empty
    means a broken driver, and the config is refused rather than served on CPU in silence.
    With GPUs, a group that names a GPU index the host lacks is refused rather than silently moved.
    Each rewrite is appended to ``changes`` (a list) as one sentence.
    """
    data = normalize(config)
    if "ensemble_scheduling" in data:
        return data  # Triton ignores instance groups for ensembles
    host = sorted(set(gpus or []))
    for index, group in enumerate(data.get("instance_group", [])):
        kind = group.get("kind", "KIND_AUTO")  # proto default 0 is KIND_AUTO
        if kind not in ("KIND_GPU", "KIND_AUTO"):
            continue
        if not host:
            if pci_gpus:
                raise ModelConfigError(
                    "instance_group[%d].kind: %s, and the PCI bus shows NVIDIA GPU(s) %s that the driver does not list: "
                    "refusing to run this model on CPU. Fix the driver (nvidia-smi must list the GPUs)" % (
                        index, kind, ", ".join(pci_gpus)))
            group["kind"] = "KIND_CPU"
            group.pop("gpus", None)
            if changes is not None:
                changes.append("instance_group[%d]: %s -> KIND_CPU (this host has no NVIDIA GPU)" % (index, kind))
            continue
        missing = [gid for gid in group.get("gpus", []) if gid not in host]
        if missing:
            raise ModelConfigError("instance_group[%d].gpus: GPU %s requested but this host has GPUs %s" % (
                index, ", ".join(str(g) for g in missing), host))
    return normalize(data)


def deep_merge(base, override):
    """Mappings merge key by key; anything else (lists included) in ``override`` replaces."""
    result = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result
