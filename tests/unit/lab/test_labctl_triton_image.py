"""The container method's lab image: its cache key follows every input (the role's pins, the shim, the
Containerfile, the base image, the wheels), and a wheelhouse without tritonserver is refused before any build."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("labctl_triton", os.path.join(ROOT, "lab", "labctl.py"))
labctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labctl)


@pytest.fixture
def context(tmp_path, monkeypatch):
    files = {}
    for name in labctl.TRITON_CONTEXT:
        path = tmp_path / name
        path.write_text("content of %s\n" % name)
        files[name] = str(path)
    monkeypatch.setattr(labctl, "image_current_key", lambda ref: "base-key-1")
    return files


def test_the_context_names_the_roles_own_pins():
    assert labctl.TRITON_CONTEXT["requirements-native.txt"].endswith("roles/triton_server/files/requirements-native.txt")
    assert labctl.TRITON_CONTEXT["onnxruntime-model.py"].endswith("roles/triton_server/files/backends/onnxruntime/model.py")
    for src in list(labctl.TRITON_CONTEXT.values()) + list(labctl.PODMAN_HOST_CONTEXT.values()):
        assert os.path.isfile(src), src


@pytest.mark.parametrize("name", sorted(labctl.TRITON_CONTEXT))
def test_key_changes_with_each_input(context, name):
    key = labctl.context_key("base", context, ["a.whl"])
    assert key == labctl.context_key("base", context, ["a.whl"])
    with open(context[name], "a") as handle:
        handle.write("changed\n")
    assert labctl.context_key("base", context, ["a.whl"]) != key


def test_key_changes_with_the_base_image_and_the_wheels(context, monkeypatch):
    key = labctl.context_key("base", context, ["a.whl"])
    assert labctl.context_key("base", context, ["a.whl", "b.whl"]) != key
    monkeypatch.setattr(labctl, "image_current_key", lambda ref: "base-key-2")
    assert labctl.context_key("base", context, ["a.whl"]) != key


def test_a_wheelhouse_without_tritonserver_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(labctl, "WHEELHOUSE", str(tmp_path))
    monkeypatch.setattr(labctl, "build_image", lambda os_name: "localhost/base")
    monkeypatch.setattr(labctl, "build_podman_host_image", lambda os_name="debian12": None)

    def refuse(*args, **kwargs):
        raise AssertionError("podman was called: %r" % (args,))
    monkeypatch.setattr(labctl, "run", refuse)
    (tmp_path / "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl").write_text("")
    with pytest.raises(labctl.LabError, match="no nvidia-pytriton wheel"):
        labctl.build_triton_image()
