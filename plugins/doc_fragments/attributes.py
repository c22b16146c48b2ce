# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


def _action_group(group):
    """The attribute of a module in meta/runtime.yml's action group ``group``."""
    return r"""
options: {}
attributes:
  action_group:
    description: Use C(group/aiops.triton.%(group)s) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - aiops.triton.%(group)s
""" % dict(group=group)


class ModuleDocFragment(object):
    # The action groups of meta/runtime.yml, one variable per group, used together with
    # ansible.builtin.action_common_attributes (as community.docker's attributes.actiongroup_docker):
    #   extends_documentation_fragment: [ansible.builtin.action_common_attributes, aiops.triton.attributes.actiongroup_triton_api]
    # (a variable named like a fragment file, TRITON_API, would load plugins/doc_fragments/triton_api.py instead)
    # tests/unit/plugins/modules/test_action_group_docs.py keeps them in step with meta/runtime.yml.

    ACTIONGROUP_TRITON_API = _action_group("triton_api")
    ACTIONGROUP_S3 = _action_group("s3")
