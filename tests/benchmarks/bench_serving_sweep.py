"""`make bench` (sweep part): Triton serving settings measured side by side, to choose the defaults
shipped in model_repository/*/model.yml.

Every candidate is a Triton (integration harness, real tritonserver, python-based onnxruntime
backend) serving the bench models with config overrides on top of the built repository; all
candidates run at the same time and are measured in interleaved rounds (tools/bench/loadgen.py,
gRPC, closed loop) at concurrency 1 and 32 for anomaly_detector and alert_classifier.  Writes
build/reports/bench_serving_sweep.json and the ``bench_serving_sweep`` section of docs/benchmarks.md.

Settings (environment): BENCH_REPOSITORY, BENCH_DURATION (2), BENCH_WARMUP (1), BENCH_ROUNDS (3),
BENCH_SWEEP_CONCURRENCY (1,32), BENCH_SWEEP (comma-separated candidate names; default all),
BENCH_DOCS (1). Exit status 2 before anything starts when the 1-minute load average exceeds the
cores (tests/benchmarks/_load.py); ``--allow-loaded`` or BENCH_ALLOW_LOADED=1 runs anyway and marks
the table "LOADED MACHINE ...: not a result".
"""

import contextlib
import os
import sys
import threading
import time

import _load

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(CHECKOUT, "tools", "bench"))
import loadgen  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402

MODELS = ("anomaly_detector", "alert_classifier")
DOCS = os.path.join(CHECKOUT, "docs", "benchmarks.md")
ONE_THREAD = {"intra_op_thread_count": {"string_value": "1"}, "inter_op_thread_count": {"string_value": "1"}}
CPU = "KIND_CPU"


def candidate(delay=None, preferred=None, instances=None, ort_threads=None):
    """Overrides for both models; ``delay=None`` removes dynamic batching."""
    both, anomaly = {}, {}
    if delay is None:
        both["dynamic_batching"] = None
    else:
        both["dynamic_batching"] = {"max_queue_delay_microseconds": str(delay)} if delay else {}
        if preferred:
            both["dynamic_batching"]["preferred_batch_size"] = preferred
    if instances:
        both["instance_group"] = [{"count": instances, "kind": CPU}]
    # anomaly_detector's only parameters are the onnxruntime threads: None = onnxruntime's default
    anomaly["parameters"] = {"intra_op_thread_count": {"string_value": str(ort_threads)},
                             "inter_op_thread_count": {"string_value": "1"}} if ort_threads else None
    return {"anomaly_detector": dict(both, **anomaly), "alert_classifier": dict(both)}


# name -> (what it is, overrides on top of the built configs)
CANDIDATES = [
    ("built", "what model_repository/*/model.yml ship (chosen from this sweep: delay 0, 2 instances, ORT 1 thread)", {}),
    ("delay100ms+pref", "the article's settings: queue delay 100 ms (anomaly) / 50 ms (classifier), preferred sizes, 2 instances, ORT default threads",
     {"anomaly_detector": {"dynamic_batching": {"preferred_batch_size": [4, 8, 16, 32], "max_queue_delay_microseconds": "100000"},
                           "instance_group": [{"count": 2, "kind": CPU}], "parameters": None},
      "alert_classifier": {"dynamic_batching": {"preferred_batch_size": [8, 16, 32, 64], "max_queue_delay_microseconds": "50000"},
                           "instance_group": [{"count": 2, "kind": CPU}]}}),
    ("delay0+pref", "queue delay 0, preferred sizes kept, 2 instances, ORT default threads", candidate(0, [4, 8, 16, 32], 2)),
    ("delay0", "queue delay 0, no preferred sizes, 2 instances, ORT default threads", candidate(0, None, 2)),
    ("delay500us", "queue delay 500 us, no preferred sizes, 2 instances, ORT default threads", candidate(500, None, 2)),
    ("delay2ms-ort1", "queue delay 2 ms, no preferred sizes, 2 instances, ORT 1 thread", candidate(2000, None, 2, 1)),
    ("delay0-1inst", "queue delay 0, 1 instance, ORT 1 thread", candidate(0, None, 1, 1)),
    ("delay0-ort1", "queue delay 0, 2 instances, ORT intra/inter-op 1 thread", candidate(0, None, 2, 1)),
    ("nobatch-ort1", "no dynamic batching (one request per execute), 2 instances, ORT 1 thread", candidate(None, None, 2, 1)),
]


