"""triton_ready run end to end: a local HTTP server stands in for Triton's /v2/health/ready, the systemctl double
(tests/doubles/systemctl.double, on PATH) for the unit; its arguments, check mode and what it returns."""

import http.server
import json
import os
import socket
import threading

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiops.triton.plugins.modules import triton_ready

DOUBLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "doubles", "systemctl.double"))
UNIT = "tritonserver.service"


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            triton_ready.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def systemctl(tmp_path, monkeypatch):
    """The double as systemctl; returns a setter of the unit's state and the reader of its calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(DOUBLE, str(bindir / "systemctl"))
    log = tmp_path / "systemctl.log"
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("AIOPS_SYSTEMCTL_DOUBLE_LOG", str(log))

    def state(value):
        monkeypatch.setenv("AIOPS_SYSTEMCTL_DOUBLE", value)
        return lambda: log.read_text().splitlines() if log.exists() else []

    return state


@pytest.fixture
def triton():
    """GET /v2/health/ready answers ``codes`` in turn (the last repeats); the headers of each request are kept."""
    seen = []
    codes = [200]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, dict((k.lower(), v) for k, v in self.headers.items())))
            code = codes[min(len(seen) - 1, len(codes) - 1)]
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def answer(*values):
        codes[:] = list(values)
        return "http://127.0.0.1:%d" % server.server_address[1], seen

    yield answer
    server.shutdown()
    server.server_close()


def closed_url():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return "http://127.0.0.1:%d" % port


def test_ready_at_once_does_not_read_the_unit(capsys, systemctl, triton):
    calls = systemctl("failed/failed/exit-code")
    url, seen = triton(200)
    result = run_module(capsys, url=url + "/", unit=UNIT, timeout=5)
    assert "failed" not in result and result["changed"] is False
    assert (result["ready"], result["reason"], result["answer"], result["rounds"]) == (True, "ready", "200", 1)
    assert [path for path, _headers in seen] == ["/v2/health/ready"] and calls() == []


def test_becomes_ready_after_rounds(capsys, systemctl, triton):
    calls = systemctl("activating/start/success")
    url, seen = triton(503, 400, 200)
    result = run_module(capsys, url=url, unit=UNIT, timeout=10, delay=0.05)
    assert result["ready"] is True and result["rounds"] == 3
    assert calls() == ["show -p LoadState,ActiveState,SubState,Result,NRestarts,ExecMainStatus %s" % UNIT] * 2


@pytest.mark.parametrize("state, reason, words", [
    ("inactive/dead/success", "stopped", "inactive (dead)"),
    ("failed/failed/exit-code/1", "stopped", "failed (failed, result exit-code, status 1)"),
    ("not-found", "stopped", "not installed (not-found)"),
    ("activating/auto-restart/exit-code/1/2", "crash_loop", "activating (auto-restart, result exit-code, status 1, restarted 2 times)"),
])
def test_a_unit_that_cannot_become_ready_fails_at_once(capsys, systemctl, state, reason, words):
    calls = systemctl(state)
    url = closed_url()
    result = run_module(capsys, url=url, unit=UNIT, timeout=60, delay=30)
    assert result["failed"] is True and result["changed"] is False
    assert (result["ready"], result["reason"], result["status"], result["answer"]) == (False, reason, words, "Connection refused")
    assert len(calls()) == 1 and result["seconds"] < 10
    assert result["msg"].startswith("Triton's unit %s is %s, so Triton cannot become ready (" % (UNIT, words)), result["msg"]
    assert "journalctl -u %s -n 50" % UNIT in result["msg"] and "Errno" not in result["msg"]
    assert "%s/v2/health/ready" % url in result["msg"]


def test_a_timeout_names_the_answer_and_the_units_state(capsys, systemctl, triton):
    systemctl("active/running/success")
    url, seen = triton(400)
    result = run_module(capsys, url=url, unit=UNIT, timeout=1, delay=0.2)
    assert (result["failed"], result["reason"], result["status"]) == (True, "timeout", "active (running)")
    assert result["msg"].startswith("Triton did not report ready at %s/v2/health/ready within 1 s (last answer: HTTP 400: "
                                    % url), result["msg"]
    assert "; its unit %s is active (running). Find why: journalctl -u %s -n 50." % (UNIT, UNIT) in result["msg"]
    assert len(seen) >= 2


def test_without_a_unit_systemctl_is_not_run(capsys, systemctl):
    calls = systemctl("inactive/dead/success")
    result = run_module(capsys, url=closed_url(), timeout=0)
    assert (result["reason"], result["unit"], result["status"]) == ("timeout", {}, "")
    assert calls() == [] and "journalctl" not in result["msg"]


def test_check_mode_waits_the_same_and_the_api_key_is_sent(capsys, systemctl, triton):
    systemctl("active/running/success")
    url, seen = triton(200)
    result = run_module(capsys, url=url, unit=UNIT, api_key="k", api_key_header="x-key", _ansible_check_mode=True)
    assert result["ready"] is True and result["changed"] is False
    assert seen[0][1].get("x-key") == "k"


@pytest.mark.parametrize("args, words", [
    (dict(timeout=-1), "timeout must be 0 or more"),
    (dict(delay=0), "delay more than 0"),
    (dict(interval=2), "Unsupported parameters"),
    (dict(timeout="soon"), "timeout"),
])
def test_arguments_are_checked(capsys, args, words):
    result = run_module(capsys, **args)
    assert result["failed"] is True and words in result["msg"], result["msg"]
