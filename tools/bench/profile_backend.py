"""Where an anomaly_detector request's time goes inside the python-based onnxruntime backend.

Serves the built repository with the shipped configs (integration harness, real tritonserver),
drives anomaly_detector over gRPC at ``--concurrency`` and samples every anomaly_detector python
backend stub with py-spy (``--idle``: a stub waiting for Triton shows as idle) while the load runs.
Prints the share of samples per backend function and the share the stub spent idle, so one can see
whether the backend's Python is the ceiling::

    .venv/bin/python tools/bench/profile_backend.py --repository build/model_repository --seconds 8
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import loadgen  # noqa: E402
import servers  # noqa: E402


def summarize(raw_files, top):
    own, total, idle = collections.Counter(), 0, 0
    for path in raw_files:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                stack, _sep, count = line.rstrip("\n").rpartition(" ")
                count = int(count)
                total += count
                frames = [f for f in stack.split(";") if f]
                if not frames:
                    idle += count
                    continue
                # attribute each sample to the innermost frame of the backend's own code, else the leaf
                backend = [f for f in frames if "model.py" in f]
                own[backend[-1] if backend else frames[-1]] += count
    print("samples: %d, idle or in native code without a Python frame: %.1f%%" % (total, 100.0 * idle / max(total, 1)))
    for frame, count in own.most_common(top):
        print("%5.1f%%  %s" % (100.0 * count / max(total, 1), frame))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", default=os.path.join(CHECKOUT, "build", "model_repository"))
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    import psutil
    windows, texts = loadgen.payloads(CHECKOUT, args.repository)
    tmp = tempfile.mkdtemp(prefix="bench-profile-")
    with servers.Triton(os.path.abspath(args.repository)) as triton:
        stubs = [p for p in psutil.Process(triton.server.pid).children(recursive=True)
                 if any("anomaly_detector" in part for part in p.cmdline())]
        if not stubs:
            raise SystemExit("no anomaly_detector backend stub found under tritonserver %d" % triton.server.pid)
        outs = [os.path.join(tmp, "stub-%d.txt" % p.pid) for p in stubs]
        spies = [subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "py-spy"), "record", "--idle", "-p", str(p.pid),
                                   "-d", str(args.seconds + 1), "-r", "200", "-f", "raw", "-o", out],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for p, out in zip(stubs, outs)]
        result = loadgen.measure(dict(kind="triton", protocol="grpc", url=triton.grpc, model="anomaly_detector"),
                                 args.concurrency, args.seconds, 1.0, windows, texts, triton.pids)
        for spy in spies:
            spy.wait(60)
    print("anomaly_detector gRPC c=%d: %.0f req/s, p50 %.2f ms, server CPU %.2f cores, %d stubs sampled"
          % (args.concurrency, result["throughput"], result["p50"], result["server_cpu"], len(stubs)))
    summarize([o for o in outs if os.path.exists(o)], args.top)


if __name__ == "__main__":
    main()
