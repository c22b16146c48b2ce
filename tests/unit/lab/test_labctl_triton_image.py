"""The container method's lab image: its cache key follows every input (the role's pins, the shim, the
Containerfile, the base image, the wheels), and a wheelhouse without tritonserver is refused before any build."""

import os

import pytest

from labctl_lib import common, image, triton_image  # lab/, put on sys.path by conftest.py


@pytest.fixture
def context(tmp_path, monkeypatch):
    files = {}
    for name in triton_image.TRITON_CONTEXT:
        path = tmp_path / name
        path.write_text("content of %s\n" % name)
        files[name] = str(path)
    monkeypatch.setattr(image, "image_current_key", lambda ref: "base-key-1")
    return files


def test_the_context_names_the_roles_own_pins():
    assert triton_image.TRITON_CONTEXT["requirements-native.txt"].endswith("roles/triton_server/files/requirements-native.txt")
    assert triton_image.TRITON_CONTEXT["onnxruntime-model.py"].endswith("roles/triton_server/files/backends/onnxruntime/model.py")
    for src in list(triton_image.TRITON_CONTEXT.values()) + list(triton_image.PODMAN_HOST_CONTEXT.values()):
        assert os.path.isfile(src), src


@pytest.mark.parametrize("name", sorted(triton_image.TRITON_CONTEXT))
def test_key_changes_with_each_input(context, name):
    key = triton_image.context_key("base", context, ["a.whl"])
    assert key == triton_image.context_key("base", context, ["a.whl"])
    with open(context[name], "a") as handle:
        handle.write("changed\n")
    assert triton_image.context_key("base", context, ["a.whl"]) != key


def test_key_changes_with_the_base_image_and_the_wheels(context, monkeypatch):
    key = triton_image.context_key("base", context, ["a.whl"])
    assert triton_image.context_key("base", context, ["a.whl", "b.whl"]) != key
    monkeypatch.setattr(image, "image_current_key", lambda ref: "base-key-2")
    assert triton_image.context_key("base", context, ["a.whl"]) != key


def test_a_wheelhouse_without_tritonserver_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "WHEELHOUSE", str(tmp_path))
    monkeypatch.setattr(image, "build_image", lambda os_name: "localhost/base")
    monkeypatch.setattr(triton_image, "build_podman_host_image", lambda os_name="debian12": None)

    def refuse(*args, **kwargs):
        raise AssertionError("podman was called: %r" % (args,))
    monkeypatch.setattr(common, "run", refuse)
    (tmp_path / "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl").write_text("")
    with pytest.raises(common.LabError, match="no nvidia-pytriton wheel"):
        triton_image.build_triton_image()


def test_the_key_reads_the_packages_not_the_archive_the_build_publishes(tmp_path, monkeypatch):
    """The build saves its archive under the wheelhouse's images/: the next call must find the same inputs (a fresh
    wheelhouse rebuilt the image on its second call, 70 s of every CI run's container scenario)."""
    monkeypatch.setattr(common, "WHEELHOUSE", str(tmp_path))
    (tmp_path / "nvidia_pytriton-0.5.0-py3-none-any.whl").write_text("")
    (tmp_path / "numpy-1.26.4.tar.gz").write_text("")
    before = triton_image.wheelhouse_packages()
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "aiops-triton-0123.oci-archive.tar").write_text("")
    assert triton_image.wheelhouse_packages() == before == ["numpy-1.26.4.tar.gz", "nvidia_pytriton-0.5.0-py3-none-any.whl"]
