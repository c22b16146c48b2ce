"""Shared testinfra helpers for every molecule scenario's tests/ (pytest loads this conftest for them).

testinfra reaches molecule hosts through ansible, seconds per command, so a scenario reads the host's
state with one command and its tests check that snapshot.
"""

import shlex

import pytest


@pytest.fixture(scope="module")
def snapshot(host):
    """Return take(commands): run each named shell command once, return {name: output}."""
    def take(commands):
        script = "; ".join("echo '@@%s'; %s" % (name, command) for name, command in commands.items())
        out = host.check_output("sh -c %s" % shlex.quote(script))
        sections = {}
        for chunk in out.split("@@")[1:]:
            name, _sep, body = chunk.partition("\n")
            sections[name] = body.strip()
        return sections
    return take
