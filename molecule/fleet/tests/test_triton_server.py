"""The Triton server role on the scenario's canary after converge + side effect: unit, hardening, the
key and local users, bad inputs to the API (molecule/bad_inputs.yml), kill -9. Run by molecule/fleet and
molecule/lb (its tests/ links this file); hot updates under load and rollbacks: test_fleet.py, test_lb.py.

testinfra reaches the host through ansible (seconds a command), so every read-only fact comes from one
snapshot per host (`state`); only what changes the host or must be live (inference, model load, kill -9)
is a host call of its own. Every snapshot reader runs before the kill test, so none reads a process the
kill replaced."""

import json
import re
import shlex

import pytest

UNIT = "tritonserver.service"
# One host is enough for the role's own properties; every host serves (test_fleet.py, test_lb.py).
testinfra_hosts = ["ansible://triton_canary"]

UNIT_PROPS = ("User", "MainPID", "NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
              "Restart", "TimeoutStopUSec")
PID = "$(systemctl show -p MainPID --value %s)" % UNIT
NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups"
# nobody, plus the process-view group
VIEWER = "setpriv --reuid=65534 --regid=65534 --groups=$(getent group proc-view | cut -d: -f3)"


def as_nobody(command, setpriv=NOBODY):
    return "%s -- sh -c %s" % (setpriv, shlex.quote(command))


def exit_status(command):
    """command, then its exit status as the section's last line: for a command whose failure is the fact
    checked (a plain snapshot command that fails fails the whole snapshot)."""
    return command + "; printf '\\nrc=%s\\n' \"$?\""


COMMANDS = {
    "unit": "systemctl show %s %s" % (" ".join("-p " + p for p in UNIT_PROPS), UNIT),
    "unit_file": "systemctl cat %s" % UNIT,
    "enabled": exit_status("systemctl is-enabled %s" % UNIT),
    "active": exit_status("systemctl is-active %s" % UNIT),
    "main_uid": "stat -c %u /proc/" + PID,
    "cmdline": "tr '\\0' ' ' < /proc/%s/cmdline" % PID,
    "passwd": "getent passwd triton",
    "listening": "ss --numeric --listening --tcp",
    "exposure": "systemd-analyze security %s 2>&1 | tail -1" % UNIT,
    "env_file": "stat -Lc '%U %a' /etc/tritonserver/tritonserver.env",
    "api_key": "sed -n 's/^TRITON_API_KEY=//p' /etc/tritonserver/tritonserver.env",
    "repo": "stat -Lc '%U %G %a' /var/lib/triton/models",
    "repo_readable": exit_status("runuser -u triton -- test -r /var/lib/triton/models/alert_classifier/config.pbtxt"),
    "repo_writable": exit_status("runuser -u triton -- touch /var/lib/triton/models/x"),
    "bad_input": "cat /root/side_effect/bad_input.json",
    "nobody_ps": as_nobody("ps -eo args"),
    "nobody_dump": as_nobody("cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ /proc/[0-9]*/task/*/cmdline "
                             "/proc/[0-9]*/task/*/environ 2>/dev/null; true"),
    # stdout dropped: were it readable, it would hold the key
    "nobody_main_cmdline": exit_status("%s cat /proc/%s/cmdline >/dev/null" % (NOBODY, PID)),
    "proc_view": "getent group proc-view",
    "proc_mount": "findmnt --noheadings --output OPTIONS --mountpoint /proc",
    "fstab": "cat /etc/fstab",
    "logind_dropin": "cat /etc/systemd/system/systemd-logind.service.d/50-aiops-triton-proc-view.conf",
    "viewer_ps": as_nobody("ps -eo user,args", setpriv=VIEWER),
}


@pytest.fixture(scope="module")
def state(snapshot):
    return snapshot(COMMANDS)


@pytest.fixture(scope="module")
def unit(state):
    """systemctl show's properties; one it leaves out reads as empty, as `--value` prints it."""
    props = dict(line.partition("=")[::2] for line in state["unit"].splitlines())
    return {name: props.get(name, "") for name in UNIT_PROPS}


def rc(state, name):
    lines = state[name].splitlines()
    assert lines and lines[-1].startswith("rc="), state[name]
    return int(lines[-1][3:])


def http_address(state):
    """The address Triton's HTTP binds (its unit's --http-address): molecule/lb binds it to each host's lab
    address from step a on, so these tests reach it where the roles' endpoint fact says it is."""
    match = re.search(r"--http-address=(\S+)", state["unit_file"])
    return match.group(1) if match else "0.0.0.0"


