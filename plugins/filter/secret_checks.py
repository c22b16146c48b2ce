# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""secret_weakness: why a shared secret (the repository-API key) must not be used; docs beside this file."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import collections
import math
import re

from ansible.errors import AnsibleFilterError

# Words that only a template, an example or a person typing a "temporary" key puts into a secret.
# Six letters or more, so a random key contains one by chance with negligible probability.
PLACEHOLDER_WORDS = (
    "changeme", "replaceme", "placeholder", "example", "password", "passw0rd", "yourkey", "mykey",
    "secretkey", "apikey", "notsecret", "insecure", "default", "dummy", "fixme", "sample",
)
# A strength floor, not a proof: keys from `openssl rand -hex 16` (128 bits) estimate >= 92 bits,
# `openssl rand -hex 32` >= 219; repeated, sequential and short keys fall far below.
MIN_BITS = 80
HOW_TO = ("generate one with `openssl rand -hex 32` and store it encrypted with "
          "`ansible-vault encrypt_string --name <variable>`")


def _shannon(seq):
    counts = collections.Counter(seq)
    total = len(seq)
    return -sum(n / total * math.log2(n / total) for n in counts.values()) if total else 0.0


def estimated_bits(value):
    """Entropy estimate in bits: length times the lower of the per-character entropy of the value and
    of its steps between neighbours (so 'abcdef…', '123456…' and 'abcabc…' score near zero)."""
    steps = [ord(b) - ord(a) for a, b in zip(value, value[1:])]
    return len(value) * min(_shannon(value), _shannon(steps))


def secret_weakness(value, min_bits=MIN_BITS):
    """'' when ``value`` may be used as a secret, else a sentence saying why not and how to make one."""
    if not isinstance(value, str):
        raise AnsibleFilterError("secret_weakness expects a string, got %s" % type(value).__name__)
    if not isinstance(min_bits, int) or isinstance(min_bits, bool) or min_bits < 1:
        raise AnsibleFilterError("secret_weakness: min_bits must be a positive integer, got %r" % (min_bits,))
    if not value:
        return "the key is empty; " + HOW_TO
    if value != value.strip() or any(ord(c) < 33 or ord(c) > 126 for c in value):
        return "the key has whitespace, control or non-ASCII characters (it travels in an HTTP header); " + HOW_TO
    folded = re.sub(r"[^a-z0-9]", "", value.lower())
    found = [w for w in PLACEHOLDER_WORDS if w in folded]
    if found:
        return "the key is a placeholder (it contains '%s'); %s" % (found[0], HOW_TO)
    bits = estimated_bits(value)
    if bits < min_bits:
        return ("the key has too little entropy (about %d bits estimated from its %d characters, at least %d needed: "
                "repeated, sequential or short); %s" % (int(bits), len(value), min_bits, HOW_TO))
    return ""


class FilterModule(object):
    def filters(self):
        return {"secret_weakness": secret_weakness}
