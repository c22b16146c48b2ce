# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""local_host: the host a client on the server's own host uses for a bind address; docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.aiops.triton.plugins.module_utils.endpoint import local_host as _local_host


def local_host(address):
    if not isinstance(address, string_types):
        raise AnsibleFilterError("local_host expects a bind address (a string), got %s" % type(address).__name__)
    return _local_host(address)


class FilterModule(object):
    def filters(self):
        return {"local_host": local_host}
