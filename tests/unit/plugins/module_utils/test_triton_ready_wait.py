"""triton_ready's wait with a fake clock: readiness answers and `systemctl show` outputs replayed round by round.
A unit that cannot become ready (stopped, failed, not installed, crash-looping) ends the wait at once, named with its
state; a unit that starts slowly is waited for; a timeout names the unit's state."""

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import triton_ready as tr

RUNNING = "LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nNRestarts=0\nExecMainStatus=0\n"


def show(active, sub, result="success", restarts=0, status=0, load="loaded"):
    return ("LoadState=%s\nActiveState=%s\nSubState=%s\nResult=%s\nNRestarts=%d\nExecMainStatus=%d\n"
            % (load, active, sub, result, restarts, status))


class Clock(object):
    """Time moves only when the wait sleeps."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def run(answers, shows, timeout=60, delay=2, unit=True):
    """The wait over scripted rounds: answers[i] is round i's readiness (True, or the answer in words), shows[i]
    round i's `systemctl show` output (None: systemctl failed). The last entry repeats."""
    clock = Clock()
    probes, reads = [], []

    def probe(seconds):
        assert 1.0 <= seconds <= tr.PROBE_TIMEOUT
        answer = answers[min(len(probes), len(answers) - 1)]
        probes.append(seconds)
        return (True, "200") if answer is True else (False, answer)

    def read_unit():
        out = shows[min(len(reads), len(shows) - 1)]
        reads.append(out)
        return (tr.parse_show(out), None) if out is not None else ({}, "Failed to connect to bus")

    result = tr.wait_ready(probe, read_unit if unit else None, timeout, delay, clock=clock, sleep=clock.sleep)
    return result, clock, probes, reads


def test_ready_at_once_reads_no_unit():
    result, clock, probes, reads = run([True], [RUNNING])
    assert result["ready"] is True and result["reason"] == "ready" and result["seconds"] == 0
    assert (len(probes), reads, clock.sleeps) == (1, [], [])
    assert tr.message(result, "http://127.0.0.1:8000/", "tritonserver.service", 60) == \
        "Triton at http://127.0.0.1:8000/v2/health/ready is ready (after 0.0 s)."


def test_a_slow_start_is_waited_for():
    starting = show("activating", "start")
    result, clock, probes, reads = run(["Connection refused", "Connection refused", "HTTP 400: Bad Request", True],
                                       [starting, RUNNING, RUNNING])
    assert result["ready"] is True and result["rounds"] == 4 and len(reads) == 3
    assert clock.sleeps == [2, 2, 2] and result["seconds"] == 6


@pytest.mark.parametrize("out, words, cause", [
    (show("inactive", "dead"), "inactive (dead)", "not running"),
    (show("failed", "failed", "exit-code", status=1), "failed (failed, result exit-code, status 1)", "not running"),
    (show("failed", "failed", "signal", status=9, restarts=5), "failed (failed, result signal, signal 9, restarted 5 times)",
     "not running"),
    (show("inactive", "dead", load="not-found"), "not installed (not-found)", "no such unit"),
    (show("inactive", "dead", load="masked"), "masked", "masked"),
])
def test_a_stopped_unit_ends_the_wait_at_once(out, words, cause):
    result, clock, probes, reads = run(["Connection refused"], [out])
    assert (result["ready"], result["reason"], result["status"]) == (False, "stopped", words)
    assert cause in result["cause"]
    assert len(probes) == 1 and clock.sleeps == []
    msg = tr.message(result, "http://127.0.0.1:8000", "tritonserver.service", 60)
    assert msg.startswith("Triton's unit tritonserver.service is %s, so Triton cannot become ready (" % words), msg
    assert "last answer from http://127.0.0.1:8000/v2/health/ready after 0.0 s: Connection refused" in msg
    assert msg.endswith("Find why: journalctl -u tritonserver.service -n 50.")


def test_a_clean_stop_does_not_show_sigterms_number():
    fields = tr.parse_show(show("inactive", "dead", status=15))
    assert tr.unit_words(fields) == "inactive (dead)"


def test_a_unit_waiting_to_restart_is_a_crash_loop_at_once():
    out = show("activating", "auto-restart", "exit-code", restarts=2, status=1)
    result, clock, probes, reads = run(["Connection refused"], [out])
    assert (result["reason"], result["status"]) == ("crash_loop", "activating (auto-restart, result exit-code, status 1, "
                                                                  "restarted 2 times)")
    assert "crash loop" in result["cause"] and clock.sleeps == []
    assert result["unit"]["SubState"] == "auto-restart" and result["unit"]["NRestarts"] == "2"


def test_restarts_during_the_wait_are_a_crash_loop():
    # Triton starts, exits, and is running again at the next read: only NRestarts tells
    result, clock, probes, reads = run(["Connection refused"], [show("active", "running", restarts=1),
                                                                show("active", "running", restarts=1),
                                                                show("active", "running", "exit-code", restarts=2, status=1)])
    assert (result["reason"], len(reads)) == ("crash_loop", 3)
    assert "restarted it 1 time during the wait" in result["cause"]
    assert result["status"] == "active (running, result exit-code, status 1, restarted 2 times)"
    assert result["seconds"] == 4


def test_restarts_before_the_wait_are_not_a_crash_loop():
    result = run(["Connection refused", True], [show("active", "running", restarts=3)])[0]
    assert result["ready"] is True


def test_a_timeout_names_the_units_state():
    result, clock, probes, reads = run(["HTTP 400: Bad Request"], [RUNNING], timeout=7, delay=2)
    assert (result["ready"], result["reason"], result["status"]) == (False, "timeout", "active (running)")
    assert clock.sleeps == [2, 2, 2, 1] and result["seconds"] == 7 and len(probes) == 5
    msg = tr.message(result, "http://h:8000", "tritonserver.service", 7)
    assert msg == ("Triton did not report ready at http://h:8000/v2/health/ready within 7 s (last answer: HTTP 400: "
                   "Bad Request); its unit tritonserver.service is active (running). "
                   "Find why: journalctl -u tritonserver.service -n 50.")


def test_a_state_that_cannot_be_read_is_polled_until_the_timeout():
    result, clock, probes, reads = run(["Connection refused"], [None], timeout=4)
    assert result["reason"] == "timeout" and len(reads) == 3
    assert result["status"] == "unknown (systemctl show gave no state: Failed to connect to bus)"


def test_without_a_unit_only_readiness_is_polled():
    result, clock, probes, reads = run(["Connection refused"], [show("inactive", "dead")], timeout=2, unit=False)
    assert result["reason"] == "timeout" and reads == [] and result["status"] == "" and result["unit"] == {}
    assert tr.message(result, "http://h:8000", None, 2) == \
        "Triton did not report ready at http://h:8000/v2/health/ready within 2 s (last answer: Connection refused)."


def test_timeout_zero_asks_once():
    result, clock, probes, reads = run(["Connection refused"], [RUNNING], timeout=0)
    assert result["reason"] == "timeout" and len(probes) == 1 and clock.sleeps == []


def test_parse_show_keeps_only_the_properties_asked_for():
    assert tr.parse_show("Id=x\nActiveState=active\nSubState=running\n\nbogus\n") == {"ActiveState": "active",
                                                                                      "SubState": "running"}
    assert tr.show_argv("/bin/systemctl", "u.service") == [
        "/bin/systemctl", "show", "-p", "LoadState,ActiveState,SubState,Result,NRestarts,ExecMainStatus", "u.service"]
