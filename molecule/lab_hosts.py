"""What the molecule drivers read from lab hosts (podman exec, Triton's API) and the broken model version
they publish; shared by molecule/fleet and molecule/lb (their drivers import it from molecule/)."""

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MODELS = ["anomaly_detector", "alert_classifier", "metric_forecaster", "ops_pipeline"]


def podman(*args, **kw):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, check=kw.get("check", True))


def host_ip(name):
    out = podman("inspect", "-f", "{{json .NetworkSettings.Networks}}", name).stdout
    return next(iter(json.loads(out).values()))["IPAddress"]


def main_pid(host):
    return podman("exec", host, "systemctl", "show", "-p", "MainPID", "--value", "tritonserver").stdout.strip()


def repository_index(ip):
    """Triton's repository index of the host at ip (the key guards it)."""
    request = urllib.request.Request("http://%s:8000/v2/repository/index" % ip, data=b"{}", method="POST",
                                     headers={"triton-admin-key": os.environ["AIOPS_LAB_TRITON_API_KEY"]})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def serving(ip, index=None):
    """model -> READY versions, from the repository index (read from ip unless given)."""
    index = repository_index(ip) if index is None else index
    ready = dict((m, []) for m in MODELS)
    for entry in index:
        if entry.get("state") == "READY":
            ready.setdefault(entry["name"], []).append(int(entry["version"]))
    return dict((m, sorted(v)) for m, v in ready.items())


def on_disk(host, model):
    out = podman("exec", host, "sh", "-c", "ls /var/lib/triton/models/%s 2>/dev/null || true" % model).stdout.split()
    return sorted(int(v) for v in out if v.isdigit())


def publish_broken_anomaly(workdir, version=3):
    """anomaly_detector `version`: version 2's graph with golden cases it cannot meet (it loads, then fails
    verification), published to the lab's S3. Returns the names of its golden cases."""
    src = os.path.join(ROOT, "build", "model_repository", "anomaly_detector", "2")
    repo = os.path.join(workdir, "v%drepo" % version)
    shutil.rmtree(repo, ignore_errors=True)
    dest = os.path.join(repo, "anomaly_detector", str(version))
    shutil.copytree(src, dest)
    path = os.path.join(dest, "golden_cases.json")
    with open(path) as handle:
        cases = json.load(handle)
    cases["version"] = version
    for case in cases["cases"]:
        score = case["expected"]["anomaly_score"]
        score["data"] = [1.0 - float(x) + 0.5 for x in np.ravel(score["data"])]  # no score can be this far off
    with open(path, "w") as handle:
        json.dump(cases, handle)
    publish_version(repo, "anomaly_detector", version)
    return [case["name"] for case in cases["cases"]]


def publish_version(repo, model, version):
    """Publish model/version of the repository at repo to the lab's S3 (over an existing one: --force)."""
    subprocess.run([sys.executable, os.path.join(ROOT, "model_repository", "publish.py"), "--repository", repo,
                    "--bucket", "aiops-models", "--prefix", "models", "--endpoint-url", os.environ["AIOPS_LAB_S3_ENDPOINT"],
                    "--model", model, "--version", str(version), "--force"], check=True, capture_output=True)


def health_ready(ip):
    """HTTP status of Triton's /v2/health/ready (what a load balancer probes)."""
    try:
        with urllib.request.urlopen("http://%s:8000/v2/health/ready" % ip, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def candidates(index):
    """Names in a repository index that are staging candidates (none may be left after a rollout)."""
    return sorted(set(e["name"] for e in index if e["name"].endswith("__candidate")))
