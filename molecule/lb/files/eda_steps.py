"""Alerts that act (issue 34), on the same four hosts behind HAProxy, under the same live load.

The stack, as an operator wires it (not a step): playbooks/monitoring.yml installs the drift and GPU health
reporters on the Triton hosts (the GPU one reading the test doubles of gpu_health_steps; the lab image's Debian
node_exporter serves their textfiles) and, on the controller (group triton_monitoring: localhost, existing mode),
writes Prometheus's targets and rules and the Alertmanager config that routes TritonGPUUnhealthy and TritonDown to the
rulebook's webhook with a bearer token file. Debian's prometheus and prometheus-alertmanager and the real
ansible-rulebook (the collection's rulebook aiops.triton.alertmanager_remediation, its gate playbooks/eda_remediate.yml)
run on the controller; the gate runs the collection's playbooks against this scenario's inventory. Lab timings: the
reporter every 2 s, scrapes every 1 s, the alerts' `for` 3 s, Alertmanager's group_wait and group_interval 1 s.
  k_eda_gpu_storm       every wave_1 host's GPU falls off the bus at once: exactly one is quarantined (the reset
                        cannot clear Xid 79, nor the reboot: it stays drained, the gate pages TritonRemediationFailed),
                        the other two are refused by the cap and recorded with its reason; never more than one wave_1
                        host out of traffic; 0 failed requests;
  k_eda_storm_repaired  the operator's repair of the quarantined host once its GPU is healthy (quarantine.yml);
  k_eda_gpu_fault       a pending row remap on one host the storm refused: the alert quarantines it, it is out of
                        traffic (HAProxy's drain state) within FAULT_TO_DRAIN_S of the fault, the reset clears it, it is
                        verified and back in traffic, recorded `done` with the alert's labels; 0 failed requests;
  k_eda_triton_stopped  Triton stopped on the other refused host (before the step, once HAProxy has it out: a Triton
                        dying under load loses what it was answering): TritonDown restarts it through restart.yml
                        (drained, restarted, every served model's golden cases and the GPU gate, undrained), recorded
                        `done`; the other hosts untouched; 0 failed requests.
Forged webhooks (no token, a wrong one, malformed JSON, a body that is no webhook: 401/400, counted, no record) are
tests/integration/test_eda_rulebook.py's, on the same rulebook.
"""

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

import gpu_health_steps
from lab_hosts import podman

HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
WAVE = ["roll-2", "roll-3", "roll-4"]
ORDER = ["k_eda_gpu_storm", "k_eda_storm_repaired", "k_eda_gpu_fault", "k_eda_triton_stopped"]
TOKEN = "lab-eda-" + "7f3a9c2e51d84b06a1e5c9d2b3f48e70"
# The stated time from a GPU fault to its host out of traffic, with the lab's timings above (reporter, scrape, for,
# group_wait: about 8 s of it) and Ansible's start on 2 shared cores (the gate, then quarantine.yml up to its drain).
FAULT_TO_DRAIN_S = 90
REPORTER_VARS = {"triton_gpu_health_reporter_interval": "2s", "triton_gpu_health_reporter_accuracy": "1s",
                 "triton_monitoring_target_address": "{{ aiops_lab_address }}"}
CAP_REASON = "more than triton_gpu_health_max_unhealthy allows (1)"


