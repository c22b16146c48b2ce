# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks on the host's GPU facts (nvidia_gpu_facts, roles/common gpu_facts) without a second module call; docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

try:
    from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi
except ImportError as exc:  # pragma: no cover - only when the collection is broken
    raise AnsibleFilterError("aiops.triton GPU fact filters cannot load: %s" % to_native(exc))


def gpu_consistency(facts, expected_driver_version=None, expected_gpu_count=None):
    """The problems M(aiops.triton.nvidia_gpu_info) reports for these expectations, from its result ``facts``.

    The same pure check the module runs (module_utils/nvidia_smi.check_consistency): mismatches between nvidia-smi,
    the loaded kernel module, fabric manager, the pinned driver version and the expected GPU count. An empty or
    None expectation (or a count of 0 or less) is not checked, as the module does when the option is left out.
    """
    if not isinstance(facts, dict):
        raise AnsibleFilterError("gpu_consistency: expects an nvidia_gpu_info result (nvidia_gpu_facts), got %s"
                                 % type(facts).__name__)
    gpus = facts.get("gpus")
    if gpus is None:
        raise AnsibleFilterError("gpu_consistency: the facts have no gpus list (a skipped or failed nvidia_gpu_info?)")
    count = None
    if expected_gpu_count not in (None, ""):
        try:
            count = int(expected_gpu_count)
        except (TypeError, ValueError):
            raise AnsibleFilterError("gpu_consistency: expected_gpu_count must be a number, got %r" % (expected_gpu_count,))
        if count <= 0:
            count = None
    version = str(expected_driver_version).strip() if expected_driver_version not in (None, "") else None
    return nvidia_smi.check_consistency(
        list(gpus),
        kernel_module=facts.get("kernel_module"),
        expected_driver_version=version,
        expected_gpu_count=count,
        fabricmanager_version=facts.get("fabricmanager_version"),
    )


class FilterModule(object):
    def filters(self):
        return {"gpu_consistency": gpu_consistency}
