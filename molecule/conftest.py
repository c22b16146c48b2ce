"""Shared testinfra helpers for every molecule scenario's tests/ (pytest loads this conftest for them).

testinfra reaches molecule hosts through ansible, seconds per command, so a scenario reads the host's
state with one command and its tests check that snapshot.
"""

import pytest

import scenario_checks  # molecule/scenario_checks.py: pytest puts this conftest's directory on sys.path


@pytest.fixture(scope="module")
def snapshot(host):
    """Return take(commands): run each named shell command once, return {name: output}.

    Each command's own exit status is checked (not only the script's last): a command that failed would
    leave an empty section, and an assertion that something is "not in" it would pass without looking.
    """
    def take(commands):
        result = host.run(scenario_checks.snapshot_command(commands))
        try:
            return scenario_checks.parse_snapshot(result.stdout)
        except scenario_checks.SnapshotError as exc:
            pytest.fail("%s (stderr: %s)" % (exc, result.stderr[-1000:]))
    return take
