# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


class ModuleDocFragment(object):
    # The action groups of meta/runtime.yml, one variable per group, used together with
    # ansible.builtin.action_common_attributes (as community.docker's attributes.actiongroup_docker):
    #   extends_documentation_fragment: [ansible.builtin.action_common_attributes, aiops.triton.attributes.actiongroup_triton_api]
    # (a variable named like a fragment file, TRITON_API, would load plugins/doc_fragments/triton_api.py instead).
    # Literal strings: ansible-test's yamllint sanity reads them without running this file.
    # tests/unit/plugins/modules/test_action_group_docs.py keeps them in step with meta/runtime.yml.

    ACTIONGROUP_TRITON_API = r"""
attributes:
  action_group:
    description: Use C(group/aiops.triton.triton_api) in C(module_defaults) to set defaults for this module.
    support: full
    membership: [aiops.triton.triton_api]
"""

    ACTIONGROUP_S3 = r"""
attributes:
  action_group:
    description: Use C(group/aiops.triton.s3) in C(module_defaults) to set defaults for this module.
    support: full
    membership: [aiops.triton.s3]
"""
