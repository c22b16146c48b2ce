"""keep_keys and drop_keys: a dict or each dict of a list with only / without the named top-level keys,
the same as the dict2items / selectattr / items2dict chains the roles used to write out (each call site's
chain is rendered by Ansible's own Templar and compared), and callable by FQCN from a playbook."""

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.aiops.triton.plugins.filter.keys import FilterModule, drop_keys, keep_keys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# Shapes the call sites see: a loop's results (item, ansible_loop_var, invocation, diff with its own
# before/after), models from the inventory (verify, latency_budget), a module result.
RESULTS = [
    {"name": "simple", "before": [1], "after": [1, 2], "changed": True, "item": {"name": "simple"},
     "ansible_loop_var": "item", "invocation": {"module_args": {"name": "simple"}}, "failed": False},
    {"changed": False, "skipped": True, "item": {"name": "other"}, "ansible_loop_var": "item"},
    {"item": {"name": "ens"}, "changed": True, "diff": {"before": "a", "after": "b", "before_header": "x"},
     "msg": "drift", "failed": False, "ansible_loop_var": "item"},
]
MODELS = [
    {"name": "simple", "versions": [1, 2], "verify": True, "latency_budget": {"p99_ms": 5}},
    {"name": "ens", "versions": [3], "latest": 1},
    {"versions": [1], "source": "s3"},
    {},
]
MODULE_RESULT = {"changed": False, "gpus": [{"index": 0}], "pci": {"gpus": []},
                 "invocation": {"module_args": {}}, "failed": False}


def render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


@pytest.mark.parametrize("chain,keys", [
    # roles/triton_models/tasks/result.yml
    ("x | map('dict2items') | map('selectattr', 'key', 'in', ['name', 'before', 'after', 'changed'])"
     " | map('items2dict') | list", ["name", "before", "after", "changed"]),
    # fleet_state.yml: the verify list (eq 'name'), pinned, configs
    ("x | map('dict2items') | map('selectattr', 'key', 'eq', 'name') | map('items2dict') | list", ["name"]),
    ("x | map('dict2items') | map('selectattr', 'key', 'in', ['name', 'versions']) | map('items2dict') | list",
     ["name", "versions"]),
    ("x | map('dict2items') | map('selectattr', 'key', 'in', ['item', 'changed', 'diff', 'msg', 'failed'])"
     " | map('items2dict') | list", ["item", "changed", "diff", "msg", "failed"]),
    # vars/main.yml: _triton_models_verify_list
    ("x | map('dict2items') | map('selectattr', 'key', 'in', ['name', 'latency_budget']) | map('items2dict') | list",
     ["name", "latency_budget"]),
])
@pytest.mark.parametrize("data", [RESULTS, MODELS, []], ids=["results", "models", "empty"])
def test_keep_keys_is_the_chain_it_replaces(chain, keys, data):
    expected = render("{{ %s }}" % chain, x=data)
    got = keep_keys(data, keys)
    assert got == expected and isinstance(got, list)
    assert [list(d) for d in got] == [list(d) for d in expected]  # same key order


@pytest.mark.parametrize("data", [MODULE_RESULT, RESULTS[0], {}], ids=["gpu", "verify", "empty"])
def test_drop_keys_is_the_chain_it_replaces(data):
    # fleet_state.yml: verify and gpu without the arguments Ansible echoes back
    expected = render("{{ x | dict2items | rejectattr('key', 'eq', 'invocation') | items2dict }}", x=data)
    for keys in ("invocation", ["invocation"]):
        got = drop_keys(data, keys)
        assert got == expected and isinstance(got, dict) and list(got) == list(expected)


def test_keep_keys_on_a_dict_and_a_list():
    assert keep_keys({"b": 2, "a": 1, "c": 3}, ["a", "b"]) == {"b": 2, "a": 1}
    assert list(keep_keys({"b": 2, "a": 1, "c": 3}, ["a", "b"])) == ["b", "a"]  # the input's order
    assert keep_keys({"a": 1}, ["a", "missing"]) == {"a": 1}  # never adds a key
    assert keep_keys({"a": 1}, []) == {}
    assert keep_keys([{"a": 1, "b": 2}, {"b": 3}, {}], "a") == [{"a": 1}, {}, {}]
    assert keep_keys(({"a": 1, "b": 2},), ["b"]) == [{"b": 2}]


def test_a_string_names_one_key_not_a_substring():
    assert keep_keys({"name": 1, "na": 2, "n": 3}, "name") == {"name": 1}
    assert drop_keys({"name": 1, "na": 2}, "name") == {"na": 2}


def test_only_the_top_level_is_filtered():
    nested = {"diff": {"before": "a", "after": "b", "invocation": 1}, "invocation": {"x": 1}}
    assert keep_keys(nested, ["diff"]) == {"diff": {"before": "a", "after": "b", "invocation": 1}}
    assert drop_keys(nested, ["invocation"]) == {"diff": {"before": "a", "after": "b", "invocation": 1}}


def test_the_input_is_not_changed():
    data = [{"a": 1, "b": 2}]
    keep_keys(data, ["a"])
    drop_keys(data, ["a"])
    assert data == [{"a": 1, "b": 2}]


def test_drop_keys_on_a_dict_and_a_list():
    assert drop_keys({"b": 2, "a": 1, "c": 3}, ["c", "missing"]) == {"b": 2, "a": 1}
    assert drop_keys([{"a": 1, "b": 2}, {"b": 3}], ["b"]) == [{"a": 1}, {}]
    assert drop_keys({"a": 1}, []) == {"a": 1}


@pytest.mark.parametrize("name", ["keep_keys", "drop_keys"])
@pytest.mark.parametrize("value,keys,message", [
    ("text", ["a"], "expects a dictionary or a list of dictionaries, got str"),
    (None, ["a"], "expects a dictionary or a list of dictionaries, got NoneType"),
    ([{"a": 1}, "text"], ["a"], "expects a dictionary or a list of dictionaries, got str"),
    ({"a": 1}, {"a": 1}, "keys must be a key name or a list of key names, got dict"),
    ({"a": 1}, None, "keys must be a key name or a list of key names, got NoneType"),
])
def test_wrong_input_fails_naming_the_filter(name, value, keys, message):
    with pytest.raises(AnsibleFilterError, match="^%s.*%s" % (name, message)):
        FilterModule().filters()[name](value, keys)


def test_callable_by_fqcn_from_a_playbook(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ [{'name': 'a', 'x': 1}] | aiops.triton.keep_keys(['name'])"
        " + [{'name': 'b', 'invocation': 1} | aiops.triton.drop_keys('invocation')] }}\"\n")
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    playbook_cmd = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    proc = subprocess.run([playbook_cmd, str(playbook)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    task = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert task["msg"] == [{"name": "a"}, {"name": "b"}]
