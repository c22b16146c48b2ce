"""The molecule scenarios' checks (molecule/scenario_checks.py) fed what a broken implementation leaves.

Snapshots: a snapshot fails when any of its commands fails, not only the last, and a command that shows
the snapshot script itself (ps) does not split it.
"""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "molecule"))
import scenario_checks as sc  # noqa: E402


def run_snapshot(commands):
    out = subprocess.run(sc.snapshot_command(commands), shell=True, capture_output=True, text=True, check=False).stdout
    return sc.parse_snapshot(out)


def test_snapshot_keeps_each_commands_output():
    state = run_snapshot({"two": "echo a; echo b", "no_newline": "printf x", "quoted": "echo \"it's\" | tr i I",
                          "tolerated": "ls /nonexistent-aiops 2>&1 || true"})
    assert state == {"two": "a\nb", "no_newline": "x", "quoted": "It's",
                     "tolerated": "ls: cannot access '/nonexistent-aiops': No such file or directory"}


def test_snapshot_survives_a_command_that_shows_the_script_itself():
    # the container scenario's "argv" is `ps -eo args`, which lists the running snapshot script
    state = run_snapshot({"argv": "ps -eo args", "after": "echo still here"})
    assert "ps -eo args" in state["argv"] and state["after"] == "still here"
    assert sc.SECTION not in sc.snapshot_script({"argv": "ps -eo args"})


def test_snapshot_fails_on_any_failed_command_not_only_the_last():
    # Before: "; "-joined commands kept only the last exit code, so a failed `podman inspect` left an
    # empty section and "key not in inspect" passed without looking.
    with pytest.raises(sc.SnapshotError, match=r"inspect \(exit 125\)"):
        run_snapshot({"inspect": "echo 'Error: no such container' >&2; exit 125", "argv": "echo fine"})
    with pytest.raises(sc.SnapshotError, match=r"first \(exit 1\)"):
        run_snapshot({"first": "false", "last": "true"})


def test_snapshot_fails_when_the_script_was_cut_short():
    with pytest.raises(sc.SnapshotError, match="missing"):
        sc.parse_snapshot("@@SECTION argv\npartial output")
