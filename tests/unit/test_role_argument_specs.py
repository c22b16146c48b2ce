"""Every role's meta/argument_specs.yml mirrors its defaults/main.yml (names and default values)."""

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(
    name for name in os.listdir(os.path.join(ROOT, "roles"))
    if os.path.isdir(os.path.join(ROOT, "roles", name)) and not name.startswith("_")
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
    options = specs["argument_specs"]["main"].get("options", {})
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
