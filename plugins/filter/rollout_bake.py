# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Canary bake filters: the hosts a batch's bake judges and compares, with their metrics URLs (docs beside this file)."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

try:
    from ansible_collections.aiops.triton.plugins.module_utils import rollout_bake
    from ansible_collections.aiops.triton.plugins.module_utils.endpoint import EndpointError
except ImportError as exc:  # pragma: no cover - only when the collection is broken
    raise AnsibleFilterError("aiops.triton rollout bake filters cannot load: %s" % to_native(exc))


def rollout_bake_hosts(hostvars, names):
    """[{name, metrics_url}] for the module's changed_hosts / baseline_hosts."""
    try:
        return rollout_bake.bake_hosts(hostvars, list(names))
    except KeyError as exc:
        raise AnsibleFilterError("rollout_bake_hosts: no such host %s" % to_native(exc))
    except EndpointError as exc:
        raise AnsibleFilterError("rollout_bake_hosts: %s" % to_native(exc))


def rollout_bake_baseline(plan, batch):
    """The hosts after ``batch`` in the rollout plan's order (not reached yet)."""
    return rollout_bake.baseline_names(plan or {}, list(batch))


def rollout_bake_problems(settings):
    """Problems with the triton_rollout_bake_* variables, for the validation play."""
    return rollout_bake.settings_problems(dict(settings or {}))


class FilterModule(object):
    def filters(self):
        return {
            "rollout_bake_hosts": rollout_bake_hosts,
            "rollout_bake_baseline": rollout_bake_baseline,
            "rollout_bake_problems": rollout_bake_problems,
        }
