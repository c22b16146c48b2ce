"""`make bench`: Triton as this collection deploys it vs FastAPI + uvicorn with the same model artifacts.

Brings up the real tritonserver through the integration harness (tests/integration/triton_fixtures.py:
the python-based onnxruntime backend from roles/triton_server/files/backends/onnxruntime/model.py, the
configs ``python -m model_repository._build`` renders from model_repository/*/model.yml) and the
FastAPI baseline (tools/bench/fastapi_app.py) with 1 and ``BENCH_WORKERS`` uvicorn workers; drives
each with the closed-loop generator of tools/bench/loadgen.py at every concurrency, in interleaved
rounds; writes build/reports/bench_serving.json, the tables of docs/benchmarks.md (its
``bench_serving`` section) and the PNG plots under docs/img/.

metric_forecaster (issue 37) is served at its newest built version (2, the direct numpy path) and, at
c=1 only, also at version 1 (Prophet's predict; "Prophet v1 via Triton gRPC", BENCH_V1_DURATION s per
round, since its requests take hundreds of ms): its targets are p50 under 10 ms at c=1 and, at c=32,
30 times version 1's throughput. Version 1 serves one request at a time (one instance), so its c=1
throughput is its throughput at any concurrency; a closed loop at c=32 would need windows of minutes to
record its 10-20 s requests whole.

Settings (environment): BENCH_REPOSITORY (build/model_repository), BENCH_DURATION (s measured, 2),
BENCH_WARMUP (s, 1), BENCH_ROUNDS (3), BENCH_CONCURRENCY (1,8,32,64), BENCH_MODELS (all four),
BENCH_V1_DURATION (10), BENCH_WORKERS (2), BENCH_DOCS (1 = write the docs section and plots; 0 = JSON only).
Exit status 1 when a request failed, or (BENCH_STRICT=1) when a target ratio is missed; the docs
and the output say which targets were met either way. Exit status 2 before anything starts when the
1-minute load average exceeds the cores (tests/benchmarks/_load.py); ``--allow-loaded`` or
BENCH_ALLOW_LOADED=1 runs anyway and marks every table "LOADED MACHINE ...: not a result".
"""

import os
import sys
import time

import _load

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(CHECKOUT, "tools", "bench"))
import loadgen  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402

MODELS = ("anomaly_detector", "alert_classifier", "ops_pipeline", "metric_forecaster")
V1 = "Prophet v1 via Triton gRPC"  # not "Triton ...": the FastAPI comparison leaves it out
DOCS = os.path.join(CHECKOUT, "docs", "benchmarks.md")
IMG = os.path.join(CHECKOUT, "docs", "img")


def variants(triton, fastapi):
    out = [("Triton gRPC", dict(kind="triton", protocol="grpc", url=triton.grpc)),
           ("Triton HTTP", dict(kind="triton", protocol="http", url=triton.http)),
           # the FastAPI variants' own client (http.client, prebuilt bodies) against Triton's HTTP
           ("Triton HTTP http.client", dict(kind="triton", protocol="http", client="http.client", url=triton.http))]
    for server in fastapi:
        for encoding, label in (("json", "JSON"), ("npy", "binary")):
            name = "FastAPI %s %dw" % (label, server.workers)
            out.append((name, dict(kind="fastapi", encoding=encoding, host="127.0.0.1", port=server.port)))
    return out


def extra_variants(model, triton):
    """(name, target, concurrencies) measured besides ``variants``: metric_forecaster's version 1."""
    if model != servers.FORECASTER:
        return []
    return [(V1, dict(kind="triton", protocol="grpc", url=triton.grpc, version="1"), (1,))]