def main():
    repo = os.path.abspath(os.environ.get("BENCH_REPOSITORY", os.path.join(CHECKOUT, "build", "model_repository")))
    duration = report.env_num("BENCH_DURATION", 2.0)
    warmup = report.env_num("BENCH_WARMUP", 1.0)
    rounds = report.env_num("BENCH_ROUNDS", 3, int)
    concs = report.env_list("BENCH_SWEEP_CONCURRENCY", "1,32", int)
    wanted = report.env_list("BENCH_SWEEP", ",".join(c[0] for c in CANDIDATES))
    unknown = set(wanted) - {c[0] for c in CANDIDATES}
    if unknown:
        raise SystemExit("BENCH_SWEEP: unknown candidate(s) %s" % ", ".join(sorted(unknown)))
    chosen = [c for c in CANDIDATES if c[0] in wanted]
    load = _load.start(_load.only_flag(sys.argv[1:]))
    windows, texts = loadgen.payloads(CHECKOUT, repo)
    facts, started = report.machine_facts(), time.monotonic()
    raw = {}
    with contextlib.ExitStack() as stack:
        up, errors = {}, []

        def start(name, overrides):
            try:
                up[name] = servers.Triton(repo, overrides).__enter__()
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append("%s: %s" % (name, exc))
        threads = [threading.Thread(target=start, args=(n, o)) for n, _d, o in chosen]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for server in up.values():
            stack.callback(server.__exit__, None, None, None)
        if errors:
            raise SystemExit("a candidate did not start:\n" + "\n".join(errors))
        print("%d servers up in %.0f s" % (len(up), time.monotonic() - started), flush=True)
        for rnd in range(rounds):
            for model in MODELS:
                for conc in concs:
                    order = chosen[rnd % len(chosen):] + chosen[:rnd % len(chosen)]
                    for name, _desc, _o in order:
                        target = dict(kind="triton", protocol="grpc", url=up[name].grpc, model=model)
                        sample = loadgen.measure(target, conc, duration, warmup, windows, texts, up[name].pids)
                        raw.setdefault(model, {}).setdefault(name, {}).setdefault(conc, []).append(sample)
                        print("round %d %-16s %-16s c=%-3d %8.1f req/s p50 %7.2f p99 %7.2f ms errors %d"
                              % (rnd + 1, model, name, conc, sample["throughput"], sample["p50"], sample["p99"],
                                 sample["errors"]), flush=True)
    elapsed = time.monotonic() - started
    _load.finish(load)
    results = {m: {n: {c: report.aggregate(s) for c, s in by_c.items()} for n, by_c in by_n.items()}
               for m, by_n in raw.items()}
    report.save_json(os.path.join(CHECKOUT, "build", "reports", "bench_serving_sweep.json"),
                     {"facts": facts, "results": results, "elapsed_s": elapsed, "load": load.as_dict(),
                      "candidates": {n: {"what": d, "overrides": o} for n, d, o in chosen}})
    fmt = report.fmt
    lines = ["Generated by `make bench` (tests/benchmarks/bench_serving_sweep.py) — edit the script, not this section.", "",
             report.facts_line(facts, load), "",
             "Each candidate is its own tritonserver (all up at once, measured in turn, %d interleaved rounds, "
             "median), gRPC, closed loop, %s s warm-up + %s s measured per cell; this sweep took %.0f s." % (
                 rounds, fmt(warmup), fmt(duration), elapsed), "",
             "| candidate | settings | " + " | ".join("%s c=%d req/s | p50 ms | p99 ms" % (m, c) for m in MODELS for c in concs) + " | errors |",
             "|---|---|" + "---|---|---|" * (len(MODELS) * len(concs)) + "---|"]
    for name, desc, _o in chosen:
        cells, errs = [], 0
        for model in MODELS:
            for conc in concs:
                v = results[model][name][conc]
                errs += v["errors"]
                cells += [fmt(v["throughput"]), fmt(v["p50"], 2), fmt(v["p99"], 2)]
        lines.append("| %s | %s | %s | %d |" % (name, desc, " | ".join(cells), errs))
    text = _load.mark_tables("\n".join(lines), load)
    if os.environ.get("BENCH_DOCS", "1") == "1":
        report.write_section(DOCS, "bench_serving_sweep", text)
    print(text)
    return 1 if any(v["errors"] for by_n in results.values() for by_c in by_n.values() for v in by_c.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
