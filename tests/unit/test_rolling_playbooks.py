"""The rolling playbooks' shape: the plan the model rollout uses, batches that stop at the first failure,
and triton_server.yml's check pass hearing the role's restart notification by its real name."""

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN_PATTERN = "{{ hostvars['localhost']['triton_rollout_plan']['pattern'] | default('triton_servers') }}"
PLAN_BATCHES = "{{ hostvars['localhost']['triton_rollout_plan']['batches'] | default(1) }}"


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def serial_plays(playbook):
    return [p for p in load("playbooks", playbook) if "serial" in p]


@pytest.mark.parametrize("playbook", ["triton_server.yml", "reboot.yml", "restart.yml", "nvidia_driver_upgrade.yml"])
def test_operations_roll_in_plan_batches_and_stop_at_the_first_failure(playbook):
    plays = load("playbooks", playbook)
    assert plays[0].get("ansible.builtin.import_playbook") == "rolling_plan.yml"
    (rolling,) = serial_plays(playbook)
    assert rolling["hosts"].startswith(PLAN_PATTERN[:-2].rsplit(" |", 1)[0]) or rolling["hosts"] == PLAN_PATTERN
    assert rolling["serial"] == PLAN_BATCHES
    assert rolling["max_fail_percentage"] == 0
    includes = [t["ansible.builtin.include_role"] for t in rolling["tasks"] if "ansible.builtin.include_role" in t]
    assert includes == [{"name": "aiops.triton.triton_rolling"}]


def test_the_model_rollout_is_the_triton_rollout_roles_entry_points_on_the_shared_plan():
    """models.yml plans with rolling_plan.yml, like every rolling operation, and each play after it is one entry point."""
    plays = load("playbooks", "models.yml")
    assert plays[0]["ansible.builtin.import_playbook"] == "rolling_plan.yml"
    (plan,) = load("playbooks", "rolling_plan.yml")
    assert [t["ansible.builtin.import_role"] for t in plan["tasks"]] == [{"name": "aiops.triton.triton_rollout", "tasks_from": "plan"}]
    check, rollout, summary = plays[1:]
    assert check["check_mode"] is True and check["hosts"] == "triton_servers"
    assert [t["ansible.builtin.import_role"]["tasks_from"] for t in check["tasks"]] == ["check"]
    assert (rollout["hosts"], rollout["serial"], rollout["max_fail_percentage"]) == (PLAN_PATTERN, PLAN_BATCHES, 0)
    assert [t["ansible.builtin.import_role"] for t in rollout["tasks"]] == [{"name": "aiops.triton.triton_rollout", "tasks_from": "batch"}]
    assert summary["tasks"][0]["ansible.builtin.include_role"] == {"name": "aiops.triton.triton_rolling", "tasks_from": "summary"}


def test_no_play_is_copied_between_playbooks():
    """A play's tasks written twice would drift apart; a shared play is imported (rolling_plan.yml) or a role's."""
    seen = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))):
        for play in load(path):
            for section in ("pre_tasks", "tasks", "post_tasks"):
                for task in play.get(section) or []:
                    body = dict((k, v) for k, v in task.items() if k != "name")
                    if any(k in body for k in ("block", "ansible.builtin.set_fact", "ansible.builtin.assert")):
                        key = yaml.safe_dump(body, sort_keys=True)
                        assert seen.setdefault(key, path) == path, (
                            "task %r of %s is a copy of one in %s" % (task.get("name"), path, seen[key]))


def test_the_rollout_roles_bake_settings_are_the_bake_modules():
    """The bake's variables are declared once, in the triton_rollout role, with the same names the validation's check
    (module_utils/rollout_bake.py SETTINGS) knows."""
    from ansible_collections.aiops.triton.plugins.module_utils.rollout_bake import SETTINGS
    from ansible_collections.aiops.triton.plugins.module_utils.fleet import FLEET_VARIABLES

    specs = load("roles", "triton_rollout", "meta", "argument_specs.yml")["argument_specs"]
    bake = set(specs["bake"]["options"])
    assert bake == set(SETTINGS) | {"triton_rollout_bake_metrics_url"}
    assert specs["batch"]["options"] == specs["bake"]["options"]
    defaults = load("roles", "triton_rollout", "defaults", "main.yml")
    assert defaults == dict(
        (k, o["default"]) for k, o in specs["bake"]["options"].items() if "default" in o)
    assert not FLEET_VARIABLES & (bake | set(specs["plan"]["options"]))


