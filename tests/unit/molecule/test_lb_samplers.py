"""What runs beside each step of molecule/lb (files/rolling_under_load.py) and what its verify reads
(tests/test_lb.py), fed what a broken sampler or environment leaves (issue 38, item 3).

- HAProxy's sampler, on a stand-in for the LB host's sampling exec: an empty answer (HAProxy reloading)
  once ended its reader, so it sampled no more while `len(samples) >= 10` still passed on what it had taken
  before; now the answer is counted as unanswered and sampling goes on. A sampler that stops or freezes
  before its step ends is named, whatever it sampled before.
- The readiness sampler: every probe that is not 200 is kept; on a host a failed step must leave serving, a
  probe the host's candidate does not explain (scenario_checks.readiness_problem) is named; one that dies is named.
- test_lb.py's installed-collection check fails when AIOPS_LB_COLLECTIONS_PATH is unset or empty, unless
  the checkout was asked for (AIOPS_LB_FROM_CHECKOUT=1); its readiness and sampler checks fail on a record
  that shows a host unready or a sampler that stopped.
"""

import importlib.util
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "molecule", "lb", "files"))
import rolling_under_load as rul  # noqa: E402


def load_test_lb():
    spec = importlib.util.spec_from_file_location("lb_verify", os.path.join(ROOT, "molecule", "lb", "tests", "test_lb.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ANSWER = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state\n" + "".join(
    "3 %s %d %s 10.0.0.%d 2 0\n" % (backend, i, host, i) for backend in rul.BACKENDS for i, host in enumerate(rul.HOSTS, 1))


@pytest.fixture
def lb_stand_in(tmp_path, monkeypatch):
    """The sampler's `podman exec roll-lb sh -c SCRIPT` runs `sh -c <script>` here instead; the script prints
    answers (a file per answer, in order; then the last one again) until the stop file exists."""
    stop = tmp_path / "stop"

    def script(answers, then="repeat"):
        for i, text in enumerate(answers):
            (tmp_path / ("answer-%02d" % i)).write_text(text)
        last = "answer-%02d" % (len(answers) - 1)
        tail = {"repeat": 'while [ ! -e %s ]; do cat %s; echo @@END; sleep 0.1; done' % (stop, last),
                "exit": "exit 3", "freeze": "while [ ! -e %s ]; do sleep 0.1; done" % stop}[then]
        return "cd %s; for f in answer-*; do cat $f; echo @@END; sleep 0.1; done; %s" % (tmp_path, tail)

    real_popen = subprocess.Popen

    def start(answers, then="repeat"):
        body = script(answers, then)
        monkeypatch.setattr(rul.subprocess, "Popen", lambda argv, **kw: real_popen(["sh", "-c", body], **kw))
        monkeypatch.setattr(rul, "podman", lambda *args, **kw: stop.write_text("stop"))
        return rul.Sampler()
    return start


def test_an_empty_answer_is_unanswered_and_sampling_goes_on(lb_stand_in):
    sampler = lb_stand_in([ANSWER, ANSWER, "", ANSWER])
    time.sleep(2.5)
    empty_at = time.time() - 2.0  # the empty answer came about 0.3 s after the start
    samples = sampler.close()
    assert sampler.unanswered >= 1
    assert len([s for s in samples if s[0] > empty_at]) >= 5, "the sampler stopped at the empty answer: %s" % samples
    assert samples[-1][1] == dict((h, "up") for h in rul.HOSTS)
    assert sampler.sampler_problem() is None


def test_a_sampler_that_stops_before_the_step_ends_is_named(lb_stand_in):
    sampler = lb_stand_in([ANSWER] * 12, then="exit")
    deadline = time.time() + 30
    while sampler.proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    samples = sampler.close()
    assert len(samples) >= 10  # what the old check looked at, and passed
    assert sampler.sampler_problem() == "it stopped before the step ended"


def test_a_frozen_sampler_is_named(lb_stand_in):
    sampler = lb_stand_in([ANSWER] * 12, then="freeze")
    deadline = time.time() + 30
    while len(sampler.samples) < 12 and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)
    samples = sampler.close()
    assert len(samples) >= 10
    assert "frozen" in sampler.problem(len(samples), max_stale=1.0)


SERVES = [{"name": "anomaly_detector", "version": "2", "state": "READY"}]
CANDIDATE = SERVES + [{"name": "anomaly_detector__candidate", "version": "3", "state": "LOADING"}]


def readiness(statuses, indexes=None, serving=None, hosts=("roll-1",)):
    """A Readiness over stand-ins: probes answer statuses in turn (then 200), indexes the same (then SERVES)."""
    statuses, indexes = iter(statuses), iter(indexes or [])
    return rul.Readiness(dict((h, "ip-" + h) for h in hosts), serving=serving, period=0.01,
                         probe=lambda ip: next(statuses, 200), index=lambda ip: next(indexes, SERVES))


def test_readiness_keeps_every_probe_that_was_not_200():
    ready = readiness([200, 200, 503])
    time.sleep(0.5)
    record = ready.close()
    assert record["not_200_count"] == 1 and record["not_200"][0][1:] == ("roll-1", "503")
    assert record["problem"] is None and record["samples"]["roll-1"] >= 10
    assert record["checked"] == [] and record["unexplained_count"] == 0  # recorded, not held


def test_a_held_host_may_dip_only_while_its_candidate_loads():
    held = {"roll-1": {"anomaly_detector": 2}}
    # before and after the 400: the candidate loading; every other probe 200 with 2 READY
    ready = readiness([200, 400], indexes=[SERVES, SERVES, CANDIDATE, CANDIDATE], serving=held)
    time.sleep(0.5)
    record = ready.close()
    assert record["not_200_count"] == 1 and record["unexplained_count"] == 0, record
    # a wave host, never reached: no candidate to explain a 400
    ready = readiness([200, 400], serving={"roll-2": {"anomaly_detector": 2}}, hosts=("roll-2",))
    time.sleep(0.5)
    record = ready.close()
    assert record["unexplained_count"] == 1 and "no candidate" in record["unexplained"][0][2], record
    # the served version gone from the index for a moment, readiness 200 all along
    ready = readiness([], indexes=[SERVES, [dict(SERVES[0], state="UNLOADING")]], serving=held)
    time.sleep(0.5)
    record = ready.close()
    assert record["unexplained"][0][1:] == ("roll-1", "anomaly_detector 2 was not READY"), record


def test_a_refused_probe_is_not_ready_and_a_probe_that_dies_is_named():
    def refused(ip):
        raise ConnectionRefusedError(111, "Connection refused")
    record = rul.Readiness({"roll-1": "ip1"}, probe=refused, period=0.01)
    time.sleep(0.3)
    record = record.close()
    assert record["not_200_count"] >= 10 and "Connection refused" in record["not_200"][0][2]

    def broken(ip):
        raise KeyError("status")
    record = rul.Readiness({"roll-1": "ip1"}, probe=broken, period=0.01)
    time.sleep(0.3)
    assert record.close()["problem"].startswith("it died: KeyError")


# -- the verify (molecule/lb/tests/test_lb.py) ------------------------------------------------------------
def test_the_installed_collection_check_fails_when_its_path_is_unset(monkeypatch, tmp_path):
    check = load_test_lb().test_the_operations_ran_through_the_collection_make_test_installed
    monkeypatch.delenv("AIOPS_LB_FROM_CHECKOUT", raising=False)
    for unset in (None, ""):
        if unset is None:
            monkeypatch.delenv("AIOPS_LB_COLLECTIONS_PATH", raising=False)
        else:
            monkeypatch.setenv("AIOPS_LB_COLLECTIONS_PATH", unset)
        with pytest.raises(AssertionError, match="AIOPS_LB_FROM_CHECKOUT"):
            check({"collections_path": "checkout"})
    monkeypatch.setenv("AIOPS_LB_FROM_CHECKOUT", "1")
    check({"collections_path": "checkout"})  # asked for by name
    installed = tmp_path / "collections"
    (installed / "ansible_collections" / "aiops" / "triton").mkdir(parents=True)
    (installed / "ansible_collections" / "aiops" / "triton" / "MANIFEST.json").write_text("{}")
    monkeypatch.setenv("AIOPS_LB_COLLECTIONS_PATH", str(installed))
    check({"collections_path": str(installed)})
    with pytest.raises(AssertionError):
        check({"collections_path": "checkout"})


def test_the_verify_fails_on_a_probe_the_candidate_does_not_explain_or_a_sampler_that_stopped():
    verify = load_test_lb()
    check = verify.test_readiness_was_sampled_throughout_each_step_of_the_failure_sequence
    good = {"problem": None, "not_200": [[1.0, "roll-1", "400"]], "not_200_count": 1, "unexplained": [],
            "unexplained_count": 0, "checked": list(verify.HOSTS), "samples": dict((h, 40) for h in verify.HOSTS)}
    check({"steps": {"c_corrupt_model": {"readiness": good}}}, "c_corrupt_model")
    for bad in (dict(good, unexplained=[[1.0, "roll-2", "readiness 400 with no candidate in the index"]], unexplained_count=1),
                dict(good, problem="it stopped before the step ended"), dict(good, samples={"roll-1": 40}),
                dict(good, checked=[])):  # a failure step whose hosts were not held
        with pytest.raises(AssertionError):
            check({"steps": {"c_corrupt_model": {"readiness": bad}}}, "c_corrupt_model")
    with pytest.raises(AssertionError):
        verify.test_haproxys_sampler_ran_until_the_step_ended(
            {"steps": {"a_flag_change_site": {"sampler_problem": "it died: AnsibleFilterError: ...", "samples": 4}}},
            "a_flag_change_site")


# -- the drain proof (issue 38, item 1) ------------------------------------------------------------------
STAT_HEADER = "# pxname,svname,qcur,qmax,scur,smax,status\n"


def state_answer(admin=None, op=None):
    """`show servers state` with every server up, but the admin / op states given per host."""
    admin, op = admin or {}, op or {}
    return "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state\n" + "".join(
        "3 %s %d %s 10.0.0.%d %d %d\n" % (b, i, h, i, op.get(h, 2), admin.get(h, 0))
        for b in rul.BACKENDS for i, h in enumerate(rul.HOSTS, 1))


def stat_answer(scur=None):
    scur = scur or {}
    return STAT_HEADER + "".join("%s,%s,0,0,%d,5,UP\n" % (b, h, scur.get(h, 0)) for b in rul.BACKENDS for h in rul.HOSTS)


def test_the_sampler_reads_the_admin_drain_bit_and_in_flight_requests():
    detail = rul.Sampler.detail(state_answer(admin={"roll-2": 8}, op={"roll-3": 0}), stat_answer({"roll-2": 3}))
    assert detail["roll-2"] == {"drain": True, "op": 2, "in_flight": 6}  # 3 per backend, both backends
    # DOWN from a failed health check is not a drain
    assert detail["roll-3"] == {"drain": False, "op": 0, "in_flight": 0}
    assert rul.Sampler.detail(state_answer(), "")["roll-1"]["in_flight"] is None
    assert rul.Sampler.detail("", "") is None


def test_the_sampler_splits_the_two_answers_of_each_sample(lb_stand_in):
    sampler = lb_stand_in([state_answer(admin={"roll-4": 8}) + "@@STAT\n" + stat_answer({"roll-4": 1})] * 12)
    deadline = time.time() + 30
    while len(sampler.details) < 12 and time.time() < deadline:
        time.sleep(0.1)
    sampler.close()
    assert sampler.details[0][1]["roll-4"] == {"drain": True, "op": 2, "in_flight": 2}
    assert sampler.samples[0][1]["roll-4"] == "drained"


def sample(stamp, drained=(), busy=(), down=()):
    return (stamp, dict((h, {"drain": h in drained, "op": 0 if h in down else 2, "in_flight": 1 if h in busy else 0})
                        for h in rul.HOSTS))


def test_the_drain_proof_needs_the_drain_and_no_request_in_flight_before_the_stop():
    stop = {"roll-1": {"last_ok": 14.5, "failed": 15.0}}
    drained = [sample(10), sample(12, drained=["roll-1"], busy=["roll-1"]), sample(13, drained=["roll-1"]),
               sample(16, drained=["roll-1"], down=["roll-1"])]
    assert rul.drain_problems(drained, stop, ["roll-1"]) == {}
    assert rul.drain_margins(drained, stop, ["roll-1"]) == {"roll-1": 2.0}
    # the drain skipped: HAProxy only marks it DOWN once its health check fails
    skipped = [sample(10), sample(13), sample(16, down=["roll-1"])]
    assert "never in HAProxy's drain state" in rul.drain_problems(skipped, stop, ["roll-1"])["roll-1"]
    # drained, but Triton stopped with requests still on it
    busy = [sample(10), sample(12, drained=["roll-1"], busy=["roll-1"]), sample(14.9, drained=["roll-1"], busy=["roll-1"])]
    assert "never with 0 requests in flight" in rul.drain_problems(busy, stop, ["roll-1"])["roll-1"]
    # drained only after the stop (the drain ran, late)
    late = [sample(10), sample(15.5, drained=["roll-1"])]
    assert "never in HAProxy's drain state" in rul.drain_problems(late, stop, ["roll-1"])["roll-1"]
    # a host whose stop was never seen proves nothing
    assert rul.drain_problems(drained, {}, ["roll-1"]) == {"roll-1": "readiness never saw its Triton stop"}


def test_readiness_records_where_each_host_stopped_answering():
    ready = readiness([200, 200, 503, 503, 200])
    time.sleep(0.5)
    record = ready.close()
    down = record["first_down"]["roll-1"]
    assert down["last_ok"] < down["failed"]
    # a host that never answered 200 in the step has no "before": nothing recorded
    assert readiness([503] * 100).close()["first_down"] == {}


def test_the_verify_fails_when_the_drain_is_not_proven():
    verify = load_test_lb()
    good = {"drain_problems": {}, "drain_margin_s": dict((h, 1.5) for h in verify.HOSTS)}
    steps = {"a_flag_change_site": good, "no_change_site": {"retries_off": True}, "b_retries_on": {"rc": 0}}
    verify.test_every_host_was_drained_with_nothing_in_flight_before_its_triton_stopped({"steps": steps}, "a_flag_change_site")
    for bad in (dict(good, drain_problems={"roll-2": "never in HAProxy's drain state ..."}),
                dict(good, drain_margin_s={"roll-1": 1.5})):
        with pytest.raises(AssertionError):
            verify.test_every_host_was_drained_with_nothing_in_flight_before_its_triton_stopped(
                {"steps": dict(steps, a_flag_change_site=bad)}, "a_flag_change_site")


def test_a_short_step_needs_fewer_samples_a_long_one_ten(lb_stand_in):
    """A refusal of a few seconds (undrain.yml refusing a stopped unit: 6 s) gives fewer than 10 samples."""
    sampler = lb_stand_in([ANSWER] * 5, then="freeze")
    deadline = time.time() + 30
    while len(sampler.samples) < 5 and time.time() < deadline:
        time.sleep(0.1)
    sampler.close()
    assert sampler.sampler_problem(6.0) is None
    assert sampler.sampler_problem(60.0) == "it took 5 samples (at least 10)"
    assert sampler.sampler_problem() == "it took 5 samples (at least 10)"
