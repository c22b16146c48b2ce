"""The lb driver's answer check (molecule/model_variants.py): every anomaly_detector answer is compared with
what the version that gave it must answer, computed from that version's own graph with onnxruntime.

An answer from a version whose answers are unknown (a failed one), with another version's numbers, or with no
version at all must be caught; the right answer of a known version must pass. Needs the model build
(build/model_repository, `make models`)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "molecule"))
import model_variants as mv  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(mv.BUILD, "anomaly_detector", "2", "model.onnx")),
                                reason="needs the model build (make models)")


@pytest.fixture(scope="module")
def table():
    expected = mv.ExpectedAnswers(windows=3)
    expected.add(1, 1)
    expected.add(2, 2)
    expected.add(5, 2)
    return expected.table()


def test_the_answering_versions_own_answer_passes(table):
    for version in (1, 2, 5):
        for window in range(3):
            assert mv.answer_problem(table, window, str(version), table["scores"][version][window]) is None


def test_versions_1_and_2_answer_differently(table):
    """Else the regressed version (1's graph under 2's number) could not be told apart."""
    assert not np.allclose(table["scores"][1][0], table["scores"][2][0], atol=1e-3)


def test_another_versions_answer_under_this_versions_number_is_caught(table):
    problem = mv.answer_problem(table, 0, "2", table["scores"][1][0])
    assert problem and "version 2 answered window 0" in problem


def test_an_answer_from_an_unknown_version_is_caught(table):
    assert "version 4" in mv.answer_problem(table, 0, "4", table["scores"][1][0])


@pytest.mark.parametrize("version", [None, "", "latest"])
def test_an_answer_without_a_version_is_caught(table, version):
    assert "no model_version" in mv.answer_problem(table, 0, version, table["scores"][2][0])


def test_another_windows_answer_is_caught(table):
    assert mv.answer_problem(table, 1, "2", table["scores"][2][0])


def test_the_live_batch_is_larger_than_every_golden_case_and_labelled_by_them():
    texts, labels = mv.classifier_live_batch()
    assert len(texts) == len(labels) == mv.SLOW_BATCH and all(texts) and all(labels)