def role_tasks(role):
    for path in glob.glob(os.path.join(ROOT, "roles", role, "tasks", "*.yml")):
        stack = list(load(path) or [])
        while stack:
            task = stack.pop()
            stack.extend(task.get("block", []) + task.get("rescue", []) + task.get("always", []))
            yield path, task


def topics(handler):
    listen = handler.get("listen", [])
    return {handler["name"]} | set([listen] if isinstance(listen, str) else listen)


def test_the_check_pass_reads_the_roles_result_not_its_handler_names():
    """playbooks/triton_server.yml's check play (triton_rolling's server_check) learns whether a host would change and
    restart from triton_server_result, which the role sets from its own notes (handlers/main.yml); nothing hears a
    handler of the role."""
    check = load("playbooks", "triton_server.yml")[1]
    assert check["check_mode"] is True and "handlers" not in check
    assert [t["ansible.builtin.import_role"] for t in check["tasks"]] == [{"name": "aiops.triton.triton_rolling", "tasks_from": "server_check"}]
    block = next(t for t in load("roles", "triton_rolling", "tasks", "server_check.yml") if "block" in t)["block"]
    include = block[0]["ansible.builtin.include_role"]
    assert include == {"name": "aiops.triton.triton_server"}, include
    noted = block[1]["ansible.builtin.set_fact"]
    assert noted == {"triton_rolling_server_check": {"changed": "{{ triton_server_result.changed }}",
                                                     "restart": "{{ triton_server_result.restart }}"}}
    for path in (("playbooks", "triton_server.yml"), ("roles", "triton_rolling", "tasks", "server_check.yml")):
        text = open(os.path.join(ROOT, *path)).read()
        assert "listen" not in text and "Restart tritonserver" not in text


def test_a_preview_is_the_check_pass_alone_and_a_failed_check_fails_its_host():
    """--check: the check pass notes every host's outcome (a failed check named as failed, not "would change") and fails
    a host whose check failed; the set-up and batch plays end every host in check mode."""
    plays = load("playbooks", "triton_server.yml")
    assert plays[1]["diff"] == "{{ ansible_check_mode and ansible_diff_mode }}"
    check = load("roles", "triton_rolling", "tasks", "server_check.yml")
    rescued = next(t for t in check if "rescue" in t)["rescue"][0]["ansible.builtin.set_fact"]["triton_rolling_server_check"]
    assert rescued["error"].startswith("{{ ansible_failed_result.msg") and rescued["changed"] is rescued["restart"] is True
    noted = next(t for t in check if t["name"] == "Note this host's outcome")
    assert noted["when"] == "not triton_rolling_server_check.changed or ansible_check_mode"
    outcome = noted["ansible.builtin.set_fact"]["triton_rolling_result"]["outcome"]
    assert outcome.index("'failed (check mode): '") < outcome.index("'would be set up (not serving)'"), outcome
    failing = check[-1]
    assert "ansible.builtin.fail" in failing and failing["when"] == "ansible_check_mode and triton_rolling_server_check.error is defined"
    setup = load("roles", "triton_rolling", "tasks", "server_setup.yml")
    assert [t["ansible.builtin.import_role"]["tasks_from"] for t in plays[2]["tasks"]] == ["server_setup"]
    for ends in (setup[0], plays[3]["pre_tasks"][0]):
        assert ends["ansible.builtin.meta"] == "end_host" and ends["when"].endswith(" or ansible_check_mode"), ends["name"]


def test_every_change_of_the_triton_server_role_is_noted_in_its_result():
    handlers = load("roles", "triton_server", "handlers", "main.yml")
    heard = set().union(*(topics(h) for h in handlers))
    notes = {h["listen"]: h for h in handlers if h["name"].startswith("Note ")}
    steps = [t for t in load("roles", "triton_server", "tasks", "main.yml") if "ansible.builtin.include_tasks" in t]
    # every step that can change the host notes its change (a notify of its own replaces the apply's)
    for step in steps:
        assert step["ansible.builtin.include_tasks"]["apply"]["notify"] in notes, step["name"]
    for path, task in role_tasks("triton_server"):
        note = task.get("notify", [])
        note = [note] if isinstance(note, str) else note
        assert set(note) <= heard, (path, task["name"], note)
        if note:
            assert set(note) & set(notes), ("a task that notifies its own handler also names its step", path, task["name"])
    assert "__triton_server_restarts" in notes["Restart tritonserver"]["ansible.builtin.set_fact"]
    result = load("roles", "triton_server", "tasks", "result.yml")
    assert result[0]["ansible.builtin.meta"] == "flush_handlers"
    assert set(result[1]["ansible.builtin.set_fact"]["triton_server_result"]) == {"changed", "changes", "restart", "check_mode"}
