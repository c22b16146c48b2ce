"""The lab network and its services (moto S3, the wheelhouse HTTP server), bound to the bridge's gateway."""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from . import common


def ensure_network(os_name):
    if common.podman("network", "exists", common.NETWORK, check=False).returncode != 0:
        common.podman("network", "create", "--subnet", common.SUBNET, "--gateway", common.GATEWAY, "--label", common.LABEL, common.NETWORK)
        common.log("created network %s (%s)" % (common.NETWORK, common.SUBNET))
    if not common.container_running(common.KEEPER):
        common.podman("rm", "-f", common.KEEPER, check=False)
        common.podman("run", "-d", "--name", common.KEEPER, "--label", common.LABEL, "--network", common.NETWORK,
                      "--entrypoint", "/bin/sleep", common.IMAGE.format(os=os_name), "infinity")
        common.log("started %s to hold the lab bridge up" % common.KEEPER)


def pid_alive(pid):
    """Running: a process that exited but is not yet reaped (a zombie of the process that started it) is not."""
    try:
        os.kill(pid, 0)
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def service_pid(name):
    path = os.path.join(common.STATE, name + ".pid")
    if not os.path.exists(path):
        return None
    pid = int(open(path).read().strip() or 0)
    return pid if pid and pid_alive(pid) else None


def wait_port(host, port, timeout=30, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise common.LabError("it exited (%d) before anything listened on %s:%d" % (proc.returncode, host, port))
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise common.LabError("nothing listens on %s:%d after %ds" % (host, port, timeout))


def start_service(name, cmd, port, env=None, timeout=30):
    if service_pid(name):
        common.log("%s already running" % name)
        return
    os.makedirs(common.STATE, exist_ok=True)
    logf = open(os.path.join(common.STATE, name + ".log"), "ab")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=dict(env or os.environ, PYTHONUNBUFFERED="1"))
    with open(os.path.join(common.STATE, name + ".pid"), "w") as fh:
        fh.write(str(proc.pid))
    try:
        wait_port(common.GATEWAY, port, timeout, proc)
    except common.LabError as exc:
        stop_service(name)
        raise common.LabError("%s did not start: %s (log: %s)" % (name, exc, os.path.relpath(logf.name, common.ROOT)))
    common.log("%s listening on %s:%d" % (name, common.GATEWAY, port))


# each lab secret and how it is made (only when the lab's file lacks it)
SECRETS = {"AWS_ACCESS_KEY_ID": lambda: "lab" + secrets.token_hex(6), "AWS_SECRET_ACCESS_KEY": lambda: secrets.token_hex(20),
           "AIOPS_LAB_TRITON_API_KEY": lambda: secrets.token_hex(16), "AIOPS_EDA_TOKEN": lambda: secrets.token_hex(20)}


def credentials():
    """Lab secrets (S3 keys, Triton API key, the rulebook's webhook token), generated once and kept 0600 in
    lab/.state."""
    path = os.path.join(common.STATE, "s3-credentials.json")
    creds = {}
    if os.path.exists(path):
        with open(path) as fh:
            creds = json.load(fh)
    missing = dict((key, make()) for key, make in SECRETS.items() if key not in creds)
    if missing:  # a new lab, or one started before a secret was added: the ones it has stay
        creds.update(missing)
        os.makedirs(common.STATE, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(creds, fh)
    return creds


def s3_endpoint():
    return "http://%s:%d" % (common.GATEWAY, common.S3_PORT)


def ensure_bucket():
    import boto3  # controller venv; imported late so `labctl image` works without it
    env = credentials()
    client = boto3.client("s3", endpoint_url=s3_endpoint(), region_name="us-east-1",
                          aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    names = [b["Name"] for b in client.list_buckets().get("Buckets", [])]
    if common.BUCKET not in names:
        client.create_bucket(Bucket=common.BUCKET)
        common.log("created bucket s3://%s" % common.BUCKET)


def start_services(os_name):
    ensure_network(os_name)
    bindir = os.path.dirname(sys.executable)
    start_service("s3", [os.path.join(bindir, "moto_server"), "-H", common.GATEWAY, "-p", str(common.S3_PORT)], common.S3_PORT)
    ensure_bucket()
    os.makedirs(common.WHEELHOUSE, exist_ok=True)
    start_service("wheelhouse", [sys.executable, "-m", "http.server", "--bind", common.GATEWAY,
                                 "--directory", common.WHEELHOUSE, str(common.WHEELHOUSE_PORT)], common.WHEELHOUSE_PORT)
    with urllib.request.urlopen("http://%s:%d/" % (common.GATEWAY, common.WHEELHOUSE_PORT), timeout=5) as resp:
        resp.read()


def stop_service(name, grace=5):
    pid = service_pid(name)
    if pid:
        os.killpg(pid, signal.SIGTERM)
        for _attempt in range(grace * 10):
            if not pid_alive(pid):
                break
            time.sleep(0.1)
        else:
            os.killpg(pid, signal.SIGKILL)
        common.log("stopped %s" % name)


def stop_services():
    # the rulebook first: its gate's runs use the S3 and the hosts the others serve
    stop_service("eda", grace=20)
    for name in ("wheelhouse", "s3"):
        stop_service(name)
