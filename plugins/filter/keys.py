# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""keep_keys, drop_keys: a dict, or each dict of a list, with only / without the named top-level keys;
docs beside this file.

What ``map('dict2items') | map('selectattr', 'key', 'in', keys) | map('items2dict') | list`` (and its
``rejectattr`` twin) did, in one step. Only the top level is filtered (ansible.utils.keep_keys recurses into
nested values, which would strip a module result's ``diff`` or ``before``); the keys keep their order.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types


def _names(name, keys):
    """The keys as a tuple: one key (a string) or a list of keys."""
    if isinstance(keys, string_types):
        return (keys,)
    if isinstance(keys, (list, tuple)):
        return tuple(keys)
    raise AnsibleFilterError("%s: keys must be a key name or a list of key names, got %s" % (name, type(keys).__name__))


def _select(name, value, keys, keep):
    keys = _names(name, keys)

    def one(mapping):
        if not isinstance(mapping, Mapping):
            raise AnsibleFilterError("%s expects a dictionary or a list of dictionaries, got %s"
                                     % (name, type(mapping).__name__))
        return dict((key, mapping[key]) for key in mapping if (key in keys) == keep)

    if isinstance(value, Mapping):
        return one(value)
    if isinstance(value, (list, tuple)):
        return [one(item) for item in value]
    raise AnsibleFilterError("%s expects a dictionary or a list of dictionaries, got %s" % (name, type(value).__name__))


def keep_keys(value, keys):
    """``value`` (a dict or a list of dicts) with only the top-level ``keys`` of each dict."""
    return _select("keep_keys", value, keys, True)


def drop_keys(value, keys):
    """``value`` (a dict or a list of dicts) without the top-level ``keys`` of each dict."""
    return _select("drop_keys", value, keys, False)


class FilterModule(object):
    def filters(self):
        return {"keep_keys": keep_keys, "drop_keys": drop_keys}
