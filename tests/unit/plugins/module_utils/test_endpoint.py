"""module_utils/endpoint.py: the one rule for where a client on the server's own host reaches a bind."""

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.endpoint import bracketed, is_wildcard, local_host


@pytest.mark.parametrize("address, host", [
    ("0.0.0.0", "127.0.0.1"), ("", "127.0.0.1"), (" 0.0.0.0 ", "127.0.0.1"),
    ("::", "[::1]"), ("[::]", "[::1]"),
    ("10.1.2.3", "10.1.2.3"), ("127.0.0.1", "127.0.0.1"), ("triton-1.mgmt", "triton-1.mgmt"),
    ("fd00::5", "[fd00::5]"), ("[fd00::5]", "[fd00::5]"), ("::1", "[::1]"),
])
def test_local_host(address, host):
    assert local_host(address) == host


def test_wildcards_and_brackets():
    assert is_wildcard("0.0.0.0") and is_wildcard("::") and is_wildcard("")
    assert not is_wildcard("10.0.0.1") and not is_wildcard("::1")
    assert bracketed("fe80::1") == "[fe80::1]" and bracketed("host") == "host"
