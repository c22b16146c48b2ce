"""Errors that name their cause and fail fast (issue 38, item 5), and the drain paths no other step takes (item 2), on
the same four hosts behind HAProxy, under the same live load. In order:
  h_lb_down_flag_change   the balancer's admin socket as the inventory names it is a socket file no HAProxy listens on
                          (what a stopped HAProxy leaves; the real one keeps serving the clients): a Triton flag change
                          with playbooks/triton_server.yml stops at the canary before any host restarts, and the run
                          names the socket, roll-lb, the reason (Connection refused) and what to run next;
  h_undrain_stopped_unit  roll-2 drained, its Triton unit stopped: undrain.yml refuses it within 90 s (not after the
                          readiness timeout), naming the unit and its state, and leaves it drained;
  h_undrain_wrong_answer  then started with the served anomaly_detector version's model.onnx replaced by another
                          version's graph (it loads and answers, wrongly): undrain.yml refuses it on its golden cases,
                          naming the model, and leaves it drained; the graph put back and Triton restarted, undrain.yml
                          puts it back (h_undrain_started_unit);
  h_drain_force           drain.yml refuses to take the canary's only host out of traffic; with
                          -e triton_rolling_drain_force=true it drains it (the other groups keep serving); undrain.yml
                          puts it back.
The PLAY RECAP of the failed flag change is recorded per host, not checked: the server play's check pass counts a
predicted change as changed (issue 38 item 5, still open).
"""

import os
import re

import yaml

from lab_hosts import podman

HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
LB = "roll-lb"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# Triton's unit, as the triton_server role names it
with open(os.path.join(ROOT, "roles", "triton_server", "vars", "main.yml")) as _handle:
    UNIT = yaml.safe_load(_handle)["_triton_server_unit_name"]
with open(os.path.join(ROOT, "roles", "triton_server", "defaults", "main.yml")) as _handle:
    REPOSITORY = yaml.safe_load(_handle)["triton_server_model_repository"]
# the build's models (make models), where another version's graph comes from
BUILD = os.path.join(ROOT, "build", "model_repository")
# a socket file on roll-lb that nobody listens on: connect() is refused, as with HAProxy stopped
DEAD_SOCKET = "/run/haproxy/aiops-test-dead.sock"
ORDER = ["h_lb_down_flag_change", "h_undrain_stopped_unit", "h_drain_force"]


def wrong_answer(step, verdict, out_of, same, pins_now):
    """roll-2 (drained, its unit stopped) started on a graph that answers wrongly: undrain.yml refuses it on the golden
    cases and leaves it drained; the graph put back, Triton restarted (the unit running again either way)."""
    served = pins_now["triton_canary"][0]["versions"][0]  # anomaly_detector's version every host serves
    assert pins_now["triton_canary"][0]["name"] == "anomaly_detector"
    target = "%s/anomaly_detector/%d/model.onnx" % (REPOSITORY, served)
    saved = "/var/tmp/aiops-test-model.onnx"
    # version 1's graph answers differently from version 2's (model_variants' regressed variant relies on the same);
    # the lab's later versions carry version 2's files
    other = os.path.join(BUILD, "anomaly_detector", "2" if served == 1 else "1", "model.onnx")
    podman("cp", other, "roll-2:/var/tmp/aiops-test-wrong.onnx")
    podman("exec", "roll-2", "cp", "-p", target, saved)
    try:
        podman("exec", "roll-2", "cp", "/var/tmp/aiops-test-wrong.onnx", target)  # onto the file: owner and mode kept
        podman("exec", "roll-2", "systemctl", "start", UNIT)
        entry, proc = step("h_undrain_wrong_answer", "playbooks/undrain.yml", False, extra=["--limit", "roll-2"], **same)
    finally:
        podman("exec", "roll-2", "cp", saved, target)
        podman("exec", "roll-2", "systemctl", "restart", UNIT)
    text = " ".join(out_of(proc).split())
    said = re.search(r"roll-2 stays drained: Triton verification failed at \S+: [^|]*anomaly_detector[^|]*expected", text)
    entry["message"] = (said.group(0)[:400] if said
                        else [line for line in out_of(proc).splitlines() if "stays drained" in line][:2])
    verdict(entry["rc"] != 0 and entry["last_states"].get("roll-2") == "drained",
            "h: undrain.yml put back a host whose model answers wrongly: rc %s, %s" % (entry["rc"], entry["last_states"]))
    verdict(said is not None, "h: undrain.yml does not name the failed golden case: %s" % entry["message"])


def recap_changed(out):
    """host -> changed= of the PLAY RECAP."""
    return dict((line.split()[0], int(line.split("changed=")[1].split()[0]))
                for line in out.splitlines() if " changed=" in line and line.split()[0] in HOSTS + [LB])


