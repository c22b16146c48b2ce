"""The Triton image for the container method and the podman lab host image, both built on the lab image."""

import hashlib
import json
import os
import shutil
import tempfile

from . import common, image

TRITON_IMAGE = "localhost/aiops-triton"
PODMAN_HOST_IMAGE = "localhost/aiops-lab-debian12-podman"
TRITON_IMAGE_MANIFEST = os.path.join(common.BUILD, "triton-image.json")
ROLE_FILES = os.path.join(common.ROOT, "roles", "triton_server", "files")
# Build context file -> its source; the role's pins are the one place for the server's packages.
TRITON_CONTEXT = {
    "Containerfile": os.path.join(common.LAB, "triton-image", "Containerfile"),
    "argv_secret.c": os.path.join(common.LAB, "triton-image", "argv_secret.c"),
    "tritonserver.sh": os.path.join(common.LAB, "triton-image", "tritonserver.sh"),
    "requirements-native.txt": os.path.join(ROLE_FILES, "requirements-native.txt"),
    "requirements-python-models.txt": os.path.join(ROLE_FILES, "requirements-python-models.txt"),
    "onnxruntime-model.py": os.path.join(ROLE_FILES, "backends", "onnxruntime", "model.py"),
}
PODMAN_HOST_CONTEXT = {
    "Containerfile": os.path.join(common.LAB, "podman-host", "Containerfile"),
    "containers.conf": os.path.join(common.LAB, "containers.conf"),
}


def context_key(base_ref, context, extra=()):
    digest = hashlib.sha256((image.image_current_key(base_ref) or "").encode())
    for name in sorted(context):
        with open(context[name], "rb") as fh:
            digest.update(name.encode() + b"\0" + fh.read() + b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()[:16]


def build_from_context(ref, key, context, volumes=()):
    """podman build of a context assembled from `context` (name -> source), labelled with its key."""
    old = common.podman("image", "inspect", "--format", "{{.Id}}", ref, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="lab-ctx-", dir=common.BUILD) as ctx:
        for name, src in context.items():
            shutil.copy2(src, os.path.join(ctx, name))
        # --layers=false: no intermediate images are left behind; the key above is the cache.
        cmd = ["podman", "build", "--quiet", "--layers=false", "--label", "aiops.lab.key=%s" % key, "--tag", ref]
        for vol in volumes:
            cmd += ["--volume", vol]
        common.run(cmd + [ctx], capture=True)
    if old and old != common.podman("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip():
        common.podman("rmi", old, check=False)  # the previous build, now untagged
    common.log("built image %s (key %s)" % (ref, key))


def wheelhouse_packages():
    """The wheelhouse's package files, the image's inputs: not the images/ folder this build publishes into,
    which would change the key after the first build (on a fresh wheelhouse, every second call rebuilt)."""
    if not os.path.isdir(common.WHEELHOUSE):
        return []
    return sorted(name for name in os.listdir(common.WHEELHOUSE) if os.path.isfile(os.path.join(common.WHEELHOUSE, name)))


def build_triton_image(os_name="debian12"):
    """The Triton image, saved as an OCI archive the wheelhouse server publishes (an air-gapped mirror)."""
    base = image.build_image(os_name)
    wheels = wheelhouse_packages()
    if not any(w.startswith("nvidia_pytriton-") for w in wheels):
        raise common.LabError("the wheelhouse %s has no nvidia-pytriton wheel: run `make wheelhouse` first" % common.WHEELHOUSE)
    key = context_key(base, TRITON_CONTEXT, wheels)
    if image.image_current_key(TRITON_IMAGE) != key:
        build_from_context(TRITON_IMAGE, key, TRITON_CONTEXT, volumes=["%s:/wheelhouse:ro" % common.WHEELHOUSE])
    image_id = "sha256:" + common.podman("image", "inspect", "--format", "{{.Id}}", TRITON_IMAGE).stdout.strip()
    rel = "images/aiops-triton-%s.oci-archive.tar" % key
    archive = os.path.join(common.WHEELHOUSE, rel)
    try:
        with open(TRITON_IMAGE_MANIFEST) as fh:
            current = json.load(fh)
    except (FileNotFoundError, ValueError):
        current = {}
    if current.get("key") != key or current.get("id") != image_id or not os.path.exists(archive):
        os.makedirs(os.path.dirname(archive), exist_ok=True)
        for old in os.listdir(os.path.dirname(archive)):  # one published archive, the current one
            os.remove(os.path.join(os.path.dirname(archive), old))
        common.run(["podman", "save", "--format", "oci-archive", "--output", archive, TRITON_IMAGE], capture=True)
        digest = hashlib.sha256()
        with open(archive, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        current = {"key": key, "id": image_id, "path": rel, "sha256": digest.hexdigest()}
        with open(TRITON_IMAGE_MANIFEST, "w") as fh:
            json.dump(current, fh, indent=1)
        common.log("published %s (sha256 %s, image %s)" % (rel, current["sha256"], image_id))
    else:
        common.log("image %s is current (key %s), published as %s" % (TRITON_IMAGE, key, rel))
    return current


def build_podman_host_image(os_name="debian12"):
    base = image.build_image(os_name)
    key = context_key(base, PODMAN_HOST_CONTEXT)
    if image.image_current_key(PODMAN_HOST_IMAGE) == key:
        common.log("image %s is current (key %s), rebuild skipped" % (PODMAN_HOST_IMAGE, key))
        return
    build_from_context(PODMAN_HOST_IMAGE, key, PODMAN_HOST_CONTEXT)
