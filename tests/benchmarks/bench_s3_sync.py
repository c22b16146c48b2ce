"""Benchmark of aiops.triton.s3_model_sync against a local moto S3 server (run by hand).

    PATH=.venv/bin:$PATH python tests/benchmarks/bench_s3_sync.py [--mib 256] [--rounds 3]

(a) bytes moved by an upgrade (v1 live, sync to v2) versus the size of v2: must be equal.
(b) wall time to fetch the same version into an empty dir, module vs ``aws s3 sync``, both
    run as fresh processes against the same server, interleaved, median of the rounds.
Prints a markdown table for docs/benchmarks.md; exits 1 when a target is missed
(bytes not equal, or ratio below 1.0), 2 when the machine is loaded (tests/benchmarks/_load.py;
--allow-loaded runs anyway, the table marked as not a result).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import _load

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, ".collection"))

from s3_fixtures import MotoServer, publish_version  # noqa: E402

MODULE = os.path.join(ROOT, "plugins", "modules", "s3_model_sync.py")
# awscli pins its own botocore, so it gets a venv of its own (make it: see docs/benchmarks.md).
AWS = os.environ.get("AWS_CLI", os.path.join(ROOT, ".venv-awscli", "bin", "aws"))
MIB = 1024 * 1024


def version_files(total_mib, seed):
    """A model-shaped version: one big weights file, a medium one, a few small ones."""
    rnd = os.urandom
    big = total_mib * 3 // 4
    files = {"weights.bin": rnd(big * MIB), "aux/embeddings.bin": rnd((total_mib - big - 1) * MIB)}
    for i in range(8):
        files["aux/meta-%d.json" % i] = (b'{"seed": %d}' % seed) + rnd(128 * 1024 - 12)
    return files


def run_module(args, workdir):
    path = os.path.join(workdir, "args.json")
    with open(path, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, ".collection"))
    started = time.time()
    proc = subprocess.run([sys.executable, MODULE, path], capture_output=True, text=True, env=env, check=False)
    elapsed = time.time() - started
    result = json.loads(proc.stdout)
    if result.get("failed"):
        raise SystemExit("module failed: %s" % result["msg"])
    return result, elapsed


def run_awscli(endpoint, src, dest):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    started = time.time()
    subprocess.run([AWS, "s3", "sync", "--only-show-errors",
                    "--endpoint-url", endpoint, src, dest], check=True, env=env)
    return time.time() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256, help="size of each version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    _load.add_argument(parser)
    opts = parser.parse_args()
    load = _load.start(allow=opts.allow_loaded)

    work = tempfile.mkdtemp(prefix="bench-s3-")
    server = MotoServer()
    try:
        client = server.client()
        client.create_bucket(Bucket="models")
        v1 = version_files(opts.mib, 1)
        v2 = version_files(opts.mib, 2)
        publish_version(client, "models", "triton", "detector", 1, v1)
        publish_version(client, "models", "triton", "detector", 2, v2)
        v2_size = sum(len(b) for b in v2.values())
        base = {"bucket": "models", "prefix": "triton", "model": "detector", "endpoint_url": server.endpoint,
                "access_key": "testing", "secret_key": "testing", "concurrency": opts.concurrency}

        # (a) upgrade delta
        repo = os.path.join(work, "repo-upgrade")
        os.makedirs(repo)
        run_module(dict(base, versions=[1], repository=repo), work)
        upgrade = run_module(dict(base, versions=[2], keep_versions=1, repository=repo), work)[0]
        moved = upgrade["bytes_transferred"]

        # (b) throughput, interleaved so both see the same server state
        ours, theirs = [], []
        for i in range(opts.rounds):
            repo = os.path.join(work, "repo-%d" % i)
            os.makedirs(repo)
            ours.append(run_module(dict(base, versions=[2], repository=repo), work)[1])
            theirs.append(run_awscli(server.endpoint, "s3://models/triton/detector/2/", os.path.join(work, "aws-%d" % i)))
            shutil.rmtree(repo)
            shutil.rmtree(os.path.join(work, "aws-%d" % i))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)

    def mbps(seconds):
        return v2_size / MIB / seconds

    _load.finish(load)
    lines = ["| measure | value |", "|---|---|",
             "| version size (v2) | %d bytes (%d files) |" % (v2_size, len(v2)),
             "| bytes moved by upgrade v1 -> v2 | %d (%s) |" % (moved, "equal" if moved == v2_size else "NOT EQUAL"),
             "| s3_model_sync, fresh fetch of v2 (median of %d) | %.2f s, %.1f MiB/s |" % (opts.rounds, ours_s, mbps(ours_s)),
             "| aws s3 sync, same files (median of %d) | %.2f s, %.1f MiB/s |" % (opts.rounds, theirs_s, mbps(theirs_s)),
             "| throughput ratio (module / awscli) | %.2fx |" % (theirs_s / ours_s),
             "",
             "raw seconds: module %s, awscli %s" % (["%.2f" % s for s in ours], ["%.2f" % s for s in theirs]),
             load.describe()]
    print(_load.mark_tables("\n".join(lines), load))
    # The targets: an upgrade moves exactly the new version, and no slower than aws s3 sync.
    return 0 if moved == v2_size and theirs_s / ours_s >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
