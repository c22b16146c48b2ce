"""Every role's meta/argument_specs.yml mirrors its defaults/main.yml (names and default values)."""

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Internal role: no public variables; entered with include_role + tasks_from, one spec per entry point.
INTERNAL = "common"
ROLES = sorted(
    name for name in os.listdir(os.path.join(ROOT, "roles"))
    if os.path.isdir(os.path.join(ROOT, "roles", name)) and name != INTERNAL
)


def load(role, *parts):
    path = os.path.join(ROOT, "roles", role, *parts)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_mirror_defaults(role):
    specs = load(role, "meta", "argument_specs.yml")
    assert specs is not None, "roles/%s has no meta/argument_specs.yml" % role
    defaults = load(role, "defaults", "main.yml") or {}
    entries = specs["argument_specs"]
    if "main" in entries:
        options = entries["main"].get("options", {})
    else:  # a role entered only at its entry points (triton_rollout, one per play): their options with a default
        options = dict((name, option) for entry in entries.values() for name, option in (entry.get("options") or {}).items()
                       if "default" in option)
    assert sorted(options) == sorted(defaults), "argument_specs and defaults name different variables"
    for name, value in defaults.items():
        assert options[name].get("default") == value, "%s: default differs between the two files" % name
        assert options[name].get("description"), "%s has no description" % name


@pytest.mark.parametrize("role", ROLES)
def test_public_variables_carry_the_role_prefix(role):
    defaults = load(role, "defaults", "main.yml") or {}
    prefix = role + "_"
    strays = [n for n in defaults if n != role and not n.startswith(prefix)]
    assert not strays, strays


def test_internal_role_entry_points_mirror_its_task_files_and_fallbacks():
    specs = load(INTERNAL, "meta", "argument_specs.yml")["argument_specs"]
    fallbacks = load(INTERNAL, "vars", "main.yml")
    assert load(INTERNAL, "defaults", "main.yml") is None, "the internal role has no public variables"
    for entry, spec in specs.items():
        assert os.path.exists(os.path.join(ROOT, "roles", INTERNAL, "tasks", entry + ".yml")), entry
        for name, option in spec.get("options", {}).items():
            assert name.startswith("_" + INTERNAL + "_"), name
            assert option.get("description"), "%s has no description" % name
            if option.get("required"):
                assert name not in fallbacks, "%s is required but has a fallback" % name
            else:
                assert fallbacks[name] == option.get("default"), "%s: default differs from vars/main.yml" % name


def _includes_of_the_internal_role():
    for role in ROLES:
        tasks_dir = os.path.join(ROOT, "roles", role, "tasks")
        for file_name in sorted(os.listdir(tasks_dir)):
            for task in load(role, "tasks", file_name) or []:
                include = task.get("ansible.builtin.include_role") or {}
                if include.get("name") == "aiops.triton." + INTERNAL:
                    yield "%s/%s: %s" % (role, file_name, task["name"]), include, task.get("vars", {})


def test_callers_name_an_entry_point_and_pass_its_required_parameters():
    specs = load(INTERNAL, "meta", "argument_specs.yml")["argument_specs"]
    includes = list(_includes_of_the_internal_role())
    assert includes, "no role includes the internal role"
    for where, include, params in includes:
        # tasks_from without ".yml": only then does Ansible find the entry point's spec and validate.
        entry = include.get("tasks_from")
        assert entry in specs and entry != "main", "%s: tasks_from %r is no entry point" % (where, entry)
        required = [n for n, o in specs[entry].get("options", {}).items() if o.get("required")]
        missing = [n for n in required if n not in params]
        assert not missing, "%s lacks %s" % (where, missing)
        assert not [n for n in params if n not in specs[entry].get("options", {})], where


@pytest.mark.parametrize("role", ROLES + [INTERNAL])
def test_every_role_has_galaxy_metadata(role):
    """galaxy-importer (the artifact stage) refuses a role without meta/main.yml; found here, in seconds."""
    meta = load(role, "meta", "main.yml")
    assert meta and meta["galaxy_info"].get("description"), "roles/%s has no meta/main.yml with a description" % role
    assert meta.get("dependencies") == [], role