def stop_out_of_traffic(host, unit, lb_states, timeout=30):
    """Stop the host's Triton, then wait until HAProxy's health check has it out (a fault injected before a step:
    a Triton dying under load loses what it was answering, which no drain can save); HAProxy's state then
    ("up" if it still sends there after ``timeout`` s)."""
    podman("exec", host, "systemctl", "stop", unit)
    deadline = time.time() + timeout
    while time.time() < deadline and lb_states().get(host) == "up":
        time.sleep(0.5)
    return lb_states().get(host)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(url, body=None, token=None, timeout=10):
    """(status, body text) of a GET, or of a POST of body (bytes, or JSON-encoded)."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return None, str(exc)


class Stack(object):
    """Prometheus, Alertmanager and ansible-rulebook on the controller, for the scenario's hosts."""

    def __init__(self, workdir, env):
        self.dir = os.path.join(workdir, "eda")
        if os.path.isdir(self.dir):
            subprocess.run(["rm", "-rf", self.dir], check=True)
        for sub in ("prometheus/file_sd", "prometheus/rules", "tsdb", "alertmanager", "state"):
            os.makedirs(os.path.join(self.dir, sub))
        self.env = env
        self.procs = []
        self.ports = dict((name, free_port()) for name in ("prometheus", "alertmanager", "source"))
        self.prom = "http://127.0.0.1:%d" % self.ports["prometheus"]
        self.am = "http://127.0.0.1:%d" % self.ports["alertmanager"]
        self.source = "http://127.0.0.1:%d" % self.ports["source"]
        self.state = os.path.join(self.dir, "state")
        # the role writes it (triton_monitoring_alertmanager_eda_token), as an operator's vaulted token
        self.token_file = os.path.join(self.dir, "eda.token")

    def start(self, name, argv, extra_env=None):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True,
                                env=dict(self.env, **(extra_env or {})))
        self.procs.append((name, proc, log))
        return proc

    def tail(self, name, lines=40):
        path = os.path.join(self.dir, name + ".log")
        return "".join(open(path).readlines()[-lines:]) if os.path.exists(path) else ""

    def wait(self, what, ok, timeout, interval=0.5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, proc, _log in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError("%s exited (%s) while waiting for %s:\n%s" % (name, proc.returncode, what, self.tail(name)))
            if ok():
                return
            time.sleep(interval)
        raise RuntimeError("no %s within %d s" % (what, timeout))

    def role_vars(self):
        """The controller's triton_monitoring settings (host vars of localhost in group triton_monitoring)."""
        return {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "triton_monitoring_mode": "existing",
            "triton_monitoring_config_dir": os.path.join(self.dir, "prometheus"),
            "triton_monitoring_reload_url": self.prom + "/-/reload",
            "triton_monitoring_scrape_interval": "1s", "triton_monitoring_evaluation_interval": "1s",
            "triton_monitoring_file_sd_refresh_interval": "2s",
            "triton_monitoring_alert_for_down": "3s", "triton_monitoring_alert_for_gpu_unhealthy": "3s",
            "triton_monitoring_alertmanager_enabled": True,
            "triton_monitoring_alertmanager_config": os.path.join(self.dir, "alertmanager.yml"),
            "triton_monitoring_alertmanager_config_group": "root",
            "triton_monitoring_alertmanager_eda_url": self.source + "/alerts",
            "triton_monitoring_alertmanager_eda_token_file": self.token_file,
            "triton_monitoring_alertmanager_eda_token": TOKEN,
            # the two this scenario proves (the drift rule runs only models --check: tests/integration/test_eda_rulebook.py)
            "triton_monitoring_alertmanager_eda_alerts": ["TritonGPUUnhealthy", "TritonDown"],
            "triton_monitoring_alertmanager_group_wait": "1s", "triton_monitoring_alertmanager_group_interval": "1s",
        }

    def up(self, inventory_dir, play):
        """Reporters on the hosts and the controller's configs (playbooks/monitoring.yml), then the three services."""
        config = os.path.join(self.dir, "prometheus", "prometheus.yml")
        with open(config, "w") as handle:  # until the play has written the targets and rules
            handle.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n")
        self.start("prometheus", ["prometheus", "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
                                  "--web.listen-address=127.0.0.1:%d" % self.ports["prometheus"], "--web.enable-lifecycle",
                                  "--storage.tsdb.retention.time=1h"])
        self.wait("Prometheus ready", lambda: http(self.prom + "/-/ready")[0] == 200, 60)
        with open(os.path.join(inventory_dir, "zz_monitoring.yml"), "w") as handle:
            yaml.safe_dump({"all": {"children": {"triton_monitoring": {"hosts": {"localhost": self.role_vars()}}}}}, handle)
        proc = play(inventory_dir, os.path.join(self.dir, "monitoring.log"), "playbooks/monitoring.yml")
        if proc.returncode != 0:
            raise RuntimeError("monitoring.yml failed (log %s):\n%s" % (os.path.join(self.dir, "monitoring.log"), proc.stdout[-3000:]))
        with open(self.token_file) as handle:
            holds = handle.read() == TOKEN
        mode, leaked = stat.S_IMODE(os.stat(self.token_file).st_mode), TOKEN in proc.stdout + proc.stderr
        if not holds or mode != 0o640 or leaked:
            raise RuntimeError("the role's token file: %s holds the token: %s, mode %o (want 0640), the token in the play's "
                               "output: %s" % (self.token_file, holds, mode, leaked))
        rules = os.path.join(self.dir, "prometheus", "rules")
        snippet = os.path.join(self.dir, "prometheus", "aiops-triton-scrape-configs.yml")
        with open(snippet) as handle:
            scrape_configs = yaml.safe_load(handle)
        with open(config, "w") as handle:  # what an operator of an existing Prometheus does once
            yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                            "rule_files": [rules + "/*.yml"], "scrape_configs": scrape_configs,
                            "alerting": {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:%d" % self.ports["alertmanager"]]}]}]}},
                           handle)
        status, text = http(self.prom + "/-/reload", body=b"")
        if status != 200:
            raise RuntimeError("Prometheus did not reload: %s %s\n%s" % (status, text, self.tail("prometheus")))
        self.start("alertmanager", ["prometheus-alertmanager", "--config.file=" + os.path.join(self.dir, "alertmanager.yml"),
                                    "--storage.path=" + os.path.join(self.dir, "alertmanager"),
                                    "--web.listen-address=127.0.0.1:%d" % self.ports["alertmanager"],
                                    "--cluster.listen-address="])
        self.wait("Alertmanager ready", lambda: http(self.am + "/-/ready")[0] == 200, 60)
        variables = os.path.join(self.dir, "vars.yml")
        with open(variables, "w") as handle:
            yaml.safe_dump({"aiops_eda_listen_host": "127.0.0.1", "aiops_eda_listen_port": self.ports["source"],
                            "aiops_eda_dry_run": False, "aiops_eda_state_dir": self.state, "aiops_eda_window_seconds": 1800,
                            "aiops_eda_alertmanager_url": self.am}, handle)
        self.start("rulebook", [os.path.join(os.path.dirname(sys.executable), "ansible-rulebook"),
                                "--rulebook", "aiops.triton.alertmanager_remediation", "-i", inventory_dir,
                                "--vars", variables, "-E", "AIOPS_EDA_TOKEN"],
                   {"AIOPS_EDA_TOKEN": TOKEN, "JAVA_HOME": os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")})
        self.wait("the rulebook's event source", lambda: http(self.source + "/")[0] == 200, 120)
        # every host's Triton and node_exporter scraped, and its GPU verdict read (healthy: 0), before any fault
        self.wait("every target up and every GPU verdict healthy", self.all_healthy, 120, interval=1)

    def query(self, expr):
        status, text = http(self.prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        return json.loads(text)["data"]["result"] if status == 200 else []

    def all_healthy(self):
        # Triton's and node_exporter's targets (the balancer's exporter job routes nothing to the rulebook)
        up = self.query('up{job=~"aiops-triton|aiops-triton-node"}')
        health = self.query("aiops_gpu_host_health")
        return (len(up) == 2 * len(HOSTS) and all(r["value"][1] == "1" for r in up)
                and sorted(r["metric"].get("host") for r in health) == HOSTS
                and all(r["value"][1] == "0" for r in health))

    def alive(self, name):
        return [proc for n, proc, _log in self.procs if n == name][0].poll() is None

    def records(self):
        path = os.path.join(self.state, "results.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def pages(self):
        """The TritonRemediationFailed alerts the gate sent to Alertmanager, by host."""
        status, text = http(self.am + "/api/v2/alerts")
        return sorted(a["labels"].get("host") for a in json.loads(text) if a["labels"].get("alertname") == "TritonRemediationFailed") \
            if status == 200 else []

    def stop(self):
        for _name, proc, log in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()


def report(record):
    """The gate's kept output of the child playbook a record ran ('' when it has none)."""
    path = (record or {}).get("report", "")
    if not os.path.exists(path):
        return ""
    with open(path) as handle:
        return handle.read()


def decided(records, since, remediation, host=None):
    """The records after the first `since` of them that end the handling of an alert of remediation (of host) by
    acting or refusing: not `started`, not a throttled duplicate (a notification of an alert the gate has already
    handled, or one for a host remediated inside the window)."""
    return [r for r in records[since:] if r.get("remediation") == remediation and r.get("outcome") not in ("started", "throttled")
            and host in (None, r.get("host"))]


def run(step, check, results, args, flag, pins_now, lb_states, play, play_env, overlay, skip):
    """``step``/``check`` are the driver's; ``flag`` the servers' vars the fleet runs with, ``pins_now`` the group pins
    it serves; ``lb_states()`` HAProxy's state per host; ``play``/``play_env``/``overlay`` the driver's runner, its
    environment and its inventory overlay (the rulebook reads the overlay every step writes, with the same vars)."""
    if set(ORDER) <= skip:
        return

    def verdict(cond, message):
        check(cond, message, results, args.results)

    servers_extra = dict(flag, **dict(gpu_health_steps.HEALTH_VARS, **REPORTER_VARS))
    gpu_health_steps.install_doubles()
    inventory_dir = overlay(servers_extra=servers_extra, pins=pins_now)
    stack = Stack(os.path.dirname(args.results), play_env())
    try:
        stack.up(inventory_dir, play)
        _steps(step, verdict, stack, servers_extra, pins_now, lb_states, skip, results)
    finally:
        results.setdefault("eda", {})["rulebook_log_tail"] = stack.tail("rulebook", 60)
        stack.stop()
        for host in HOSTS:  # the hosts as the earlier steps left them: every GPU healthy, no reporter timers
            gpu_health_steps.set_state(host, "healthy")
            podman("exec", host, "systemctl", "disable", "--now", "aiops-triton-gpu-health.timer", "aiops-triton-drift.timer",
                   check=False)


def _steps(step, verdict, stack, servers_extra, pins_now, lb_states, skip, results):
    def wait_for(cond, timeout, interval=1):
        deadline = time.time() + timeout
        while time.time() < deadline and not cond():
            time.sleep(interval)
        return cond()

    def rulebook_view(before):
        """What the rulebook did in the step: its new records (stdout), and its log's tail (stderr)."""
        new = stack.records()[before:]
        return subprocess.CompletedProcess("ansible-rulebook", 0 if stack.alive("rulebook") else 1,
                                           "\n".join(json.dumps(r) for r in new), stack.tail("rulebook"))

    eda = results.setdefault("eda", {})
    common = dict(servers_extra=servers_extra, pins=pins_now, batch_rule=False)

    storm = eda.get("storm", {})
    if "k_eda_gpu_storm" not in skip:
        def gpu_storm(_inventory):
            before = len(stack.records())
            for host in WAVE:
                gpu_health_steps.set_state(host, "xid79")
            # one quarantine (its ladder ends in a reboot), two refusals; the quarantined host's TritonDown (its
            # reboot) may add a throttled record
            wait_for(lambda: len(decided(stack.records(), before, "quarantine")) >= 3, 420)
            time.sleep(5)
            storm["records"] = stack.records()[before:]
            storm["pages"] = stack.pages()
            return rulebook_view(before)
        entry, _proc = step("k_eda_gpu_storm", None, True, run=gpu_storm, readiness={}, **common)
        eda["storm"] = storm
        quarantines = decided(storm["records"], 0, "quarantine")
        acted = [r for r in quarantines if r["outcome"] in ("done", "failed")]
        refused = [r for r in quarantines if r["outcome"] == "refused"]
        storm["quarantined"] = acted[0]["host"] if len(acted) == 1 else None
        storm["refused"] = sorted(r["host"] for r in refused)
        verdict(len(acted) == 1 and len(refused) == 2 and sorted([acted[0]["host"]] + storm["refused"]) == WAVE,
                "k (storm): not one quarantine and two refusals over wave_1: %s" % quarantines)
        verdict(all(CAP_REASON in r.get("reason", "") for r in refused), "k (storm): a refusal does not name the cap: %s" % refused)
        drained = storm["quarantined"]
        verdict(acted[0]["outcome"] == "failed" and entry["last_states"].get(drained) == "drained"
                and gpu_health_steps.quarantined(drained),
                "k (storm): %s (Xid 79, not repairable) is not left drained and quarantined: %s, %s"
                % (drained, acted[0], entry["last_states"]))
        verdict(entry["before"]["boot"][drained] != entry["after"]["boot"][drained],
                "k (storm): the quarantine of %s did not reboot it after the reset failed" % drained)
        verdict(drained in storm["pages"], "k (storm): no TritonRemediationFailed page for %s in Alertmanager: %s" % (drained, storm["pages"]))
        verdict(entry["max_out"] == 1 and all(entry["last_states"].get(h) == "up" for h in HOSTS if h != drained),
                "k (storm): not exactly the cap's one host out of traffic: %s, last %s" % (entry["out_of_traffic"][-3:], entry["last_states"]))
        verdict(entry["after"]["pid"]["roll-1"] == entry["before"]["pid"]["roll-1"], "k (storm): the canary was touched")
        verdict("replace the GPUs named" in report(acted[0]), "k (storm): the quarantine's report does not say what to replace")

    if "k_eda_storm_repaired" not in skip:
        drained = storm.get("quarantined")
        verdict(drained is not None, "k (repair): no quarantined host from k_eda_gpu_storm to repair")
        for host in WAVE:
            gpu_health_steps.set_state(host, "healthy")
        entry, _proc = step("k_eda_storm_repaired", "playbooks/quarantine.yml", True, extra=["--limit", drained], readiness={},
                            **common)
        verdict(entry["last_states"].get(drained) == "up" and not gpu_health_steps.quarantined(drained),
                "k (repair): %s is not back in traffic with its quarantine released: %s" % (drained, entry["last_states"]))
        # the storm's alerts resolve before the next fault (a new occurrence, not the storm's)
        verdict(wait_for(lambda: not stack.query('ALERTS{alertstate="firing",alertname="TritonGPUUnhealthy"}'), 60),
                "k (repair): TritonGPUUnhealthy still firing 60 s after every GPU is healthy")

    refused = storm.get("refused") or ["roll-2", "roll-4"]
    if "k_eda_gpu_fault" not in skip:
        host = refused[0]

        def gpu_fault(_inventory):
            before = len(stack.records())
            start = time.time()
            gpu_health_steps.set_state(host, "row_remap_pending")
            seen = []
            out = wait_for(lambda: seen.append(lb_states().get(host)) or seen[-1] not in ("up", None), FAULT_TO_DRAIN_S + 60,
                           interval=0.5)
            eda["fault_to_out_of_traffic_s"] = round(time.time() - start, 1) if out else None
            eda["fault_first_state"] = seen[-1] if seen else None
            wait_for(lambda: decided(stack.records(), before, "quarantine", host), 300)
            return rulebook_view(before)
        entry, proc = step("k_eda_gpu_fault", None, True, run=gpu_fault, readiness={}, **common)
        done = decided([json.loads(line) for line in proc.stdout.splitlines() if line.strip()], 0, "quarantine", host)
        seconds = eda.get("fault_to_out_of_traffic_s")
        verdict(seconds is not None and seconds <= FAULT_TO_DRAIN_S,
                "k (fault): %s not out of traffic within %d s of its GPU fault (%s s)" % (host, FAULT_TO_DRAIN_S, seconds))
        # out of traffic by the quarantine's drain (HAProxy's admin state), not by a failed health check
        verdict(eda.get("fault_first_state") == "drained", "k (fault): %s left traffic as %r, not drained"
                % (host, eda.get("fault_first_state")))
        verdict(len(done) == 1 and done[0]["outcome"] == "done" and done[0]["alert"]["alertname"] == "TritonGPUUnhealthy"
                and done[0]["alert"]["labels"].get("host") == host,
                "k (fault): no `done` quarantine record of %s for its TritonGPUUnhealthy alert: %s" % (host, done))
        verdict(entry["last_states"].get(host) == "up" and not gpu_health_steps.quarantined(host),
                "k (fault): %s (repaired by the reset) is not back in traffic and released: %s" % (host, entry["last_states"]))
        verdict(all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in HOSTS if h != host),
                "k (fault): a host other than %s was restarted" % host)

    if "k_eda_triton_stopped" not in skip:
        host = refused[-1]
        # The fault comes before the step, as j's does (one CI run lost 13 requests to a stop inside it). The step is
        # the alert path's remediation, which must lose nothing: from HAProxy's health check taking the host out to
        # the restart putting it back.
        before = len(stack.records())
        verdict(stop_out_of_traffic(host, "tritonserver", lb_states) != "up",
                "k (stopped): HAProxy still sends to %s 30 s after its Triton stopped" % host)

        def triton_stopped(_inventory):
            wait_for(lambda: decided(stack.records(), before, "restart", host), 300)
            return rulebook_view(before)
        entry, proc = step("k_eda_triton_stopped", None, True, run=triton_stopped, readiness={}, **common)
        done = decided([json.loads(line) for line in proc.stdout.splitlines() if line.strip()], 0, "restart", host)
        verdict(len(done) == 1 and done[0]["outcome"] == "done" and done[0]["alert"]["alertname"] == "TritonDown",
                "k (stopped): no `done` restart record of %s for its TritonDown alert: %s" % (host, done))
        verdict(entry["after"]["pid"][host] not in (None, "", "0", 0) and entry["after"]["pid"][host] != entry["before"]["pid"][host]
                and entry["last_states"].get(host) == "up",
                "k (stopped): %s's Triton is not running again and back in traffic: %s, %s" % (host, entry["after"]["pid"], entry["last_states"]))
        verdict(all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in HOSTS if h != host),
                "k (stopped): a host other than %s was restarted" % host)
        # the restart went through HAProxy's drain state (the host already DOWN by its health check), then back
        verdict(host in entry["drained_seen"],
                "k (stopped): %s was never seen in HAProxy's drain state during its restart" % host)
        verdict(re.search(r"Drain - set the server to DRAIN.*Restart Triton.*Every served model answers its golden cases"
                          r".*Put the host back into traffic", report(done[0] if done else None), re.S) is not None,
                "k (stopped): restart.yml did not go drain, restart, golden cases, undrain (%s)" % (done[0].get("report") if done else None))
