"""Benchmark: controller CPU time to check and render 100 model configs (run by hand).

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_render_configs.py [--configs 100] [--rounds 5]

The 100 configs are the shipped model specs (model_repository/*/model.yml: ONNX with dynamic
batching and GPU instance groups, python backends with STRING tensors and parameters, the
ensemble) under distinct names, each with its ensemble's models. Two ways, interleaved in one
run, CPU time (time.process_time) of this process, median of the rounds:

(a) aiops.triton.triton_model_config's own path (plugins/modules/triton_model_config.build):
    merge overrides, fit instance groups to a GPU-less host, schema check, Triton's load-time
    rules incl. ensemble wiring, canonical render;
(b) the bare protobuf path a string template would be replaced by at minimum: json_format.ParseDict
    into Triton's ModelConfig and text_format.MessageToString (schema only, no rules).

Prints a markdown table for docs/benchmarks.md; exits 1 when (a) takes a second or more, 2 when the
machine is loaded (tests/benchmarks/_load.py; --allow-loaded runs anyway, the table marked as not a result).
"""

import argparse
import copy
import glob
import os
import statistics
import sys
import time

import yaml

import _load

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, ".collection"))

from google.protobuf import json_format, text_format  # noqa: E402
from tritonclient.grpc import model_config_pb2  # noqa: E402

from ansible_collections.aiops.triton.plugins.modules.triton_model_config import build  # noqa: E402


def specs():
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "model_repository", "*", "model.yml"))):
        with open(path, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
        out[spec["name"]] = spec["config"]
    return out


def workload(base, count):
    """``count`` module parameter sets, cycling through the specs ``base`` under new names."""
    names = sorted(base)
    jobs = []
    for i in range(count):
        source = names[i % len(names)]
        config = copy.deepcopy(base[source])
        config["name"] = "%s_%03d" % (source, i)
        jobs.append({"name": config["name"], "config": config, "overrides": {}, "gpus": [],
                     "host_override": True, "models": base})
    return jobs


def run_module_path(jobs):
    return [build(job)[1] for job in jobs]


def run_protobuf_path(jobs):
    out = []
    for job in jobs:
        message = json_format.ParseDict(job["config"], model_config_pb2.ModelConfig())
        out.append(text_format.MessageToString(message))
    return out


def cpu_seconds(func, jobs):
    start = time.process_time()
    func(jobs)
    return time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    _load.add_argument(parser)
    args = parser.parse_args()
    load = _load.start(allow=args.allow_loaded)
    base = specs()
    jobs = workload(base, args.configs)
    # warm both paths (imports, descriptor pools) before measuring
    run_module_path(jobs[:4])
    run_protobuf_path(jobs[:4])
    module, proto = [], []
    for _round in range(args.rounds):
        module.append(cpu_seconds(run_module_path, workload(base, args.configs)))
        proto.append(cpu_seconds(run_protobuf_path, workload(base, args.configs)))
    m, p = statistics.median(module), statistics.median(proto)
    _load.finish(load)
    lines = ["| measure | value |", "|---|---|",
             "| configs rendered per round | %d (%s) |" % (args.configs, ", ".join(sorted(base))),
             "| triton_model_config path, CPU time (median of %d) | %.3f s (%.2f ms per config) |"
             % (args.rounds, m, 1000 * m / args.configs),
             "| protobuf ParseDict + MessageToString, CPU time (median of %d) | %.3f s |" % (args.rounds, p),
             "| ratio (module path / bare protobuf) | %.2fx |" % (m / p if p else float("inf")),
             "",
             "Raw CPU seconds: module %s; protobuf %s" % (", ".join("%.3f" % v for v in module),
                                                          ", ".join("%.3f" % v for v in proto)),
             load.describe()]
    print(_load.mark_tables("\n".join(lines), load))
    return 0 if m < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
