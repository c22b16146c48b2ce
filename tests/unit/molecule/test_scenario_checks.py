"""The molecule scenarios' checks (molecule/scenario_checks.py) fed what a broken implementation leaves.

Snapshots: a snapshot fails when any of its commands fails, not only the last, and a command that shows
the snapshot script itself (ps) does not split it.
Rollout summary: a rollback of the broken anomaly_detector 3 counts only when the summary gives its golden
cases as the reason: a version that failed at sync or at load, another model's or version's golden cases,
or a log that merely contains the word "golden" (every run prints the verify task's title) must not pass.
"""

import json
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


CASES = ["normal_window", "cpu_spike", "memory_leak"]
URL = "http://127.0.0.1:8000"
VERIFY_TASK = "TASK [aiops.triton.triton_models : Verify every model answers its golden cases] ****\n"


def rollout_log(host, error, status="rolled back", group="triton_canary"):
    """What ansible-playbook prints (result format json) for a run whose host ended with error."""
    summary = ["%s [%s]: %s: anomaly_detector [2] -> [2], alert_classifier [1] -> [1] -- %s" % (host, group, status, error),
               "fleet-2 [triton_wave_1]: not reached (the rollout stopped before its batch)"]
    debug = json.dumps({"msg": summary}, indent=4)
    return (VERIFY_TASK + "fatal: [%s]: FAILED! => ...\n\nTASK [Rollout summary so far] ****\nok: [%s] => %s\n"
            % (host, host, debug))


def golden(model, version, case, protocol="http"):
    return ("%s: version %d: golden case %r over %s: output anomaly_score: max abs diff 0.93 > atol 1e-05"
            % (model, version, case, protocol))


def verify_failed(*failures):
    return "Triton verification failed at %s: %s" % (URL, " | ".join(failures))


def test_golden_case_failure_of_the_broken_version_passes():
    log = rollout_log("fleet-1", verify_failed(golden("anomaly_detector", 3, "cpu_spike"), golden("anomaly_detector", 3, "cpu_spike", "grpc")))
    assert sc.golden_case_failures(log, "fleet-1", "anomaly_detector", 3) == ["cpu_spike"]
    assert sc.rolled_back_for_golden_cases(log, "fleet-1", "anomaly_detector", 3, CASES) is None


def test_the_candidate_name_counts_as_the_model():
    log = rollout_log("container-1", verify_failed(golden("anomaly_detector__candidate", 3, "memory_leak")), group="triton_servers")
    assert sc.rolled_back_for_golden_cases(log, "container-1", "anomaly_detector", 3, CASES) is None


@pytest.mark.parametrize("error", [
    # failed at sync
    "s3://aiops-models/models/anomaly_detector/3/model.onnx: sha256 mismatch (expected 1f2e..., got 9a0b...)",
    "version 3 of model anomaly_detector is not published under s3://aiops-models/models/anomaly_detector/",
    # failed at load
    "Triton could not load model 'anomaly_detector': failed to load 'anomaly_detector' version 3: Internal: "
    "onnx runtime error. Versions still serving: [2]",
    # loaded but not READY: verification fails without a golden case
    verify_failed("anomaly_detector: version 3: not READY: load it with aiops.triton.triton_model and check Triton's log"),
    # golden cases, but of another model, another version, or a case the broken version does not have
    verify_failed(golden("alert_classifier", 3, "cpu_spike")),
    verify_failed(golden("anomaly_detector", 2, "cpu_spike")),
    verify_failed(golden("anomaly_detector", 31, "cpu_spike")),
    verify_failed(golden("other_anomaly_detector", 3, "cpu_spike")),
    verify_failed(golden("anomaly_detector", 3, "not_a_case")),
], ids=["sync-sha256", "sync-missing", "load", "not-ready", "other-model", "other-version", "version-prefix",
        "model-suffix", "unknown-case"])
def test_a_rollback_for_any_other_reason_fails_the_check(error):
    log = rollout_log("fleet-1", error)
    assert "golden" in log.lower()  # the old check ("golden" anywhere in the log) passed every one of these
    why = sc.rolled_back_for_golden_cases(log, "fleet-1", "anomaly_detector", 3, CASES)
    assert why and why.startswith("fleet-1 was not rolled back for a golden case of anomaly_detector version 3"), why


def test_a_host_that_was_not_rolled_back_fails_the_check():
    log = rollout_log("fleet-1", verify_failed(golden("anomaly_detector", 3, "cpu_spike")), status="changed")
    assert sc.rolled_back_for_golden_cases(log, "fleet-1", "anomaly_detector", 3, CASES)
    # nor does another host's rollback count for this one
    log = rollout_log("fleet-2", verify_failed(golden("anomaly_detector", 3, "cpu_spike")))
    assert sc.rolled_back_for_golden_cases(log, "fleet-1", "anomaly_detector", 3, CASES)


def test_molecules_yaml_result_format_is_not_read():
    # molecule's ansible.cfg sets callback_result_format: yaml, which folds a long summary line; the
    # drivers set ROLLOUT_ENV so that the check never depends on where yaml broke a line.
    assert sc.ROLLOUT_ENV["ANSIBLE_CALLBACK_RESULT_FORMAT"] == "json"
    folded = ("ok: [fleet-1] =>\n    msg:\n    - 'fleet-1 [triton_canary]: rolled back: anomaly_detector [2] -> [2] -- Triton\n"
              "        verification failed at %s: anomaly_detector: version 3: golden case ''cpu_spike''\n"
              "        over http: output differs'\n" % URL)
    assert sc.rolled_back_for_golden_cases(folded, "fleet-1", "anomaly_detector", 3, CASES)


