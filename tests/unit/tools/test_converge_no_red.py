"""tools/converge_no_red.sh on logs shaped as the molecule stage writes them (molecule's coloured INFO lines, Ansible's
output inside molecule's box): a first converge that printed red fails, red outside the converge (a side effect's
expected failures) does not, and a log without the scenario's complete converge fails rather than pass unread."""

import os
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "converge_no_red.sh")
BOX = "  \x1b[2m\u2502\x1b[0m "


def info(scenario, phase, what):
    return "\x1b[36mINFO    \x1b[0m \x1b[32m%s\x1b[0m \u279c \x1b[33m%s\x1b[0m: %s" % (scenario, phase, what)


def converge(scenario, body):
    return [info(scenario, "converge", "\x1b[36mExecuting\x1b[0m")] + [BOX + line for line in body] + [
        info(scenario, "converge", "\x1b[32mExecuted: Successful\x1b[0m")]


CLEAN = ["PLAY [Converge] ****", "TASK [aiops.triton.triton_server : Python venv] ****", "changed: [roll-1]",
         "PLAY RECAP ****", "roll-1 : ok=12 changed=5 unreachable=0 failed=0"]
RED = {
    "fatal": "fatal: [roll-1]: FAILED! => {\"msg\": \"Failed to import the required Python library (packaging)\"}",
    "failed": "failed: [roll-lb] (item=roll-1) => {\"cmd\": \"socat\"}",
    "error": "[ERROR]: Task failed: Module failed: No such file or directory",
}


def run(tmp_path, lines, scenario="lb"):
    log = tmp_path / "molecule-lb.log"
    log.write_text("\n".join(lines) + "\n")
    return subprocess.run([SCRIPT, str(log), scenario], capture_output=True, text=True, check=False)


def test_a_clean_converge_passes_and_counts_its_tasks(tmp_path):
    proc = run(tmp_path, converge("lb", CLEAN))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "molecule/lb: a fresh converge, no red (1 tasks)"


@pytest.mark.parametrize("kind", sorted(RED))
def test_red_in_the_converge_fails_and_is_shown(tmp_path, kind):
    body = CLEAN[:3] + [RED[kind], "...ignoring"] + CLEAN[3:]
    proc = run(tmp_path, converge("lb", body))
    assert proc.returncode == 1
    assert RED[kind] in proc.stderr and "molecule/lb's converge printed the errors above" in proc.stderr


def test_red_outside_the_converge_is_not_the_converges(tmp_path):
    side_effect = [info("lb", "side_effect", "Executing"), BOX + RED["fatal"], BOX + RED["error"]]
    proc = run(tmp_path, converge("container", [RED["fatal"]] + CLEAN) + converge("lb", CLEAN) + side_effect)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("lines", [
    pytest.param([], id="empty log"),
    pytest.param(converge("container", CLEAN), id="another scenario's converge only"),
    pytest.param(converge("lb", CLEAN)[:-1], id="converge cut short"),
    pytest.param(converge("lb", CLEAN[:3]), id="no PLAY RECAP"),
])
def test_a_log_without_the_scenarios_complete_converge_fails(tmp_path, lines):
    proc = run(tmp_path, lines)
    assert proc.returncode == 1
    assert "holds no complete converge of molecule/lb" in proc.stderr


def test_a_missing_log_fails(tmp_path):
    proc = subprocess.run([SCRIPT, str(tmp_path / "none.log"), "lb"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "no log" in proc.stderr
