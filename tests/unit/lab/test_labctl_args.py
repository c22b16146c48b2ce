"""labctl refuses bad requests before it touches podman, and its image cache key follows its inputs."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("labctl", os.path.join(ROOT, "lab", "labctl.py"))
labctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labctl)


@pytest.fixture(autouse=True)
def no_podman(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("podman was called: %r" % (args,))
    monkeypatch.setattr(labctl, "run", refuse)


@pytest.mark.parametrize("argv,message", [
    (["up", "--hosts", "0"], "--hosts must be between 1 and 8, got 0"),
    (["up", "--hosts", "9"], "--hosts must be between 1 and 8, got 9"),
    (["up", "--os", "centos7"], "unknown OS 'centos7': the lab supports debian12"),
    (["image", "--os", "ubuntu99"], "unknown OS 'ubuntu99'"),
])
def test_bad_requests_fail_clearly(argv, message, capsys):
    assert labctl.main(argv) == 2
    assert message in capsys.readouterr().err


def test_image_key_changes_with_the_package_list(monkeypatch):
    key = labctl.image_key("debian12")
    assert key == labctl.image_key("debian12")
    monkeypatch.setattr(labctl, "image_packages", lambda: ["systemd", "python3", "extra-package"])
    assert labctl.image_key("debian12") != key
