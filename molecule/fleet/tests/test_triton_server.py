"""The Triton server role on the scenario's canary after converge + side effect: unit, hardening, the
key and local users, bad inputs to the API (molecule/bad_inputs.yml), kill -9. Run by molecule/fleet and
molecule/lb (its tests/ links this file); hot updates under load and rollbacks: test_fleet.py, test_lb.py."""

import json
import re
import shlex
import time

import pytest

UNIT = "tritonserver.service"
# One host is enough for the role's own properties; every host serves (test_fleet.py, test_lb.py).
testinfra_hosts = ["ansible://triton_canary"]


def unit_prop(host, name):
    return host.check_output("systemctl show -p %s --value %s" % (name, UNIT))


def http_address(host):
    """The address Triton's HTTP binds (its unit's --http-address): molecule/lb binds it to each host's lab
    address from step a on, so these tests reach it where the roles' endpoint fact says it is."""
    match = re.search(r"--http-address=(\S+)", host.check_output("systemctl cat %s" % UNIT))
    return match.group(1) if match else "0.0.0.0"


def http(host):
    address = http_address(host)
    return "http://%s:8000" % ("127.0.0.1" if address in ("0.0.0.0", "") else address)


def infer_alert(host, text):
    body = json.dumps({"inputs": [{"name": "alert_text", "datatype": "BYTES", "shape": [1, 1], "data": [text]}]})
    out = host.check_output("curl -sf -X POST -H 'Content-Type: application/json' -d %s "
                            "%s/v2/models/alert_classifier/infer" % (json.dumps(body).replace("'", ""), http(host)))
    return {o["name"]: o["data"] for o in json.loads(out)["outputs"]}


def wait_ready(host, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if host.run("curl -sf -o /dev/null %s/v2/health/ready" % http(host)).rc == 0:
            return True
        time.sleep(2)
    return False


def test_service_enabled_and_active(host):
    svc = host.service("tritonserver")
    assert svc.is_enabled
    assert svc.is_running


def test_runs_as_non_root_user(host):
    assert unit_prop(host, "User") == "triton"
    pid = unit_prop(host, "MainPID")
    uid = host.check_output("stat -c %%u /proc/%s" % pid)
    assert uid != "0"
    assert host.user("triton").shell == "/usr/sbin/nologin"


@pytest.mark.parametrize("port", [8000, 8001, 8002])
def test_ports_listening(host, port):
    assert host.socket("tcp://%s:%d" % (http_address(host) if port == 8000 else "0.0.0.0", port)).is_listening


def test_unit_hardening(host):
    for prop, want in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                       ("PrivateTmp", "yes"), ("PrivateDevices", "yes"), ("Restart", "on-failure")]:
        assert unit_prop(host, prop) == want, prop
    assert float(unit_prop(host, "TimeoutStopUSec").rstrip("s") or 0) > 30 or "min" in unit_prop(host, "TimeoutStopUSec")


def test_security_exposure_is_ok(host):
    out = host.check_output("systemd-analyze security %s 2>&1 | tail -1" % UNIT)
    score = float(out.split("level for %s:" % UNIT)[1].split()[0])
    assert score <= 2.5, out


def test_flags_guard_the_repository_api(host):
    cmdline = host.check_output("tr '\\0' ' ' < /proc/%s/cmdline" % unit_prop(host, "MainPID"))
    for flag in ("--model-control-mode=explicit", "--load-model=*", "--strict-readiness=true",
                 "--exit-on-error=true", "--http-restricted-api=model-repository:triton-admin-key=",
                 "--grpc-restricted-protocol=model-repository:triton-admin-key="):
        assert flag in cmdline, flag
    env = host.file("/etc/tritonserver/tritonserver.env")
    assert env.user == "root" and env.mode == 0o600


def test_repository_readable_not_writable_by_service_user(host):
    repo = host.file("/var/lib/triton/models")
    assert repo.user == "root" and repo.group == "root" and repo.mode == 0o755
    assert host.run("runuser -u triton -- test -r /var/lib/triton/models/alert_classifier/config.pbtxt").rc == 0
    assert host.run("runuser -u triton -- touch /var/lib/triton/models/x").rc != 0


def test_real_inference_seed_alert(host):
    out = infer_alert(host, "Pod memory usage exceeds 90% threshold")
    assert out["class_label"] == ["memory"]
    assert 0.5 < out["confidence"][0] <= 1.0


def test_metrics_count_inferences(host):
    infer_alert(host, "Disk space on /dev/sda1 is 95% full")
    metrics = host.check_output("curl -sf http://127.0.0.1:8002/metrics")
    lines = [l for l in metrics.splitlines() if l.startswith("nv_inference_count{") and 'model="alert_classifier"' in l]
    assert lines and float(lines[0].split()[-1]) >= 1


