"""The model-card check tolerates cross-CPU float noise and nothing else."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("check_model_cards", os.path.join(ROOT, "tools", "check_model_cards.py"))
cards = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cards)

CARD = "| held_out | 0.999 | 0.9873 |\n\"held_out_size\": 980,\n\"bias\": -23.432863235473633\n"


def test_same_card_matches():
    assert cards.compare(CARD, CARD, 0.02, 1e-3) == []


def test_float_noise_within_tolerance_matches():
    built = CARD.replace("0.999", "1.0").replace("0.9873", "1.0").replace("-23.432863235473633", "-23.432851791381836")
    assert cards.compare(CARD, built, 0.02, 1e-3) == []


def test_metric_drop_beyond_tolerance_is_reported_with_its_line():
    problems = cards.compare(CARD, CARD.replace("0.9873", "0.9"), 0.02, 1e-3)
    assert problems == ["line 1: committed 0.9873, built 0.9"]


def test_integers_must_match_exactly():
    assert cards.compare(CARD, CARD.replace("980", "981"), 0.02, 1e-3) == ["line 2: committed 980, built 981"]


def test_changed_text_is_reported_as_a_diff():
    problems = cards.compare(CARD, CARD.replace("held_out |", "held-out |"), 0.02, 1e-3)
    assert len(problems) == 1 and problems[0].startswith("text differs:") and "+| held-out |" in problems[0]
