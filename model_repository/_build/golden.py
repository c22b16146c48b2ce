"""Golden cases: requests shipped with every model version and the answers it must give.

Schema (documented in model_repository/README.md; the comparison is plugins/module_utils/golden_cases.py)::

    {"schema": 1, "model": NAME, "version": N, "cases": [
        {"name": ..., "inputs":   {TENSOR: {"datatype": "FP32", "shape": [...], "data": [...flat...]}},
                      "expected": {TENSOR: {"shape": [...], "data": [...flat...],
                                            "equals": true | "atol": a, "rtol": r}}}]}
"""

import importlib.util
import json
import os

import numpy as np

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_contract():
    """The collection's golden-case contract, loaded by path (no collection install needed)."""
    path = os.path.join(CHECKOUT, "plugins", "module_utils", "golden_cases.py")
    spec = importlib.util.spec_from_file_location("aiops_triton_golden_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gc = _load_contract()
SCHEMA = gc.GOLDEN_SCHEMA
_DATATYPES = {np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.float16): "FP16",
              np.dtype(np.int32): "INT32", np.dtype(np.int64): "INT64", np.dtype(np.bool_): "BOOL",
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
    """Compare outputs ({name: numpy array}) with a case's ``expected``; return a list of problems.

    The comparison and its default tolerance are triton_verify's (plugins/module_utils/golden_cases.py),
    so a case the build accepts is a case the fleet accepts.
    """
    answered = dict((name, tensor(value)) for name, value in outputs.items() if value is not None)
    return gc.check_outputs(answered, expected)
