"""The lab host image: a Debian systemd rootfs from debootstrap, rebuilt only when its inputs change."""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from . import common, podman_conf

# Bump when the image recipe below changes in a way the package list does not show.
RECIPE_VERSION = "6"


def image_packages():
    with open(os.path.join(common.LAB, "image.packages")) as fh:
        return [line.strip() for line in fh if line.strip() and not line.startswith("#")]


def image_key(os_name):
    spec = common.SUPPORTED_OS[os_name]
    material = json.dumps([RECIPE_VERSION, os_name, spec, image_packages()], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def image_current_key(ref):
    res = common.podman("image", "inspect", "--format", "{{ index .Labels \"aiops.lab.key\" }}", ref, check=False)
    return res.stdout.strip() if res.returncode == 0 else None


def build_image(os_name, force=False):
    podman_conf.configure_podman()
    ref = common.IMAGE.format(os=os_name)
    key = image_key(os_name)
    if not force and image_current_key(ref) == key:
        common.log("image %s is current (key %s), rebuild skipped" % (ref, key))
        return ref
    spec = common.SUPPORTED_OS[os_name]
    os.makedirs(common.BUILD, exist_ok=True)
    rootfs = tempfile.mkdtemp(prefix="lab-rootfs-", dir=common.BUILD)
    try:
        common.log("debootstrap %s into %s (about a minute)" % (spec["suite"], rootfs))
        common.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(image_packages()),
                    spec["suite"], rootfs, spec["mirror"]], capture=True)
        customise_rootfs(rootfs, spec)
        # --one-file-system: a /proc that debootstrap left mounted in the rootfs (seen once) is not archived
        tar = subprocess.Popen(["tar", "--one-file-system", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        common.run(["podman", "import", "--change", 'CMD ["/sbin/init"]',
                    "--change", "LABEL aiops.lab.key=%s" % key, "-", ref], stdin=tar.stdout, capture=True)
        tar.stdout.close()
        if tar.wait() != 0:
            raise common.LabError("tar of the rootfs failed")
    finally:
        for sub in ("proc", "sys", "dev/pts"):  # never rmtree into a live /proc left mounted by debootstrap
            if os.path.ismount(os.path.join(rootfs, sub)):
                subprocess.run(["umount", "-l", os.path.join(rootfs, sub)], check=False)
        shutil.rmtree(rootfs, ignore_errors=True)
    common.log("built image %s (key %s)" % (ref, key))
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
    customise_sshd(rootfs)
    trim_rootfs(rootfs)
    open(os.path.join(rootfs, "etc/machine-id"), "w").close()
    shutil.rmtree(os.path.join(rootfs, "var/cache/apt/archives"), ignore_errors=True)
    os.makedirs(os.path.join(rootfs, "var/cache/apt/archives/partial"), exist_ok=True)


# sshd in a lab host: key-only root login (labctl_lib/ssh.py puts the lab key in), no DNS lookups.
SSHD_CONFIG = """# aiops lab (lab/labctl_lib/image.py): the lab key only, for root; read before sshd_config's own settings.
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
"""
# Each host makes its own host keys when sshd first starts (the image ships none: every host of one
# image would otherwise share them); `sshd -t` after, as Debian's unit does.
SSH_UNIT_DROPIN = """[Service]
ExecStartPre=
ExecStartPre=/usr/bin/ssh-keygen -A
ExecStartPre=/usr/sbin/sshd -t
"""


def customise_sshd(rootfs):
    for name in os.listdir(os.path.join(rootfs, "etc/ssh")):
        if name.startswith("ssh_host_"):
            os.remove(os.path.join(rootfs, "etc/ssh", name))
    with open(os.path.join(rootfs, "etc/ssh/sshd_config.d/aiops-lab.conf"), "w") as fh:
        fh.write(SSHD_CONFIG)
    dropin = os.path.join(rootfs, "etc/systemd/system/ssh.service.d")
    os.makedirs(dropin, exist_ok=True)
    with open(os.path.join(dropin, "aiops-lab.conf"), "w") as fh:
        fh.write(SSH_UNIT_DROPIN)


# A lab host is one of up to MAX_HOSTS on one small machine (docs/scaling.md, "A lab host's memory"): the
# journal stays in memory and small, and the periodic housekeeping a real server runs (apt's daily
# download/upgrade, dpkg and e2scrub jobs) is masked, so 24 hosts do not wake together on 2 cores.
JOURNALD_DROPIN = """# aiops lab (lab/labctl_lib/image.py): a volatile, bounded journal per lab host.
[Journal]
Storage=volatile
RuntimeMaxUse=16M
"""
MASKED_TIMERS = ("apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer", "e2scrub_all.timer",
                 "fstrim.timer")


def trim_rootfs(rootfs):
    dropin = os.path.join(rootfs, "etc/systemd/journald.conf.d")
    os.makedirs(dropin, exist_ok=True)
    with open(os.path.join(dropin, "aiops-lab.conf"), "w") as fh:
        fh.write(JOURNALD_DROPIN)
    for unit in MASKED_TIMERS:
        link = os.path.join(rootfs, "etc/systemd/system", unit)
        if not os.path.lexists(link):
            os.symlink("/dev/null", link)
