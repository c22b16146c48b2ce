"""SSH into lab hosts, as an execution environment reaches a fleet (tools/ee_check.sh --lab).

The controller holds one lab key pair (lab/.state/ssh, 0600, never committed; `labctl down` removes it with
the rest of the state). ``authorize(names)`` puts its public key into root's authorized_keys of each named
container (lab hosts, lab-lb, or any other container of the lab image on the lab network, such as
molecule's), reads each host's own ed25519 host key through podman (not over the network) into
lab/.state/ssh/known_hosts under the host's bridge address, and logs in once over SSH with strict host key
checking to prove it. sshd itself comes with the lab image (lab/image.packages, image.py).
"""

import os
import subprocess
import tempfile
import time

from . import common, hosts

SSH_DIR = os.path.join(common.STATE, "ssh")
KEY = os.path.join(SSH_DIR, "id_ed25519")
KNOWN_HOSTS = os.path.join(SSH_DIR, "known_hosts")
HOST_KEY = "/etc/ssh/ssh_host_ed25519_key.pub"
# $1: the public key line; appended once, root's .ssh kept private.
INSTALL_KEY = ('set -eu; umask 077; mkdir -p /root/.ssh; f=/root/.ssh/authorized_keys; touch "$f"; '
               'grep -qxF "$1" "$f" || printf "%s\\n" "$1" >>"$f"')


def ensure_key():
    """The lab's key pair, made once; returns the public key line."""
    if not os.path.exists(KEY):
        os.makedirs(SSH_DIR, mode=0o700, exist_ok=True)
        common.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "aiops-lab", "-f", KEY], capture=True)
    with open(KEY + ".pub") as fh:
        return fh.read().strip()


def has_sshd(name):
    return common.podman("exec", name, "test", "-x", "/usr/sbin/sshd", check=False).returncode == 0


def wait_sshd(name, timeout=60):
    """sshd's unit active (its first start makes the host keys); a host still booting is waited for."""
    deadline = time.time() + timeout
    state = ""
    while time.time() < deadline:
        state = common.podman("exec", name, "systemctl", "is-active", "ssh", check=False).stdout.strip()
        if state == "active":
            return
        if state == "failed":
            break
        time.sleep(0.5)
    raise common.LabError("sshd in %s is not running (systemctl is-active ssh: %r)" % (name, state))


def update_known_hosts(entries):
    """entries: {address: "ssh-ed25519 AAAA..."}; every other address's lines are kept."""
    kept = []
    if os.path.exists(KNOWN_HOSTS):
        with open(KNOWN_HOSTS) as fh:
            kept = [line for line in fh.read().splitlines() if line.split(" ", 1)[0] not in entries]
    lines = kept + ["%s %s" % (address, key) for address, key in sorted(entries.items())]
    os.makedirs(SSH_DIR, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=SSH_DIR, prefix=".known_hosts-")
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, KNOWN_HOSTS)


def ssh_command(address, *command):
    """The controller's ssh to a lab host: the lab key only, its known host key only, no prompts."""
    return ["ssh", "-F", "/dev/null", "-i", KEY, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "UserKnownHostsFile=" + KNOWN_HOSTS, "-o", "StrictHostKeyChecking=yes",
            "-o", "ConnectTimeout=10", "root@" + address] + list(command)


def authorize(names):
    """The lab key into each named container, its host key into known_hosts; returns {name: address}."""
    public = ensure_key()
    addresses = {}
    for name in names:
        if not common.container_running(name):
            raise common.LabError("%s is not running" % name)
        address = hosts.container_address(name)
        if not address:
            raise common.LabError("%s has no address on the %s network" % (name, common.NETWORK))
        if not has_sshd(name):
            raise common.LabError("%s has no sshd: it was created from a lab image older than lab/image.packages; "
                                  "recreate it from the current one (make lab-image; the lab's hosts: make lab-down "
                                  "lab-up; a molecule scenario's: molecule destroy, create)" % name)
        common.podman("exec", name, "sh", "-c", INSTALL_KEY, "sh", public)
        wait_sshd(name)
        host_key = common.podman("exec", name, "cat", HOST_KEY).stdout.split()
        if len(host_key) < 2 or host_key[0] != "ssh-ed25519":
            raise common.LabError("%s: unexpected host key in %s: %r" % (name, HOST_KEY, host_key))
        update_known_hosts({address: " ".join(host_key[:2])})
        addresses[name] = address
    # the host key check already ties each address to its container; the hostname shows it once more
    for name, address in sorted(addresses.items()):
        expected = common.podman("exec", name, "hostname").stdout.strip()
        res = subprocess.run(ssh_command(address, "hostname"), capture_output=True, text=True, timeout=60, check=False)
        if res.returncode != 0 or res.stdout.strip() != expected:
            detail = (res.stderr or res.stdout).strip()
            raise common.LabError("ssh root@%s (%s) failed (%d): %s" % (address, name, res.returncode, detail))
    return addresses
