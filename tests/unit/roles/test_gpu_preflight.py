"""No silent CPU: a host whose PCI bus shows NVIDIA GPUs but whose driver does not answer fails preflight.

The host is recorded (tests/fixtures/nvidia_smi/, test doubles): its PCI bus as sysfs shows it, and nvidia-smi's
output when the driver does not answer (rc 9). nvidia_gpu_info runs on them in-process; its result then goes
through the very assert tasks of roles/triton_models and roles/triton_server preflight, run by ansible-playbook.
"""

import glob
import json
import os
import subprocess

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi
from ansible_collections.aiops.triton.plugins.modules import nvidia_gpu_info

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RECORDINGS = os.path.join(ROOT, "tests", "fixtures", "nvidia_smi")
DOUBLE = os.path.join(ROOT, "tests", "doubles", "nvidia-smi.double")
HOST = "gpu-infer-07.dc1.example.com"
BROKEN_TEXT = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
               "Make sure that the latest NVIDIA driver is installed and running.")


def sysfs_from_recording(root, name):
    with open(os.path.join(RECORDINGS, name)) as handle:
        for line in handle.read().splitlines():
            path, value = line.rsplit(":", 1)
            device, attribute = path.split("/")[-2:]
            os.makedirs(os.path.join(root, device), exist_ok=True)
            with open(os.path.join(root, device, attribute), "w") as out:
                out.write(value + "\n")
    return root


@pytest.fixture
def gpu_info(monkeypatch, tmp_path, capsys):
    """nvidia_gpu_info's result on a recorded host: (sysfs recording, nvidia-smi query recording, rc)."""
    def run(pci, query, rc):
        monkeypatch.setattr(smi, "PCI_DEVICES_PATH", sysfs_from_recording(str(tmp_path / "pci"), pci))
        monkeypatch.setattr(smi, "PROC_VERSION_PATH", str(tmp_path / "absent"))
        monkeypatch.setenv("NVIDIA_SMI_DOUBLE_QUERY", os.path.join(RECORDINGS, query))
        monkeypatch.setenv("NVIDIA_SMI_DOUBLE_BANNER", os.path.join(RECORDINGS, "written_h100x8_535.banner.txt"))
        monkeypatch.setenv("NVIDIA_SMI_DOUBLE_RC", str(rc))
        with patch_module_args({"nvidia_smi_path": DOUBLE}):
            with pytest.raises(SystemExit):
                nvidia_gpu_info.main()
        result = json.loads(capsys.readouterr().out)
        for key in ("invocation", "changed", "failed"):  # as gpu_facts keeps it (nvidia_gpu_facts)
            result.pop(key, None)
        return result
    return run


def task(role, name):
    with open(os.path.join(ROOT, "roles", role, "tasks", "preflight.yml")) as handle:
        (found,) = [t for t in yaml.safe_load(handle) if t["name"] == name]
    return found


def run_task(tmp_path, role, name, variables):
    play = [{"name": "preflight assert", "hosts": "all", "gather_facts": False, "vars": variables, "tasks": [task(role, name)]}]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    return subprocess.run(["ansible-playbook", "-i", HOST + ",", "-c", "local", str(path)],
                          capture_output=True, text=True, check=False, timeout=120)


def models_vars(facts):
    """The run's GPU facts as roles/common's gpu_facts entry point sets them: the module's ansible_facts."""
    return {"nvidia_gpu_facts": facts}


def gpu_info_tasks():
    """(path, task) of every task under roles/ that runs aiops.triton.nvidia_gpu_info, blocks included."""
    def walk(tasks):
        for item in tasks or []:
            if not isinstance(item, dict):
                continue
            yield item
            for key in ("block", "rescue", "always"):
                yield from walk(item.get(key))
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "*", "*.yml"))):
        with open(path) as handle:
            tasks = yaml.safe_load(handle)
        if isinstance(tasks, list):
            for item in walk(tasks):
                if "aiops.triton.nvidia_gpu_info" in item or "nvidia_gpu_info" in item:
                    yield os.path.relpath(path, ROOT), item