def run(step, check, results, args, flag, pins_now, skip):
    """The steps above; ``step``/``check`` are the driver's; ``flag`` the servers' vars the fleet runs with,
    ``pins_now`` the group pins it serves."""
    same = dict(batch_rule=False, servers_extra=flag, pins=pins_now)

    def verdict(cond, message):
        check(cond, message, results, args.results)

    def out_of(proc):
        return proc.stdout + proc.stderr  # ansible-core prints a failed task's message on stderr

    if "h_lb_down_flag_change" not in skip:
        podman("exec", LB, "python3", "-c", "import os, socket; p = %r\n"
               "os.path.exists(p) and os.remove(p); socket.socket(socket.AF_UNIX).bind(p)" % DEAD_SOCKET)
        changed = dict(flag, triton_server_log_verbose=int(flag.get("triton_server_log_verbose", 0)) + 1)
        try:
            entry, proc = step("h_lb_down_flag_change", "playbooks/triton_server.yml", False, batch_rule=False,
                               servers_extra=changed, pins=pins_now, lb_extra={"triton_lb_admin_socket": DEAD_SOCKET})
        finally:
            podman("exec", LB, "rm", "-f", DEAD_SOCKET, check=False)
        entry["recap_changed"] = recap_changed(proc.stdout)
        verdict(entry["before"]["pid"] == entry["after"]["pid"], "h: a host restarted although the balancer did not answer")
        verdict(all(entry["last_states"].get(h) == "up" for h in HOSTS), "h: a host left traffic: %s" % entry["last_states"])
        named = ["roll-1 was not drained: the load balancer's admin socket %s on %s did not answer (Connection refused)"
                 % (DEAD_SOCKET, LB), "systemctl start haproxy.service on %s" % LB, "playbooks/load_balancer.yml"]
        verdict(all(text in out_of(proc) for text in named),
                "h: the run does not name the admin socket, %s and what to run (log h_lb_down_flag_change.log)" % LB)

    if "h_undrain_stopped_unit" not in skip:
        entry, proc = step("h_undrain_stopped_unit_drain", "playbooks/drain.yml", True, extra=["--limit", "roll-2"], **same)
        verdict(entry["last_states"].get("roll-2") == "drained", "h: drain.yml --limit roll-2 left %s" % entry["last_states"])
        podman("exec", "roll-2", "systemctl", "stop", UNIT)
        try:
            entry, proc = step("h_undrain_stopped_unit", "playbooks/undrain.yml", False, extra=["--limit", "roll-2"], **same)
            verdict(entry["seconds"] < 90, "h: undrain.yml took %.0f s to refuse a stopped unit (polled?)" % entry["seconds"])
            verdict(entry["last_states"].get("roll-2") == "drained", "h: roll-2 did not stay drained: %s" % entry["last_states"])
            # the state in words: "inactive (dead)", or "failed (failed, result exit-code)" where Triton's exit on SIGTERM
            # was not 0 (models still unloading at its exit timeout)
            said = re.search(r"roll-2 stays drained: Triton's unit %s on roll-2 is (inactive|failed) \([^)]*\), so Triton "
                             r"cannot become ready" % re.escape(UNIT), " ".join(out_of(proc).split()))
            entry["message"] = said.group(0) if said else [line for line in out_of(proc).splitlines() if "stays drained" in line][:2]
            verdict(said is not None and "journalctl -u %s" % UNIT in out_of(proc),
                    "h: undrain.yml does not name the stopped unit and its state: %s" % entry["message"])
        except BaseException:  # the fleet left serving whatever failed
            podman("exec", "roll-2", "systemctl", "start", UNIT)
            raise
        wrong_answer(step, verdict, out_of, same, pins_now)  # starts the unit, and restarts it on the right graph
        entry, proc = step("h_undrain_started_unit", "playbooks/undrain.yml", True, extra=["--limit", "roll-2"], **same)
        verdict(all(entry["last_states"].get(h) == "up" for h in HOSTS), "h: roll-2 not back: %s" % entry["last_states"])

    if "h_drain_force" not in skip:
        entry, proc = step("h_drain_refused_canary", "playbooks/drain.yml", False, extra=["--limit", "roll-1"], **same)
        verdict("triton_canary would have no host up" in out_of(proc) and entry["last_states"].get("roll-1") == "up",
                "h: drain.yml did not refuse the canary's only host: %s" % entry["last_states"])
        entry, proc = step("h_drain_force", "playbooks/drain.yml", True,
                           extra=["--limit", "roll-1", "-e", "triton_rolling_drain_force=true"], **same)
        verdict(entry["last_states"].get("roll-1") == "drained"
                and all(entry["last_states"].get(h) == "up" for h in HOSTS[1:]),
                "h: triton_rolling_drain_force=true did not drain roll-1 alone: %s" % entry["last_states"])
        entry, proc = step("h_drain_force_undrain", "playbooks/undrain.yml", True, extra=["--limit", "roll-1"], **same)
        verdict(all(entry["last_states"].get(h) == "up" for h in HOSTS), "h: roll-1 not back: %s" % entry["last_states"])
