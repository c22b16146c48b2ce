"""secret_weakness refuses placeholder and low-entropy keys (the shipped production placeholder first),
says how to generate a good one, and accepts the keys that command generates."""

import os
import secrets

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.secret_checks import FilterModule, estimated_bits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
VAULT = os.path.join(ROOT, "inventories", "production", "group_vars", "all", "vault.yml")
weakness = FilterModule().filters()["secret_weakness"]


def test_the_shipped_production_placeholder_is_refused():
    with open(VAULT) as handle:
        key = yaml.safe_load(handle)["vault_triton_server_api_key"]
    reason = weakness(key)
    assert reason.startswith("the key is a placeholder (it contains 'changeme')")
    assert "openssl rand -hex 32" in reason and "ansible-vault encrypt_string" in reason


@pytest.mark.parametrize("key,word", [
    ("change-me-to-a-long-random-key", "changeme"),
    ("CHANGE_ME_7f3a9c2e1b8d4f6a0c5e", "changeme"),
    ("replace.me.with-4c1f9a7e2b6d8035", "replaceme"),
    ("my-placeholder-9d2e7a4c1f6b8e30a5c7", "placeholder"),
    ("example-api-key-0b9f8e7d6c5b4a39", "example"),
    ("Passw0rd!Passw0rd!Passw0rd!x9", "passw0rd"),
    ("default-triton-key-5e8c2a1f7d3b9046", "default"),
])
def test_placeholders_are_refused_naming_the_word(key, word):
    assert weakness(key).startswith("the key is a placeholder (it contains '%s')" % word)


@pytest.mark.parametrize("key", [
    "a" * 64,                                   # one character repeated
    "abcdefghijklmnopqrstuvwxyz0123456789",     # a run of neighbours
    "1234567890" * 4,                           # digits counting up, repeated
    "abcdabcdabcdabcdabcdabcdabcdabcd",         # a short unit repeated
    "9f86d081884c7d65",                         # random, but only 16 hex characters
    "triton-admin-key-2024",                    # words and a year
    "qwertyuiopasdfghjkl",                      # a keyboard row
])
def test_low_entropy_keys_are_refused(key):
    reason = weakness(key)
    assert reason.startswith("the key has too little entropy (about ")
    assert "%d characters, at least 80 needed" % len(key) in reason
    assert "openssl rand -hex 32" in reason


@pytest.mark.parametrize("key,why", [
    ("", "the key is empty"),
    (" 3f9c2b7e1a0d4c6b8e5f7a9d1c3b5e7f", "the key has whitespace, control or non-ASCII"),
    ("3f9c2b7e1a0d4c6b\n8e5f7a9d1c3b5e7f", "the key has whitespace, control or non-ASCII"),
    ("3f9c2b7e1a0d4c6b8e5f7a9d1c3b5é7f", "the key has whitespace, control or non-ASCII"),
])
def test_empty_and_unusable_characters_are_refused(key, why):
    assert weakness(key).startswith(why)


def test_the_message_never_contains_the_key():
    key = "changeme" + secrets.token_hex(16)
    assert key not in weakness(key)
    weak = "abc" * 10
    assert weak not in weakness(weak)


def test_generated_keys_pass():
    # what the message tells people to run, what the lab generates, and a urlsafe token
    for _round in range(2000):
        for key in (secrets.token_hex(32), secrets.token_hex(16), secrets.token_urlsafe(32)):
            assert weakness(key) == "", key
    assert weakness("3f9c2b7e1a0d4c6b8e5f7a9d1c3b5e7f9a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b") == ""


def test_min_bits_moves_the_floor():
    key = secrets.token_hex(16)
    assert weakness(key, min_bits=300).startswith("the key has too little entropy")
    assert weakness("9f86d081884c7d65", min_bits=40) == ""


def test_estimate_orders_keys_sensibly():
    assert estimated_bits("a" * 40) == 0
    assert estimated_bits("abcdefghijklmnop") < 10
    assert estimated_bits(secrets.token_hex(32)) > 200


@pytest.mark.parametrize("value,min_bits,message", [
    (None, 80, "expects a string, got NoneType"),
    (12345678901234567890, 80, "expects a string, got int"),
    ("x", 0, "min_bits must be a positive integer, got 0"),
    ("x", True, "min_bits must be a positive integer, got True"),
])
def test_bad_arguments_fail_clearly(value, min_bits, message):
    with pytest.raises(AnsibleFilterError, match=message):
        weakness(value, min_bits=min_bits)
