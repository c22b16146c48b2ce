"""README.md against the tree: what it names must exist, what it counts must be the count (issue 38, item 6).

Read when the test runs, so whatever the README says then is what is checked:
- every path it names (inline code, and words of its code blocks, that start with a top-level directory of
  the repository) exists; placeholders (`<model>`, `*`, `{a,b}`) must match something, or at least their
  directory exists; git-ignored paths (build output, lab state) are not checked;
- every file it names by its bare name (`drain.yml`, `scaling.md`) exists somewhere in the repository;
- every playbook it runs by FQCN (`ansible-playbook … aiops.triton.<name>`) is playbooks/<name>.yml, and every
  other `aiops.triton.<name>` is a playbook, role, module or filter of the collection;
- every `triton_*` / `nvidia_*` variable it names in inline code is declared by a role (defaults/main.yml or
  meta/argument_specs.yml) or is one of the inventory-level variables the validation play knows
  (module_utils/fleet.py FLEET_VARIABLES); a name given with `-e` is read by a playbook; names of roles,
  modules, filters, inventory groups and lab modules are not variables;
- the number of alert rules it states is the number in roles/triton_monitoring/templates/aiops-triton.rules.yml.j2;
- the architecture diagram's site.yml tree lists site.yml's plays in their order, and "the last play of
  `site.yml`" is said only of site.yml's last play;
- a playbook it says works "one host at a time" runs with serial 1;
- the list of lab/labctl_lib modules is the directory's modules;
- the failure sequence it tells for tests/integration/test_models_failure_sequence.py is, step by step, the
  one that test's docstring runs.
"""

import glob
import os
import re
import subprocess

import yaml

from ansible_collections.aiops.triton.plugins.module_utils.fleet import FLEET_VARIABLES

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(ROOT, "README.md")
RULES = os.path.join(ROOT, "roles", "triton_monitoring", "templates", "aiops-triton.rules.yml.j2")
NUMBERS = dict((word, n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()))
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
VARIABLE = re.compile(r"(?<![\w.$/-])((?:triton|nvidia)_[a-z0-9_]*[a-z0-9])(?![\w/]|\.[a-z])")


def readme():
    with open(README) as handle:
        return handle.read()


def prose(text):
    """The README without its code blocks."""
    return FENCE.sub("", text)


def inline_code(text):
    return re.findall(r"`([^`\n]+)`", prose(text))


def code_blocks(text):
    return FENCE.findall(text)


def ignored(paths):
    """The paths git ignores (build output, lab state, generated inventories): not the README's to prove."""
    if not paths:
        return set()
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], input="\n".join(paths), cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return set(proc.stdout.split())


def top_level_dirs():
    names = [n for n in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, n)) and n != ".git"]
    return set(names) - ignored(names)


def expand_braces(path):
    match = re.search(r"\{([^{}]*,[^{}]*)\}", path)
    if not match:
        return [path]
    return [p for alt in match.group(1).split(",")
            for p in expand_braces(path[:match.start()] + alt + path[match.end():])]


def path_words(words, roots):
    """The words that name a path in the repository (module_utils/… is the plugins' module_utils)."""
    found = []
    for word in words:
        word = word.strip("()[],;:\"'.")
        if word.startswith("module_utils/"):
            word = "plugins/" + word
        if "/" in word and word.split("/", 1)[0] in roots and "://" not in word:
            found.append(word)
    return found


def named_paths(text):
    roots = top_level_dirs()
    words = [w for span in inline_code(text) for w in span.split()]
    words += [w for block in code_blocks(text) for w in block.split()]
    return sorted(set(path_words(words, roots)))


def missing_path(path):
    """None when path (placeholders allowed) names something in the tree, else why not."""
    for variant in expand_braces(path):
        pattern = re.sub(r"<[^>]*>|…", "*", variant)
        if glob.glob(os.path.join(ROOT, pattern)):
            continue
        if pattern != variant or "*" in variant:  # a template: its directory at least
            head = pattern.split("*", 1)[0]
            if os.path.isdir(os.path.join(ROOT, os.path.dirname(head) if not head.endswith("/") else head)):
                continue
        return variant
    return None


def repo_files():
    proc = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return proc.stdout.split()


def role_variables():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml")):
        with open(path) as handle:
            names.update((yaml.safe_load(handle) or {}).keys())
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path) as handle:
            for entry in ((yaml.safe_load(handle) or {}).get("argument_specs") or {}).values():
                names.update(((entry or {}).get("options") or {}).keys())
    return names


def filter_names():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")):
        with open(path) as handle:
            source = handle.read()
        body = source.split("def filters(self):", 1)[-1] if "def filters(self):" in source else ""
        names.update(re.findall(r"[\"']([a-z_0-9]+)[\"']\s*:", body))
    return names


