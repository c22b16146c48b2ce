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
