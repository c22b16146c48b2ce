"""Render roles/triton_monitoring's templates the way Ansible does, for unit tests that need no play."""

import json
import os

import jinja2
import yaml
from ansible.plugins.filter.core import FilterModule

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "triton_monitoring")
RULES_TEMPLATE = os.path.join(ROLE, "templates", "aiops-triton.rules.yml.j2")

# Thresholds and for: durations the promtool tests (alerts_test.yml) are written against; fixed
# here so a change of the role's defaults does not silently change what the tests prove.
TEST_VARS = {
    "triton_monitoring_failure_ratio_threshold": 0.05,
    "triton_monitoring_queue_p99_budget_ms": 200,
    "triton_monitoring_pending_requests_threshold": 10,
    "triton_monitoring_gpu_memory_ratio_threshold": 0.95,
    "triton_monitoring_gpu_utilization_threshold": 0.98,
    "triton_monitoring_runbook_base_url": "https://runbooks.example/monitoring.md",
}
TEST_VARS.update(dict(("triton_monitoring_alert_for_%s" % name, "5m") for name in (
    "down", "not_ready", "failure_ratio", "queue_p99", "pending_requests", "gpu_memory", "gpu_utilization", "drift", "drift_stale",
    "lb_drained", "lb_down", "gpu_unhealthy", "gpu_xid", "gpu_row_remap", "gpu_ecc", "gpu_fallen_off_bus", "ready_on_unhealthy_gpu",
    "gpu_health_stale")))


def role_file(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def render_rules(overrides=None):
    """The rules file as Ansible writes it: the #jinja2 header sets [[ ]] as variable delimiters."""
    with open(RULES_TEMPLATE) as handle:
        header, _sep, body = handle.read().partition("\n")
    assert header.startswith("#jinja2:"), "the rules template must keep its #jinja2 delimiter header"
    env = jinja2.Environment(variable_start_string="[[", variable_end_string="]]", undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    context = dict(role_file("defaults", "main.yml"))
    context.update(role_file("vars", "main.yml"))
    context.update(TEST_VARS)
    context.update(overrides or {})
    return env.from_string(body).render(context)


def render_file_sd(hostvars, job_hosts, port_var="", port_default="", **extra):
    """templates/file_sd.json.j2 with Ansible's to_json and the collection's triton_targets; ``hostvars`` as Ansible
    gives them. Triton's own job unless ``port_var`` names an exporter's port variable."""
    from ansible_collections.aiops.triton.plugins.filter.endpoint import triton_targets
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["to_json"] = json.dumps
    env.filters["aiops.triton.triton_targets"] = triton_targets
    with open(os.path.join(ROLE, "templates", "file_sd.json.j2")) as handle:
        template = env.from_string(handle.read())
    context = dict(role_file("defaults", "main.yml"))
    context.update(role_file("vars", "main.yml"))
    context.update(hostvars=hostvars, _job_hosts=job_hosts, _port_var=port_var, _port_default=port_default,
                   _endpoint_kind="" if port_var else "metrics")
    context.update(extra)
    return json.loads(template.render(context))


def render_file_sd_lb(hostvars, lb_hosts):
    """templates/file_sd_lb.json.j2 (the load balancers' HAProxy exporters) with Ansible's to_json."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["to_json"] = json.dumps
    with open(os.path.join(ROLE, "templates", "file_sd_lb.json.j2")) as handle:
        template = env.from_string(handle.read())
    context = dict(role_file("defaults", "main.yml"))
    context.update(role_file("vars", "main.yml"))
    context.update(hostvars=hostvars, _triton_monitoring_lb_hosts=lb_hosts)
    return json.loads(template.render(context))


def _role_template(name, overrides):
    """A role template as the template module renders it (trim_blocks, to_json, bool, include from the role's
    templates/), the role's defaults and vars under ``overrides``."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True)
    env.filters["to_json"] = json.dumps
    env.filters["bool"] = FilterModule().filters()["bool"]
    context = dict(role_file("defaults", "main.yml"))
    context.update(role_file("vars", "main.yml"))
    context.update(overrides or {})
    return env.get_template(name).render(context)


def render_alertmanager(overrides=None):
    """templates/alertmanager.yml.j2 as Ansible writes it."""
    return _role_template("alertmanager.yml.j2", overrides)


def render_prometheus(overrides=None):
    """templates/prometheus.yml.j2 (install mode) as Ansible writes it; pass the rules file and file_sd directory
    promtool should find, since the role's defaults name them through other variables."""
    context = {"_triton_monitoring_lb_hosts": []}
    context.update(overrides or {})
    return _role_template("prometheus.yml.j2", context)
