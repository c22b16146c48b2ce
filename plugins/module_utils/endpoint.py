# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a client reaches Triton: one rule for every reader (the roles' endpoint fact, HAProxy, Prometheus).

A server bound to a wildcard is reached on loopback from its own host; one bound to a specific address only
there. IPv6 literals go in brackets so ``host:port`` stays unambiguous.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

WILDCARDS_V4 = ("", "0.0.0.0")
WILDCARDS_V6 = ("::", "[::]")


def is_wildcard(address):
    """Whether ``address`` binds every address of the host (IPv4 or IPv6)."""
    return str(address).strip() in WILDCARDS_V4 + WILDCARDS_V6


def bracketed(host):
    """``host`` ready for ``host:port``: an IPv6 literal in brackets, anything else as it is."""
    host = str(host).strip()
    if ":" in host and not host.startswith("["):
        return "[%s]" % host
    return host


def local_host(address):
    """The host a client on the server's own host uses for a server bound to ``address``."""
    address = str(address).strip()
    if address in WILDCARDS_V4:
        return "127.0.0.1"
    if address in WILDCARDS_V6:
        return "[::1]"
    return bracketed(address)


class EndpointError(ValueError):
    """A host whose Triton endpoint cannot be known: names the host and what to run."""


KINDS = ("http", "grpc", "metrics")


def target(name, host_vars, kind, override=None):
    """``{name, address, port}``: where a client on another host (HAProxy, Prometheus, the controller) reaches
    the ``kind`` endpoint of host ``name``'s Triton.

    The address: the host's ``override`` variable when it sets one; else the address Triton binds, unless that
    is a wildcard; else ``ansible_host``; else the inventory name. The port is the one Triton listens on. Both
    come from the host's ``triton_server_endpoint`` fact (the triton_server role's), never from copies of its
    defaults: a host without the fact is an error that names it.
    """
    if kind not in KINDS:
        raise EndpointError("unknown endpoint kind %r (one of %s)" % (kind, ", ".join(KINDS)))
    endpoint = host_vars.get("triton_server_endpoint")
    if not hasattr(endpoint, "get") or endpoint.get(kind + "_port") in (None, ""):
        raise EndpointError(
            "%s has no triton_server_endpoint fact (where its Triton listens): run the aiops.triton.triton_server role, "
            "or its entry point tasks_from: endpoint, on %s earlier in this playbook" % (name, name))
    address = str((host_vars.get(override) if override else "") or "").strip()
    if not address:
        address = str(endpoint.get(kind + "_address") or "").strip()
        if is_wildcard(address):
            address = str(host_vars.get("ansible_host") or name)
    return {"name": name, "address": bracketed(address), "port": int(endpoint[kind + "_port"])}
