"""podman's settings for the lab, installed as a drop-in the lab alone owns."""

import os
import tempfile

from . import common

# A drop-in, not /etc/containers/containers.conf: the machine owner's file stays untouched, and
# down() removes exactly what the lab added. Late in the order so the lab's three settings win.
PODMAN_DROPIN_DIR = "/etc/containers/containers.conf.d"
PODMAN_DROPIN = os.path.join(PODMAN_DROPIN_DIR, "90-aiops-lab.conf")


def configure_podman(dst=None):
    """Install lab/containers.conf (runc + cgroupfs + ulimits) as a podman drop-in; idempotent."""
    dst = dst or PODMAN_DROPIN
    with open(os.path.join(common.LAB, "containers.conf")) as fh:
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
    common.log("wrote %s" % dst)


def unconfigure_podman(dst=None):
    """Remove the lab's drop-in (only that file); the owner's containers.conf is never touched."""
    dst = dst or PODMAN_DROPIN
    if os.path.exists(dst):
        os.remove(dst)
        common.log("removed %s" % dst)