def run(settings):
    repo = settings["repository"]
    windows, texts = loadgen.payloads(CHECKOUT, repo)
    raw = {}
    started = time.monotonic()
    served = servers.BENCH_MODELS + ((servers.FORECASTER,) if servers.FORECASTER in settings["models"] else ())
    with servers.Triton(repo, models=served) as triton, servers.FastAPIServer(repo, 1) as one, \
            servers.FastAPIServer(repo, settings["workers"]) as many:
        pids = {"triton": triton.pids, 1: one.pids, settings["workers"]: many.pids}
        names = variants(triton, (one, many))
        print("servers up in %.0f s" % (time.monotonic() - started), flush=True)
        for rnd in range(settings["rounds"]):
            for model in settings["models"]:
                for conc in settings["concurrency"]:
                    # rotate the order every round so no variant always runs first (or after the same one)
                    shift = rnd % len(names)
                    for name, target in names[shift:] + names[:shift]:
                        tgt = dict(target, model=model)
                        server_pids = pids["triton"] if tgt["kind"] == "triton" else pids[int(name.split()[-1][:-1])]
                        sample = loadgen.measure(tgt, conc, settings["duration"], settings["warmup"], windows, texts,
                                                 server_pids)
                        raw.setdefault(model, {}).setdefault(name, {}).setdefault(conc, []).append(sample)
                        print("round %d %-16s %-22s c=%-3d %8.1f req/s p50 %7.2f p99 %7.2f ms errors %d"
                              % (rnd + 1, model, name, conc, sample["throughput"], sample["p50"], sample["p99"],
                                 sample["errors"]), flush=True)
                    for name, target, concs in extra_variants(model, triton):
                        if conc in concs:
                            sample = loadgen.measure(dict(target, model=model), conc, settings["v1_duration"],
                                                     settings["warmup"], windows, texts, pids["triton"])
                            raw.setdefault(model, {}).setdefault(name, {}).setdefault(conc, []).append(sample)
                            print("round %d %-16s %-22s c=%-3d %8.1f req/s p50 %7.2f p99 %7.2f ms errors %d"
                                  % (rnd + 1, model, name, conc, sample["throughput"], sample["p50"], sample["p99"],
                                     sample["errors"]), flush=True)
    elapsed = time.monotonic() - started
    results = {m: {n: {c: report.aggregate(s) for c, s in by_c.items()} for n, by_c in by_n.items()}
               for m, by_n in raw.items()}
    return results, elapsed


def check_targets(results):
    """Issue 23's targets, each a ratio in this run: Triton's better variant (protocol and client) of the
    cell against the best FastAPI variant of that cell. c=1: lowest p50 on both sides; c=32: highest
    throughput on both sides, and the p99 of those two."""
    rows, ok = [], True
    for model, by_name in results.items():
        fast = {n: v for n, v in by_name.items() if n.startswith("FastAPI")}
        tri = {n: v for n, v in by_name.items() if n.startswith("Triton")}
        if tri and fast and all(1 in v for v in tri.values()) and all(1 in v for v in fast.values()):
            best = min(fast, key=lambda n: fast[n][1]["p50"])
            mine = min(tri, key=lambda n: tri[n][1]["p50"])
            ratio = tri[mine][1]["p50"] / fast[best][1]["p50"]
            rows.append((model, "c=1: %s p50 / best FastAPI p50 (%s)" % (mine, best), ratio, "<= 1.1", ratio <= 1.1))
        if tri and fast and all(32 in v for v in tri.values()) and all(32 in v for v in fast.values()):
            best = max(fast, key=lambda n: fast[n][32]["throughput"])
            mine = max(tri, key=lambda n: tri[n][32]["throughput"])
            r2 = tri[mine][32]["throughput"] / fast[best][32]["throughput"]
            r3 = tri[mine][32]["p99"] / fast[best][32]["p99"]
            rows.append((model, "c=32: %s req/s / best FastAPI req/s (%s)" % (mine, best), r2, ">= 2", r2 >= 2))
            rows.append((model, "c=32: %s p99 / that FastAPI's p99" % mine, r3, "<= 1", r3 <= 1.0))
    rows += forecaster_targets(results)
    errors = sum(v["errors"] for by_n in results.values() for by_c in by_n.values() for v in by_c.values())
    for row in rows:
        ok = ok and row[4]
    return rows, ok, errors


