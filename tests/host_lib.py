"""The host scripts' lib/ as their roles install it, for the tests that run those scripts.

The drift reporter (roles/triton_monitoring/files/triton_model_drift.py) and the GPU health reporter
(roles/triton_gpu_health/files/aiops_gpu_health.py) run with the host's python3, without Ansible, and import the
collection's own module_utils from lib/ansible_collections/aiops/triton/plugins/module_utils beside them. Their
roles install those files in one aiops.triton.host_files call; this reads that call, so a test lays out exactly
the files the role installs (a module_util the role forgets to ship fails the test that runs the script).
"""

import ast
import os
import re
import shutil

import yaml

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE_UTILS = os.path.join(CHECKOUT, "plugins", "module_utils")
PACKAGE = ("ansible_collections", "aiops", "triton", "plugins", "module_utils")

# role: (its task file with the host_files call, the variable naming the installed module_utils directory)
REPORTERS = {
    "triton_gpu_health": ("reporter.yml", "_triton_gpu_health_module_utils"),
    "triton_monitoring": ("drift_reporter.yml", "_triton_monitoring_drift_module_utils"),
}


def module_util_entries(role):
    """{name: host_files entry} of the collection's module_utils the role installs for its host script (the
    package markers aside)."""
    tasks_file, variable = REPORTERS[role]
    with open(os.path.join(CHECKOUT, "roles", role, "tasks", tasks_file)) as handle:
        tasks = yaml.safe_load(handle)
    calls = [t["aiops.triton.host_files"] for t in tasks if "aiops.triton.host_files" in t]
    assert len(calls) == 1, "%s: expected one aiops.triton.host_files call, found %d" % (tasks_file, len(calls))
    prefix = "{{ %s }}/" % variable
    entries = {}
    for entry in calls[0]["files"]:
        name = entry["dest"][len(prefix):]
        if entry["dest"].startswith(prefix) and name != "__init__.py":
            entries[name] = entry
    return entries


def module_util_source(role, entry):
    """The checkout file an entry's content is read from (role_path ~ '/../../plugins/module_utils/<name>')."""
    match = re.search(r"lookup\('ansible\.builtin\.file', role_path ~ '([^']+)'", entry["content"])
    assert match, entry["content"]
    return os.path.normpath(os.path.join(CHECKOUT, "roles", role) + match.group(1))


def lay_out(role, base):
    """Write base/lib/ansible_collections/.../module_utils as the role installs it (regular packages, an
    __init__.py at each level) with the module_utils it ships; return their names."""
    package = os.path.join(base, "lib", *PACKAGE)
    os.makedirs(package)
    for level in range(len(PACKAGE)):
        open(os.path.join(package, *([os.pardir] * level + ["__init__.py"])), "w").close()
    entries = module_util_entries(role)
    for name, entry in entries.items():
        shutil.copy(module_util_source(role, entry), os.path.join(package, name))
    return sorted(entries)


def needed_module_utils(script):
    """The collection's module_utils files ``script`` imports, with those they import in turn (by AST); fails on an
    import of Ansible itself (nothing on the host has it)."""
    needed, todo = set(), [script]
    while todo:
        path = todo.pop()
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(".".join(PACKAGE[:-1])):
                if node.module == ".".join(PACKAGE):  # from ...module_utils import a, b
                    names = [alias.name for alias in node.names]
                else:  # from ...module_utils.a import f
                    assert node.module.startswith(".".join(PACKAGE) + "."), node.module
                    names = [node.module.rsplit(".", 1)[1]]
                for name in names:
                    if name + ".py" not in needed:
                        needed.add(name + ".py")
                        todo.append(os.path.join(MODULE_UTILS, name + ".py"))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(m.split(".")[0] in ("ansible", "ansible_collections") for m in modules if m), \
                    "%s must not need Ansible on the host: %s" % (path, modules)
    return sorted(needed)
