"""triton_lb's drain / undrain / status against a real HAProxy (Debian's haproxy, installed by
`make setup`) in front of two HTTP backends, run through the same contract playbook as the hook tests.

Proves what the rolling operations rely on: drain stops new requests to the host at once, waits for the
request still in flight to end before it returns, and fails (leaving the host drained) when that takes
longer than triton_lb_drain_timeout; undrain puts the host back; status reads each state; a config change
through the role reloads HAProxy with its handlers and the drained host stays drained.
"""

import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "roles"))

from lb_harness import HAPROXY, RENDER, ROOT, admin_answer, free_port, output, run_action, write_inventory  # noqa: E402


class Backend(object):
    """A Triton stand-in for HTTP: ready on /v2/health/ready, /slow?s=N answers after N s; logs arrivals."""

    def __init__(self, name):
        self.name, self.port, self.arrivals, self.ready = name, free_port(), [], True
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                if url.path != "/v2/health/ready":
                    backend.arrivals.append((time.time(), url.path))
                delay = float(urllib.parse.parse_qs(url.query).get("s", ["0"])[0])
                time.sleep(delay)
                body = backend.name.encode()
                self.send_response(200 if backend.ready or url.path != "/v2/health/ready" else 503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

            def handle(self):
                try:
                    super().handle()
                except ConnectionResetError:  # health checks close early
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def requests_after(self, moment):
        return [a for a in self.arrivals if a[0] > moment]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lb-haproxy")
    backends = {"t1": Backend("t1"), "t2": Backend("t2")}
    ports = {"http": free_port(), "grpc": free_port(), "metrics": free_port()}
    lb_vars = {"triton_lb_admin_socket": str(folder / "admin.sock"), "triton_lb_server_state_file": str(folder / "state"),
               "triton_lb_bind_address": "127.0.0.1", "triton_lb_http_port": ports["http"],
               "triton_lb_grpc_port": ports["grpc"], "triton_lb_metrics_port": ports["metrics"],
               "triton_lb_check_interval": "200ms"}
    servers = dict((name, {"triton_lb_server_address": "127.0.0.1", "triton_server_http_port": b.port,
                           "triton_server_grpc_port": b.port}) for name, b in backends.items())
    inventory = write_inventory(folder / "hosts.yml", servers, lb_hosts={"lb": lb_vars},
                                group_vars={"triton_lb_drain_timeout": 20, "triton_lb_undrain_timeout": 20})
    cfg = folder / "haproxy.cfg"
    proc = subprocess.run(["ansible-playbook", "-i", str(inventory), RENDER, "-e", json.dumps(dict(lb_vars, cfg_out=str(cfg)))],
                          capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, output(proc)
    pidfile = folder / "haproxy.pid"
    # Master-worker, as Debian's haproxy.service runs it (-Ws there): a reload is USR2 to the master (pidfile).
    proc = subprocess.run([HAPROXY, "-W", "-f", str(cfg), "-p", str(pidfile)], capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    try:
        lab = {"folder": folder, "inventory": inventory, "backends": backends, "socket": str(folder / "admin.sock"),
               "url": "http://127.0.0.1:%d" % ports["http"], "metrics": "http://127.0.0.1:%d/metrics" % ports["metrics"]}
        wait_until(lambda: all(s == "UP" for s in stat_status(lab).values()), 15, "both servers UP")
        yield lab
    finally:
        with open(str(pidfile)) as handle:
            for pid in handle.read().split():
                os.kill(int(pid), 15)
        for backend in backends.values():
            backend.server.shutdown()


def admin(lab, command):
    return admin_answer(lab["socket"], command)


def stat_status(lab, column="status"):
    lines = admin(lab, "show stat").splitlines()
    header = lines[0][2:].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line.startswith("triton_http,t")]
    return dict((r["svname"], r[column]) for r in rows)


def wait_until(check, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s" % what)


def get(lab, path, timeout=30):
    with urllib.request.urlopen(lab["url"] + path, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


class Load(object):
    """Requests through HAProxy, one after another, until stopped; counts answers per backend and failures."""

    def __init__(self, lab):
        self.lab, self.answers, self.failures, self.running = lab, [], [], True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            try:
                self.answers.append((time.time(), get(self.lab, "/v2/models/x/infer", timeout=10)[1]))
            except Exception as exc:  # noqa: BLE001 - every failure is counted, none hidden
                self.failures.append(repr(exc))
            time.sleep(0.02)

    def stop(self):
        self.running = False
        self.thread.join(15)


class SlowRequest(object):
    """One request to whichever backend HAProxy picks, holding it for ``seconds``."""

    def __init__(self, lab, seconds):
        self.result, self.ended = None, None
        self.thread = threading.Thread(target=self.run, args=(lab, seconds), daemon=True)
        self.thread.start()

    def run(self, lab, seconds):
        try:
            self.result = get(lab, "/slow?s=%s" % seconds)
        except Exception as exc:  # noqa: BLE001
            self.result = ("failed", repr(exc))
        self.ended = time.time()


class Sampler(object):
    """Polls HAProxy's runtime API every 50 ms for the moment t1 first shows DRAIN."""

    def __init__(self, lab):
        self.lab, self.drained_at, self.running = lab, None, True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running and self.drained_at is None:
            if stat_status(self.lab)["t1"] == "DRAIN":
                self.drained_at = time.time()
            time.sleep(0.05)

    def stop(self):
        self.running = False
        self.thread.join(5)


def status(lab, peers=False):
    proc, states = run_action(lab["inventory"], "status", lab["folder"])
    assert proc.returncode == 0, output(proc)
    if peers:  # triton_lb_states: every server's state from one host's call, peers outside --limit included
        (lab["folder"] / "t2.states").unlink()
        proc = run_action(lab["inventory"], "status", lab["folder"], limit="t2")[0]
        with open(str(lab["folder"] / "t2.states")) as handle:
            assert json.load(handle) == states, "triton_lb_states disagrees with each host's triton_lb_state"
    return states


def test_drain_stops_new_requests_and_waits_for_the_one_in_flight(lab):
    assert status(lab) == {"t1": "up", "t2": "up"}
    # Round robin: two slow requests, one on each server; t1 then has exactly one request in flight.
    slow = [SlowRequest(lab, 12), SlowRequest(lab, 12)]
    wait_until(lambda: stat_status(lab, "scur") == {"t1": "1", "t2": "1"}, 5, "one request in flight on each server")
    load = Load(lab)
    seen = Sampler(lab)
    time.sleep(0.5)
    proc = run_action(lab["inventory"], "drain", lab["folder"], limit="t1")[0]
    returned = time.time()
    load.stop()
    seen.stop()
    assert proc.returncode == 0, output(proc)
    on_t1 = [s for s in slow if s.result == (200, "t1")]
    assert len(on_t1) == 1 and on_t1[0].ended is not None, [s.result for s in slow]
    # Drained seconds before t1's request ended, returned only after it ended (polled every second; the
    # bound leaves room for a loaded 2-core machine finishing the play).
    assert seen.drained_at is not None and seen.drained_at < on_t1[0].ended - 2, "the drain started too late to prove a wait"
    assert returned >= on_t1[0].ended, "drain returned %.2f s before t1's last request ended" % (on_t1[0].ended - returned)
    assert returned - on_t1[0].ended < 10
    # New requests stopped reaching t1 as soon as HAProxy showed it DRAIN; t2 took them all, none failed.
    assert lab["backends"]["t1"].requests_after(seen.drained_at - 5) != [], "the load reached t1 before the drain"
    late = [a for a in lab["backends"]["t1"].requests_after(seen.drained_at + 0.1) if a[1] != "/slow"]
    assert late == [], "t1 got requests after it was drained: %s" % late
    assert not load.failures, load.failures[:5]
    assert sum(1 for when, who in load.answers if who == "t2" and when > seen.drained_at) > 20
    assert status(lab, peers=True) == {"t1": "drained", "t2": "up"}

    proc = run_action(lab["inventory"], "undrain", lab["folder"], limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    back = time.time()
    assert status(lab) == {"t1": "up", "t2": "up"}
    answers = [get(lab, "/after-undrain/%d" % attempt)[1] for attempt in range(6)]
    assert answers.count("t1") == 3 and answers.count("t2") == 3, answers
    assert lab["backends"]["t1"].requests_after(back)


def test_drain_fails_when_the_request_in_flight_outlasts_the_timeout_and_the_host_stays_drained(lab):
    SlowRequest(lab, 20), SlowRequest(lab, 20)
    wait_until(lambda: stat_status(lab, "scur") == {"t1": "1", "t2": "1"}, 5, "one request in flight on each server")
    started = time.time()
    proc = run_action(lab["inventory"], "drain", lab["folder"], limit="t1", extra={"triton_lb_drain_timeout": 2})[0]
    assert proc.returncode != 0
    assert "t1 is drained but still had requests in flight after 2 s" in proc.stdout, output(proc)
    assert time.time() - started < 14, "the drain waited past its timeout (the request in flight lasts 20 s)"
    assert stat_status(lab, "scur")["t1"] == "1"
    assert status(lab) == {"t1": "drained", "t2": "up"}
    proc = run_action(lab["inventory"], "undrain", lab["folder"], limit="t1")[0]
    assert proc.returncode == 0, output(proc)


def test_status_reads_down_and_the_exporter_answers(lab):
    lab["backends"]["t2"].ready = False  # Triton answering 503 on /v2/health/ready
    try:
        wait_until(lambda: stat_status(lab)["t2"] == "DOWN", 10, "t2 DOWN")
        assert status(lab) == {"t1": "up", "t2": "down"}
    finally:
        lab["backends"]["t2"].ready = True
    wait_until(lambda: stat_status(lab)["t2"] == "UP", 10, "t2 UP again")
    with urllib.request.urlopen(lab["metrics"], timeout=10) as resp:
        text = resp.read().decode()
    assert 'haproxy_server_status{proxy="triton_http",server="t1",state="UP"}' in text


# The reload that systemd runs for Debian's haproxy.service (master-worker: check the config, then USR2 the master).
HAPROXY_UNIT = next((p for p in ("/lib/systemd/system/haproxy.service", "/usr/lib/systemd/system/haproxy.service")
                     if os.path.exists(p)), None)
FAKE_SYSTEMCTL = """#!%(python)s
# systemctl for the reload test: one unit, %(unit)s, is HAProxy run by the test in master-worker mode; reload runs
# the distribution unit's ExecReload lines as systemd does ($CONFIG the test's config, $MAINPID the master).
import json, os, re, subprocess, sys
args = [a for a in sys.argv[1:] if not a.startswith("-")]
with open(%(log)r, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
if len(args) != 2 or args[1].strip("'") != %(unit)r:
    sys.exit("fake systemctl: unexpected call %%s" %% sys.argv[1:])
with open(%(pidfile)r) as handle:
    master = handle.read().split()[0]
if args[0] == "show":
    print("Id=%(unit)s\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nMainPID=" + master)
elif args[0] == "is-enabled":
    print("enabled")
elif args[0] == "reload":
    with open(%(unit_file)r) as handle:
        lines = [m.group(1) for m in re.finditer(r"^ExecReload=(.*)$", handle.read(), re.M)]
    env = dict(os.environ, CONFIG=%(config)r, MAINPID=master, EXTRAOPTS="")
    for line in lines:
        subprocess.run(["/bin/bash", "-c", line], env=env, check=True)
else:
    sys.exit("fake systemctl: %%s is not part of the reload path" %% args[0])
"""


def show_info(lab):
    return dict(line.split(": ", 1) for line in admin(lab, "show info").splitlines() if ": " in line)


def worker_pid(lab):
    """The pid of the HAProxy process answering the admin socket; None while a reload leaves none answering."""
    try:
        return show_info(lab).get("Pid")
    except OSError:
        return None


def test_the_roles_reload_handler_keeps_a_drained_host_drained(lab):
    """A config change through the role (configure → service → flush_handlers → the 'Reload haproxy' handlers:
    save the states through the admin socket, then reload the service) with t1 drained: the new HAProxy process
    runs the new config and still has t1 in DRAIN. Only systemd is a stand-in (HAProxy runs outside it here);
    the reload it performs is the distribution unit's ExecReload; the state file is the handler's own."""
    # A missing unit is a broken set-up, not a pass (make setup installs Debian's haproxy).
    assert HAPROXY_UNIT is not None, "needs Debian's haproxy.service: its ExecReload is the reload under test"
    proc = run_action(lab["inventory"], "drain", lab["folder"], limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    assert stat_status(lab) == {"t1": "DRAIN", "t2": "UP"}
    state_file = lab["folder"] / "state"
    if state_file.exists():
        state_file.unlink()  # whatever the new process reads back, the handler wrote
    before = show_info(lab)
    fakes = lab["folder"] / "fake-bin"
    fakes.mkdir()
    log = lab["folder"] / "systemctl.log"
    (fakes / "systemctl").write_text(FAKE_SYSTEMCTL % {
        "python": sys.executable, "unit": "haproxy.service", "log": str(log), "pidfile": str(lab["folder"] / "haproxy.pid"),
        "unit_file": HAPROXY_UNIT, "config": str(lab["folder"] / "haproxy.cfg")})
    (fakes / "systemctl").chmod(0o755)
    maxconn = int(before["Maxconn"]) + 7  # the config change, and how to know the new process read it
    play = lab["folder"] / "reload.yml"
    # as playbooks/load_balancer.yml: the Triton hosts' endpoint facts first (HAProxy's servers are read from them)
    play.write_text(json.dumps([{"name": "Where Triton runs", "hosts": "triton_servers", "gather_facts": False,
                                 "tasks": [{"ansible.builtin.import_role": {"name": "aiops.triton.triton_server",
                                                                            "tasks_from": "endpoint"}}]},
                                {"name": "HAProxy with a changed config", "hosts": "triton_lb", "gather_facts": False,
                                 "roles": [{"role": "aiops.triton.triton_lb"}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_NOCOLOR="1",
               PATH=os.pathsep.join((str(fakes), os.path.dirname(sys.executable), os.environ.get("PATH", ""))))
    proc = subprocess.run(["ansible-playbook", "-i", str(lab["inventory"]), str(play), "--tags", "triton_lb_configure,triton_lb_service",
                           "-e", json.dumps({"triton_lb_config_file": str(lab["folder"] / "haproxy.cfg"), "triton_lb_maxconn": maxconn})],
                          capture_output=True, text=True, check=False, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, output(proc)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert ["reload", "haproxy.service"] in [[a.strip("'") for a in c if not a.startswith("-")] for c in calls], calls

    wait_until(lambda: worker_pid(lab) not in (None, before["Pid"]), 30, "a new HAProxy process")
    assert show_info(lab)["Maxconn"] == str(maxconn), "the new process did not read the changed config"
    assert stat_status(lab) == {"t1": "DRAIN", "t2": "UP"}, "the reload undrained t1"
    assert " t1 " in state_file.read_text(), "the handler saved no state for t1"
    answers = [get(lab, "/after-reload/%d" % attempt)[1] for attempt in range(6)]
    assert answers == ["t2"] * 6, "a drained host got traffic after the reload: %s" % answers
    proc = run_action(lab["inventory"], "undrain", lab["folder"], limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    assert stat_status(lab) == {"t1": "UP", "t2": "UP"}
