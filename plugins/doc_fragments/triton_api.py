# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


class ModuleDocFragment(object):
    # How a module reaches Triton's HTTP endpoint (plugins/module_utils/triton_api.py CONNECTION_ARGSPEC).
    DOCUMENTATION = r"""
options:
  url:
    description: Base URL of Triton's HTTP endpoint.
    type: str
    default: http://127.0.0.1:8000
  api_key:
    description:
      - Key for the APIs the server restricts (C(--http-restricted-api)); the model-repository API
        (load, unload, index) is restricted by the C(triton_server) role.
    type: str
  api_key_header:
    description: Header that carries O(api_key).
    type: str
    default: triton-admin-key
"""
