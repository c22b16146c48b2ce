"""Lab hosts and the load balancer host: podman containers booting systemd, and the inventory that lists them."""

import os
import time

from . import common

MAX_HOSTS = 32
# Memory a new lab host needs (MiB): a converged host measured ~500 MiB (cgroup usage, most of it Triton's
# python backend stubs, one per model instance) plus headroom for a rollout's candidate check
# (docs/scaling.md). AIOPS_LAB_HOST_MIB overrides it for trimmed hosts. Kept free besides: RESERVE_MIB for
# the controller (ansible-playbook and its forks), the S3 and wheelhouse services and lab-lb.
HOST_MIB = 600
RESERVE_MIB = 2048
# The load balancer (roles/triton_lb, inventory group triton_lb): a lab host of its own, not a Triton host.
LB_HOST = "lab-lb"
LB_ROLE_DEFAULTS = os.path.join(common.ROOT, "roles", "triton_lb", "defaults", "main.yml")
HOST_CAPS = ("--cap-add", "SYS_ADMIN")
# Every lab host's systemd, journald and dbus take inotify instances from the one kernel they share (all run
# as root): with Debian's default of 128, the 23rd host booted "degraded" (its .path units failed).
INOTIFY_INSTANCES_PER_HOST = 32
INOTIFY_INSTANCES = "/proc/sys/fs/inotify/max_user_instances"


def lab_hosts():
    res = common.podman("ps", "-a", "--filter", "label=aiops.lab.host=1", "--format", "{{.Names}}")
    return sorted(n for n in res.stdout.split() if n)


def host_name(index):
    return "lab-%d" % index


def start_host(name, os_name):
    if common.container_running(name):
        common.log("%s already running" % name)
        return False
    common.podman("rm", "-f", name, check=False)
    # CAP_SYS_ADMIN as a real host's root has it: triton_server remounts /proc hidepid=invisible.
    # --restart=always: a reboot inside the host ends its systemd; podman boots it again (playbooks/reboot.yml).
    common.podman("run", "-d", "--name", name, "--hostname", name, "--label", common.LABEL, "--label", "aiops.lab.host=1",
                  "--restart=always", "--network", common.NETWORK, "--systemd=always", "--tmpfs", "/tmp", "--tmpfs", "/run", *HOST_CAPS,
                  common.IMAGE.format(os=os_name), "/sbin/init")
    return True


def start_lb(os_name):
    """lab-lb: the same systemd image (haproxy and socat are in it), no aiops.lab.host label: not a Triton host."""
    if common.container_running(LB_HOST):
        common.log("%s already running" % LB_HOST)
        return False
    common.podman("rm", "-f", LB_HOST, check=False)
    # CAP_SYS_ADMIN like the hosts: Debian's haproxy.service sets up a mount namespace (BindReadOnlyPaths).
    common.podman("run", "-d", "--name", LB_HOST, "--hostname", LB_HOST, "--label", common.LABEL, "--label", "aiops.lab.lb=1",
                  "--restart=always", "--network", common.NETWORK, "--systemd=always", "--tmpfs", "/tmp", "--tmpfs", "/run",
                  *HOST_CAPS, common.IMAGE.format(os=os_name), "/sbin/init")
    return True


def raise_inotify_limit(count, path=INOTIFY_INSTANCES):
    """Make room for ``count`` lab hosts' inotify instances (never lowers the machine's setting)."""
    with open(path, encoding="utf-8") as handle:
        current = int(handle.read().strip())
    wanted = (count + 2) * INOTIFY_INSTANCES_PER_HOST  # the hosts, lab-lb and this machine's own services
    if current < wanted:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("%d\n" % wanted)
        common.log("fs.inotify.max_user_instances %d -> %d for %d lab hosts" % (current, wanted, count))
    return max(current, wanted)


def container_address(name):
    """The container's address on the lab bridge; it survives restarts (reboots) of the container."""
    res = common.podman("container", "inspect", "--format",
                        "{{ (index .NetworkSettings.Networks \"%s\").IPAddress }}" % common.NETWORK, name, check=False)
    return res.stdout.strip() if res.returncode == 0 else ""