def forecaster_targets(results):
    """Issue 37's targets for metric_forecaster: Triton's best variant p50 at c=1 under 10 ms (absolute), and its
    best c=32 throughput at least 30 times version 1's (measured at c=1: see the module docstring)."""
    by_name = results.get(servers.FORECASTER, {})
    tri = {n: v for n, v in by_name.items() if n.startswith("Triton")}
    rows = []
    if tri and all(1 in v for v in tri.values()):
        mine = min(tri, key=lambda n: tri[n][1]["p50"])
        p50 = tri[mine][1]["p50"]
        rows.append((servers.FORECASTER, "c=1: %s p50 ms (version 2)" % mine, p50, "< 10 ms", p50 < 10.0))
    old = by_name.get(V1, {}).get(1)
    if tri and old and old["throughput"] > 0 and all(32 in v for v in tri.values()):
        mine = max(tri, key=lambda n: tri[n][32]["throughput"])
        ratio = tri[mine][32]["throughput"] / old["throughput"]
        rows.append((servers.FORECASTER, "c=32: %s req/s / %s req/s (c=1)" % (mine, V1), ratio, ">= 30", ratio >= 30))
    return rows


def plots(results, settings, load):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(IMG, exist_ok=True)
    models = list(results)
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    for ax, model in zip(axes[0], models):
        for name, by_c in results[model].items():
            concs = sorted(by_c)
            ax.plot(concs, [by_c[c]["throughput"] for c in concs], marker="o", label=name,
                    linestyle="-" if name.startswith("Triton") else "--")
        ax.set_xscale("log", base=2)
        ax.set_xticks(settings["concurrency"], [str(c) for c in settings["concurrency"]])
        ax.set_title(model)
        ax.set_xlabel("concurrency (closed loop)")
        ax.set_ylabel("requests/s (median of %d rounds)" % settings["rounds"])
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if load.loaded:
        fig.suptitle(load.mark(), color="red")
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "bench_serving_throughput.png"), dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    for ax, model in zip(axes[0], models):
        concs = sorted(max((results[model][n] for n in results[model]), key=len))
        names = [n for n in results[model] if set(concs) <= set(results[model][n])]  # version 1 has c=1 only
        width = 0.8 / len(names)
        for k, name in enumerate(names):
            xs = [i + k * width for i in range(len(concs))]
            p50 = [results[model][name][c]["p50"] for c in concs]
            p99 = [results[model][name][c]["p99"] for c in concs]
            ax.bar(xs, p99, width, alpha=0.35, color="C%d" % k)
            ax.bar(xs, p50, width, color="C%d" % k, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(concs))], [str(c) for c in concs])
        ax.set_yscale("log")
        ax.set_title("%s: p50 (solid), p99 (pale)" % model)
        ax.set_xlabel("concurrency")
        ax.set_ylabel("latency ms (log)")
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].legend(fontsize=7)
    if load.loaded:
        fig.suptitle(load.mark(), color="red")
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "bench_serving_latency.png"), dpi=90)
    plt.close(fig)


