"""labctl: the local lab — disposable systemd hosts (podman), an S3 endpoint and a package cache.

    python3 lab/labctl.py image [--force]        build the Debian 12 systemd host image (cached by its inputs)
    labctl.py up --hosts N [--os debian12]
                                     start N lab hosts, the load balancer host lab-lb and the services,
                                     write inventories/lab/hosts.yml
    labctl.py services               start only the services (network, S3, wheelhouse) — molecule uses this
    labctl.py down                   remove hosts, services, network, state and the podman drop-in;
                                     leave nothing running
    labctl.py status                 what is running
    labctl.py env                    shell exports for the lab's S3 credentials (never printed elsewhere) and,
                                     while lab-lb runs, its HTTP and gRPC frontends (AIOPS_LAB_LB_HTTP/_GRPC)
    labctl.py triton-image           build the Triton image (container method) and the podman lab host image,
                                     publish the Triton image as an OCI archive on the wheelhouse server
                                     (build/triton-image.json: its URL path, sha256 and image ID); cached

Everything binds to the lab bridge's gateway address, so test traffic stays between this machine and
its own containers.  podman gets the settings this kind of machine needs (lab/containers.conf) from a
drop-in, /etc/containers/containers.conf.d/90-aiops-lab.conf; the owner's containers.conf is never written.
A small "gateway keeper" container holds the bridge up so services can bind to it
before any host exists.
"""

import argparse
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
MAX_HOSTS = 32
# Memory a new lab host needs (MiB): a converged host measured ~500 MiB (cgroup usage, most of it Triton's
# python backend stubs, one per model instance) plus headroom for a rollout's candidate check
# (docs/scaling.md). AIOPS_LAB_HOST_MIB overrides it for trimmed hosts. Kept free besides: RESERVE_MIB for
# the controller (ansible-playbook and its forks), the S3 and wheelhouse services and lab-lb.
HOST_MIB = 600
RESERVE_MIB = 2048
# The load balancer (roles/triton_lb, inventory group triton_lb): a lab host of its own, not a Triton host.
LB_HOST = "lab-lb"
LB_ROLE_DEFAULTS = os.path.join(ROOT, "roles", "triton_lb", "defaults", "main.yml")
HOST_CAPS = ("--cap-add", "SYS_ADMIN")
# Bump when the image recipe below changes in a way the package list does not show.
RECIPE_VERSION = "3"


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


# --- podman configuration ---------------------------------------------------------------------------

# A drop-in, not /etc/containers/containers.conf: the machine owner's file stays untouched, and
# down() removes exactly what the lab added. Late in the order so the lab's three settings win.
PODMAN_DROPIN_DIR = "/etc/containers/containers.conf.d"
PODMAN_DROPIN = os.path.join(PODMAN_DROPIN_DIR, "90-aiops-lab.conf")


def configure_podman(dst=None):
    """Install lab/containers.conf (runc + cgroupfs + ulimits) as a podman drop-in; idempotent."""
    dst = dst or PODMAN_DROPIN
    with open(os.path.join(LAB, "containers.conf")) as fh:
        wanted = fh.read()
    try:
        with open(dst) as fh:
            if fh.read() == wanted:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    # Whole file or nothing: podman runs concurrently and must never read half a drop-in.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst), prefix=".aiops-lab-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(wanted)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    log("wrote %s" % dst)


def unconfigure_podman(dst=None):
    """Remove the lab's drop-in (only that file); the owner's containers.conf is never touched."""
    dst = dst or PODMAN_DROPIN
    if os.path.exists(dst):
        os.remove(dst)
        log("removed %s" % dst)


# --- image ------------------------------------------------------------------------------------------

def image_packages():
    with open(os.path.join(LAB, "image.packages")) as fh:
        return [line.strip() for line in fh if line.strip() and not line.startswith("#")]


