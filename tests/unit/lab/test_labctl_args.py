"""labctl refuses bad requests before it touches podman, and its image cache key follows its inputs."""

import importlib.util
import os
import types

import pytest

from labctl_lib import common, image, podman_conf, services  # lab/, put on sys.path by conftest.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("labctl", os.path.join(ROOT, "lab", "labctl.py"))
labctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labctl)


@pytest.fixture(autouse=True)
def no_podman(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("podman was called: %r" % (args,))
    monkeypatch.setattr(common, "run", refuse)


@pytest.mark.parametrize("argv,message", [
    (["up", "--hosts", "0"], "--hosts must be between 1 and 32, got 0"),
    (["up", "--hosts", "33"], "--hosts must be between 1 and 32, got 33"),
    (["up", "--os", "centos7"], "unknown OS 'centos7': the lab supports debian12"),
    (["image", "--os", "ubuntu99"], "unknown OS 'ubuntu99'"),
])
def test_bad_requests_fail_clearly(argv, message, capsys):
    assert labctl.main(argv) == 2
    assert message in capsys.readouterr().err


def test_image_key_changes_with_the_package_list(monkeypatch):
    key = image.image_key("debian12")
    assert key == image.image_key("debian12")
    monkeypatch.setattr(image, "image_packages", lambda: ["systemd", "python3", "extra-package"])
    assert image.image_key("debian12") != key


class FakePodman(object):
    """Stands in for podman in down(). ``survives``: how many rm calls lab-2 outlives (podman's
    "container state improper: stopped" race)."""

    def __init__(self, survives):
        self.containers = ["lab-1", "lab-2"]
        self.survives = survives
        self.rm_calls = 0

    def __call__(self, *args, check=True):
        if args[0] == "ps":
            return types.SimpleNamespace(returncode=0, stdout="\n".join(self.containers))
        if args[0] == "rm":
            self.rm_calls += 1
            sticky = ["lab-2"] if self.rm_calls <= self.survives else []
            self.containers = [n for n in self.containers if n not in args or n in sticky]
            return types.SimpleNamespace(returncode=125 if self.containers else 0, stdout="")
        if args[:2] == ("network", "exists"):
            return types.SimpleNamespace(returncode=1, stdout="")
        raise AssertionError("unexpected podman call %r" % (args,))


@pytest.fixture
def lab_down(monkeypatch, tmp_path):
    def down(survives):
        fake = FakePodman(survives)
        monkeypatch.setattr(common, "podman", fake)
        monkeypatch.setattr(services, "stop_services", lambda: None)
        monkeypatch.setattr(common, "STATE", str(tmp_path / "state"))
        monkeypatch.setattr(common, "INVENTORY", str(tmp_path / "hosts.yml"))
        # down() removes the podman drop-in last: never the machine's real one from a unit test
        monkeypatch.setattr(podman_conf, "PODMAN_DROPIN", str(tmp_path / "90-aiops-lab.conf"))
        labctl.down()
        return fake
    return down


def test_down_retries_a_container_that_raced_into_stopped(lab_down, capsys):
    fake = lab_down(survives=1)
    assert fake.containers == [] and fake.rm_calls == 2
    assert "removed containers: lab-1 lab-2" in capsys.readouterr().out


def test_down_fails_loudly_when_a_container_survives(lab_down):
    with pytest.raises(common.LabError, match=r"containers survived teardown: \['lab-2'\]"):
        lab_down(survives=99)