def http(state):
    address = http_address(state)
    return "http://%s:8000" % ("127.0.0.1" if address in ("0.0.0.0", "") else address)


def listening(ss_output):
    """(address, port) of each listening TCP socket, read as testinfra's Socket reads `ss` ('*': any v4 and v6)."""
    sockets = set()
    for line in ss_output.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5 or fields[0] not in ("LISTEN", "UNCONN"):
            continue
        address, _sep, port = fields[3].rpartition(":")
        if address[:1] == "[" and address[-1:] == "]":
            address = address[1:-1]
        sockets |= {("::", int(port)), ("0.0.0.0", int(port))} if address == "*" else {(address, int(port))}
    return sockets


def infer_command(state, text):
    body = json.dumps({"inputs": [{"name": "alert_text", "datatype": "BYTES", "shape": [1, 1], "data": [text]}]})
    return ("curl -sf -X POST -H 'Content-Type: application/json' -d %s %s/v2/models/alert_classifier/infer"
            % (json.dumps(body).replace("'", ""), http(state)))


def infer_alert(host, state, text):
    out = host.check_output(infer_command(state, text))
    return {o["name"]: o["data"] for o in json.loads(out)["outputs"]}


def test_service_enabled_and_active(state):
    assert rc(state, "enabled") == 0, state["enabled"]
    assert rc(state, "active") == 0, state["active"]


def test_runs_as_non_root_user(state, unit):
    assert unit["User"] == "triton"
    assert state["main_uid"] != "0"
    assert state["passwd"].split(":")[6] == "/usr/sbin/nologin"


@pytest.mark.parametrize("port", [8000, 8001, 8002])
def test_ports_listening(state, port):
    # testinfra's Socket.is_listening: on the address itself, or on the v6 wildcard (which it takes for any)
    address = http_address(state) if port == 8000 else "0.0.0.0"
    sockets = listening(state["listening"])
    assert ("::", port) in sockets or (address, port) in sockets, state["listening"]


def test_unit_hardening(unit):
    for prop, want in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                       ("PrivateTmp", "yes"), ("PrivateDevices", "yes"), ("Restart", "on-failure")]:
        assert unit[prop] == want, prop
    assert float(unit["TimeoutStopUSec"].rstrip("s") or 0) > 30 or "min" in unit["TimeoutStopUSec"]


def test_security_exposure_is_ok(state):
    out = state["exposure"]
    score = float(out.split("level for %s:" % UNIT)[1].split()[0])
    assert score <= 2.5, out


def test_flags_guard_the_repository_api(state):
    cmdline = state["cmdline"]
    for flag in ("--model-control-mode=explicit", "--load-model=*", "--strict-readiness=true",
                 "--exit-on-error=true", "--http-restricted-api=model-repository:triton-admin-key=",
                 "--grpc-restricted-protocol=model-repository:triton-admin-key="):
        assert flag in cmdline, flag
    user, mode = state["env_file"].split()
    assert user == "root" and int(mode, 8) == 0o600


def test_repository_readable_not_writable_by_service_user(state):
    user, group, mode = state["repo"].split()
    assert user == "root" and group == "root" and int(mode, 8) == 0o755
    assert rc(state, "repo_readable") == 0
    assert rc(state, "repo_writable") != 0


def test_real_inference_seed_alert(host, state):
    out = infer_alert(host, state, "Pod memory usage exceeds 90% threshold")
    assert out["class_label"] == ["memory"]
    assert 0.5 < out["confidence"][0] <= 1.0


def test_metrics_count_inferences(host, state):
    # one host call: the inference, then (only if it succeeded) the metrics it must be counted in
    metrics = host.check_output("%s >/dev/null && curl -sf http://127.0.0.1:8002/metrics"
                                % infer_command(state, "Disk space on /dev/sda1 is 95% full"))
    lines = [line for line in metrics.splitlines() if line.startswith("nv_inference_count{") and 'model="alert_classifier"' in line]
    assert lines and float(lines[0].split()[-1]) >= 1


def test_wrong_api_key_is_a_clear_error(state):
    bad = json.loads(state["bad_input"])["wrong_key"]
    assert bad["failed"]
    assert "key" in bad["msg"].lower(), bad["msg"]


