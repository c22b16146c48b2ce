"""A role reads a fact on localhost (hostvars['localhost'][...]) only where that fact is its own (set there with
delegate_facts) or its argument specs name it: no role leans on a fact some playbook happens to leave on the
controller (issue 32)."""

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "roles", "*")) if os.path.isdir(p))
READ = re.compile(r"hostvars\[['\"]localhost['\"]\]\[['\"](\w+)['\"]\]")


def role_text(role, *dirs):
    text = []
    for sub in dirs:
        for path in sorted(glob.glob(os.path.join(ROOT, "roles", role, sub, "*.yml"))):
            with open(path) as handle:
                text.append(handle.read())
    return "\n".join(text)


@pytest.mark.parametrize("role", ROLES)
def test_a_role_reads_only_its_own_or_declared_controller_facts(role):
    code = role_text(role, "tasks", "vars", "defaults", "handlers", "templates")
    tasks, specs = role_text(role, "tasks"), role_text(role, "meta")
    for fact in sorted(set(READ.findall(code))):
        own = re.search(r"^\s+%s:" % re.escape(fact), tasks, re.M) and "delegate_facts: true" in tasks
        assert own or fact in specs, "roles/%s reads hostvars['localhost']['%s'], which it neither sets nor declares" % (role, fact)


def test_the_check_finds_a_read_in_a_role():
    assert READ.findall("{{ hostvars['localhost']['triton_rollout_plan']['order'] }}") == ["triton_rollout_plan"]
