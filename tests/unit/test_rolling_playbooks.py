"""The rolling playbooks' shape: the plan the model rollout uses, batches that stop at the first failure,
and triton_server.yml's check pass hearing the role's restart notification by its real name."""

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN_PATTERN = "{{ hostvars['localhost']['aiops_rollout_plan']['pattern'] | default('triton_servers') }}"
PLAN_BATCHES = "{{ hostvars['localhost']['aiops_rollout_plan']['batches'] | default(1) }}"


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def serial_plays(playbook):
    return [p for p in load("playbooks", playbook) if "serial" in p]


@pytest.mark.parametrize("playbook", ["triton_server.yml", "reboot.yml", "nvidia_driver_upgrade.yml"])
def test_operations_roll_in_plan_batches_and_stop_at_the_first_failure(playbook):
    plays = load("playbooks", playbook)
    assert plays[0].get("ansible.builtin.import_playbook") == "rolling_plan.yml"
    (rolling,) = serial_plays(playbook)
    assert rolling["hosts"].startswith(PLAN_PATTERN[:-2].rsplit(" |", 1)[0]) or rolling["hosts"] == PLAN_PATTERN
    assert rolling["serial"] == PLAN_BATCHES
    assert rolling["max_fail_percentage"] == 0
    includes = [t["ansible.builtin.include_role"] for t in rolling["tasks"] if "ansible.builtin.include_role" in t]
    assert includes == [{"name": "aiops.triton.triton_rolling"}]


def test_the_plan_is_the_model_rollouts():
    ours = load("playbooks", "rolling_plan.yml")[0]["tasks"][0]["ansible.builtin.set_fact"]
    models = load("playbooks", "models.yml")[0]["tasks"][0]["ansible.builtin.set_fact"]
    assert ours == models


def test_the_check_pass_hears_every_notification_of_the_triton_server_role():
    check = load("playbooks", "triton_server.yml")[1]
    assert check["check_mode"] is True
    heard = set()
    for handler in check["handlers"]:
        heard.update([handler["listen"]] if isinstance(handler["listen"], str) else handler["listen"])
    role_handlers = {h["name"] for h in load("roles", "triton_server", "handlers", "main.yml")}
    assert "Restart tritonserver" in role_handlers and "Restart tritonserver" in heard
    include = check["tasks"][1]["block"][0]["ansible.builtin.include_role"]
    assert include["name"] == "aiops.triton.triton_server" and include["apply"]["notify"] in heard
    notified = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "triton_server", "tasks", "*.yml")):
        stack = list(yaml.safe_load(open(path)) or [])
        while stack:
            task = stack.pop()
            stack.extend(task.get("block", []) + task.get("rescue", []) + task.get("always", []))
            note = task.get("notify", [])
            notified.update([note] if isinstance(note, str) else note)
    # a task with a notify of its own does not notify the apply's topic: each of its handlers must be heard
    assert notified <= role_handlers <= heard, (notified, role_handlers, heard)
    restart = [h for h in check["handlers"] if "Restart tritonserver" in h["listen"]]
    assert restart and all(h["ansible.builtin.set_fact"].get("__triton_server_would_restart") for h in restart)
