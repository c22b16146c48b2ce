"""Every inventory the project ships a run against passes the validation play (playbooks/validate.yml).

The molecule scenarios link some of the lab's group_vars (molecule/<s>/group_vars/triton_servers/*.yml), so a
change to the lab's (a third rollout group) once reached molecule/lb, which has two, and failed its converge
only 30 minutes into CI. Each case builds the inventory as molecule (provisioner.inventory.links plus one group
per platform) or `labctl up` writes it, and runs the real validate.yml on it: no host is contacted.
"""

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab"))

from labctl_lib import common, hosts  # noqa: E402  (lab/ is not a package on the path)


def _scenarios():
    found = []
    for name in sorted(os.listdir(os.path.join(ROOT, "molecule"))):
        path = os.path.join(ROOT, "molecule", name, "molecule.yml")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                config = yaml.safe_load(handle)
            links = config.get("provisioner", {}).get("inventory", {}).get("links", {})
            if "group_vars" in links:
                found.append(name)
    return found


def _env():
    # what `labctl.py env` exports, written here: validation reads them, no host or S3 is reached
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_FORCE_COLOR="0",
                AIOPS_LAB_MODEL_DIR=os.path.join(ROOT, "model_repository"),
                AIOPS_LAB_TRITON_API_KEY="0123456789abcdef0123456789abcdef", AIOPS_LAB_S3_ENDPOINT="http://127.0.0.1:9",
                AIOPS_LAB_WHEELHOUSE="http://127.0.0.1:9/", AWS_ACCESS_KEY_ID="written", AWS_SECRET_ACCESS_KEY="written")


def _validate(inventory):
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                           os.path.join(ROOT, "playbooks", "validate.yml")],
                          env=_env(), capture_output=True, text=True, timeout=300, check=False)


def _triton_hosts(inventory_dir):
    names = set()
    for path in inventory_dir.glob("*.yml"):
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
        for group in data.get("triton_servers", {}).get("children", {}).values():
            names.update((group or {}).get("hosts") or {})
        names.update(data.get("triton_servers", {}).get("hosts") or {})
    return names


@pytest.mark.integration
@pytest.mark.parametrize("scenario", _scenarios())
def test_molecule_scenario_inventory_is_valid(scenario, tmp_path):
    base = os.path.join(ROOT, "molecule", scenario)
    with open(os.path.join(base, "molecule.yml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    # molecule's own part: each platform in its groups
    groups = {}
    for platform in config["platforms"]:
        for group in platform.get("groups", []):
            groups.setdefault(group, {"hosts": {}})["hosts"][platform["name"]] = None
    with open(inventory / "platforms.yml", "w", encoding="utf-8") as handle:
        yaml.safe_dump(groups, handle)
    # the scenario's links, symlinks followed as molecule's copy does
    for kind, source in config["provisioner"]["inventory"]["links"].items():
        source = os.path.join(base, source)
        if kind == "hosts":
            shutil.copy(source, inventory / "hosts.yml")
        else:
            shutil.copytree(source, inventory / kind)
    result = _validate(inventory)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "Inventory valid: %d Triton hosts." % len(_triton_hosts(inventory)) in out, out
    if "hosts" in config["provisioner"]["inventory"]["links"]:
        # the scenario's rollout order is its own groups, canary first (not the default: all at once)
        with open(inventory / "hosts.yml", encoding="utf-8") as handle:
            own = list(yaml.safe_load(handle)["triton_servers"]["children"])
        host = sorted(_triton_hosts(inventory))[0]
        shown = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(inventory),
                                "--host", host], capture_output=True, text=True, timeout=120, check=True,
                               env=_env())
        assert yaml.safe_load(shown.stdout)["triton_rollout_groups"] == own


@pytest.mark.integration
@pytest.mark.parametrize("count", [1, 2, 5])
def test_lab_inventory_is_valid(count, tmp_path, monkeypatch):
    inventory = tmp_path / "lab"
    shutil.copytree(os.path.join(ROOT, "inventories", "lab"), inventory, ignore=shutil.ignore_patterns("hosts.yml"))
    monkeypatch.setattr(common, "INVENTORY", str(inventory / "hosts.yml"))
    hosts.write_inventory(["lab-%d" % n for n in range(1, count + 1)])
    result = _validate(inventory)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "Inventory valid: %d Triton hosts." % count in out, out
