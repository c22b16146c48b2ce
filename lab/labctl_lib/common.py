"""Paths, names and addresses every part of the lab shares, and the one way it runs podman."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "lab")
STATE = os.path.join(LAB, ".state")
BUILD = os.path.join(ROOT, "build")
WHEELHOUSE = os.path.join(BUILD, "wheelhouse")
INVENTORY = os.path.join(ROOT, "inventories", "lab", "hosts.yml")

SUPPORTED_OS = {"debian12": {"suite": "bookworm", "mirror": "http://deb.debian.org/debian"}}
IMAGE = "localhost/aiops-lab-{os}"
NETWORK = "aiops-lab"
SUBNET = os.environ.get("AIOPS_LAB_SUBNET", "10.89.77.0/24")
GATEWAY = os.environ.get("AIOPS_LAB_GATEWAY", "10.89.77.1")
S3_PORT = int(os.environ.get("AIOPS_LAB_S3_PORT", "9000"))
WHEELHOUSE_PORT = int(os.environ.get("AIOPS_LAB_WHEELHOUSE_PORT", "8081"))
BUCKET = "aiops-models"
LABEL = "aiops.lab=1"
KEEPER = "aiops-lab-gw"


class LabError(Exception):
    pass


def log(msg):
    print("labctl: %s" % msg, flush=True)


def run(cmd, check=True, capture=False, **kw):
    res = subprocess.run(cmd, check=False, text=True, capture_output=capture, **kw)
    if check and res.returncode != 0:
        detail = (res.stderr or "").strip() if capture else ""
        raise LabError("command failed (%d): %s %s" % (res.returncode, " ".join(cmd), detail))
    return res


def podman(*args, check=True):
    return run(["podman"] + list(args), check=check, capture=True)


def container_running(name):
    res = podman("container", "inspect", "--format", "{{.State.Running}}", name, check=False)
    return res.returncode == 0 and res.stdout.strip() == "true"
