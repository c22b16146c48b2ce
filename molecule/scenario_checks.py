"""Checks the molecule scenarios make, kept apart so that unit tests (tests/unit/molecule/
test_scenario_checks.py) can feed them what a broken implementation would leave and watch them fail.

- snapshots (molecule/conftest.py): a host's state read with one command, each command's exit checked;
- the rollout summary (the drivers): why a host was rolled back, read from the summary's structured line;
- readiness while a rollout stops at its candidate: which probes the candidate explains;
- what an unprivileged user sees (the container driver): which views hold a secret, and whether each view
  ran, was refused, or broke.
"""

import json
import re
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


# -- the rollout summary -------------------------------------------------------------------------
# The drivers run ansible-playbook with these: ANSIBLE_CALLBACK_RESULT_FORMAT=json, not molecule's yaml, so a
# summary line is one JSON string on one log line (yaml may fold it anywhere).
ROLLOUT_ENV = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
CANDIDATE_SUFFIX = "__candidate"


def summary_lines(log, host):
    """The rollout summary lines for host, as playbooks/models.yml prints them (in log order)."""
    lines = []
    for raw in log.splitlines():
        text = raw.strip().rstrip(",")
        if not (text.startswith('"') and text.endswith('"')):
            continue
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if line.startswith("%s [" % host):
            lines.append(line)
    return lines


def failure_reason(log, limit=400):
    """The last task failure an ansible-playbook log names (its "[ERROR]: ..." line and what follows up to the
    next blank line, on one line), or "" when it names none: what a step's CHECK FAILED line quotes, as CI
    shows only that line and not the step's own log."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("[ERROR]: ")]
    if not starts:
        return ""
    block = []
    for line in lines[starts[-1]:]:
        if not line.strip():
            break
        block.append(line.strip())
    return " ".join(block)[:limit]


def golden_case_failures(log, host, model, version):
    """The golden case names the host's rollback gave as its reason, for model (or its candidate) at version.

    Read from the last summary line of the host that says "rolled back" and carries an error (the
    rollout outcome, set from aiops.triton.triton_verify's message: "<model>: version <v>: golden case
    '<name>' over <protocol>: ..."). Empty when the host was not rolled back for that model's golden cases.
    """
    rolled = [line for line in summary_lines(log, host) if re.match(r"%s \[[^\]]*\]: rolled back\b" % re.escape(host), line)]
    if not rolled or " -- " not in rolled[-1]:
        return []
    error = rolled[-1].split(" -- ", 1)[1]
    pattern = r"(?<![\w.-])%s(?:%s)?: version %d: golden case '([^']+)' over " % (
        re.escape(model), re.escape(CANDIDATE_SUFFIX), int(version))
    return sorted(set(re.findall(pattern, error)))


def rolled_back_for_golden_cases(log, host, model, version, case_names):
    """None when host was rolled back because model version failed one of case_names; else why not."""
    failed = golden_case_failures(log, host, model, version)
    named = sorted(set(failed) & set(case_names))
    if named:
        return None
    lines = summary_lines(log, host)
    return ("%s was not rolled back for a golden case of %s version %s (cases %s); its summary: %s"
            % (host, model, version, sorted(case_names), lines[-1] if lines else "none"))


_BREACH = re.compile(r"bake: (?P<model>\S+) (?P<metric>\S+) (?P<value>[0-9.]+) on (?P<where>.+?) [<>] "
                     r"(?:limit|minimum) (?P<limit>[0-9.]+)")


def bake_breach(line, model):
    """The bake breach for model that a summary line gives as its reason ({metric, value, limit, where}), or None.

    The breach sentence is the bake's own (plugins/module_utils/rollout_bake.py breach_message): "bake:
    <model> <metric> <value> on <group> (<hosts>) > limit <limit>"."""
    for match in _BREACH.finditer(line or ""):
        if match.group("model") == model:
            return {"metric": match.group("metric"), "value": float(match.group("value")),
                    "limit": float(match.group("limit")), "where": match.group("where")}
    return None


# -- readiness while a rollout fails ------------------------------------------------------------
def readiness_problem(status, indexes, serving, suffix=CANDIDATE_SUFFIX):
    """None when one readiness probe of a host, taken while a rollout that must stop at its candidate runs, is
    what that rollout may cause; else what is wrong with it.

    status: /v2/health/ready's answer; indexes: the host's repository index (Triton's POST /v2/repository/index)
    read just before and just after the probe; serving: {model: version} that must stay READY throughout. The
    served versions are READY in both reads, and a status other than 200 is the candidate's doing: Triton's strict
    readiness is not 200 while any model version loads, unloads or has failed (its reason not "unloaded"), so
    a candidate must be in the index then and no other model in such a state. A rollout that never touched the
    host (a wave the failure never reached) has no candidate: there readiness must be 200 at every probe."""
    problems = []
    for index in indexes:
        ready = set((entry.get("name"), str(entry.get("version"))) for entry in index if entry.get("state") == "READY")
        problems += ["%s %s was not READY" % (m, v) for m, v in sorted(serving.items()) if (m, str(v)) not in ready]
    if status != 200:
        entries = [entry for index in indexes for entry in index]
        if not [e for e in entries if str(e.get("name", "")).endswith(suffix)]:
            problems.append("readiness %s with no candidate in the index" % status)
        others = [e for e in entries if not str(e.get("name", "")).endswith(suffix)
                  and e.get("state") not in (None, "READY") and e.get("reason") != "unloaded"]
        problems += ["readiness %s while %s %s was %s (%s)"
                     % (status, e.get("name"), e.get("version"), e.get("state"), str(e.get("reason", ""))[:120])
                     for e in others]
    return "; ".join(sorted(set(problems))) or None


# -- what an unprivileged user sees --------------------------------------------------------------
def nobody_sees(views, secret):
    """Which of an unprivileged user's views (name -> text) hold the secret: [] when none does."""
    return sorted(name for name, text in views.items() if secret in text)


# The answers of a command an unprivileged user is refused: systemd, journald, podman, the kernel.
_DENIED = re.compile(r"permission denied|insufficient permissions|operation not permitted|access denied|"
                     r"no such (?:container|object)", re.I)


def view_outcome(rc, text):
    """How an unprivileged user's view ran: 'shown' (it ran and printed something: search it), 'denied' (it
    was refused for want of rights: nothing to see, which is what hiding means), or 'broken' (anything else:
    a missing command, no output at all). A broken view shows nothing either, so a check that reads it
    passes without looking: it must fail instead (a view once ran as `... || true` and could never fail)."""
    if rc in (126, 127) or not (text or "").strip():
        return "broken"
    if rc == 0:
        return "shown"
    return "denied" if _DENIED.search(text) else "broken"