def inventory_groups():
    groups = set()

    def children(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "children" and isinstance(value, dict):
                    groups.update(value.keys())
                children(value)
    for path in glob.glob(os.path.join(ROOT, "inventories", "*", "*.yml")):
        with open(path) as handle:
            children(yaml.safe_load(handle))
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")) + glob.glob(os.path.join(ROOT, "roles", "*", "*", "*.yml")):
        with open(path) as handle:
            source = handle.read()
        for hosts in re.findall(r"^\s*-?\s*hosts:\s*(.+)$", source, re.M):
            groups.update(re.findall(r"(?:triton|nvidia)_\w+", hosts))
        groups.update(re.findall(r"groups\[['\"](\w+)['\"]\]", source))
        groups.update(re.findall(r"^\w+_group:\s*([a-z_0-9]+)\s*$", source, re.M))
    return groups


def things():
    """Names in the collection that are not variables: roles, modules, filters, groups, lab modules."""
    names = set(os.listdir(os.path.join(ROOT, "roles")))
    names |= set(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
    names |= set(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "lab", "labctl_lib", "*.py")))
    # Event-Driven Ansible content: rulebooks and event sources
    names |= set(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "extensions", "eda", "rulebooks", "*.yml")))
    names |= set(os.path.splitext(os.path.basename(p))[0]
                 for p in glob.glob(os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "*.py")))
    for path in glob.glob(os.path.join(ROOT, "extensions", "eda", "rulebooks", "*.yml")):
        with open(path) as handle:
            names |= set(rule["name"] for ruleset in yaml.safe_load(handle) for rule in ruleset["rules"])
    return names | filter_names() | inventory_groups()


def play_variables():
    """Variables a playbook's play declares with a default (vars:), such as playbooks/eda_remediate.yml's."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(path) as handle:
            for play in yaml.safe_load(handle) or []:
                names |= set(name for name in (play.get("vars") or {}) if not name.startswith("_"))
    return names


def read_by_a_playbook(name):
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(path) as handle:
            if re.search(r"\b%s\b" % re.escape(name), handle.read()):
                return True
    return False


def site_plays():
    """site.yml's plays in order: playbooks/<file> for an import, the short role names of an inline play."""
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as handle:
        plays = yaml.safe_load(handle)
    order = []
    for play in plays:
        target = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if target:
            order.append({"playbooks/" + os.path.basename(target)})
        else:
            roles = [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])]
            order.append(set(r.split(".")[-1] for r in roles) | set("roles/" + r.split(".")[-1] for r in roles))
    return order


def diagram_site_tree(text):
    """The first entry of each branch of the architecture diagram's site.yml tree, in order."""
    for block in code_blocks(text):
        lines = block.splitlines()
        start = [i for i, line in enumerate(lines) if line.startswith("site.yml ")]
        if not start:
            continue
        entries = [re.match(r"site\.yml\s+─+\s+(\S+)", lines[start[0]]).group(1)]
        for line in lines[start[0] + 1:]:
            if line and not line[0].isspace():
                break
            match = re.match(r"^\s+[├└]── (\S+)", line)
            if match:
                entries.append(match.group(1))
        return entries
    return None


# -- the tests --------------------------------------------------------------------------------------
def test_every_path_the_readme_names_exists():
    paths = named_paths(readme())
    assert len(paths) > 20, "the path reader found almost nothing in README.md: %s" % paths
    skip = ignored(paths)
    missing = [why for why in (missing_path(p) for p in paths if p not in skip) if why]
    assert not missing, "README.md names paths that are not in the tree: %s" % missing


def test_every_file_the_readme_names_by_its_bare_name_exists():
    names = set(os.path.basename(p) for p in repo_files())
    spans = [w.strip("()[],;:\"'") for span in inline_code(readme()) for w in span.split()]
    bare = sorted(set(w for w in spans if "/" not in w and re.match(r"^[\w.-]+\.(yml|yaml|py|sh|md|txt|cfg|json|j2)$", w)))
    assert bare, "no bare file name found in README.md: the reader is broken"
    missing = [w for w in bare if w not in names and w not in ignored([w])]
    assert not missing, "README.md names files that are nowhere in the repository: %s" % missing