def test_wrong_api_key_is_a_clear_error(host):
    bad = json.loads(host.file("/root/side_effect/bad_input.json").content_string)["wrong_key"]
    assert bad["failed"]
    assert "key" in bad["msg"].lower(), bad["msg"]


def test_rejected_config_keeps_previous_version_serving(host):
    bad = json.loads(host.file("/root/side_effect/bad_input.json").content_string)["rejected"]
    assert bad["failed"]
    assert "gpu" in bad["msg"].lower(), bad["msg"]
    assert infer_alert(host, "CPU load average above 16 on db-01")["class_label"] == ["cpu"]


def test_kill9_brings_triton_back_ready(host):
    pid = unit_prop(host, "MainPID")
    host.run("kill -9 %s" % pid)
    deadline = time.time() + 60
    while time.time() < deadline and unit_prop(host, "MainPID") in (pid, "0"):
        time.sleep(1)
    assert unit_prop(host, "MainPID") not in (pid, "0")
    assert wait_ready(host), host.run("journalctl -u tritonserver --no-pager -n 30").stdout
    assert infer_alert(host, "Pod memory usage exceeds 90% threshold")["class_label"] == ["memory"]


# --- the API key and local users ------------------------------------------------------------------

NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups"
VIEWER = "setpriv --reuid=65534 --regid=65534 --groups=%d"  # nobody, plus the process-view group


def api_key(host):
    return host.check_output("sed -n 's/^TRITON_API_KEY=//p' /etc/tritonserver/tritonserver.env")


def as_nobody(host, command, setpriv=NOBODY):
    res = host.run("%s -- sh -c %s" % (setpriv, shlex.quote(command)))
    assert res.rc == 0, res.stderr
    return res.stdout


def test_the_key_is_on_tritons_command_line(host):
    """Where the key is: root reads it in Triton's argv, so the checks below look in the right place."""
    key = api_key(host)
    assert len(key) >= 32
    cmdline = host.check_output("tr '\\0' ' ' < /proc/%s/cmdline" % unit_prop(host, "MainPID"))
    assert "triton-admin-key=" + key in cmdline


def test_an_unprivileged_user_sees_no_key_in_any_process(host):
    key = api_key(host)
    listing = as_nobody(host, "ps -eo args")
    assert "ps -eo args" in listing  # the listing ran and shows nobody's own processes
    assert key not in listing and "tritonserver" not in listing, listing
    # every readable cmdline and environ, threads included
    dump = as_nobody(host, "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ /proc/[0-9]*/task/*/cmdline "
                           "/proc/[0-9]*/task/*/environ 2>/dev/null; true")
    assert key not in dump
    pid = unit_prop(host, "MainPID")
    assert host.run("%s cat /proc/%s/cmdline" % (NOBODY, pid)).rc != 0


def test_proc_is_mounted_hidepid_now_and_in_fstab(host):
    # Now: the live mount. After a reboot: only the fstab line systemd-remount-fs applies at boot is
    # checked here (no reboot of the host in this scenario), not a rebooted host's /proc.
    gid = host.group("proc-view").gid
    options = host.check_output("findmnt --noheadings --output OPTIONS --mountpoint /proc").split(",")
    assert "hidepid=invisible" in options and "gid=%d" % gid in options, options
    assert "proc /proc proc nosuid,nodev,noexec,hidepid=invisible,gid=%d 0 0" % gid in host.file("/etc/fstab").content_string
    dropin = host.file("/etc/systemd/system/systemd-logind.service.d/50-aiops-triton-proc-view.conf")
    assert "SupplementaryGroups=proc-view" in dropin.content_string


def test_the_view_group_still_sees_every_process(host):
    """Monitoring agents put in proc-view keep seeing Triton (its pid, its metrics-relevant state)."""
    listing = as_nobody(host, "ps -eo user,args", setpriv=VIEWER % host.group("proc-view").gid)
    assert "tritonserver" in listing, listing


def test_the_key_still_loads_a_model_and_nothing_else_does(host):
    load = "curl -s -o /dev/null -w '%%{http_code}' -X POST %s " + http(host) + "/v2/repository/models/alert_classifier/load"
    assert host.check_output(load % ("-H 'triton-admin-key: %s'" % api_key(host))) == "200"
    assert host.check_output(load % "") != "200"
    assert host.check_output(load % "-H 'triton-admin-key: not-the-key-00000000000000000000'") != "200"
    assert infer_alert(host, "CPU load average above 16 on db-01")["class_label"] == ["cpu"]
