"""aiops.triton.eda_refusal: may an alert remediate this host now (playbooks/eda_remediate.yml's throttle)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.eda import eda_refusal

NOW = 1796500000.0  # 2026-12-05T19:46:40Z
ALERT = {"alertname": "TritonDown", "labels": {"alertname": "TritonDown", "host": "lab-1"}}


def record(offset, outcome, rid="f1-1", host="lab-1", remediation="restart"):
    return {"time": NOW + offset, "id": rid, "host": host, "remediation": remediation, "outcome": outcome, "alert": ALERT}


def test_an_empty_log_allows():
    assert eda_refusal([], "lab-1", NOW, 1800) == ""


def test_a_started_record_without_a_later_one_is_in_progress():
    reason = eda_refusal([record(-1000, "started")], "lab-1", NOW, 1800)
    assert reason == "a remediation of lab-1 is in progress since 2026-12-05T19:30:00Z (restart, TritonDown)"


def test_a_start_without_an_end_older_than_the_window_no_longer_blocks():
    """Its gate died (kill -9 mid-run): the host is not throttled forever."""
    assert eda_refusal([record(-4000, "started")], "lab-1", NOW, 1800) == ""


def test_a_started_record_finished_later_is_not_in_progress():
    assert eda_refusal([record(-4000, "started"), record(-3900, "done")], "lab-1", NOW, 1800) == ""


def test_a_remediation_inside_the_window_throttles():
    records = [record(-200, "started"), record(-100, "failed")]
    assert eda_refusal(records, "lab-1", NOW, 1800) == \
        "lab-1 was remediated at 2026-12-05T19:45:00Z, inside the 1800 s window (restart)"


def test_a_remediation_outside_the_window_allows():
    assert eda_refusal([record(-2000, "started"), record(-1900, "done")], "lab-1", NOW, 1800) == ""


@pytest.mark.parametrize("outcome", ["refused", "throttled", "dry-run"])
def test_refusals_throttles_and_dry_runs_do_not_count(outcome):
    assert eda_refusal([record(-10, outcome)], "lab-1", NOW, 1800) == ""


def test_other_hosts_do_not_count():
    records = [record(-10, "started", rid="x", host="lab-2"), record(-5, "done", rid="y", host="lab-2")]
    assert eda_refusal(records, "lab-1", NOW, 1800) == ""


def test_the_latest_remediation_inside_the_window_is_named():
    records = [record(-1000, "done", rid="a", remediation="quarantine"), record(-100, "done", rid="b")]
    assert "19:45:00Z" in eda_refusal(records, "lab-1", NOW, 1800)
    assert eda_refusal(records, "lab-1", NOW, 1800).endswith("(restart)")


def test_records_that_are_not_a_list_are_refused():
    with pytest.raises(AnsibleFilterError):
        eda_refusal("nope", "lab-1", NOW, 1800)
