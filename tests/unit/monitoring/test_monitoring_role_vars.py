"""Values the monitoring role copies from the LB role stay equal to it; its entry points document their variables."""

import os

import yaml

from monitoring_render import ROOT, role_file


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
