"""gpu_consistency: nvidia_gpu_info's expected_driver_version / expected_gpu_count check, run on facts already read.

The module's own end-to-end cases against the nvidia-smi double (tests/unit/plugins/modules/test_nvidia_gpu_info.py)
show the filter on a reading made without expectations gives the module's problems with them; these are the edges.
"""

import json
import os
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.gpu_facts import FilterModule, gpu_consistency

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def gpu(index, driver="535.154.05"):
    return {"index": index, "name": "NVIDIA H100 80GB HBM3", "driver_version": driver}


FACTS = {"status": "ok", "host_kind": "gpu", "gpus": [gpu(0), gpu(1)], "gpu_count": 2, "driver_version": "535.154.05",
         "kernel_module": {"version": "535.154.05", "flavor": "open"}, "fabricmanager_version": None, "problems": []}


def test_consistent_facts_have_no_problems():
    assert gpu_consistency(FACTS, "535.154.05", 2) == []
    assert gpu_consistency(FACTS, "535", "2") == []  # a branch; a count as the inventory may give it


@pytest.mark.parametrize("version, count", [(None, None), ("", 0), (None, "0"), ("", None)])
def test_no_expectation_checks_only_the_components_against_each_other(version, count):
    assert gpu_consistency(FACTS, version, count) == []
    stale = dict(FACTS, kernel_module={"version": "535.129.03", "flavor": "open"})
    assert gpu_consistency(stale, version, count) == [
        "nvidia-smi driver 535.154.05 != loaded kernel module 535.129.03 (NVML/driver mismatch: reboot or reload the module)"]


def test_every_mismatch_is_named():
    facts = dict(FACTS, gpus=[gpu(0, "535.183.01")], fabricmanager_version="535.161.07")
    assert gpu_consistency(facts, "550", 8) == [
        "expected 8 GPUs, nvidia-smi lists 1",
        "nvidia-smi driver 535.183.01 != loaded kernel module 535.154.05 (NVML/driver mismatch: reboot or reload the module)",
        "nvidia-smi driver 535.183.01 does not match pinned 550",
        "kernel module 535.154.05 does not match pinned 550",
        "fabric manager 535.161.07 does not match pinned 550",
        "fabric manager 535.161.07 != driver 535.183.01",
    ]


def test_a_host_without_a_listed_gpu_fails_only_the_count():
    facts = dict(FACTS, status="no_driver", host_kind="broken", gpus=[], gpu_count=0, kernel_module=None)
    assert gpu_consistency(facts, "535.154.05", 1) == ["expected 1 GPUs, nvidia-smi lists 0"]
    assert gpu_consistency(facts, "535.154.05", None) == []


@pytest.mark.parametrize("facts, count, message", [
    ("ok", None, "expects an nvidia_gpu_info result"),
    ({"changed": False, "skipped": True}, None, "no gpus list"),
    (FACTS, "eight", "expected_gpu_count must be a number"),
])
def test_what_is_no_reading_is_refused(facts, count, message):
    with pytest.raises(AnsibleFilterError, match=message):
        gpu_consistency(facts, "535", count)


def test_registered_under_its_name():
    assert FilterModule().filters()["gpu_consistency"] is gpu_consistency


def test_callable_by_fqcn_from_a_playbook(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "vars": {"facts": FACTS}, "tasks": [
        {"ansible.builtin.debug": {"msg": "{{ facts | aiops.triton.gpu_consistency('550', 2) | to_json }}"}}]}]))
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", str(play)],
                          capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kernel module 535.154.05 does not match pinned 550" in proc.stdout
