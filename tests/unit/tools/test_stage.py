"""tools/stage.sh on stand-in stage commands that print what pytest prints: a stage whose tests skipped
without an allow-list entry fails, whatever their pass count; the stage line shows passed and skipped; a
pytest stage (--pytest) whose summary cannot be read fails, in every molecule scenario's section too."""

import os
import subprocess

STAGE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "stage.sh"))
ROOT_ALLOWLIST = os.path.join(os.path.dirname(STAGE), "..", "tests", "skip_allowlist.txt")
SKIP_GPU = "SKIPPED [2] tests/integration/test_gpu.py:12: no GPU on this host"
SKIP_PROMTOOL = "SKIPPED [1] tests/unit/monitoring/test_monitoring_alert_rules.py:40: promtool is not installed"


def stage(tmp_path, output, rc=0, allowlist=None, pytest=False):
    script = tmp_path / "fake_stage.sh"
    script.write_text("cat <<'OUT'\n%s\nOUT\nexit %d\n" % (output, rc))
    env = dict(os.environ, STAGE_SKIP_ALLOWLIST=str(tmp_path / "allow.txt"))
    if allowlist is not None:
        (tmp_path / "allow.txt").write_text(allowlist)
    return subprocess.run([STAGE] + (["--pytest"] if pytest else []) + ["demo", "bash", str(script)], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, check=False)


def test_a_stage_without_skips_passes_and_says_so(tmp_path):
    proc = stage(tmp_path, "....\n4 passed in 0.31s", allowlist="")
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("STAGE demo") and " PASS " in proc.stdout and "4 passed, 0 skipped" in proc.stdout


def test_an_unlisted_skip_fails_the_stage(tmp_path):
    # before: rc 0 and "40 passed" printed PASS, the skips unseen
    out = "short test summary info\n%s\n%s\n40 passed, 3 skipped in 12.0s" % (SKIP_GPU, SKIP_PROMTOOL)
    proc = stage(tmp_path, out, allowlist="test_gpu.py:12: no GPU | placement needs a GPU: tools/gpu_check.sh proves it\n")
    assert proc.returncode != 0
    assert " FAIL " in proc.stdout and "40 passed, 3 skipped" in proc.stdout
    assert SKIP_PROMTOOL in proc.stdout and SKIP_GPU not in proc.stdout.split("allow-list")[1]


def test_listed_skips_pass_with_their_count_shown(tmp_path):
    out = "%s\n=== 40 passed, 2 skipped in 12.0s ===" % SKIP_GPU
    proc = stage(tmp_path, out, allowlist="# why each may skip\ntest_gpu.py:12: no GPU | placement needs a GPU: tools/gpu_check.sh\n")
    assert proc.returncode == 0, proc.stdout
    assert "40 passed, 2 skipped" in proc.stdout


def test_skips_without_reasons_fail(tmp_path):
    # pytest run without -rs/-ra: the skips are counted but not named, so nothing can be matched
    proc = stage(tmp_path, "40 passed, 2 skipped in 12.0s", allowlist="test_gpu.py | GPU\n")
    assert proc.returncode != 0 and "2 test(s) skipped but 0 listed with a reason" in proc.stdout


def test_an_entry_without_a_reason_is_refused(tmp_path):
    proc = stage(tmp_path, "%s\n1 passed, 2 skipped in 1.0s" % SKIP_GPU, allowlist="test_gpu.py:12: no GPU\n")
    assert proc.returncode != 0 and "every entry is" in proc.stdout


def test_counts_are_summed_over_every_pytest_run(tmp_path):
    # the molecule stage runs one pytest per scenario
    out = "== molecule a\n=== 5 passed in 2.0s ===\n== molecule b\n=== 7 passed, 1 warning in 3.5s (0:00:03) ==="
    proc = stage(tmp_path, out, allowlist="")
    assert proc.returncode == 0 and "12 passed, 0 skipped" in proc.stdout, proc.stdout


def test_skips_inside_molecules_box_are_seen(tmp_path):
    # molecule prints pytest's lines inside a box, coloured: "  <dim>│<reset> SKIPPED [1] ..."
    box = "  \x1b[2m\u2502\x1b[0m "
    lines = ["tests/test_x.py s..", "SKIPPED [1] tests/test_x.py:9: no podman inside", "=========== 3 passed, 1 skipped in 4.20s"]
    out = "\n".join(box + line for line in lines)
    proc = stage(tmp_path, out, allowlist="")
    assert proc.returncode != 0 and "3 passed, 1 skipped" in proc.stdout and "no podman inside" in proc.stdout, proc.stdout


