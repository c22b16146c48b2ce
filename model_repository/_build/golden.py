"""Golden cases: requests shipped with every model version and the answers it must give.

Schema (documented in model_repository/README.md)::

    {"schema": 1, "model": NAME, "version": N, "cases": [
        {"name": ..., "inputs":   {TENSOR: {"datatype": "FP32", "shape": [...], "data": [...flat...]}},
                      "expected": {TENSOR: {"shape": [...], "data": [...flat...],
                                            "equals": true | "atol": a, "rtol": r}}}]}
"""

import json

import numpy as np

SCHEMA = 1
_DATATYPES = {np.dtype(np.float32): "FP32", np.dtype(np.int32): "INT32", np.dtype(np.int64): "INT64",
              np.dtype(object): "BYTES"}


def _flat(array):
    array = np.asarray(array)
    if array.dtype == object:
        return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in array.reshape(-1)]
    if array.dtype.kind == "f":
        # float32 values printed with the digits that round-trip them
        return [float(np.format_float_positional(v, unique=True)) for v in array.reshape(-1).astype(np.float32)]
    return [int(v) for v in array.reshape(-1)]


def tensor(array):
    array = np.asarray(array)
    return {"datatype": _DATATYPES[array.dtype], "shape": list(array.shape), "data": _flat(array)}


def exact(array):
    array = np.asarray(array)
    return {"shape": list(array.shape), "data": _flat(array), "equals": True}


def close(array, atol=0.0, rtol=0.0):
    array = np.asarray(array)
    return {"shape": list(array.shape), "data": _flat(array), "atol": atol, "rtol": rtol}


def case(name, inputs, expected):
    return {"name": name, "inputs": {k: tensor(v) for k, v in inputs.items()}, "expected": expected}


def write(path, model, version, cases):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"schema": SCHEMA, "model": model, "version": int(version), "cases": cases}, handle,
                  indent=1, sort_keys=True)
        handle.write("\n")


def check(expected, outputs):
    """Compare outputs ({name: numpy array}) with a case's ``expected``; return a list of problems."""
    problems = []
    for name, want in expected.items():
        got = outputs.get(name)
        if got is None:
            problems.append("%s: missing from the response" % name)
            continue
        got = np.asarray(got)
        if list(got.shape) != want["shape"]:
            problems.append("%s: shape %s, expected %s" % (name, list(got.shape), want["shape"]))
            continue
        if want.get("equals"):
            if _flat(got) != want["data"]:
                problems.append("%s: %s, expected %s" % (name, _flat(got)[:8], want["data"][:8]))
        elif not np.allclose(got.reshape(-1).astype(np.float64), want["data"], atol=want.get("atol", 0.0),
                             rtol=want.get("rtol", 0.0)):
            problems.append("%s: %s, expected %s (atol %s rtol %s)" % (
                name, _flat(got)[:8], want["data"][:8], want.get("atol"), want.get("rtol")))
    return problems
