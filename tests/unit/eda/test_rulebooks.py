"""The Event-Driven Ansible rulebooks (extensions/eda/rulebooks/) against the alert rules and each other (issue 34)."""

import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RULEBOOKS = os.path.join(ROOT, "extensions", "eda", "rulebooks")
LOCAL = os.path.join(RULEBOOKS, "alertmanager_remediation.yml")
AAP = os.path.join(RULEBOOKS, "alertmanager_remediation_aap.yml")
RULES = os.path.join(ROOT, "roles", "triton_monitoring", "templates", "aiops-triton.rules.yml.j2")
REMEDIATIONS = {"gpu_unhealthy": "quarantine", "triton_not_ready": "restart", "drift": "drift_check"}


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def alert_names():
    with open(RULES) as handle:
        return set(re.findall(r"^\s*- alert:\s*(\w+)\s*$", handle.read(), flags=re.M))


def ruleset(path):
    (only,) = load(path)
    return only


@pytest.mark.parametrize("path", [LOCAL, AAP])
def test_one_ruleset_on_the_triton_hosts_from_the_alertmanager_source(path):
    rules = ruleset(path)
    assert rules["name"] == "aiops.triton alert remediation"
    assert rules["hosts"] == "triton_servers"
    assert rules["execution_strategy"] == "sequential"
    (source,) = rules["sources"]
    args = source["aiops.triton.alertmanager"]
    assert set(args) >= {"host", "port", "token"}
    assert "AIOPS_EDA_TOKEN" in args["token"]
    assert [r["name"] for r in rules["rules"]] == list(REMEDIATIONS)


@pytest.mark.parametrize("path", [LOCAL, AAP])
def test_every_rule_is_throttled_per_host_alert_and_firing(path):
    for rule in ruleset(path)["rules"]:
        assert rule["throttle"] == {"once_within": "10 minutes", "group_by_attributes": [
            "event.meta.hosts", "event.alert.labels.alertname", "event.alert.startsAt"]}, rule["name"]
        assert 'event.alert.status == "firing"' in rule["condition"], rule["name"]


@pytest.mark.parametrize("path", [LOCAL, AAP])
def test_every_alertname_in_a_condition_is_an_alert_rule(path):
    known = alert_names()
    assert {"TritonGPUUnhealthy", "TritonDown", "TritonNotReady"} <= known, "the rules template reader is broken"
    for rule in ruleset(path)["rules"]:
        named = re.findall(r'"(Triton\w+)"', rule["condition"])
        assert named, "%s names no alert" % rule["name"]
        missing = sorted(set(named) - known)
        assert not missing, "%s: no such alert in %s: %s" % (rule["name"], os.path.relpath(RULES, ROOT), missing)


def test_the_rules_run_the_gate_with_their_remediation():
    for rule in ruleset(LOCAL)["rules"]:
        action = rule["action"]["run_playbook"]
        assert action["name"] == "aiops.triton.eda_remediate"
        assert action["extra_vars"]["triton_remediation_action"] == REMEDIATIONS[rule["name"]]
        assert os.path.exists(os.path.join(ROOT, "playbooks", "eda_remediate.yml"))
        # every setting the rule passes is a variable of the gate's role (a typo would be silently ignored there)
        with open(os.path.join(ROOT, "roles", "triton_remediation", "meta", "argument_specs.yml")) as handle:
            options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
        assert set(action["extra_vars"]) <= set(options), sorted(set(action["extra_vars"]) - set(options))


def test_the_aap_rulebook_differs_only_in_the_action():
    local, aap = ruleset(LOCAL), ruleset(AAP)
    assert {k: v for k, v in local.items() if k != "rules"} == {k: v for k, v in aap.items() if k != "rules"}
    assert len(local["rules"]) == len(aap["rules"])
    for mine, theirs in zip(local["rules"], aap["rules"]):
        assert {k: v for k, v in mine.items() if k != "action"} == {k: v for k, v in theirs.items() if k != "action"}
        template = theirs["action"]["run_job_template"]
        assert template["job_args"]["limit"] == "{{ event.meta.hosts }}"
        assert template["job_args"]["extra_vars"] == mine["action"]["run_playbook"]["extra_vars"]
        assert set(template) == {"name", "organization", "job_args"}


@pytest.mark.parametrize("path", [LOCAL, AAP])
def test_the_rulebook_is_valid_for_ansible_rulebook(path):
    pytest.importorskip("ansible_rulebook", reason="ansible-rulebook is not installed: its schema check cannot run")
    from ansible_rulebook.rules_parser import parse_rule_sets
    from ansible_rulebook.validators import Validate

    data = load(path)
    Validate.rulebook(data)  # the JSON schema ansible-rulebook loads a rulebook with; raises when invalid
    (parsed,) = parse_rule_sets(data, {"AIOPS_EDA_TOKEN": "token"})  # conditions compile
    assert [rule.name for rule in parsed.rules] == list(REMEDIATIONS)
    assert [action.action for rule in parsed.rules for action in rule.actions] == \
        ["run_job_template" if path == AAP else "run_playbook"] * len(REMEDIATIONS)


@pytest.mark.parametrize("path", [LOCAL, AAP])
def test_the_source_arguments_render_as_ansible_rulebook_renders_them(path):
    pytest.importorskip("ansible_rulebook", reason="ansible-rulebook is not installed: its templating cannot run")
    from ansible_rulebook.util import substitute_variables

    (source,) = ruleset(path)["sources"]
    args = substitute_variables(source["aiops.triton.alertmanager"], {"AIOPS_EDA_TOKEN": "token"})
    assert args == {"host": "127.0.0.1", "port": 5050, "token": "token"}
    args = substitute_variables(source["aiops.triton.alertmanager"],
                                {"AIOPS_EDA_TOKEN": "token", "aiops_eda_listen_host": "0.0.0.0", "aiops_eda_listen_port": 9000})
    assert args == {"host": "0.0.0.0", "port": 9000, "token": "token"}