def image_key(os_name):
    spec = SUPPORTED_OS[os_name]
    material = json.dumps([RECIPE_VERSION, os_name, spec, image_packages()], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def image_current_key(ref):
    res = podman("image", "inspect", "--format", "{{ index .Labels \"aiops.lab.key\" }}", ref, check=False)
    return res.stdout.strip() if res.returncode == 0 else None


def build_image(os_name, force=False):
    configure_podman()
    ref = IMAGE.format(os=os_name)
    key = image_key(os_name)
    if not force and image_current_key(ref) == key:
        log("image %s is current (key %s), rebuild skipped" % (ref, key))
        return ref
    spec = SUPPORTED_OS[os_name]
    os.makedirs(BUILD, exist_ok=True)
    rootfs = tempfile.mkdtemp(prefix="lab-rootfs-", dir=BUILD)
    try:
        log("debootstrap %s into %s (about a minute)" % (spec["suite"], rootfs))
        run(["debootstrap", "--variant=minbase", "--include=" + ",".join(image_packages()),
             spec["suite"], rootfs, spec["mirror"]], capture=True)
        customise_rootfs(rootfs, spec)
        # --one-file-system: a /proc that debootstrap left mounted in the rootfs (seen once) is not archived
        tar = subprocess.Popen(["tar", "--one-file-system", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        run(["podman", "import", "--change", 'CMD ["/sbin/init"]',
             "--change", "LABEL aiops.lab.key=%s" % key, "-", ref], stdin=tar.stdout, capture=True)
        tar.stdout.close()
        if tar.wait() != 0:
            raise LabError("tar of the rootfs failed")
    finally:
        for sub in ("proc", "sys", "dev/pts"):  # never rmtree into a live /proc left mounted by debootstrap
            if os.path.ismount(os.path.join(rootfs, sub)):
                subprocess.run(["umount", "-l", os.path.join(rootfs, sub)], check=False)
        shutil.rmtree(rootfs, ignore_errors=True)
    log("built image %s (key %s)" % (ref, key))
    return ref


def customise_rootfs(rootfs, spec):
    """Make the rootfs behave like a small server: full apt sources, a CA bundle pip trusts, no gettys."""
    with open(os.path.join(rootfs, "etc/apt/sources.list"), "w") as fh:
        for suite in (spec["suite"], spec["suite"] + "-updates"):
            fh.write("deb %s %s main contrib non-free non-free-firmware\n" % (spec["mirror"], suite))
    # pip on this network sees a TLS-intercepting proxy whose CA only the host bundle has.
    host_bundle = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.exists(host_bundle):
        shutil.copy(host_bundle, os.path.join(rootfs, "etc/ssl/certs/ca-certificates.crt"))
    for unit in ("getty.target", "console-getty.service", "systemd-logind.service"):
        link = os.path.join(rootfs, "etc/systemd/system", unit)
        if not os.path.lexists(link):
            os.symlink("/dev/null", link)
    # haproxy (for lab-lb) comes enabled by its package; only the triton_lb role turns it on, where it runs.
    wants = os.path.join(rootfs, "etc/systemd/system/multi-user.target.wants/haproxy.service")
    if os.path.lexists(wants):
        os.remove(wants)
    open(os.path.join(rootfs, "etc/machine-id"), "w").close()
    shutil.rmtree(os.path.join(rootfs, "var/cache/apt/archives"), ignore_errors=True)
    os.makedirs(os.path.join(rootfs, "var/cache/apt/archives/partial"), exist_ok=True)


# --- the Triton image for the container method ------------------------------------------------------

TRITON_IMAGE = "localhost/aiops-triton"
PODMAN_HOST_IMAGE = "localhost/aiops-lab-debian12-podman"
TRITON_IMAGE_MANIFEST = os.path.join(BUILD, "triton-image.json")
ROLE_FILES = os.path.join(ROOT, "roles", "triton_server", "files")
# Build context file -> its source; the role's pins are the one place for the server's packages.
TRITON_CONTEXT = {
    "Containerfile": os.path.join(LAB, "triton-image", "Containerfile"),
    "argv_secret.c": os.path.join(LAB, "triton-image", "argv_secret.c"),
    "tritonserver.sh": os.path.join(LAB, "triton-image", "tritonserver.sh"),
    "requirements-native.txt": os.path.join(ROLE_FILES, "requirements-native.txt"),
    "requirements-python-models.txt": os.path.join(ROLE_FILES, "requirements-python-models.txt"),
    "onnxruntime-model.py": os.path.join(ROLE_FILES, "backends", "onnxruntime", "model.py"),
}
PODMAN_HOST_CONTEXT = {
    "Containerfile": os.path.join(LAB, "podman-host", "Containerfile"),
    "containers.conf": os.path.join(LAB, "containers.conf"),
}


def context_key(base_ref, context, extra=()):
    digest = hashlib.sha256((image_current_key(base_ref) or "").encode())
    for name in sorted(context):
        with open(context[name], "rb") as fh:
            digest.update(name.encode() + b"\0" + fh.read() + b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()[:16]


def build_from_context(ref, key, context, volumes=()):
    """podman build of a context assembled from `context` (name -> source), labelled with its key."""
    old = podman("image", "inspect", "--format", "{{.Id}}", ref, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="lab-ctx-", dir=BUILD) as ctx:
        for name, src in context.items():
            shutil.copy2(src, os.path.join(ctx, name))
        # --layers=false: no intermediate images are left behind; the key above is the cache.
        cmd = ["podman", "build", "--quiet", "--layers=false", "--label", "aiops.lab.key=%s" % key, "--tag", ref]
        for vol in volumes:
            cmd += ["--volume", vol]
        run(cmd + [ctx], capture=True)
    if old and old != podman("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip():
        podman("rmi", old, check=False)  # the previous build, now untagged
    log("built image %s (key %s)" % (ref, key))


def build_triton_image(os_name="debian12"):
    """The Triton image, saved as an OCI archive the wheelhouse server publishes (an air-gapped mirror)."""
    base = build_image(os_name)
    wheels = sorted(os.listdir(WHEELHOUSE)) if os.path.isdir(WHEELHOUSE) else []
    if not any(w.startswith("nvidia_pytriton-") for w in wheels):
        raise LabError("the wheelhouse %s has no nvidia-pytriton wheel: run `make wheelhouse` first" % WHEELHOUSE)
    key = context_key(base, TRITON_CONTEXT, wheels)
    if image_current_key(TRITON_IMAGE) != key:
        build_from_context(TRITON_IMAGE, key, TRITON_CONTEXT, volumes=["%s:/wheelhouse:ro" % WHEELHOUSE])
    image_id = "sha256:" + podman("image", "inspect", "--format", "{{.Id}}", TRITON_IMAGE).stdout.strip()
    rel = "images/aiops-triton-%s.oci-archive.tar" % key
    archive = os.path.join(WHEELHOUSE, rel)
    try:
        with open(TRITON_IMAGE_MANIFEST) as fh:
            current = json.load(fh)
    except (FileNotFoundError, ValueError):
        current = {}
    if current.get("key") != key or current.get("id") != image_id or not os.path.exists(archive):
        os.makedirs(os.path.dirname(archive), exist_ok=True)
        for old in os.listdir(os.path.dirname(archive)):  # one published archive, the current one
            os.remove(os.path.join(os.path.dirname(archive), old))
        run(["podman", "save", "--format", "oci-archive", "--output", archive, TRITON_IMAGE], capture=True)
        digest = hashlib.sha256()
        with open(archive, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        current = {"key": key, "id": image_id, "path": rel, "sha256": digest.hexdigest()}
        with open(TRITON_IMAGE_MANIFEST, "w") as fh:
            json.dump(current, fh, indent=1)
        log("published %s (sha256 %s, image %s)" % (rel, current["sha256"], image_id))
    else:
        log("image %s is current (key %s), published as %s" % (TRITON_IMAGE, key, rel))
    return current


def build_podman_host_image(os_name="debian12"):
    base = build_image(os_name)
    key = context_key(base, PODMAN_HOST_CONTEXT)
    if image_current_key(PODMAN_HOST_IMAGE) == key:
        log("image %s is current (key %s), rebuild skipped" % (PODMAN_HOST_IMAGE, key))
        return
    build_from_context(PODMAN_HOST_IMAGE, key, PODMAN_HOST_CONTEXT)


# --- network + services ---------------------------------------------------------------------------

def ensure_network(os_name):
    if podman("network", "exists", NETWORK, check=False).returncode != 0:
        podman("network", "create", "--subnet", SUBNET, "--gateway", GATEWAY, "--label", LABEL, NETWORK)
        log("created network %s (%s)" % (NETWORK, SUBNET))
    if not container_running(KEEPER):
        podman("rm", "-f", KEEPER, check=False)
        podman("run", "-d", "--name", KEEPER, "--label", LABEL, "--network", NETWORK,
               "--entrypoint", "/bin/sleep", IMAGE.format(os=os_name), "infinity")
        log("started %s to hold the lab bridge up" % KEEPER)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def service_pid(name):
    path = os.path.join(STATE, name + ".pid")
    if not os.path.exists(path):
        return None
    pid = int(open(path).read().strip() or 0)
    return pid if pid and pid_alive(pid) else None


def wait_port(host, port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise LabError("nothing listens on %s:%d after %ds" % (host, port, timeout))


def start_service(name, cmd, port):
    if service_pid(name):
        log("%s already running" % name)
        return
    os.makedirs(STATE, exist_ok=True)
    logf = open(os.path.join(STATE, name + ".log"), "ab")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    with open(os.path.join(STATE, name + ".pid"), "w") as fh:
        fh.write(str(proc.pid))
    wait_port(GATEWAY, port)
    log("%s listening on %s:%d" % (name, GATEWAY, port))


def credentials():
    """Lab secrets (S3 keys, Triton API key), generated once and kept 0600 in lab/.state."""
    path = os.path.join(STATE, "s3-credentials.json")
    if not os.path.exists(path):
        os.makedirs(STATE, exist_ok=True)
        creds = {"AWS_ACCESS_KEY_ID": "lab" + secrets.token_hex(6), "AWS_SECRET_ACCESS_KEY": secrets.token_hex(20),
                 "AIOPS_LAB_TRITON_API_KEY": secrets.token_hex(16)}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(creds, fh)
    with open(path) as fh:
        return json.load(fh)


def s3_endpoint():
    return "http://%s:%d" % (GATEWAY, S3_PORT)


def ensure_bucket():
    import boto3  # controller venv; imported late so `labctl image` works without it
    env = credentials()
    client = boto3.client("s3", endpoint_url=s3_endpoint(), region_name="us-east-1",
                          aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    names = [b["Name"] for b in client.list_buckets().get("Buckets", [])]
    if BUCKET not in names:
        client.create_bucket(Bucket=BUCKET)
        log("created bucket s3://%s" % BUCKET)


def start_services(os_name):
    ensure_network(os_name)
    bindir = os.path.dirname(sys.executable)
    start_service("s3", [os.path.join(bindir, "moto_server"), "-H", GATEWAY, "-p", str(S3_PORT)], S3_PORT)
    ensure_bucket()
    os.makedirs(WHEELHOUSE, exist_ok=True)
    start_service("wheelhouse", [sys.executable, "-m", "http.server", "--bind", GATEWAY,
                                 "--directory", WHEELHOUSE, str(WHEELHOUSE_PORT)], WHEELHOUSE_PORT)
    with urllib.request.urlopen("http://%s:%d/" % (GATEWAY, WHEELHOUSE_PORT), timeout=5) as resp:
        resp.read()


def stop_services():
    for name in ("wheelhouse", "s3"):
        pid = service_pid(name)
        if pid:
            os.killpg(pid, signal.SIGTERM)
            for _attempt in range(50):
                if not pid_alive(pid):
                    break
                time.sleep(0.1)
            else:
                os.killpg(pid, signal.SIGKILL)
            log("stopped %s" % name)


# --- hosts ------------------------------------------------------------------------------------------

def container_running(name):
    res = podman("container", "inspect", "--format", "{{.State.Running}}", name, check=False)
    return res.returncode == 0 and res.stdout.strip() == "true"


def lab_hosts():
    res = podman("ps", "-a", "--filter", "label=aiops.lab.host=1", "--format", "{{.Names}}")
    return sorted(n for n in res.stdout.split() if n)


def host_name(index):
    return "lab-%d" % index


def start_host(name, os_name):
    if container_running(name):
        log("%s already running" % name)
        return False
    podman("rm", "-f", name, check=False)
    # CAP_SYS_ADMIN as a real host's root has it: triton_server remounts /proc hidepid=invisible.
    # --restart=always: a reboot inside the host ends its systemd; podman boots it again (playbooks/reboot.yml).
    podman("run", "-d", "--name", name, "--hostname", name, "--label", LABEL, "--label", "aiops.lab.host=1",
           "--restart=always", "--network", NETWORK, "--systemd=always", "--tmpfs", "/tmp", "--tmpfs", "/run", *HOST_CAPS,
           IMAGE.format(os=os_name), "/sbin/init")
    return True


def start_lb(os_name):
    """lab-lb: the same systemd image (haproxy and socat are in it), no aiops.lab.host label: not a Triton host."""
    if container_running(LB_HOST):
        log("%s already running" % LB_HOST)
        return False
    podman("rm", "-f", LB_HOST, check=False)
    # CAP_SYS_ADMIN like the hosts: Debian's haproxy.service sets up a mount namespace (BindReadOnlyPaths).
    podman("run", "-d", "--name", LB_HOST, "--hostname", LB_HOST, "--label", LABEL, "--label", "aiops.lab.lb=1",
           "--restart=always", "--network", NETWORK, "--systemd=always", "--tmpfs", "/tmp", "--tmpfs", "/run",
           *HOST_CAPS, IMAGE.format(os=os_name), "/sbin/init")
    return True


def container_address(name):
    """The container's address on the lab bridge; it survives restarts (reboots) of the container."""
    res = podman("container", "inspect", "--format",
                 "{{ (index .NetworkSettings.Networks \"%s\").IPAddress }}" % NETWORK, name, check=False)
    return res.stdout.strip() if res.returncode == 0 else ""


def lb_endpoints():
    """{"http": "addr:port", "grpc": "addr:port"} of lab-lb's frontends (the role's default ports), or {}."""
    address = container_address(LB_HOST) if container_running(LB_HOST) else ""
    if not address:
        return {}
    import yaml  # controller venv, like boto3 above
    with open(LB_ROLE_DEFAULTS) as fh:
        defaults = yaml.safe_load(fh)
    return {"http": "%s:%d" % (address, defaults["triton_lb_http_port"]),
            "grpc": "%s:%d" % (address, defaults["triton_lb_grpc_port"])}


def wait_booted(name, timeout=120):
    deadline = time.time() + timeout
    state = ""
    while time.time() < deadline:
        state = podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            return state
        time.sleep(1)
    raise LabError("%s did not finish booting (systemctl is-system-running: %r)" % (name, state))


def write_inventory(names, addresses=None):
    """``addresses``: {name: address on the lab bridge} (aiops_lab_address: the lab has no DNS between
    containers, so HAProxy and Prometheus reach hosts by address), lab-lb's included when it runs."""
    addresses = addresses or {}
    os.makedirs(os.path.dirname(INVENTORY), exist_ok=True)

    def host(name):
        line = "        %s:" % name
        return line + (" {aiops_lab_address: %s}" % addresses[name] if addresses.get(name) else "")
    # Rollout groups (group_vars/triton_servers names their order): the first host is the canary.
    lines = ["# Written by lab/labctl.py up; removed by down. Do not edit.", "---",
             "triton_servers:", "  children:", "    triton_canary:", "      hosts:"]
    lines += [host(n) for n in names[:1]]
    lines += ["    triton_wave_1:", "      hosts:"]
    lines += [host(n) for n in names[1:]]
    lines += ["  vars:", "    ansible_connection: containers.podman.podman",
              "    ansible_python_interpreter: /usr/bin/python3"]
    if LB_HOST in addresses:
        lines += ["triton_lb:", "  hosts:", host(LB_HOST).replace("        ", "    ", 1),
                  "  vars:", "    ansible_connection: containers.podman.podman",
                  "    ansible_python_interpreter: /usr/bin/python3"]
    lines.append("")
    with open(INVENTORY, "w") as fh:
        fh.write("\n".join(lines))


def mem_available_mib():
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    raise LabError("no MemAvailable in /proc/meminfo")


def check_memory(wanted):
    """Refuse, before any host starts, a host count whose new hosts MemAvailable cannot hold."""
    per_host = os.environ.get("AIOPS_LAB_HOST_MIB", str(HOST_MIB))
    if not per_host.isdigit() or int(per_host) < 1:
        raise LabError("AIOPS_LAB_HOST_MIB must be a whole number of MiB, got %r" % per_host)
    per_host = int(per_host)
    new = sorted(set(wanted) - set(lab_hosts()))
    need, have = len(new) * per_host + RESERVE_MIB, mem_available_mib()
    if new and need > have:
        raise LabError("%d new lab host(s) need about %d MiB (%d MiB each + %d MiB for the controller and services) "
                       "but MemAvailable is %d MiB: ask for fewer hosts, free memory, or set AIOPS_LAB_HOST_MIB "
                       "if the hosts were trimmed (docs/scaling.md)" % (len(new), need, per_host, RESERVE_MIB, have))


def up(count, os_name):
    if os_name not in SUPPORTED_OS:
        raise LabError("unknown OS %r: the lab supports %s" % (os_name, ", ".join(sorted(SUPPORTED_OS))))
    if not 1 <= count <= MAX_HOSTS:
        raise LabError("--hosts must be between 1 and %d, got %d" % (MAX_HOSTS, count))
    check_memory([host_name(i) for i in range(1, count + 1)])
    build_image(os_name)
    start_services(os_name)
    wanted = [host_name(i) for i in range(1, count + 1)]
    for extra in sorted(set(lab_hosts()) - set(wanted)):
        podman("rm", "-f", "-t", "5", extra)
        log("removed surplus host %s" % extra)
    started = [n for n in wanted if start_host(n, os_name)]
    if start_lb(os_name):
        started.append(LB_HOST)
    for name in wanted + [LB_HOST]:
        log("%s: %s" % (name, wait_booted(name)))
    write_inventory(wanted, dict((n, container_address(n)) for n in wanted + [LB_HOST]))
    log("%d host(s) up (%d started now); inventory: %s" % (len(wanted), len(started), os.path.relpath(INVENTORY, ROOT)))


def lab_containers():
    return sorted(podman("ps", "-a", "--filter", "label=" + LABEL, "--format", "{{.Names}}").stdout.split())


def down():
    stop_services()
    names = left = lab_containers()
    # podman can lose a race with a container that is stopping by itself ("container state
    # improper: stopped"); the next rm removes it, so try a few times before giving up.
    for _attempt in range(3):
        if not left:
            break
        podman("rm", "-f", "-t", "5", *left, check=False)
        left = lab_containers()
    if names:
        log("removed containers: %s" % " ".join(sorted(set(names) - set(left))))
    if podman("network", "exists", NETWORK, check=False).returncode == 0:
        podman("network", "rm", "-f", NETWORK)
        log("removed network %s" % NETWORK)
    if os.path.exists(INVENTORY):
        os.remove(INVENTORY)
    shutil.rmtree(STATE, ignore_errors=True)
    if left:
        raise LabError("containers survived teardown: %s" % left)
    # Last: the containers above were created with the lab's runtime and are removed with it.
    unconfigure_podman()
    log("lab is down")


def status():
    for name in lab_hosts() + [LB_HOST]:
        log("%s running=%s" % (name, container_running(name)))
    for name in ("s3", "wheelhouse"):
        log("%s pid=%s" % (name, service_pid(name)))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="labctl", description=__doc__.split("\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_img = sub.add_parser("image")
    p_img.add_argument("--force", action="store_true")
    p_img.add_argument("--os", default="debian12")
    p_up = sub.add_parser("up")
    p_up.add_argument("--hosts", type=int, default=2)
    p_up.add_argument("--os", default="debian12")
    p_srv = sub.add_parser("services")
    p_srv.add_argument("--os", default="debian12")
    sub.add_parser("down")
    sub.add_parser("status")
    sub.add_parser("env")
    sub.add_parser("triton-image")
    args = parser.parse_args(argv)
    try:
        if args.cmd in ("image", "services") and args.os not in SUPPORTED_OS:
            raise LabError("unknown OS %r: the lab supports %s" % (args.os, ", ".join(sorted(SUPPORTED_OS))))
        if args.cmd == "image":
            build_image(args.os, force=args.force)
        elif args.cmd == "up":
            up(args.hosts, args.os)
        elif args.cmd == "services":
            build_image(args.os)
            start_services(args.os)
        elif args.cmd == "down":
            down()
        elif args.cmd == "triton-image":
            build_podman_host_image()
            build_triton_image()
        elif args.cmd == "status":
            status()
        elif args.cmd == "env":
            for key, value in credentials().items():
                print("export %s=%s" % (key, value))
            print("export AIOPS_LAB_S3_ENDPOINT=%s" % s3_endpoint())
            print("export AIOPS_LAB_WHEELHOUSE=http://%s:%d/" % (GATEWAY, WHEELHOUSE_PORT))
            print("export AIOPS_LAB_MODEL_DIR=%s" % os.path.join(ROOT, "model_repository"))
            for proto, endpoint in sorted(lb_endpoints().items()):
                print("export AIOPS_LAB_LB_%s=%s" % (proto.upper(), endpoint))
    except LabError as exc:
        print("labctl: error: %s" % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
