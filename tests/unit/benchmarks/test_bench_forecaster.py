"""bench_forecaster.py: refuses a loaded machine before loading anything, and runs end to end (a few calls)."""

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BENCH = os.path.join(ROOT, "tests", "benchmarks")
pytest.importorskip("prophet")


@pytest.fixture()
def bench(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    spec = importlib.util.spec_from_file_location("bench_forecaster_under_test", os.path.join(BENCH, "bench_forecaster.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.delenv("BENCH_ALLOW_LOADED", raising=False)
    return module


def test_refuses_a_loaded_machine_before_loading_the_model(bench, monkeypatch, capsys):
    monkeypatch.setattr(os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    monkeypatch.setattr(bench, "_artifact", lambda repository: pytest.fail("loaded the model before the load check"))
    with pytest.raises(SystemExit) as exc:
        bench.main([])
    assert exc.value.code == 2 and "exceeds the 2 cores" in capsys.readouterr().err


def test_runs_end_to_end_and_writes_its_results(bench, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    out = tmp_path / "bench_forecaster.json"
    assert bench.main(["--seconds", "0.01", "--repository", str(tmp_path / "no-build"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["path"].startswith("direct path serves") and len(result["rows"]) == 3
    assert all(r["v1"]["calls"] >= 3 and r["v2"]["calls"] >= 3 for r in result["rows"])
    text = capsys.readouterr().out
    assert "| 48 h ending at the training end, 6 h ahead (golden case) |" in text and "after: 0.50" in text
