# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters between Triton config.pbtxt text and data (docs: model_config_*.yml beside this file)."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

try:
    from ansible_collections.aiops.triton.plugins.module_utils.model_config import (
        HAS_MODEL_CONFIG_PB2,
        IMPORT_ERROR,
        ModelConfigError,
        parse,
        render,
    )
except ImportError as exc:  # pragma: no cover - only when the collection is broken
    raise AnsibleFilterError("aiops.triton model_config filters cannot load: %s" % to_native(exc))


def _need_pb2():
    if not HAS_MODEL_CONFIG_PB2:
        raise AnsibleFilterError("aiops.triton model_config filters need tritonclient[grpc] on the controller: %s" % to_native(IMPORT_ERROR))


def model_config_from_pbtxt(text):
    """config.pbtxt text -> ModelConfig data (unset fields dropped, enums by name)."""
    _need_pb2()
    if not isinstance(text, str):
        raise AnsibleFilterError("model_config_from_pbtxt expects config.pbtxt text, got %s" % type(text).__name__)
    try:
        return parse(text)
    except ModelConfigError as exc:
        raise AnsibleFilterError(to_native(exc))


def model_config_to_pbtxt(config):
    """ModelConfig data -> canonical config.pbtxt text (schema-checked only; no Triton load-time rules)."""
    _need_pb2()
    if not isinstance(config, dict):
        raise AnsibleFilterError("model_config_to_pbtxt expects a mapping, got %s" % type(config).__name__)
    try:
        return render(config)
    except ModelConfigError as exc:
        raise AnsibleFilterError(to_native(exc))


class FilterModule(object):
    def filters(self):
        return {
            "model_config_from_pbtxt": model_config_from_pbtxt,
            "model_config_to_pbtxt": model_config_to_pbtxt,
        }
