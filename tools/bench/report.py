"""Shared by the serving benchmarks: settings from the environment, medians, machine facts, and
writing a generated section of docs/benchmarks.md between its markers (the rest of the file,
which other benchmarks own, is left as it is)."""

import json
import math
import os
import platform
import statistics
import time

METRICS = ("throughput", "p50", "p95", "p99", "gen_cpu", "server_cpu")


def env_list(name, default, cast=str):
    return [cast(v) for v in os.environ.get(name, default).split(",") if v.strip()]


def env_num(name, default, cast=float):
    value = os.environ.get(name)
    try:
        return cast(value) if value else default
    except ValueError:
        raise SystemExit("%s=%r is not a number" % (name, value))


def aggregate(samples):
    """Median of every metric over rounds; errors and requests summed."""
    out = {m: statistics.median(s[m] for s in samples) for m in METRICS}
    out["errors"] = sum(s["errors"] for s in samples)
    out["requests"] = sum(s["requests"] for s in samples)
    out["rounds"] = len(samples)
    out["failures"] = [f for s in samples for f in s["failures"]][:3]
    return out


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "n/a"


def machine_facts():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as handle:
            mem_gib = int(handle.readline().split()[1]) / 1024.0 / 1024.0
    except OSError:
        mem_gib = 0.0
    return {"cpus": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem_gib, 1), "kernel": platform.release(),
            "python": platform.python_version(), "triton": "2.51.0 (nvidia-pytriton %s)" % _version("nvidia-pytriton"),
            "onnxruntime": _version("onnxruntime"), "fastapi": _version("fastapi"), "uvicorn": _version("uvicorn"),
            "tritonclient": _version("tritonclient"), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def facts_line(facts, load):
    """``load``: tests/benchmarks/_load.Load of the run (a run refused on a loaded machine never gets here;
    one allowed anyway has every table marked as not a result)."""
    return ("Machine: %(cpus)s vCPU (%(cpu)s), %(mem_gib)s GiB, Linux %(kernel)s, Python %(python)s; Triton %(triton)s, "
            "onnxruntime %(onnxruntime)s, tritonclient %(tritonclient)s, FastAPI %(fastapi)s, uvicorn %(uvicorn)s. "
            "Run %(date)s. " % facts + load.describe())


def write_section(docs_path, name, text):
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->``, or append it."""
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    with open(docs_path, encoding="utf-8") as handle:
        doc = handle.read()
    block = "%s\n%s\n%s" % (begin, text.strip("\n"), end)
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    with open(docs_path, "w", encoding="utf-8") as handle:
        handle.write(doc)


def save_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)


def fmt(value, digits=1):
    if math.isnan(value):  # no successful request
        return "n/a"
    if value >= 100:
        return "{:,.0f}".format(value)
    return "%.*f" % (digits if value >= 10 else digits + 1, value)