def markdown(results, settings, elapsed, facts, load, targets, errors):
    fmt = report.fmt
    lines = [
        "Generated by `make bench` (tests/benchmarks/bench_serving.py) — edit the script, not this section.",
        "",
        report.facts_line(facts, load),
        "",
        "Setup: Triton = the real tritonserver started by the integration harness (tests/integration/"
        "triton_fixtures.py) with the configs rendered from model_repository/*/model.yml and the "
        "python-based onnxruntime backend this collection installs; FastAPI = tools/bench/fastapi_app.py "
        "(same model.onnx and classifier.skops loaded in the web process, `async def` handlers) under uvicorn "
        "with 1 and %d workers, JSON body or binary body (.npy array; raw text for the classifier). Batch 1 per "
        "request. FastAPI's `ops_pipeline` is the two calls its client makes (anomaly, then classifier), timed "
        "as one request; Triton's is one call to the ensemble. `metric_forecaster`: 48 hourly points ending a "
        "week after the training end, 6 h ahead (32 windows an hour apart; JSON or `numpy.savez` body for FastAPI), "
        "answered by its newest version (2) through that version's own forecast.py on both sides; \"%s\" is "
        "version 1 (Prophet's predict) on the same Triton, at c=1 for %s s per round. Closed loop at concurrency %s, generator "
        "in up to 4 forked processes (tools/bench/loadgen.py, clients: tritonclient for Triton, http.client "
        "keep-alive for FastAPI, and the same http.client code against Triton's HTTP as \"Triton HTTP "
        "http.client\"), %s s warm-up then %s s measured, %d interleaved rounds, median per cell. "
        "CPU = cores used (CPU seconds / measured seconds) by the server's process tree and by the generator. "
        "This run took %.0f s." % (settings["workers"], V1, fmt(settings["v1_duration"]),
                                   ", ".join(map(str, settings["concurrency"])),
                                   fmt(settings["warmup"]), fmt(settings["duration"]), settings["rounds"], elapsed),
        "",
    ]
    for model, by_name in results.items():
        lines += ["#### %s" % model, "",
                  "| variant | concurrency | req/s | p50 ms | p95 ms | p99 ms | errors | server CPU | generator CPU | req per server CPU-s |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for conc in settings["concurrency"]:
            for name, by_c in by_name.items():
                if conc in by_c:
                    v = by_c[conc]
                    # requests per CPU-second of the server: how much work a request costs, which the
                    # share of a busy shared machine each server got does not change
                    per_cpu = v["throughput"] / v["server_cpu"] if v["server_cpu"] > 0 else float("nan")
                    lines.append("| %s | %d | %s | %s | %s | %s | %d | %.2f | %.2f | %s |" % (
                        name, conc, fmt(v["throughput"]), fmt(v["p50"], 2), fmt(v["p95"], 2), fmt(v["p99"], 2),
                        v["errors"], v["server_cpu"], v["gen_cpu"], fmt(per_cpu)))
        lines.append("")
    lines += ["#### Targets (in this run: Triton's better variant against the best FastAPI variant; for "
              "metric_forecaster also its p50 and its throughput against version 1's)", "",
              "| model | measure | value | target | met |", "|---|---|---|---|---|"]
    for model, what, ratio, target, met in targets:
        lines.append("| %s | %s | %.2f | %s | %s |" % (model, what, ratio, target, "yes" if met else "**no**"))
    lines += ["", "Failed requests in the whole run: %d." % errors, "",
              "![throughput vs concurrency](img/bench_serving_throughput.png)", "",
              "![latency percentiles](img/bench_serving_latency.png)"]
    return _load.mark_tables("\n".join(lines), load)


def main():
    settings = {
        "repository": os.path.abspath(os.environ.get("BENCH_REPOSITORY", os.path.join(CHECKOUT, "build", "model_repository"))),
        "duration": report.env_num("BENCH_DURATION", 2.0),
        "warmup": report.env_num("BENCH_WARMUP", 1.0),
        "rounds": report.env_num("BENCH_ROUNDS", 3, int),
        "concurrency": report.env_list("BENCH_CONCURRENCY", "1,8,32,64", int),
        "models": report.env_list("BENCH_MODELS", ",".join(MODELS)),
        "workers": report.env_num("BENCH_WORKERS", 2, int),
        "v1_duration": report.env_num("BENCH_V1_DURATION", 10.0),
    }
    unknown = set(settings["models"]) - set(MODELS)
    if unknown:
        raise SystemExit("BENCH_MODELS: unknown model(s) %s; known: %s" % (", ".join(sorted(unknown)), ", ".join(MODELS)))
    if not os.path.isdir(settings["repository"]):
        raise SystemExit("no built model repository at %s (run `make models`)" % settings["repository"])
    load = _load.start(_load.only_flag(sys.argv[1:]))
    facts = report.machine_facts()
    results, elapsed = run(settings)
    _load.finish(load)
    targets, ok, errors = check_targets(results)
    report.save_json(os.path.join(CHECKOUT, "build", "reports", "bench_serving.json"),
                     {"settings": settings, "facts": facts, "elapsed_s": elapsed, "load": load.as_dict(),
                      "results": results,
                      "targets": [list(t) for t in targets], "errors": errors})
    text = markdown(results, settings, elapsed, facts, load, targets, errors)
    if os.environ.get("BENCH_DOCS", "1") == "1":
        plots(results, settings, load)
        report.write_section(DOCS, "bench_serving", text)
    print(text)
    for model, what, ratio, target, met in targets:
        print("%-5s %-16s %s = %.2f (target %s)" % ("ok" if met else "MISS", model, what, ratio, target))
    if errors:
        print("FAILED: %d requests failed (see build/reports/bench_serving.json)" % errors)
        return 1
    return 1 if not ok and os.environ.get("BENCH_STRICT") == "1" else 0


if __name__ == "__main__":
    sys.exit(main())
