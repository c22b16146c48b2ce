"""triton_lb's drain and undrain with two load balancers, one a real HAProxy (Debian's haproxy, as in
test_triton_lb_haproxy.py) and one whose admin socket is a file no HAProxy listens on (what a stopped HAProxy
leaves), run through the contract playbook (issue 38, item 5).

The drain fails naming the silent balancer (host, socket, "Connection refused", what to run) and says where the host
is drained already; the undrain fails the same way, says the host stays drained, and has drained it again on the
balancer that answers (before, that balancer's re-drain and the silent one's refusal ended in "[Errno 111]").
"""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "roles"))

from lb_harness import HAPROXY, RENDER, ROOT, admin_answer, free_port, output, run_action, write_inventory  # noqa: E402


def ready_backend():
    """A Triton stand-in that is ready (HAProxy's health check); returns (port, server)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], server


admin = admin_answer


def state_on(path, server):
    """up, drained, down, maint or unknown: HAProxy's state of server at this socket, both backends."""
    from ansible_collections.aiops.triton.plugins.filter.haproxy import haproxy_server_state
    return haproxy_server_state(admin(path, "show servers state"), server)


def fatal_message(proc):
    lines = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [t1]")]
    assert lines, output(proc)
    return json.loads(lines[-1].split("=> ", 1)[1])["msg"]


@pytest.fixture(scope="module")
def balancers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lb-errors")
    real, dead = str(folder / "admin.sock"), str(folder / "dead.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(dead)
    sock.close()  # the file stays, nothing listens: connect() is refused
    ports = {"http": free_port(), "grpc": free_port(), "metrics": free_port()}
    lb_vars = {"triton_lb_admin_socket": real, "triton_lb_server_state_file": str(folder / "state"),
               "triton_lb_bind_address": "127.0.0.1", "triton_lb_http_port": ports["http"],
               "triton_lb_grpc_port": ports["grpc"], "triton_lb_metrics_port": ports["metrics"],
               "triton_lb_check_interval": "200ms"}
    backends = dict((name, ready_backend()) for name in ("t1", "t2"))
    servers = dict((name, {"triton_lb_server_address": "127.0.0.1", "triton_server_http_port": port,
                           "triton_server_grpc_port": port}) for name, (port, _server) in backends.items())
    cfg = folder / "haproxy.cfg"
    lb_only = write_inventory(folder / "lb1.yml", servers, lb_hosts={"lb1": lb_vars})
    proc = subprocess.run(["ansible-playbook", "-i", str(lb_only), RENDER, "-e", json.dumps(dict(lb_vars, cfg_out=str(cfg)))],
                          capture_output=True, text=True, check=False, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, output(proc)
    pidfile = folder / "haproxy.pid"
    proc = subprocess.run([HAPROXY, "-W", "-f", str(cfg), "-p", str(pidfile)], capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            if os.path.exists(real) and all(state_on(real, name) == "up" for name in servers):
                break
            time.sleep(0.2)
        assert all(state_on(real, name) == "up" for name in servers), admin(real, "show servers state")
        both = write_inventory(folder / "both.yml", servers, lb_hosts={"lb1": lb_vars, "lb2": {"triton_lb_admin_socket": dead}},
                               group_vars={"triton_lb_undrain_timeout": 2})
        yield {"folder": folder, "real": real, "dead": dead, "both": both, "lb_only": lb_only}
    finally:
        with open(str(pidfile)) as handle:
            for pid in handle.read().split():
                os.kill(int(pid), 15)
        for _port, server in backends.values():
            server.shutdown()


def test_one_silent_balancer_is_named_and_the_host_stays_drained_where_it_answered(balancers):
    lab = balancers
    named = ("the load balancer's admin socket %s on lb2 did not answer (Connection refused): start HAProxy there "
             "(systemctl start haproxy.service on lb2) or run playbooks/load_balancer.yml" % lab["dead"])

    proc = run_action(lab["both"], "drain", lab["folder"], limit="t1")[0]
    assert proc.returncode != 0, output(proc)
    message = fatal_message(proc)
    assert message.startswith("t1 was not drained (it is drained on lb1 only; once every balancer answers, "
                              "playbooks/undrain.yml --limit t1 puts it back): "), message
    assert named in message and "Errno" not in message, message
    assert (state_on(lab["real"], "t1"), state_on(lab["real"], "t2")) == ("drained", "up")

    proc = run_action(lab["both"], "undrain", lab["folder"], limit="t1")[0]
    assert proc.returncode != 0, output(proc)
    message = fatal_message(proc)
    assert message == "t1 was not put back into traffic: %s; it stays drained." % named, message
    assert "lb1 triton_http/t1" in proc.stdout.split("Undrain - drain the host again")[1], "not drained again on lb1"
    assert state_on(lab["real"], "t1") == "drained", "the balancer that answered left t1 in traffic"

    # with the silent balancer out of the inventory, the same undrain puts it back
    proc = run_action(lab["lb_only"], "undrain", lab["folder"], limit="t1")[0]
    assert proc.returncode == 0, output(proc)
    assert state_on(lab["real"], "t1") == "up"