def lb_endpoints():
    """{"http": "addr:port", "grpc": "addr:port"} of lab-lb's frontends (the role's default ports), or {}."""
    address = container_address(LB_HOST) if common.container_running(LB_HOST) else ""
    if not address:
        return {}
    import yaml  # controller venv, imported late like boto3 in services.py
    with open(LB_ROLE_DEFAULTS) as fh:
        defaults = yaml.safe_load(fh)
    return {"http": "%s:%d" % (address, defaults["triton_lb_http_port"]),
            "grpc": "%s:%d" % (address, defaults["triton_lb_grpc_port"])}


def wait_booted(name, timeout=120):
    deadline = time.time() + timeout
    state = ""
    while time.time() < deadline:
        state = common.podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
        if state in ("running", "degraded"):
            return state
        time.sleep(1)
    raise common.LabError("%s did not finish booting (systemctl is-system-running: %r)" % (name, state))


def write_inventory(names, addresses=None):
    """``addresses``: {name: address on the lab bridge} (aiops_lab_address: the lab has no DNS between
    containers, so HAProxy and Prometheus reach hosts by address), lab-lb's included when it runs."""
    addresses = addresses or {}
    os.makedirs(os.path.dirname(common.INVENTORY), exist_ok=True)

    def host(name):
        line = "        %s:" % name
        return line + (" {aiops_lab_address: %s}" % addresses[name] if addresses.get(name) else "")
    # Rollout groups (group_vars/triton_servers names their order): the first host is the canary, the rest
    # alternate between two waves, so any prefix lab-1..N (bench --limit) keeps three groups of even size.
    lines = ["# Written by lab/labctl.py up; removed by down. Do not edit.", "---",
             "triton_servers:", "  children:"]
    for group, members in rollout_groups(names):
        lines += ["    %s:" % group] + (["      hosts:"] + [host(n) for n in members] if members else ["      hosts: {}"])
    lines += ["  vars:", "    ansible_connection: containers.podman.podman",
              "    ansible_python_interpreter: /usr/bin/python3"]
    if LB_HOST in addresses:
        lines += ["triton_lb:", "  hosts:", host(LB_HOST).replace("        ", "    ", 1),
                  "  vars:", "    ansible_connection: containers.podman.podman",
                  "    ansible_python_interpreter: /usr/bin/python3"]
    lines.append("")
    with open(common.INVENTORY, "w") as fh:
        fh.write("\n".join(lines))


def rollout_groups(names):
    """[(group, hosts)] in rollout order: the canary (first host), then wave_1 and wave_2 taking turns."""
    rest = names[1:]
    return [("triton_canary", names[:1]), ("triton_wave_1", rest[0::2]), ("triton_wave_2", rest[1::2])]


def mem_available_mib():
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    raise common.LabError("no MemAvailable in /proc/meminfo")


def check_memory(wanted):
    """Refuse, before any host starts, a host count whose new hosts MemAvailable cannot hold."""
    per_host = os.environ.get("AIOPS_LAB_HOST_MIB", str(HOST_MIB))
    if not per_host.isdigit() or int(per_host) < 1:
        raise common.LabError("AIOPS_LAB_HOST_MIB must be a whole number of MiB, got %r" % per_host)
    per_host = int(per_host)
    new = sorted(set(wanted) - set(lab_hosts()))
    need, have = len(new) * per_host + RESERVE_MIB, mem_available_mib()
    if new and need > have:
        raise common.LabError("%d new lab host(s) need about %d MiB (%d MiB each + %d MiB for the controller and services) "
                              "but MemAvailable is %d MiB: ask for fewer hosts, free memory, or set AIOPS_LAB_HOST_MIB "
                              "if the hosts were trimmed (docs/scaling.md)" % (len(new), need, per_host, RESERVE_MIB, have))


def lab_containers():
    return sorted(common.podman("ps", "-a", "--filter", "label=" + common.LABEL, "--format", "{{.Names}}").stdout.split())