def test_rejected_config_keeps_previous_version_serving(host, state):
    bad = json.loads(state["bad_input"])["rejected"]
    assert bad["failed"]
    assert "gpu" in bad["msg"].lower(), bad["msg"]
    assert infer_alert(host, state, "CPU load average above 16 on db-01")["class_label"] == ["cpu"]


# --- the API key and local users ------------------------------------------------------------------


def test_the_key_is_on_tritons_command_line(state):
    """Where the key is: root reads it in Triton's argv, so the checks below look in the right place."""
    key = state["api_key"]
    assert len(key) >= 32
    assert "triton-admin-key=" + key in state["cmdline"]


def test_an_unprivileged_user_sees_no_key_in_any_process(state):
    key = state["api_key"]
    listing = state["nobody_ps"]
    assert "ps -eo args" in listing  # the listing ran and shows nobody's own processes
    assert key not in listing and "tritonserver" not in listing, listing
    # every readable cmdline and environ, threads included
    assert key not in state["nobody_dump"]
    assert rc(state, "nobody_main_cmdline") != 0


def test_proc_is_mounted_hidepid_now_and_in_fstab(state):
    # Now: the live mount. After a reboot: only the fstab line systemd-remount-fs applies at boot is
    # checked here (no reboot of the host in this scenario), not a rebooted host's /proc.
    gid = int(state["proc_view"].split(":")[2])
    options = state["proc_mount"].split(",")
    assert "hidepid=invisible" in options and "gid=%d" % gid in options, options
    assert "proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=%d 0 0" % gid in state["fstab"]
    assert "SupplementaryGroups=proc-view" in state["logind_dropin"]


def test_the_view_group_still_sees_every_process(state):
    """Monitoring agents put in proc-view keep seeing Triton (its pid, its metrics-relevant state)."""
    # Triton's own line (user triton): the viewer also sees root's snapshot script, whose argv names tritonserver
    listing = state["viewer_ps"]
    assert [line for line in listing.splitlines() if line.split(None, 1)[:1] == ["triton"] and "tritonserver" in line], listing


# --- live, after every snapshot reader: these change the host -------------------------------------

KILL9_AND_WAIT = "; ".join([
    "show() { systemctl show -p MainPID --value %s; }" % UNIT,
    "old=$(show)",
    '[ "$old" -gt 0 ] 2>/dev/null && kill -9 "$old"',  # never kill -9 0 (the caller's process group)
    "end=$(($(date +%s) + 60)); new=$(show)",
    'while { [ "$new" = "$old" ] || [ "$new" = 0 ]; } && [ "$(date +%s)" -lt "$end" ]; do sleep 1; new=$(show); done',
    "ready=no; end=$(($(date +%s) + 120))",
    'while [ "$(date +%s)" -lt "$end" ]; do if curl -sf -o /dev/null URL/v2/health/ready; then ready=yes; break; fi; '
    "sleep 2; done",
    'echo "old=$old new=$new ready=$ready"',
])


def test_kill9_brings_triton_back_ready(host, state):
    # Live, MainPID read on the host (not from the snapshot): kill the main process, poll until systemd has
    # started another (60 s) and it is ready (120 s), in one host call rather than one per poll.
    out = host.check_output("sh -c %s" % shlex.quote(KILL9_AND_WAIT.replace("URL", http(state))))
    seen = dict(word.partition("=")[::2] for word in out.split())
    assert seen["new"] not in (seen["old"], "0"), out
    assert seen["ready"] == "yes", host.run("journalctl -u tritonserver --no-pager -n 30").stdout
    assert infer_alert(host, state, "Pod memory usage exceeds 90% threshold")["class_label"] == ["memory"]


def test_the_key_still_loads_a_model_and_nothing_else_does(host, state):
    # After the kill, as before: the restarted Triton takes the key. The three loads in one host call, in
    # order; && so that a curl that could not connect fails it, as check_output did for each.
    load = "curl -s -o /dev/null -w '%%{http_code}' -X POST %s " + http(state) + "/v2/repository/models/alert_classifier/load"
    codes = host.check_output(" && echo && ".join([
        load % ("-H 'triton-admin-key: %s'" % state["api_key"]),
        load % "",
        load % "-H 'triton-admin-key: not-the-key-00000000000000000000'",
    ])).split()
    assert len(codes) == 3, codes
    assert codes[0] == "200"
    assert codes[1] != "200"
    assert codes[2] != "200"
    assert infer_alert(host, state, "CPU load average above 16 on db-01")["class_label"] == ["cpu"]
