"""Benchmarks refuse a loaded machine, or mark every table of a run allowed on one (issue 23 item 2)."""

import importlib.util
import io
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BENCH = os.path.join(ROOT, "tests", "benchmarks")
sys.path.insert(0, BENCH)
import _load  # noqa: E402

MARK = "LOADED MACHINE (load 3.50 on 2 cores): not a result"
TABLE = "Result:\n| a | b |\n|---|---|\n| 1 | 2 |\n\ntext between\n| c |\n|---|\n"


def start(load, cores=2, argv=(), environ=None):
    out, err = io.StringIO(), io.StringIO()
    try:
        state = _load.start(argv, environ=environ or {}, getloadavg=lambda: load, cpu_count=lambda: cores,
                            out=out, err=err)
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()
    return state, out.getvalue(), err.getvalue()


def test_loaded_machine_is_refused_with_the_reason():
    code, out, err = start((3.5, 1.0, 0.5))
    assert code == _load.REFUSED != 0
    assert "Load average (1/5/15 min) before: 3.50 / 1.00 / 0.50; 2 cores." in out
    assert "the 1-minute load average 3.50 exceeds the 2 cores" in err
    assert "--allow-loaded" in err and "BENCH_ALLOW_LOADED=1" in err


@pytest.mark.parametrize("load", [(2.0, 9.0, 9.0), (0.1, 0.1, 0.1)])
def test_idle_machine_runs_and_tables_are_unmarked(load):
    # the 1-minute figure decides; load equal to the cores is not over them
    state, out, _err = start(load)
    assert not state.loaded and state.mark() == ""
    assert _load.mark_tables(TABLE, state) == TABLE
    assert "2 cores" in out


@pytest.mark.parametrize("argv,environ", [(["--allow-loaded"], {}), ([], {"BENCH_ALLOW_LOADED": "1"})])
def test_allowed_run_marks_every_table(argv, environ):
    state, out, _err = start((3.5, 1.0, 0.5), argv=argv, environ=environ)
    assert state.loaded and state.mark() == MARK
    assert MARK in out
    marked = _load.mark_tables(TABLE, state)
    lines = marked.split("\n")
    # each of the two tables is preceded by the mark, a blank line apart from the text around it
    assert marked.count(MARK) == 2
    for header in ("| a | b |", "| c |"):
        at = lines.index(header)
        assert lines[at - 2:at] == ["**%s**" % MARK, ""]
        assert lines[at - 3] == ""


def test_other_values_of_the_variable_do_not_allow():
    code, _out, _err = start((3.5, 1.0, 0.5), environ={"BENCH_ALLOW_LOADED": "yes"})
    assert code == _load.REFUSED


def test_finish_prints_the_load_after():
    state, _out, _err = start((0.5, 0.5, 0.5))
    out = io.StringIO()
    _load.finish(state, getloadavg=lambda: (1.25, 0.75, 0.5), out=out)
    assert "before: 0.50 / 0.50 / 0.50, after: 1.25 / 0.75 / 0.50; 2 cores." in out.getvalue()
    assert state.as_dict() == {"load_before": [0.5, 0.5, 0.5], "load_after": [1.25, 0.75, 0.5], "cores": 2,
                               "loaded": False}


def test_env_configured_benchmarks_take_only_the_flag():
    assert _load.only_flag(["--allow-loaded"]) == ["--allow-loaded"]
    with pytest.raises(SystemExit, match="--hosts"):
        _load.only_flag(["--hosts", "3"])


@pytest.mark.parametrize("script,argv", [
    ("bench_serving.py", []),
    ("bench_serving_sweep.py", []),
    ("bench_converge.py", ["--hosts", "1"]),
    ("bench_s3_sync.py", []),
    ("bench_render_configs.py", []),
])
def test_every_benchmark_refuses_before_it_starts_anything(script, argv, monkeypatch, tmp_path, capsys):
    """Each script's main() on a machine with load 99 on 2 cores: exit 2 before any process or server starts."""
    monkeypatch.setattr(os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.delenv("BENCH_ALLOW_LOADED", raising=False)
    monkeypatch.setenv("BENCH_REPOSITORY", str(tmp_path))

    def no_process(*args, **kwargs):
        raise AssertionError("%s started a process before the load check: %r" % (script, args))
    monkeypatch.setattr(subprocess, "run", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(sys, "argv", [script] + argv)
    monkeypatch.syspath_prepend(BENCH)
    monkeypatch.syspath_prepend(os.path.join(ROOT, "tools", "bench"))
    spec = importlib.util.spec_from_file_location("bench_under_test_" + script[:-3], os.path.join(BENCH, script))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as exc:
        module.main(argv) if script == "bench_converge.py" else module.main()
    assert exc.value.code == _load.REFUSED
    assert "the 1-minute load average 99.00 exceeds the 2 cores" in capsys.readouterr().err
