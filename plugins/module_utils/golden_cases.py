# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Golden cases: the contract between the model build and triton_verify.

The build (``model_repository/_build/golden.py``) writes ``golden_cases.json`` into every
model version and checks its own answers with ``check_outputs``; ``triton_verify`` sends the
same cases to Triton and judges the answers with the same function, so a case means one
thing everywhere.  One case::

    {"name": ..., "inputs":   {TENSOR: {"datatype": "FP32", "shape": [...], "data": [...]}},
                  "expected": {TENSOR: {"shape": [...], "data": [...], "equals": true | VALUE,
                                        "atol": a, "rtol": r}}}

Numbers match when ``|got - want| <= atol + rtol * |want|`` (``DEFAULT_ATOL`` and
``DEFAULT_RTOL`` when the case gives none); ``equals: true``, or a BYTES / BOOL tensor,
needs an exact match; ``equals: VALUE`` compares with VALUE exactly instead of ``data``.
Outputs are ``{TENSOR: {"datatype", "shape", "data"}}`` (what Triton's JSON API answers).
Only the standard library is used: the build loads this file by path.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import json
import math
import struct

GOLDEN_FILE = "golden_cases.json"
GOLDEN_SCHEMA = 1
DEFAULT_ATOL = 1.0e-6
DEFAULT_RTOL = 1.0e-5
_EXACT_TYPES = ("BYTES", "BOOL")


class GoldenCaseError(Exception):
    """A golden-cases file cannot be read or is not a list of cases."""


def load_cases_file(path):
    """The cases of a golden-cases file (a list, or ``{"cases": [...]}``)."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError) as exc:
        raise GoldenCaseError("cannot read golden cases %s: %s" % (path, exc))
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise GoldenCaseError("golden cases %s: expected a list of cases or {\"cases\": [...]}" % path)
    return cases


def flatten(data):
    if isinstance(data, (list, tuple)):
        out = []
        for item in data:
            out.extend(flatten(item))
        return out
    return [data]


def _as_text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _as_fp32(value):
    """Round to float32, so an exact match does not depend on how many digits JSON printed."""
    try:
        return struct.unpack("f", struct.pack("f", float(value)))[0]
    except (TypeError, ValueError, OverflowError):
        return value


def _value_ok(have, need, exact, single, atol, rtol):
    if isinstance(need, str) or isinstance(have, str):
        return have == need
    if exact:
        return (_as_fp32(have) == _as_fp32(need)) if single else have == need
    if isinstance(need, float) and math.isnan(need):
        return isinstance(have, float) and math.isnan(have)
    return abs(float(have) - float(need)) <= atol + rtol * abs(float(need))


def compare(tensor, got, want, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL):
    """Return '' when ``got`` ({datatype, shape, data}) matches ``want``, else why not."""
    if got is None:
        return "output %s missing from the response" % tensor
    if "shape" in want and list(want["shape"]) != list(got["shape"]):
        return "output %s has shape %s, expected %s" % (tensor, list(got["shape"]), list(want["shape"]))
    equals = want.get("equals")
    literal = equals is not None and not isinstance(equals, bool)
    exact = equals is True or literal or got.get("datatype") in _EXACT_TYPES
    expected = equals if literal else want.get("data")
    got_flat = [_as_text(v) for v in flatten(got["data"])]
    want_flat = flatten(expected)
    if len(got_flat) != len(want_flat):
        return "output %s has %d values, expected %d" % (tensor, len(got_flat), len(want_flat))
    atol = want.get("atol", atol)
    rtol = want.get("rtol", rtol)
    single = got.get("datatype") in ("FP32", "FP16")
    for pos, (have, need) in enumerate(zip(got_flat, want_flat)):
        if not _value_ok(have, need, exact, single, atol, rtol):
            how = "exactly" if exact else "within atol=%g rtol=%g" % (atol, rtol)
            return "output %s[%d] is %r, expected %r %s" % (tensor, pos, have, need, how)
    return ""


def check_outputs(outputs, expected, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL):
    """Every problem of ``outputs`` against a case's ``expected``, one sentence each, by tensor name."""
    problems = [compare(name, outputs.get(name), want, atol, rtol) for name, want in sorted(expected.items())]
    return [p for p in problems if p]


def case_problem(case):
    """Why ``case`` cannot be sent, or ''."""
    if not isinstance(case, dict) or not isinstance(case.get("inputs"), dict) \
            or not isinstance(case.get("expected"), dict) or not case["expected"]:
        label = case.get("name", "case") if isinstance(case, dict) else "case"
        return "golden case %r needs 'inputs' and 'expected' maps" % label
    return ""
