"""docs/architecture.md against the code, so the map cannot drift (issue 32).

Read when the test runs:
- every role directory has a row in the "Roles" table;
- the "Entry points" table is exactly the keys of every role's meta/argument_specs.yml (role, entry);
- every `tasks_from:` target (roles/, playbooks/) is an argument-spec entry point, named without `.yml` (Ansible
  looks the spec up by the literal tasks_from value, so `health.yml` would enter unvalidated);
- in "Facts that flow between roles", every "set in" file sets its fact (set_fact, register, or a module of the
  collection returning it in ansible_facts), lies in the role or is the playbook the "set by" cell names, and
  every public (non-underscore) fact a role's tasks or a playbook sets is listed;
- every playbook (playbooks/*.yml, and the top-level site.yml) has a row in the "Playbooks" table.
"""

import glob
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(ROOT, "docs", "architecture.md")
SET_FACT = ("ansible.builtin.set_fact", "set_fact")
INCLUDES = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")


def sections():
    """The doc's sections by heading (## and ###), each its text."""
    with open(DOC) as handle:
        text = handle.read()
    parts = re.split(r"^#{2,3} (.+)$", text, flags=re.M)
    return dict((parts[i].strip(), parts[i + 1]) for i in range(1, len(parts), 2))


def table(section):
    """Rows of the first markdown table in a section, as lists of cells (header and rule skipped)."""
    rows = [line for line in sections()[section].splitlines() if line.startswith("|")]
    assert len(rows) > 2, "docs/architecture.md: no table under '%s'" % section
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows[2:]]


def ticks(cell):
    return re.findall(r"`([^`]+)`", cell)


def roles():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "roles", "*")) if os.path.isdir(p))


def specs(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as handle:
        return set((yaml.safe_load(handle) or {}).get("argument_specs", {}))


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def yaml_files():
    return sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
                  + glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "*.yml"))
                  + glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))


def module_facts(module):
    """The ansible_facts keys a module of the collection returns."""
    path = os.path.join(ROOT, "plugins", "modules", module + ".py")
    if not os.path.exists(path):
        return set()
    with open(path) as handle:
        return set(re.findall(r"ansible_facts=\{\s*\"(\w+)\"", handle.read()))


def facts_set_in(path):
    """Facts a tasks file or playbook sets: set_fact keys, registered names, module-returned ansible_facts."""
    found = set()
    for node in walk(load(path)):
        for key in SET_FACT:
            if isinstance(node.get(key), dict):
                found.update(name for name in node[key] if name != "cacheable")
        if isinstance(node.get("register"), str):
            found.add(node["register"])
        for key in node:
            if isinstance(key, str) and key.startswith("aiops.triton."):
                found.update(module_facts(key.rsplit(".", maxsplit=1)[-1]))
    return found


def tasks_from_calls():
    """(role, tasks_from as written, where) for every include_role/import_role with tasks_from in roles/ and playbooks/."""
    calls = set()
    for path in yaml_files():
        for node in walk(load(path)):
            for key in INCLUDES:
                call = node.get(key)
                if isinstance(call, dict) and call.get("tasks_from"):
                    calls.add((str(call["name"]).rsplit(".", maxsplit=1)[-1], str(call["tasks_from"]),
                               os.path.relpath(path, ROOT)))
    return calls


def test_every_role_has_a_row():
    listed = set(ticks(" ".join(row[0] for row in table("Roles"))))
    missing = sorted(set(roles()) - listed)
    assert not missing, "docs/architecture.md, 'Roles': no row for %s" % missing
    stray = sorted(listed - set(roles()))
    assert not stray, "docs/architecture.md, 'Roles': no such role directory %s" % stray


def test_the_entry_points_table_is_the_argument_specs():
    documented = set((ticks(row[0])[0], ticks(row[1])[0]) for row in table("Entry points"))
    wanted = set((role, entry) for role in roles() for entry in specs(role))
    missing = sorted("%s:%s" % pair for pair in wanted - documented)
    assert not missing, "docs/architecture.md, 'Entry points': argument_specs entry points missing: %s" % missing
    stray = sorted("%s:%s" % pair for pair in documented - wanted)
    assert not stray, "docs/architecture.md, 'Entry points': rows with no argument_specs key: %s" % stray


def test_every_tasks_from_target_is_an_entry_point():
    calls = tasks_from_calls()
    assert calls, "no include_role/import_role with tasks_from found: the reader is broken"
    unspecified = sorted("%s: %s:%s" % (where, role, entry) for role, entry, where in calls if entry not in specs(role))
    assert not unspecified, "tasks_from targets with no argument_specs entry point (or named with .yml): %s" % unspecified
    assert "Entry points without an argument spec yet" not in sections(), \
        "docs/architecture.md: every tasks_from target has a spec now; drop 'Entry points without an argument spec yet'"


def test_every_fact_is_set_where_the_doc_says():
    for row in table("Facts that flow between roles"):
        fact, set_by, set_in = ticks(row[0])[0], ticks(row[1]), ticks(row[2])
        assert set_in, "docs/architecture.md: no 'set in' file for %s" % fact
        owners = set(name.split(":")[0] for name in set_by)
        for path in set_in:
            full = os.path.join(ROOT, path)
            assert os.path.exists(full), "docs/architecture.md: %s (set in, %s) does not exist" % (path, fact)
            assert fact in facts_set_in(full), "docs/architecture.md: %s does not set %s" % (path, fact)
            owner = path.split("/")[1] if path.startswith("roles/") else path
            assert owner in owners, \
                "docs/architecture.md: %s sets %s, but 'set by' names %s" % (path, fact, sorted(owners))


def test_every_public_fact_is_listed():
    listed = set(ticks(row[0])[0] for row in table("Facts that flow between roles"))
    public = set()
    for path in yaml_files():
        for node in walk(load(path)):
            for key in SET_FACT:
                if isinstance(node.get(key), dict):
                    public.update((name, path) for name in node[key]
                                  if name != "cacheable" and not name.startswith("_"))
    missing = sorted("%s (%s)" % (name, os.path.relpath(path, ROOT)) for name, path in public if name not in listed)
    assert not missing, "docs/architecture.md, 'Facts that flow between roles': not listed: %s" % missing


def test_every_playbook_has_a_row():
    listed = set(ticks(" ".join(row[0] for row in table("Playbooks"))))
    wanted = set(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    wanted.add("site.yml")
    missing = sorted(wanted - listed)
    assert not missing, "docs/architecture.md, 'Playbooks': no row for %s" % missing
    stray = sorted(name for name in listed - wanted)
    assert not stray, "docs/architecture.md, 'Playbooks': no such playbook %s" % stray


def test_the_diagram_is_a_mermaid_flowchart():
    block = re.search(r"^```mermaid\n(.*?)^```", sections()["Facts that flow between roles"], re.S | re.M)
    assert block and block.group(1).startswith("flowchart"), "docs/architecture.md: no mermaid flowchart"
    for role in ("triton_server", "triton_models", "triton_lb", "triton_rolling", "triton_monitoring"):
        assert role in block.group(1), "docs/architecture.md: the diagram leaves out %s" % role