def test_a_failing_command_still_fails_with_its_log(tmp_path):
    proc = stage(tmp_path, "1 failed, 3 passed in 1.0s", rc=1, allowlist="")
    assert proc.returncode == 1 and " FAIL " in proc.stdout and "last 80 lines" in proc.stdout


def test_a_failed_stage_ends_with_why_from_above_its_tail(tmp_path):
    # CI shows a run's tail: molecule's destroy and recap come after the failure, so the reason must be repeated
    # last. An ignored task failure is not a reason; the driver's CHECK FAILED line inside its JSON result is.
    ignored = ("TASK [Load with a wrong API key] ***\n[ERROR]: Task failed: Triton refused the API key\n"
               "fatal: [roll-1]: FAILED! =>\n    msg: refused\n...ignoring\n")
    failed = ("TASK [Run the operations] ***\n[ERROR]: Task failed: Module failed: non-zero return code\n"
              'fatal: [localhost]: FAILED! => {"rc": 1, "stdout": "no_change_site: rc=0\\nLB CHECK FAILED: '
              'c_corrupt_model: readiness / candidates: roll-2\\n"}\n')
    tail = "".join("destroy line %d\n" % i for i in range(100))
    proc = stage(tmp_path, ignored + failed + tail + "ERROR Molecule executed 1 scenario (1 failed)", rc=2, allowlist="")
    assert proc.returncode == 2
    why = proc.stdout.split("----- why demo failed")[1]
    assert "CHECK FAILED: c_corrupt_model: readiness / candidates: roll-2\n" in why
    assert "Module failed: non-zero return code" in why and "refused the API key" not in why


def test_a_passing_stage_prints_no_why(tmp_path):
    proc = stage(tmp_path, "[ERROR]: Task failed: expected\n...ignoring\n1 passed in 1.0s", allowlist="")
    assert proc.returncode == 0 and "why" not in proc.stdout


def test_the_shipped_allowlist_is_well_formed():
    with open(ROOT_ALLOWLIST) as handle:
        entries = [line for line in handle.read().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert all(" | " in e and e.split(" | ", 1)[0].strip() and e.split(" | ", 1)[1].strip() for e in entries), entries


# -- a pytest stage whose summary cannot be read (issue 38) ----------------------------------------------
# Before: rc 0 and no readable closing line printed "PASS" with an empty count, and the skip check (which
# reads the count) saw 0 skips: a stage could pass having counted nothing.
def test_a_pytest_stage_without_a_summary_fails(tmp_path):
    for out in ("....\n", "....\nno tests ran in 0.01s", "4 passed, 1 skipped (in 3 s)"):
        proc = stage(tmp_path, out, allowlist="", pytest=True)
        assert proc.returncode != 0 and " FAIL " in proc.stdout, (out, proc.stdout)
        assert "no pytest summary line" in proc.stdout, proc.stdout


def test_a_pytest_stage_with_its_summary_passes(tmp_path):
    proc = stage(tmp_path, "....\n=== 4 passed in 0.31s ===", allowlist="", pytest=True)
    assert proc.returncode == 0 and "4 passed, 0 skipped" in proc.stdout, proc.stdout


def test_every_molecule_scenario_needs_its_summary(tmp_path):
    # a scenario whose verifier ran no pytest (no tests found) must not hide behind the others' summaries
    out = "make: entering\n== molecule a\n=== 5 passed in 2.0s ===\n== molecule b\nINFO Verifier skipped\n== molecule c\n3 passed in 1.0s"
    proc = stage(tmp_path, out, allowlist="", pytest=True)
    assert proc.returncode != 0 and "in: molecule b" in proc.stdout, proc.stdout
    proc = stage(tmp_path, out.replace("INFO Verifier skipped", "1 passed in 9.0s"), allowlist="", pytest=True)
    assert proc.returncode == 0 and "9 passed, 0 skipped" in proc.stdout, proc.stdout


def test_a_stage_that_runs_no_pytest_needs_no_summary(tmp_path):
    proc = stage(tmp_path, "yamllint: ok", allowlist="")
    assert proc.returncode == 0 and " PASS " in proc.stdout, proc.stdout


def test_the_makefile_marks_its_pytest_stages():
    with open(os.path.join(os.path.dirname(STAGE), "..", "Makefile")) as handle:
        lines = [line.split() for line in handle.read().splitlines() if line.startswith("\t$(STAGE) ")]
    stages = dict((words[2] if words[1] == "--pytest" else words[1], words[1] == "--pytest") for words in lines)
    assert {name for name, marked in stages.items() if marked} == {"unit", "integration", "molecule"}, stages
