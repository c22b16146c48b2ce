"""Facts the monitoring role copies from the server role stay equal to it."""

import os

import yaml

from monitoring_render import ROOT, role_file


def test_server_fallbacks_equal_the_server_roles_defaults():
    with open(os.path.join(ROOT, "roles", "triton_server", "defaults", "main.yml")) as handle:
        server = yaml.safe_load(handle)
    fallbacks = role_file("vars", "main.yml")["_triton_monitoring_server_defaults"]
    assert fallbacks == dict((name, server[name]) for name in fallbacks)


def test_drift_reporter_entry_point_documents_its_variables():
    specs = role_file("meta", "argument_specs.yml")["argument_specs"]
    drift = specs["drift_reporter"]["options"]
    assert drift, "drift_reporter entry point has no options"
    for name, spec in drift.items():
        assert specs["main"]["options"][name] == spec, name


def test_lb_fallbacks_equal_the_lb_roles_defaults():
    with open(os.path.join(ROOT, "roles", "triton_lb", "defaults", "main.yml")) as handle:
        lb = yaml.safe_load(handle)
    fallbacks = role_file("vars", "main.yml")["_triton_monitoring_lb_defaults"]
    assert fallbacks == dict((name, lb[name]) for name in fallbacks)
