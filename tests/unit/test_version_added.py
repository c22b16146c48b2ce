"""version_added names a release of this collection: one in changelogs/changelog.yaml, or the one being
prepared (galaxy.yml's version). Never a version that does not exist, like the 1.x numbers 0.1.0 carried."""

import ast
import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def releases():
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml")) as handle:
        released = set(yaml.safe_load(handle)["releases"])
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        return released | {yaml.safe_load(handle)["version"]}


def version_added(node, path=""):
    """(path, value) of every version_added in a documentation tree."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "version_added":
                yield path or "(plugin)", str(value)
            else:
                yield from version_added(value, "%s.%s" % (path, key) if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from version_added(value, "%s[%d]" % (path, index))


def documents(path):
    if path.endswith(".py"):
        tree = ast.parse(open(path).read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("DOCUMENTATION", "RETURN"):
                yield yaml.safe_load(node.value.value)
    else:
        yield yaml.safe_load(open(path))


FILES = sorted(glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True)
               + glob.glob(os.path.join(ROOT, "plugins", "**", "*.yml"), recursive=True)
               + glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_version_added_is_a_release(path):
    known = releases()
    wrong = ["%s: %s" % found for doc in documents(path) for found in version_added(doc) if found[1] not in known]
    assert not wrong, "version_added must be one of %s: %s" % (sorted(known), wrong)


def test_the_files_are_found():
    assert any(p.endswith("triton_model_config.py") for p in FILES) and any(p.endswith("argument_specs.yml") for p in FILES)
