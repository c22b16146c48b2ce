"""labctl up refuses a host count the machine's MemAvailable cannot hold, before any host starts (issue 23 item 3)."""

import importlib.util
import os

import pytest

from labctl_lib import common, hosts, image  # lab/, put on sys.path by conftest.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("labctl_memory", os.path.join(ROOT, "lab", "labctl.py"))
labctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labctl)


class Started(Exception):
    """up() got past its checks: it went on to build the image."""


@pytest.fixture
def machine(monkeypatch):
    """A machine with ``state["available"]`` MiB available and ``state["running"]`` lab hosts; no podman."""
    state = {"available": 0, "running": []}

    def refuse(*args, **kwargs):
        raise AssertionError("podman was called: %r" % (args,))
    monkeypatch.setattr(common, "run", refuse)
    monkeypatch.setattr(hosts, "lab_hosts", lambda: list(state["running"]))
    monkeypatch.setattr(hosts, "mem_available_mib", lambda: state["available"])

    def build_image(os_name, force=False):
        raise Started()
    monkeypatch.setattr(image, "build_image", build_image)
    monkeypatch.setattr(hosts, "raise_inotify_limit", lambda count: state.setdefault("inotify_for", count))
    monkeypatch.delenv("AIOPS_LAB_HOST_MIB", raising=False)
    return state


def test_max_hosts_is_32():
    assert hosts.MAX_HOSTS == 32


def test_too_many_new_hosts_for_the_memory_are_refused(machine, capsys):
    # 24 new hosts need 24 x 600 + 2048 = 16448 MiB
    machine["available"] = 16447
    assert labctl.main(["up", "--hosts", "24"]) == 2
    err = capsys.readouterr().err
    assert "24 new lab host(s) need about 16448 MiB (600 MiB each + 2048 MiB" in err
    assert "MemAvailable is 16447 MiB" in err


def test_enough_memory_goes_on(machine):
    machine["available"] = 16448
    with pytest.raises(Started):
        labctl.main(["up", "--hosts", "24"])
    assert machine["inotify_for"] == 24, "the inotify limit is raised for the hosts before any starts"


def test_inotify_limit_is_raised_for_the_hosts_and_never_lowered(tmp_path):
    limit = tmp_path / "max_user_instances"
    limit.write_text("128\n")
    # 24 hosts + lab-lb + the machine's own: 26 x 32
    assert hosts.raise_inotify_limit(24, path=str(limit)) == 832
    assert limit.read_text() == "832\n"
    limit.write_text("4096\n")
    assert hosts.raise_inotify_limit(24, path=str(limit)) == 4096
    assert limit.read_text() == "4096\n", "a higher setting of the machine's is kept"


def test_hosts_already_running_need_no_new_memory(machine, capsys):
    # 8 of 24 are up: 16 new x 600 + 2048 = 11648 MiB
    machine["running"] = ["lab-%d" % i for i in range(1, 9)]
    machine["available"] = 11648
    with pytest.raises(Started):
        labctl.main(["up", "--hosts", "24"])
    machine["available"] = 11647
    assert labctl.main(["up", "--hosts", "24"]) == 2
    assert "16 new lab host(s)" in capsys.readouterr().err


def test_no_new_host_needs_nothing(machine):
    machine["running"] = ["lab-1", "lab-2"]
    machine["available"] = 0
    with pytest.raises(Started):
        labctl.main(["up", "--hosts", "2"])


def test_trimmed_hosts_per_host_override(machine, monkeypatch, capsys):
    monkeypatch.setenv("AIOPS_LAB_HOST_MIB", "310")
    machine["available"] = 24 * 310 + 2048
    with pytest.raises(Started):
        labctl.main(["up", "--hosts", "24"])
    monkeypatch.setenv("AIOPS_LAB_HOST_MIB", "lots")
    assert labctl.main(["up", "--hosts", "24"]) == 2
    assert "AIOPS_LAB_HOST_MIB must be a whole number of MiB, got 'lots'" in capsys.readouterr().err


def test_mem_available_reads_meminfo():
    with open("/proc/meminfo", encoding="utf-8") as handle:
        line = [x for x in handle if x.startswith("MemAvailable:")][0]
    # the value moves between two reads; it must be the same order of magnitude
    assert abs(hosts.mem_available_mib() - int(line.split()[1]) // 1024) < 1024