MODELS_ASSERT = ("triton_models", "Assert the NVIDIA driver answers where the PCI bus shows NVIDIA GPUs")
SERVER_ASSERT = ("triton_server", "Assert the NVIDIA driver answers where the PCI bus shows NVIDIA GPUs (never a silent CPU server)")


def test_broken_driver_fails_triton_models_preflight_naming_host_and_nvidia_smi(gpu_info, tmp_path):
    result = gpu_info("written_sysfs_pci_h100x2.txt", "written_no_driver.txt", 9)
    assert result["host_kind"] == "broken"
    proc = run_task(tmp_path, *MODELS_ASSERT, variables=models_vars(result))
    assert proc.returncode == 2, proc.stdout
    out = " ".join(proc.stdout.split())
    assert ("%s: the PCI bus shows 2 NVIDIA GPU(s) (0000:1b:00.0, 0000:43:00.0) but nvidia-smi lists none" % HOST) in out
    assert BROKEN_TEXT in out


def test_the_gpus_are_read_in_one_place_once_per_run_unless_refreshed():
    """Exactly one task under roles/ runs nvidia_gpu_info: roles/common's gpu_facts entry point, which reads only when the
    run has no GPU facts yet or its caller asks for a refresh, also in check mode; the module returns nvidia_gpu_facts;
    every other role enters it (site.yml: the models play judges the reading an earlier play made)."""
    found = list(gpu_info_tasks())
    assert [path for path, task in found] == [os.path.join("roles", "common", "tasks", "gpu_facts.yml")], found
    read = found[0][1]
    assert read["when"] == "nvidia_gpu_facts is not defined or _common_gpu_facts_refresh | bool"
    assert read["check_mode"] is False and "register" not in read  # the module sets nvidia_gpu_facts (ansible_facts)
    with open(os.path.join(ROOT, "roles", "common", "tasks", "gpu_facts.yml")) as handle:
        assert not [t for t in yaml.safe_load(handle) if "ansible.builtin.set_fact" in t]


@pytest.mark.parametrize("role, path", [
    ("nvidia_driver", "preflight.yml"), ("nvidia_driver", "verify.yml"), ("nvidia_container_toolkit", "preflight.yml"),
    ("triton_server", "preflight.yml"), ("triton_models", "preflight.yml"), ("triton_models", "rollback.yml"),
    ("triton_models", "fleet_state.yml"),
])
def test_each_former_reader_enters_the_gpu_facts_entry_point(role, path):
    with open(os.path.join(ROOT, "roles", role, "tasks", path)) as handle:
        text = handle.read()
    assert "name: aiops.triton.common\n" in text and "tasks_from: gpu_facts\n" in text, "%s/%s" % (role, path)


def test_broken_driver_fails_triton_server_preflight_unless_cpu_is_chosen(gpu_info, tmp_path):
    result = gpu_info("written_sysfs_pci_h100x2.txt", "written_no_driver.txt", 9)
    proc = run_task(tmp_path, *SERVER_ASSERT, variables={"nvidia_gpu_facts": result, "triton_server_install_method": "native",
                                                         "triton_server_native_device": "auto"})
    assert proc.returncode == 2, proc.stdout
    out = " ".join(proc.stdout.split())
    assert HOST in out and BROKEN_TEXT in out and "triton_server_native_device=cpu" in out
    chosen = run_task(tmp_path, *SERVER_ASSERT, variables={"nvidia_gpu_facts": result, "triton_server_install_method": "native",
                                                           "triton_server_native_device": "cpu"})
    assert chosen.returncode == 0, chosen.stdout


@pytest.mark.parametrize("pci,query,rc,kind", [
    ("written_sysfs_pci_cpu_only.txt", "written_no_driver.txt", 9, "cpu"),  # no NVIDIA device at all
    ("written_sysfs_pci_h100x2.txt", "written_h100x8_535.csv", 0, "gpu"),
])
def test_cpu_and_gpu_hosts_pass(gpu_info, tmp_path, pci, query, rc, kind):
    result = gpu_info(pci, query, rc)
    assert result["host_kind"] == kind
    proc = run_task(tmp_path, *MODELS_ASSERT, variables=models_vars(result))
    assert proc.returncode == 0, proc.stdout
