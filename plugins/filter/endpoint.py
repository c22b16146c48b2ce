# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where Triton is reached (docs beside this file): local_host, the host a client on the server's own host uses for
a bind address; triton_targets, where clients on other hosts (HAProxy, Prometheus) reach each Triton host."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

from ansible_collections.aiops.triton.plugins.module_utils.endpoint import EndpointError, target
from ansible_collections.aiops.triton.plugins.module_utils.endpoint import local_host as _local_host


def local_host(address):
    if not isinstance(address, string_types):
        raise AnsibleFilterError("local_host expects a bind address (a string), got %s" % type(address).__name__)
    return _local_host(address)


def triton_targets(hostvars, names, kind, override=None):
    """[{name, address, port}] per host of ``names``, in order (module_utils/endpoint.py target)."""
    if isinstance(names, string_types):
        names = [names]
    try:
        return [target(name, hostvars[name], kind, override) for name in names]
    except EndpointError as exc:
        raise AnsibleFilterError("triton_targets: %s" % exc)
    except KeyError as exc:
        raise AnsibleFilterError("triton_targets: no such host %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"local_host": local_host, "triton_targets": triton_targets}
