"""Checks the molecule scenarios make, kept apart so that unit tests (tests/unit/molecule/
test_scenario_checks.py) can feed them what a broken implementation would leave and watch them fail.

- snapshots (molecule/conftest.py): a host's state read with one command, each command's exit checked.
"""

import shlex

# -- snapshots of a host (molecule/conftest.py) ---------------------------------------------------
SECTION = "@@SECTION "
STATUS = "@@STATUS "


def snapshot_script(commands):
    """One sh script running each named command and printing its output and its own exit status.

    The markers are put together when the script runs ("@@" + "SECTION"): a command whose output shows
    this script's own command line (ps, /proc/*/cmdline) must not hold a marker that splits sections."""
    return "".join("printf '%%s%s%%s\\n' @@ %s; ( %s\n); printf '\\n%%s%s%%s\\n' @@ \"$?\"; "
                   % (SECTION[2:], shlex.quote(name), command, STATUS[2:]) for name, command in commands.items())


def parse_snapshot(out):
    """{name: output} from snapshot_script's output; raises SnapshotError naming every command that failed."""
    sections, failed = {}, []
    for chunk in out.split(SECTION)[1:]:
        name, _sep, rest = chunk.partition("\n")
        body, sep, status = rest.rpartition(STATUS)
        if not sep:  # the script stopped inside this command
            body, status = rest, ""
        sections[name] = body.strip()
        if status.strip() != "0":
            failed.append("%s (exit %s): %s" % (name, status.strip() or "missing", body.strip()[-300:]))
    if failed:
        raise SnapshotError("snapshot commands failed: " + "; ".join(failed))
    return sections


class SnapshotError(Exception):
    """A snapshot command exited non-zero: its section would be empty or partial."""


def snapshot_command(commands):
    return "sh -c %s" % shlex.quote(snapshot_script(commands))
