"""Every module in an action group of meta/runtime.yml says so in its documented attributes (action_group,
from the aiops.triton.attributes fragment), naming exactly its groups; modules in no group claim none.
Read through ansible-doc, so what is checked is the documentation users see, fragments merged."""

import glob
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def runtime_groups():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        return yaml.safe_load(handle)["action_groups"]


def documented_attributes(tmp_path):
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                     if not os.path.basename(p).startswith("_"))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"),
               ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"))
    doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    proc = subprocess.run([doc, "--json"] + ["aiops.triton.%s" % m for m in modules],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert sorted(found) == ["aiops.triton.%s" % m for m in modules]
    return dict((name.split(".")[-1], entry["doc"]["attributes"]) for name, entry in found.items())


def test_action_group_attributes_match_meta_runtime(tmp_path):
    groups = runtime_groups()
    assert groups, "meta/runtime.yml has no action_groups"
    member_of = {}
    for group, modules in groups.items():
        for module in modules:
            member_of.setdefault(module, []).append("aiops.triton.%s" % group)
    attributes = documented_attributes(tmp_path)
    assert set(member_of) <= set(attributes), "action_groups name modules that do not exist"
    for module, attrs in sorted(attributes.items()):
        if module not in member_of:
            assert "action_group" not in attrs, "%s is in no action group but documents one" % module
            continue
        group = attrs.get("action_group")
        assert group, "%s is in %s but its attributes have no action_group" % (module, member_of[module])
        assert sorted(group["membership"]) == sorted(member_of[module]), module
        assert group["support"] == "full", module
        for fqcn in member_of[module]:
            assert "C(group/%s)" % fqcn in group["description"], module


def test_check_and_diff_mode_say_what_the_code_does(tmp_path):
    """check_mode is supported by every module (supports_check_mode=True); diff_mode is full exactly where
    the module reads module._diff to return a diff, none elsewhere."""
    for module, attrs in sorted(documented_attributes(tmp_path).items()):
        with open(os.path.join(ROOT, "plugins", "modules", module + ".py")) as handle:
            source = handle.read()
        assert ("supports_check_mode=True" in source) == (attrs["check_mode"]["support"] in ("full", "partial")), module
        assert attrs["diff_mode"]["support"] == ("full" if "module._diff" in source else "none"), module