def test_every_playbook_the_readme_runs_by_fqcn_exists():
    text = readme()
    run, named = set(), set()
    for chunk in inline_code(text) + [line for block in code_blocks(text) for line in block.splitlines()]:
        fqcns = re.findall(r"(?<![\w.])aiops\.triton\.([a-z_0-9]+)", chunk)
        named.update(fqcns)
        command = re.search(r"ansible-playbook|ansible-navigator run", chunk)
        if command:
            run.update(re.findall(r"(?<![\w.])aiops\.triton\.([a-z_0-9]+)", chunk[command.start():])[:1])
    playbooks = set(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
    assert run, "README.md runs no playbook by FQCN: the reader is broken"
    assert not run - playbooks, "README.md runs playbooks the collection lacks: %s" % sorted(run - playbooks)
    unknown = named - playbooks - things()
    assert not unknown, "README.md names aiops.triton.* content the collection lacks: %s" % sorted(unknown)


def test_every_variable_the_readme_names_is_declared():
    declared = role_variables() | set(FLEET_VARIABLES) | play_variables()
    not_variables = things()
    undeclared = set()
    seen = set()
    for span in inline_code(readme()):
        extra_var = span.lstrip().startswith("-e ")
        for word in span.split():
            if "/" in word:
                continue  # a path: test_every_path_the_readme_names_exists
            for name in VARIABLE.findall(word):
                seen.add(name)
                if name in declared or name in not_variables or (extra_var and read_by_a_playbook(name)):
                    continue
                undeclared.add(name)
    assert len(seen) > 5, "almost no variable found in README.md: the reader is broken (%s)" % sorted(seen)
    assert not undeclared, ("README.md names triton_*/nvidia_* variables no role declares (defaults/main.yml, "
                            "meta/argument_specs.yml) and the validation play does not know: %s" % sorted(undeclared))


def test_the_alert_rule_count_is_the_templates():
    with open(RULES) as handle:
        rules = len(re.findall(r"^\s*-\s*alert:", handle.read(), re.M))
    claims = re.findall(r"\b(\d+|[a-z]+)\s+(?:Prometheus\s+)?alert rules\b", prose(readme()))
    counts = [int(c) if c.isdigit() else NUMBERS[c] for c in claims if c.isdigit() or c in NUMBERS]
    assert all(n == rules for n in counts), (
        "README.md says %s alert rules; %s has %d" % (counts, os.path.relpath(RULES, ROOT), rules))


def test_the_diagram_lists_site_yml_plays_in_order():
    entries = diagram_site_tree(readme())
    plays = site_plays()
    assert entries is not None, "README.md has no site.yml tree in a code block any more"
    assert len(entries) == len(plays) and all(e in p for e, p in zip(entries, plays)), (
        "README.md's site.yml tree %s is not playbooks/site.yml's plays in order: %s"
        % (entries, [sorted(p)[-1] for p in plays]))


def test_only_the_last_play_is_called_the_last_play_of_site_yml():
    last = site_plays()[-1]
    text = " ".join(prose(readme()).split())
    claims = [m.start() for m in re.finditer(r"last play of `site\.yml`", text)]
    for at in claims:
        before = re.findall(r"`(playbooks/[\w.]+\.yml)`", text[max(0, at - 200):at])
        assert before and before[-1] in last, (
            "README.md calls %s the last play of site.yml; it is %s: ...%s"
            % (before[-1:] or "something", sorted(last)[-1], text[max(0, at - 120):at + 30]))


def test_a_playbook_said_to_go_one_host_at_a_time_has_serial_1():
    text = readme()
    for line in text.splitlines():
        if not re.search(r"\bone (?:\w+ )?host at a time\b", line):
            continue
        for playbook in re.findall(r"playbooks/\w+\.yml", line):
            with open(os.path.join(ROOT, playbook)) as handle:
                serials = [p.get("serial") for p in yaml.safe_load(handle) if isinstance(p, dict) and "hosts" in p]
            given = [s for s in serials if s is not None]
            assert given and all(s in (1, "1") for s in given), (
                "README.md says %s goes one host at a time; its plays run with serial %s" % (playbook, serials))


def test_the_labctl_lib_list_is_the_directorys_modules():
    text = " ".join(prose(readme()).split())
    match = re.search(r"`lab/labctl_lib/`\s*\(([^)]*)\)", text)
    assert match, "README.md no longer lists the modules of lab/labctl_lib/ after naming it"
    listed = set(re.findall(r"`(\w+)`", match.group(1)))
    modules = set(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "lab", "labctl_lib", "*.py")))
    modules.discard("__init__")
    assert listed == modules, "README.md lists lab/labctl_lib as %s; the directory has %s" % (sorted(listed), sorted(modules))


KINDS = ("good", "corrupt", "regressed", "ensemble", "unrestorable")


def kinds(step):
    return set(k for k in KINDS if k in step)


def test_the_failure_sequence_the_readme_tells_is_the_one_the_test_runs():
    test = os.path.join("tests", "integration", "test_models_failure_sequence.py")
    text = " ".join(prose(readme()).split())
    match = re.search(r"`%s`\s*\(([^)]*)\)" % re.escape(test), text)
    assert match, "README.md no longer tells the steps of %s after naming it" % test
    told = [kinds(step) for step in match.group(1).split("→")]
    with open(os.path.join(ROOT, test)) as handle:
        docstring = handle.read().split('"""')[1]
    runs = [kinds(step) for step in " ".join(docstring.split("\n\n")[1].split()).split("->")]
    assert all(told) and all(runs), (told, runs)
    # every step the README tells is the next of the test's steps of that kind, none left out in between but
    # repeats of the same kind (good 1 -> good 2 is "good")
    at = 0
    for step in told:
        while at < len(runs) and not step & runs[at]:
            assert at > 0 and runs[at] <= runs[at - 1], (
                "README.md's failure sequence %s leaves out the test's step %d %s (the test runs %s)"
                % (match.group(1), at, sorted(runs[at]), runs))
            at += 1
        assert at < len(runs), "README.md's failure sequence %s tells a step the test does not run" % match.group(1)
        at += 1
    assert at == len(runs), "README.md's failure sequence %s stops before the test's end %s" % (match.group(1), runs[at:])
