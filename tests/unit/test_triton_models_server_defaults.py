"""triton_models reads Triton's paths, ports and key header from triton_server's defaults file, not literals."""

import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(ROOT, "roles", *parts)) as handle:
        return handle.read()


def test_every_server_default_triton_models_reads_is_defined_by_triton_server():
    server = yaml.safe_load(read("triton_server", "defaults", "main.yml"))
    read_names = set(re.findall(r"_triton_models_server_defaults\.(\w+)", read("triton_models", "defaults", "main.yml")))
    assert read_names, "triton_models no longer reads triton_server's defaults"
    assert sorted(read_names - set(server)) == []
    # each fallback is the value of the variable it stands in for
    fallbacks = re.findall(r"(\w+) \| default\(_triton_models_server_defaults\.(\w+)\)", read("triton_models", "defaults", "main.yml"))
    assert fallbacks and all(variable == default for variable, default in fallbacks), fallbacks


def test_triton_models_has_no_literal_fallback_for_server_variables():
    defaults = read("triton_models", "defaults", "main.yml")
    assert not re.findall(r"triton_server_\w+ \| default\((?!_triton_models_server_defaults\.)", defaults)