def test_nobody_sees_names_every_view_holding_the_secret():
    assert sc.nobody_sees({"ps": "tritonserver --http-restricted-api=model-repository:k=SECRET", "journal": "-- No entries --"},
                          "SECRET") == ["ps"]
    assert sc.nobody_sees({"ps": "sh\nps -eo args", "journal": ""}, "SECRET") == []


# -- the bake's reason in a summary line -----------------------------------------------------------------
BAKE_LINE = ("roll-1 [triton_canary]: rolled back -- bake: alert_classifier mean_latency_ratio 81.2 on triton_canary "
             "(roll-1) > limit 5 (baseline mean_latency_ms 3.1)")


def test_the_bakes_own_breach_sentence_is_read():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", ".collection"))
    from ansible_collections.aiops.triton.plugins.module_utils import rollout_bake
    sentence = rollout_bake.breach_message({"model": "alert_classifier", "metric": "mean_latency_ratio", "value": 81.2,
                                            "limit": 5, "hosts": ["roll-1"], "baseline": 3.1}, "triton_canary")
    assert sc.bake_breach("roll-1 [triton_canary]: rolled back -- " + sentence, "alert_classifier") == {
        "metric": "mean_latency_ratio", "value": 81.2, "limit": 5.0, "where": "triton_canary (roll-1)"}


@pytest.mark.parametrize("line", [
    BAKE_LINE.replace("alert_classifier", "anomaly_detector"),  # another model's breach
    "roll-1 [triton_canary]: rolled back -- alert_classifier: version 2: golden case 'x' over grpc: wrong",
    "roll-1 [triton_canary]: rolled back -- the bake could not read metrics",
    "",
    None,
])
def test_a_rollback_for_anything_but_the_models_bake_breach_is_not_one(line):
    assert sc.bake_breach(line, "alert_classifier") is None


# -- an unprivileged user's views (the container driver), issue 38 --------------------------------------
# Before: `podman inspect tritonserver 2>&1 || true` and the journal's view always exited 0, so a view that
# could not run at all passed "the key is not in it" without looking.
@pytest.mark.parametrize("rc, text, outcome", [
    (0, "CONTAINER ID ...\n[{\"Args\": [...]}]", "shown"),
    (0, "-- No entries --", "shown"),
    (1, "No journal files were opened due to insufficient permissions.", "denied"),
    (125, "Error: no such object: \"tritonserver\"", "denied"),
    (125, "Error: mkdir /root/.local: permission denied", "denied"),
    (127, "sh: 1: podman: not found", "broken"),
    (126, "sh: 1: journalctl: Permission denied", "broken"),
    (1, "", "broken"),
    (0, "", "broken"),
    (2, "Error: unknown flag: --no-pager", "broken"),
])
def test_a_view_that_could_not_run_is_broken_not_clean(rc, text, outcome):
    assert sc.view_outcome(rc, text) == outcome


# -- readiness while a rollout stops at its candidate, issue 38 ---------------------------------------
def index(*entries):
    return [dict(zip(("name", "version", "state", "reason"), e)) for e in entries]


SERVING = {"add_sub": 2}
SERVES = ("add_sub", "2", "READY", "")
OLD = ("add_sub", "1", "UNAVAILABLE", "unloaded")


def test_readiness_200_with_the_served_version_ready_is_fine():
    assert sc.readiness_problem(200, [index(SERVES, OLD), index(SERVES, OLD)], SERVING) is None


def test_a_dip_while_the_candidate_loads_fails_or_unloads_is_the_candidates():
    for state, reason in (("LOADING", ""), ("UNAVAILABLE", "load failed: v3 cannot start"), ("UNLOADING", "")):
        candidate = ("add_sub__candidate", "3", state, reason)
        assert sc.readiness_problem(400, [index(SERVES, candidate), index(SERVES)], SERVING) is None


def test_a_dip_without_a_candidate_is_not():
    # a wave host the failure never reached: readiness must be 200 at every probe
    assert "no candidate" in sc.readiness_problem(400, [index(SERVES, OLD), index(SERVES, OLD)], SERVING)
    assert "no candidate" in sc.readiness_problem("no answer: refused", [index(SERVES), index(SERVES)], SERVING)


def test_a_dip_while_a_real_model_loads_is_not_the_candidates():
    loading = ("add_sub", "3", "LOADING", "")
    why = sc.readiness_problem(400, [index(SERVES, loading, ("add_sub__candidate", "3", "READY", "")), index(SERVES)], SERVING)
    assert "add_sub 3 was LOADING" in why


def test_the_served_version_must_stay_ready_at_every_read():
    gone = ("add_sub", "2", "UNLOADING", "")
    assert sc.readiness_problem(200, [index(SERVES), index(gone)], SERVING) == "add_sub 2 was not READY"


def test_failure_reason_is_the_last_task_failure_on_one_line():
    log = ("[ERROR]: Task failed: an ignored one\n\nTASK [x] ***\n"
           "[ERROR]: Task failed: Action failed: roll-1 was not drained:\n  the balancer's admin socket on roll-lb\n"
           "  did not answer\n\nfatal: [roll-1]: FAILED! => {}\n")
    assert sc.failure_reason(log) == ("[ERROR]: Task failed: Action failed: roll-1 was not drained: the "
                                      "balancer's admin socket on roll-lb did not answer")
    assert sc.failure_reason("PLAY RECAP\nroll-1 : ok=3 failed=0\n") == ""
    assert len(sc.failure_reason("[ERROR]: " + "x" * 1000)) == 400
