"""Publish anomaly_detector version 3: version 2's graph with golden cases it cannot meet.

It loads and serves, then fails the triton_models verification, so a rollout to it must roll back.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def flatten(data):
    if isinstance(data, list):
        return [x for item in data for x in flatten(item)]
    return [data]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--prefix", required=True)
    args = parser.parse_args()
    repo = os.path.join(args.workdir, "broken_repository")
    shutil.rmtree(repo, ignore_errors=True)
    dest = os.path.join(repo, "anomaly_detector", "3")
    shutil.copytree(os.path.join(args.repository, "anomaly_detector", "2"), dest)
    path = os.path.join(dest, "golden_cases.json")
    with open(path) as handle:
        cases = json.load(handle)
    cases["version"] = 3
    for case in cases["cases"]:
        score = case["expected"]["anomaly_score"]
        score["data"] = [1.5 - float(x) for x in flatten(score["data"])]  # no score can be this far off
    with open(path, "w") as handle:
        json.dump(cases, handle)
    subprocess.run([sys.executable, os.path.join(ROOT, "model_repository", "publish.py"), "--repository", repo,
                    "--bucket", "aiops-models", "--prefix", args.prefix,
                    "--endpoint-url", os.environ["AIOPS_LAB_S3_ENDPOINT"],
                    "--model", "anomaly_detector", "--version", "3", "--force"], check=True)


if __name__ == "__main__":
    main()
