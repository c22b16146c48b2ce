"""Rolling host operations behind the lab's HAProxy while clients send every request through it.

First a site.yml that changes nothing (no host drained, none restarted, changed=0, timed; under make test from
inside the collection's EE over SSH, as AWX reaches a fleet: AIOPS_LB_EE_IMAGE), then the operations below, each
with ansible-playbook against the scenario's own inventory plus an overlay of its group_vars (nothing under git
changes), each under live load through HAProxy (real tritonclient, gRPC and HTTP, concurrent clients, every request
counted), with HAProxy's runtime API sampled throughout:
  a. with HAProxy's retries off (retry-on none: the scenario converges with group_vars/triton_lb), a Triton flag change
     (triton_server_log_verbose: 1, and HTTP bound to the host's lab address instead of 0.0.0.0, which every
     later step keeps) applied with site.yml: every host restarts (MainPID changes), 0 failed
     requests, hosts out of traffic only ever within one batch of the plan, and each host seen in HAProxy's
     drain admin state with 0 requests in flight before readiness first found its Triton stopped;
  b. playbooks/reboot.yml over every host, retries still off: every host rebooted (its boot id changes), 0
     failed requests, one batch out of traffic at a time, the same drain proof; then roll-4 rebooted with the
     drain skipped on purpose (triton_rolling_drain: false): the drain proof names it (the requests it lost
     are recorded); then the retries back on (a reload under load);
  c. the failure sequence of issue 21 with playbooks/model_upgrade.yml, one run each, on the same hosts:
     anomaly_detector 1 -> 2 (good, every host); 3 (corrupt model.onnx: fails to load as the candidate);
     4 (version 1's graph under version 2's golden cases: loads, fails them; two failures in a row);
     alert_classifier 2 (its golden cases pass, but it is slow on requests of
     more texts than any golden case holds, as the live clients send): the canary's bake on its own
     /metrics against wave_1's sees the latency and rolls it back. After every failed step: the canary
     rolled back, wave_1 never fetched the version, every host serves the last verified version with
     /v2/health/ready 200 and no candidate left, and no client was answered by a version that failed its
     checks (every anomaly_detector answer is compared with what the answering version's graph gives);
     during every step of c, each host's /v2/health/ready is sampled every 0.5 s: in a failed step the last
     verified versions stay READY throughout and readiness is 200 throughout but while the canary's candidate
     loads, fails or unloads (strict readiness; the wave, never reached, is 200 at every probe);
  d. a server change that breaks Triton (an invalid extra argument) with playbooks/triton_server.yml: the
     canary stays drained, the run stops before the next batch (the other hosts keep their MainPID and
     their unit), the summary names the canary, 0 failed requests;
  (e. the hardware work of drain.yml and undrain.yml on one host is h's: drained, verified, put back)
  f. the fix for d, re-run: playbooks/triton_server.yml without the bad argument restarts the canary alone,
     verifies it and puts it back in traffic; every host up, 0 failed requests;
  g. GPU health (files/gpu_health_steps.py): a canary with a pending row remap stops a rollout before any host
     changes; a wave host whose GPU falls off the bus mid-rollout is drained, quarantined and named a host fault
     while the others upgrade; undrain.yml refuses it; quarantine.yml repairs a fault a GPU reset clears (the
     cap holds a storm in k);
  h. errors that name their cause (files/operator_error_steps.py): a flag change whose balancer socket does not
     answer stops before any restart and names the socket, its host and what to run; undrain.yml refuses a host
     whose Triton unit is stopped at once, naming the unit and its state, and one whose model answers wrongly on its
     golden cases; drain.yml's refusal to empty the canary group and -e triton_rolling_drain_force=true;
  i. the driver upgrade as a flow (files/driver_upgrade_steps.py): roll-4 gets Debian's 535 driver at a pin that is
     not the newest, then playbooks/nvidia_driver_upgrade.yml moves it to the newest: drained before Triton stops,
     packages released, upgraded, held again, GPU check, Triton started, golden cases, undrained; 0 failed requests;
  k. alerts that act (files/eda_steps.py): Prometheus, Alertmanager and the real ansible-rulebook on the controller
     remediate a GPU fault and a stopped Triton (playbooks/restart.yml: drained, restarted, verified, undrained) by
     themselves and hold an alert storm at the cap (forged webhooks: tests/integration/test_eda_rulebook.py).
A sampler (HAProxy's runtime API, readiness) that dies, stops or freezes before its step ends fails the step:
its record would be short, and a short record passes checks it never made.
Writes the counts and what it saw to --results, prints a summary, exits non-zero on the first broken promise.
"""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCENARIO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "molecule"))
sys.path.insert(0, os.path.join(ROOT, ".collection"))
import driver_upgrade_steps  # noqa: E402  (beside this file)
import eda_steps  # noqa: E402  (beside this file)
import gpu_health_steps  # noqa: E402  (beside this file)
import operator_error_steps  # noqa: E402  (beside this file)
import model_variants  # noqa: E402  (molecule/model_variants.py)
import scenario_checks  # noqa: E402  (molecule/scenario_checks.py)
from lab_hosts import candidates, health_ready, host_ip, main_pid, on_disk, podman, repository_index, serving  # noqa: E402
from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.aiops.triton.plugins.filter.haproxy import (  # noqa: E402
    ADMIN_DRAIN, haproxy_in_flight, haproxy_server_state, servers_state_rows)

HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
LB = "roll-lb"
# Each client's pause after a request to each model: a steady stream, not a CPU hog (Ansible, 4 Triton hosts and
# HAProxy share 2 cores). Measured on the converged fleet: 0.1 s gave 75 requests/s for 0.34 busy cores, 0.2 s 39/s
# for 0.2, the rest left to the operations under test.
CLIENT_PAUSE_S = 0.2
# The plan of rollout_groups.yml and group_vars: canary alone, then wave_1 in batches of 2.
BATCHES = [["roll-1"], ["roll-2", "roll-3"], ["roll-4"]]
BACKENDS = ["triton_http", "triton_grpc"]
ADMIN_SOCKET = "/run/haproxy/admin.sock"
BAD_ARG = "--no-such-flag=1"
# The failure sequence, one model_upgrade.yml run each, in this order on the same hosts (issue 21):
# (step, version, kind); the canary gets each first, wave_1 only a good one.
SEQUENCE = [("c_model_rollout", 2, "good"), ("c_corrupt_model", 3, "corrupt"), ("c_regressed_model", 4, "regressed"),
            ("c_slow_on_live_traffic", 2, "slow")]
SEQUENCE_MODEL = {"good": "anomaly_detector", "corrupt": "anomaly_detector", "regressed": "anomaly_detector",
                  "slow": "alert_classifier"}
# anomaly_detector version -> the build version whose graph it carries (5 is 2's files again)
GOOD_ANOMALY = {1: 1, 2: 2, 5: 2}
# the slow alert_classifier's extra time per live request: far above the bake's latency ratio on a 2-core machine
SLOW_SECONDS = 0.25


def boot_id(host):
    """A container shares the kernel's boot id; its boot is its systemd (PID 1) starting: that start time."""
    return podman("exec", host, "cut", "-d", " ", "-f", "22", "/proc/1/stat").stdout.strip()


def hosts_now():
    """{"pid": host -> Triton's MainPID, "boot": host -> boot id}, the eight reads at once."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        pids = dict(zip(HOSTS, pool.map(main_pid, HOSTS)))
        boots = dict(zip(HOSTS, pool.map(boot_id, HOSTS)))
    return {"pid": pids, "boot": boots}


def unit_has(host, text):
    return text in podman("exec", host, "cat", "/etc/systemd/system/tritonserver.service").stdout


# -- load through the load balancer ---------------------------------------------------------------
def _client_loop(url, protocol, stop, counts, table, texts, labels, sending):
    """Alternate anomaly_detector and alert_classifier requests until told to stop; count each outcome.

    Every anomaly_detector answer is compared with what the version that answered (the response's
    model_version) must give for that window (model_variants.ExpectedAnswers); the versions that answered
    each model are counted."""
    if protocol == "grpc":
        import tritonclient.grpc as tc
        client = tc.InferenceServerClient(url)
    else:
        import tritonclient.http as tc
        client = tc.InferenceServerClient(url, connection_timeout=10, network_timeout=30)
    ok = failed = sent = wrong = 0
    errors, wrong_examples = [], []
    versions = {"anomaly_detector": {}, "alert_classifier": {}}
    batch = np.array([[t.encode()] for t in texts], dtype=object)
    while not stop.is_set():
        for model in ("anomaly_detector", "alert_classifier"):
            try:
                if model == "anomaly_detector":
                    index = sent % len(table["windows"])
                    window = tc.InferInput("metrics_input", [4, 60, 20], "FP32")
                    window.set_data_from_numpy(table["windows"][index])
                    result = client.infer(model, [window])
                    answer = result.as_numpy("anomaly_score")
                else:
                    text_input = tc.InferInput("alert_text", list(batch.shape), "BYTES")
                    text_input.set_data_from_numpy(batch)
                    result = client.infer(model, [text_input])
                    answer = [x[0].decode() for x in result.as_numpy("class_label")]
                response = result.get_response()
                version = str(response["model_version"] if isinstance(response, dict) else response.model_version)
                versions[model][version] = versions[model].get(version, 0) + 1
                problem = (model_variants.answer_problem(table, index, version, answer) if model == "anomaly_detector"
                           else (None if answer == labels else "version %s labelled %s, not %s" % (version, answer, labels)))
                if problem:  # an answer, but not the one the version that gave it must give
                    wrong += 1
                    if len(wrong_examples) < 5:
                        wrong_examples.append("%s %s: %s" % (protocol, model, problem))
                ok += 1
            except Exception as exc:  # every failure is counted and kept, never hidden
                failed += 1
                if len(errors) < 5:
                    errors.append("%s %s: %s" % (protocol, model, str(exc)[:300]))
            sent += 1
            sending.set()
        time.sleep(CLIENT_PAUSE_S)
    counts.put({"protocol": protocol, "ok": ok, "failed": failed, "errors": errors, "versions": versions,
                "wrong": wrong, "wrong_examples": wrong_examples})


class Load(object):
    """Two gRPC and two HTTP clients, each its own process, all through HAProxy."""

    def __init__(self, lb_ip, table):
        self.stop = multiprocessing.Event()
        self.counts = multiprocessing.Queue()
        texts, labels = model_variants.classifier_live_batch()
        targets = [("%s:8001" % lb_ip, "grpc"), ("%s:8000" % lb_ip, "http")] * 2
        self.sending = [multiprocessing.Event() for _target in targets]
        self.procs = [multiprocessing.Process(target=_client_loop,
                                              args=(url, proto, self.stop, self.counts, table, texts, labels, sending))
                      for (url, proto), sending in zip(targets, self.sending)]

    def __enter__(self):
        for proc in self.procs:
            proc.start()
        # every client has had its first request answered or failed before the operation starts (a fixed pause
        # was both too long, 41 steps x 3 s, and no proof); one that never sends has no answer, which fails the step
        deadline = time.time() + 60
        for sending in self.sending:
            sending.wait(timeout=max(0.0, deadline - time.time()))
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.result = [self.counts.get(timeout=120) for _proc in self.procs]
        for proc in self.procs:
            proc.join(timeout=30)
        return False


# -- what runs beside a step: it must run until the step ends, or the step fails ----------------------
class Watch(object):
    """A background reader whose record counts only if it ran the whole step: what ended it early (an
    exception), whether it was still running when told to stop, and how long before that it last read."""

    def __init__(self):
        self.error = None
        self.alive = None
        self.last_read = time.time()
        self.stale = None

    def _closing(self, thread, running=True):
        self.alive = thread.is_alive() and running
        self.stale = round(time.time() - self.last_read, 1)

    def problem(self, count, min_count=10, max_stale=15.0):
        """None when the record can be trusted, else why not."""
        if self.error:
            return "it died: %s" % self.error
        if not self.alive:
            return "it stopped before the step ended"
        if self.stale > max_stale:
            return "it read nothing in the last %.0f s of the step (frozen)" % self.stale
        if count < min_count:
            return "it took %d samples (at least %d)" % (count, min_count)
        return None


# -- HAProxy's runtime API, sampled --------------------------------------------------------------
class Sampler(Watch):
    """`show servers state` every 0.5 s through one long-running exec in the LB host; each sample is the
    set of Triton hosts that are not up (drained, down, maint, unknown). An answer with no server in it
    (empty or cut short while HAProxy reloads) is counted as unanswered; sampling goes on."""

    STOP = "/run/aiops-sampler-stop"
    SCRIPT = ('rm -f %s; while [ ! -e %s ]; do echo "show servers state" | socat -t 5 stdio unix-connect:%s; '
              'echo @@STAT; echo "show stat" | socat -t 5 stdio unix-connect:%s; '
              'echo @@END; sleep 0.5; done; rm -f %s' % (STOP, STOP, ADMIN_SOCKET, ADMIN_SOCKET, STOP))

    def __init__(self, argv=None, stop=None):
        """argv / stop: the sampling command and how to end it (tests: a stand-in for the LB host)."""
        super(Sampler, self).__init__()
        self.samples = []
        # (time, {host: {"drain": admin drain set, "op": srv_op_state, "in_flight": sessions + queued}}) per
        # answer: what the drain proof reads (drain_problems)
        self.details = []
        self.unanswered = 0  # the admin socket gave no server at all (HAProxy reloading): no sample
        self._stop = stop or (lambda: podman("exec", LB, "touch", self.STOP))
        self.proc = subprocess.Popen(argv or ["podman", "exec", LB, "sh", "-c", self.SCRIPT], stdout=subprocess.PIPE,
                                     text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    @staticmethod
    def states(text):
        """{host: state} from one answer; None when it holds no server (empty, cut short, HAProxy reloading)."""
        try:
            states = dict((h, haproxy_server_state(text, h, BACKENDS)) for h in HOSTS)
        except AnsibleFilterError:  # no "# be_id ..." header: not an answer
            return None
        return None if set(states.values()) == {"unknown"} else states

    @staticmethod
    def detail(state_text, stat_text):
        """{host: {"drain", "op", "in_flight"}} over both backends: drain when HAProxy's admin state has the
        drain bit on any backend (an operator's drain, not a failed health check), op the lowest operational
        state, in_flight the sessions and queued requests summed (None when `show stat` did not answer)."""
        try:
            rows = [r for r in servers_state_rows(state_text) if r.get("be_name") in BACKENDS]
        except AnsibleFilterError:
            return None
        out = {}
        for host in HOSTS:
            mine = [r for r in rows if r.get("srv_name") == host]
            if not mine:
                return None
            try:
                in_flight = haproxy_in_flight(stat_text, host, BACKENDS) if stat_text.strip() else None
            except AnsibleFilterError:
                in_flight = None
            out[host] = {"drain": any(int(r.get("srv_admin_state") or 0) & ADMIN_DRAIN for r in mine),
                         "op": min(int(r.get("srv_op_state") or 0) for r in mine), "in_flight": in_flight}
        return out

    def _read(self):
        block, state_text = [], None
        try:
            for line in self.proc.stdout:
                if line.strip() == "@@STAT":
                    state_text, block = "".join(block), []
                elif line.strip() == "@@END":
                    self.last_read = time.time()
                    if state_text is None:  # an answer without `show stat` (tests' stand-ins)
                        state_text, block = "".join(block), []
                    states = self.states(state_text)
                    detail = self.detail(state_text, "".join(block))
                    block, state_text = [], None
                    if states is None:
                        self.unanswered += 1
                    else:
                        stamp = round(time.time(), 1)
                        self.samples.append((stamp, states))
                        if detail is not None:
                            self.details.append((stamp, detail))
                else:
                    block.append(line)
        except Exception as exc:  # kept: a reader that dies must fail the step, not leave a short record
            self.error = "%s: %s" % (type(exc).__name__, exc)

    def close(self):
        self._closing(self.thread, self.proc.poll() is None)
        self._stop()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.thread.join(timeout=5)
        return self.samples

    def sampler_problem(self, seconds=None):
        """seconds: how long the step ran; a step of a few seconds (a refusal) has fewer than 10 samples to give."""
        least = 10 if seconds is None else min(10, max(3, int(seconds / 1.5)))
        return self.problem(len(self.samples), min_count=least)

    @staticmethod
    def out_sets(samples):
        """The distinct consecutive sets of hosts out of traffic, and the samples that broke the batch rule."""
        seen, broken = [], []
        for stamp, states in samples:
            out = sorted(h for h, s in states.items() if s != "up")
            if not seen or seen[-1] != out:
                seen.append(out)
            if out and not any(set(out) <= set(batch) for batch in BATCHES):
                broken.append((stamp, states))
        return seen, broken


# -- Triton's readiness on every host, sampled ----------------------------------------------------
class Readiness(Watch):
    """/v2/health/ready of every host every 0.5 s from the controller while a step runs (what HAProxy's health
    check asks), each probe between two reads of the host's repository index. serving = {host: {model:
    version}}: on those hosts the versions stay READY at every read, and readiness is 200 at every probe but
    while the host's candidate loads, fails or unloads (scenario_checks.readiness_problem: Triton's strict
    readiness counts a loading model as not ready); a host the failure never reached has no candidate, so
    there it must be 200 throughout. Every probe that is not 200 is kept; hosts not in serving only so."""

    def __init__(self, addresses, serving=None, probe=health_ready, index=repository_index, period=0.5):
        super(Readiness, self).__init__()
        self.addresses, self.serving, self.probe, self.index, self.period = addresses, serving or {}, probe, index, period
        self.counts = dict((h, 0) for h in addresses)
        self.not_ready = []  # (time, host, status or error) of every probe that was not 200
        self.unexplained = []  # (time, host, why) of every probe scenario_checks.readiness_problem refuses
        # host -> {"last_ok": start of its last 200 probe, "failed": start of the first probe after it that was
        # not 200}: where its Triton stopped answering (the drain proof's "before the stop")
        self.first_down = {}
        self._last_ok = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read_index(self, ip):
        try:
            return self.index(ip)
        except (OSError, ValueError) as exc:  # unreadable: no READY version in it
            return [{"name": "(index)", "state": "UNREADABLE", "reason": str(exc)}]

    def _run(self):
        try:
            while not self.stop.is_set():
                for host, ip in sorted(self.addresses.items()):
                    before = self._read_index(ip) if host in self.serving else []
                    started = time.time()
                    try:
                        status = self.probe(ip)
                    except OSError as exc:  # refused, reset, timed out: not ready
                        status = "no answer: %s" % exc
                    after = self._read_index(ip) if host in self.serving else []
                    self.counts[host] += 1
                    stamp = round(time.time(), 1)
                    if status == 200:
                        self._last_ok[host] = started
                    else:
                        self.not_ready.append((stamp, host, str(status)))
                        if host in self._last_ok and host not in self.first_down:
                            self.first_down[host] = {"last_ok": round(self._last_ok[host], 2), "failed": round(started, 2)}
                    why = (scenario_checks.readiness_problem(status, [before, after], self.serving[host])
                           if host in self.serving else None)
                    if why:
                        self.unexplained.append((stamp, host, why))
                self.last_read = time.time()
                self.stop.wait(self.period)
        except Exception as exc:  # kept: see Sampler._read
            self.error = "%s: %s" % (type(exc).__name__, exc)

    def close(self):
        self._closing(self.thread)
        self.stop.set()
        self.thread.join(timeout=15)
        return {"samples": dict(self.counts), "not_200": self.not_ready[:20], "not_200_count": len(self.not_ready),
                "checked": sorted(self.serving), "unexplained": self.unexplained[:20],
                "unexplained_count": len(self.unexplained), "first_down": dict(self.first_down),
                "problem": self.problem(min(self.counts.values() or [0]))}


def drain_problems(details, first_down, hosts):
    """{host: why its drain is not proven} for hosts whose Triton went down during a step (a restart, a
    reboot); empty when each was seen in HAProxy's drain state (the admin state an operator's drain sets, not
    DOWN from a failed health check) with no request in flight on it, in a sample taken before the first
    readiness probe that found its Triton not answering. A host never seen going down is named too: its stop
    was not observed, so nothing about its drain is known."""
    problems = {}
    for host in hosts:
        down = first_down.get(host)
        if down is None:
            problems[host] = "readiness never saw its Triton stop"
            continue
        before = [(t, d[host]) for t, d in details if t < down["failed"]]
        drained = [t for t, d in before if d["drain"]]
        idle = [t for t, d in before if d["drain"] and d["in_flight"] == 0]
        if not drained:
            problems[host] = "never in HAProxy's drain state before its Triton stopped (first not ready at %.1f)" % down["failed"]
        elif not idle:
            problems[host] = "drained at %.1f but never with 0 requests in flight before its Triton stopped (%.1f)" % (
                drained[0], down["failed"])
    return problems


def drain_margins(details, first_down, hosts):
    """host -> seconds from the first sample that saw it drained and idle to its stop (the record's evidence)."""
    out = {}
    for host in hosts:
        down = first_down.get(host)
        idle = [t for t, d in details if down and t < down["failed"] and d[host]["drain"] and d[host]["in_flight"] == 0]
        out[host] = round(down["failed"] - idle[0], 1) if idle else None
    return out


# -- inventory overlay and runs ------------------------------------------------------------------
def overlay(inventory, workdir, servers_extra=None, pins=None, addresses=None, lb_extra=None, gpu_hosts=None):
    """The scenario's inventory, on the lab's pipelining nsenter transport, with extra triton_servers vars
    (a file after the linked ones), extra triton_lb vars, replaced group pins (pins = {group: [model
    entries]}), each host's bridge address (aiops_lab_address: the bake reads /metrics there) and the hosts
    put in triton_gpu_servers (gpu_hosts)."""
    dest = os.path.join(workdir, "rolling_inventory")  # not "inventory": that is molecule's own
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "group_vars", "triton_servers"))
    if addresses:
        with open(os.path.join(dest, "zz_addresses.yml"), "w") as handle:
            yaml.safe_dump({"all": {"hosts": dict((h, {"aiops_lab_address": ip}) for h, ip in addresses.items())}}, handle)
    for name in os.listdir(os.path.dirname(inventory)):  # molecule's hosts and the linked rollout groups
        if name == "host_vars":  # every host on the lab's transport already (molecule.yml links them)
            os.symlink(os.path.realpath(os.path.join(os.path.dirname(inventory), name)), os.path.join(dest, name))
        elif name != "group_vars":
            with open(os.path.realpath(os.path.join(os.path.dirname(inventory), name))) as handle:
                text = handle.read()
            text = text.replace("ansible_connection: podman\n", "ansible_connection: lab_podman\n"
                                "      ansible_pipelining: true\n      ansible_podman_exec_method: nsenter\n")
            with open(os.path.join(dest, name), "w") as handle:
                handle.write(text)
    if gpu_hosts:
        with open(os.path.join(dest, "zz_gpu_hosts.yml"), "w") as handle:
            yaml.safe_dump({"all": {"children": {"triton_gpu_servers": {"hosts": dict((h, {}) for h in gpu_hosts)}}}}, handle)
    servers = os.path.join(SCENARIO, "group_vars", "triton_servers")
    for name in os.listdir(servers):
        os.symlink(os.path.realpath(os.path.join(servers, name)), os.path.join(dest, "group_vars", "triton_servers", name))
    if servers_extra:
        with open(os.path.join(dest, "group_vars", "triton_servers", "zz_step.yml"), "w") as handle:
            yaml.safe_dump(servers_extra, handle)
    if lb_extra:
        os.makedirs(os.path.join(dest, "group_vars", "triton_lb"))
        with open(os.path.join(dest, "group_vars", "triton_lb", "zz_step.yml"), "w") as handle:
            yaml.safe_dump(lb_extra, handle)
    for group in ("triton_canary", "triton_wave_1"):
        source = os.path.join(SCENARIO, "group_vars", group)
        if pins and group in pins:
            os.makedirs(os.path.join(dest, "group_vars", group))
            serial = yaml.safe_load(open(os.path.join(source, "models.yml")))["triton_rollout_serial"]
            with open(os.path.join(dest, "group_vars", group, "models.yml"), "w") as handle:
                yaml.safe_dump({"triton_rollout_serial": serial, "triton_models_list": pins[group]}, handle)
        else:
            os.symlink(source, os.path.join(dest, "group_vars", group))
    return dest


def play_env(**env_extra):
    """The environment of the scenario's Ansible runs (play(), and the EDA steps' ansible-rulebook and its gate)."""
    env = dict(os.environ, **scenario_checks.ROLLOUT_ENV)
    # molecule's ANSIBLE_CONFIG (inherited here) names neither the lab's connection plugin path nor the
    # checkout's fact caching and forks (ansible.cfg): the runs get them as the lab's own runs do
    plugins = [os.path.join(ROOT, "lab", "plugins", "connection"), os.environ.get("ANSIBLE_CONNECTION_PLUGINS")]
    env.update(ANSIBLE_CONNECTION_PLUGINS=":".join(filter(None, plugins)), ANSIBLE_GATHERING="smart", ANSIBLE_FORKS="20")
    env.update(env_extra)
    installed = os.environ.get("AIOPS_LB_COLLECTIONS_PATH")
    if installed:
        env.update(ANSIBLE_COLLECTIONS_PATH=installed)
    return env


def play(inventory_dir, log, playbook, *extra, **env_extra):
    """ansible-playbook over the scenario's hosts. With AIOPS_LB_COLLECTIONS_PATH (make test: the installed
    artifact) the playbook is the installed collection's, by FQCN, from a directory outside the checkout and
    with only that collection path: a file the artifact lacks fails the step."""
    env = play_env(**env_extra)
    if os.environ.get("AIOPS_LB_COLLECTIONS_PATH"):
        target, cwd = "aiops.triton." + os.path.splitext(os.path.basename(playbook))[0], os.path.dirname(log)
    else:
        target, cwd = os.path.join(ROOT, playbook), ROOT
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory_dir,
                           target] + list(extra),
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=1800, check=False)
    with open(log, "w") as handle:
        handle.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    return proc


def recap_changed(out):
    """host -> changed count from the PLAY RECAP."""
    return dict((line.split()[0], int(line.split("changed=")[1].split()[0]))
                for line in out.splitlines() if " changed=" in line and line.split()[0].startswith("roll-"))


def check(condition, message, results, path):
    if not condition:
        results["failed_check"] = message
        json.dump(results, open(path, "w"), indent=2)
        print("LB CHECK FAILED: %s" % message)
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--start-at", default="", help="development: skip the steps before this one (results merged)")
    parser.add_argument("--stop-after", default="", help="development: skip the steps after this one")
    args = parser.parse_args()
    workdir = os.path.dirname(args.results)
    lb_ip = host_ip(LB)
    results = {"lb": lb_ip, "steps": {}, "collections_path": os.environ.get("AIOPS_LB_COLLECTIONS_PATH") or "checkout"}
    print("playbooks from: %s" % results["collections_path"])
    if args.start_at and os.path.exists(args.results):
        results["steps"] = json.load(open(args.results)).get("steps", {})
    order = ["no_change_site", "a_flag_change_check", "a_flag_change_site", "b_rolling_reboot",
             "b_reboot_without_drain", "b_retries_on"] + [name for name, _v, _k in SEQUENCE] + [
        "d_broken_canary", "f_repair_canary"] + gpu_health_steps.ORDER + operator_error_steps.ORDER + driver_upgrade_steps.ORDER
    order += eda_steps.ORDER
    skip = set(order[:order.index(args.start_at)]) if args.start_at else set()
    if args.stop_after:
        skip |= set(order[order.index(args.stop_after) + 1:])
    # what each good anomaly_detector version answers (its own graph run here); a failed one is never added
    expected = model_variants.ExpectedAnswers()
    for version, weights in GOOD_ANOMALY.items():
        expected.add(version, weights)
    table = expected.table()
    addresses = dict((h, host_ip(h)) for h in HOSTS)

    def step(name, playbook, expect_ok, batch_rule=True, extra=(), env=None, readiness=None, drain_proof=None,
             lost_ok=False, run=None, **inventory):
        """readiness: None, or {host: {model: version}} to hold during the step (Readiness); {} records only.
        drain_proof: the hosts whose Triton goes down in the step; each must be seen drained with nothing in
        flight before it stops (drain_problems; recorded, and checked unless lost_ok). lost_ok: the step is
        meant to lose requests (a drain skipped on purpose): failed requests are recorded, not refused.
        run: instead of the playbook, run(inventory_dir) -> an object with returncode, stdout and stderr (the EDA
        steps: what the rulebook did), under the same load and samplers."""
        if drain_proof and readiness is None:
            readiness = {}
        inv = overlay(args.inventory, workdir, addresses=addresses, **inventory)
        before = hosts_now()
        start = time.time()
        sampler = Sampler()
        ready = Readiness(addresses, readiness) if readiness is not None else None
        with Load(lb_ip, table) as load:
            started = time.time()
            proc = run(inv) if run else play(inv, os.path.join(workdir, "%s.log" % name), playbook, *extra, **(env or {}))
            played = time.time() - started
        samples = sampler.close()
        ready = ready.close() if ready else None
        after = hosts_now()
        counts = load.result
        out_sets, broken = Sampler.out_sets(samples)
        # seconds: the whole step; play_seconds: the playbook (or the EDA wait) alone, the rest is the harness's
        entry = {"rc": proc.returncode, "seconds": round(time.time() - start, 1), "play_seconds": round(played, 1), "clients": counts,
                 "answered": sum(c["ok"] for c in counts), "failed": sum(c["failed"] for c in counts),
                 "wrong": sum(c["wrong"] for c in counts), "answered_by": answered_by(counts),
                 "before": before, "after": after, "samples": len(samples), "unanswered_samples": sampler.unanswered, "out_of_traffic": out_sets,
                 "sampler_problem": sampler.sampler_problem(time.time() - start), "readiness": ready,
                 "max_out": max([len(s) for s in out_sets] or [0]), "batch_rule_broken": broken[:5],
                 "last_states": samples[-1][1] if samples else {},
                 # hosts seen with HAProxy's drain admin bit (an operator's drain, not a failed health check)
                 "drained_seen": sorted({h for _t, d in sampler.details for h, v in d.items() if v["drain"]}),
                 "summary": [line for h in HOSTS for line in scenario_checks.summary_lines(proc.stdout, h)]}
        if drain_proof:
            entry["drain_problems"] = drain_problems(sampler.details, ready["first_down"], drain_proof)
            entry["drain_margin_s"] = drain_margins(sampler.details, ready["first_down"], drain_proof)
            entry["detail_samples"] = len(sampler.details)
        results["steps"][name] = entry
        print("%s: rc=%s, %d requests answered, %d failed, %d wrong, %.0f s, answered by %s, out of traffic: %s" % (
            name, proc.returncode, entry["answered"], entry["failed"], entry["wrong"], entry["seconds"],
            entry["answered_by"], out_sets))
        log = "%s/%s.log" % (workdir, name)
        check((proc.returncode == 0) == expect_ok, "%s: ansible-playbook rc=%s (log %s) %s" % (
            name, proc.returncode, log, scenario_checks.failure_reason(proc.stdout + "\n" + proc.stderr)), results, args.results)
        check(entry["failed"] == 0 or lost_ok, "%s: %d requests failed: %s" % (name, entry["failed"], [c["errors"] for c in counts]),
              results, args.results)
        check(entry["wrong"] == 0, "%s: %d answers were not the answering version's own: %s"
              % (name, entry["wrong"], [c["wrong_examples"] for c in counts]), results, args.results)
        check(all(c["ok"] > 0 for c in counts), "%s: a client got no answer at all" % name, results, args.results)
        check(entry["sampler_problem"] is None, "%s: HAProxy's runtime API sampler cannot be trusted: %s (%d samples)"
              % (name, entry["sampler_problem"], len(samples)), results, args.results)
        if ready is not None:
            check(ready["problem"] is None, "%s: the readiness sampler cannot be trusted: %s" % (name, ready["problem"]),
                  results, args.results)
            check(ready["unexplained_count"] == 0, "%s: during the step, on %s: %s"
                  % (name, ready["checked"], ready["unexplained"][:5]), results, args.results)
        if drain_proof and not lost_ok:
            check(not entry["drain_problems"], "%s: the drain is not proven: %s" % (name, entry["drain_problems"]),
                  results, args.results)
        if batch_rule:
            check(not broken, "%s: hosts outside one batch were out of traffic at once: %s" % (name, broken[:3]),
                  results, args.results)
        return entry, proc

    # A site.yml that changes nothing drains nobody and restarts nothing (its check pass is all it costs).
    if "no_change_site" not in skip:
        no_change(step, results, args)
    # From a on, Triton's HTTP binds only each host's lab address, not 0.0.0.0 (issue 32): every later operation
    # (readiness, golden cases, the rollouts, drains, reboots) finds it through triton_server's endpoint fact.
    flag = {"triton_server_log_verbose": 1, "triton_server_http_address": "{{ aiops_lab_address }}"}
    if "a_flag_change_check" not in skip:
        flag_change_check(step, results, args, flag)
    if "a_flag_change_site" not in skip:
        flag_change(step, results, args, flag)
    if "b_rolling_reboot" not in skip:
        reboot(step, results, args, flag)
    if "b_reboot_without_drain" not in skip:
        reboot_without_drain(step, results, args, flag)
    if "b_retries_on" not in skip:
        retries_on(step, results, args, flag)
    pins = {"anomaly_detector": 1, "alert_classifier": 1}  # what the converge left serving
    for name, version, kind in SEQUENCE:
        if name not in skip:
            model_step(step, results, args, flag, name, dict(pins), version, kind)
        if kind == "good":  # the version every host serves from here on
            pins[SEQUENCE_MODEL[kind]] = version
    now = pin_lists(pins)
    broken = dict(flag, triton_server_extra_args=[BAD_ARG])
    if "d_broken_canary" not in skip:
        broken_canary(step, results, args, broken, now)
    if "f_repair_canary" not in skip:
        repair(step, results, args, flag, now)
    if not set(gpu_health_steps.ORDER) <= skip:  # the good version they roll out: version 2's files as 5
        model_variants.publish_anomaly(workdir, 5, "good")
    gpu_health_steps.run(step, check, results, args, flag, lambda v: pin_lists(dict(pins, anomaly_detector=v)),
                         serving_state, wait_serving, skip)
    if not set(operator_error_steps.ORDER) <= skip:  # the pins of what every host serves now (the GPU steps roll one)
        served = serving_state()["roll-1"]["anomaly_detector"][0]
        operator_error_steps.run(step, check, results, args, flag, pin_lists(dict(pins, anomaly_detector=served)), skip)
    if not set(driver_upgrade_steps.ORDER) <= skip:
        served = serving_state()["roll-1"]["anomaly_detector"][0]
        driver_upgrade_steps.run(step, check, results, args, flag, pin_lists(dict(pins, anomaly_detector=served)),
                                 gpu_health_steps.HEALTH_VARS, skip)
    if not set(eda_steps.ORDER) <= skip:
        served = serving_state()["roll-1"]["anomaly_detector"][0]
        eda_steps.run(step, check, results, args, flag, pin_lists(dict(pins, anomaly_detector=served)), lb_states, play,
                      play_env, lambda **inventory: overlay(args.inventory, workdir, addresses=addresses, **inventory), skip)

    json.dump(results, open(args.results, "w"), indent=2)
    print("LB OK: %d requests answered through HAProxy during the operations, 0 failed, 0 wrong"
          % sum(s["answered"] for s in results["steps"].values()))


def lb_states():
    """HAProxy's state of each Triton host now ({} when the admin socket gives no answer)."""
    text = podman("exec", LB, "sh", "-c", 'echo "show servers state" | socat -t 5 stdio unix-connect:%s' % ADMIN_SOCKET,
                  check=False).stdout
    return Sampler.states(text) or {}


def answered_by(counts):
    """{model: {version: answers}} over every client."""
    total = {}
    for count in counts:
        for model, versions in count["versions"].items():
            for version, n in versions.items():
                total.setdefault(model, {})[version] = total.setdefault(model, {}).get(version, 0) + n
    return total


def pin_lists(pins):
    entries = [{"name": m, "versions": [v]} for m, v in sorted(pins.items(), key=lambda kv: kv[0] != "anomaly_detector")]
    return {"triton_canary": entries, "triton_wave_1": entries}


def ee_site(workdir, image):
    """step()'s run: aiops.triton.site from inside the collection's EE (image) over SSH on the scenario's hosts
    (tools/ee_site.sh: a copy of the step's inventory with the lab transport swapped for SSH), as AWX runs it."""
    def run(inventory_dir):
        proc = subprocess.run([os.path.join(ROOT, "tools", "ee_site.sh"), inventory_dir] + HOSTS + [LB],
                              capture_output=True, text=True, timeout=1800, check=False,
                              env=dict(os.environ, EE_IMAGE=image, EE_SITE_WORK=os.path.join(workdir, "ee_site")))
        with open(os.path.join(workdir, "no_change_site.log"), "w") as handle:
            handle.write(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
        return proc
    return run


def no_change(step, results, args):
    # Interpreter discovery (/usr/bin/python3.11) where the converge had molecule's interpreter_python
    # (/usr/bin/python3): the same interpreter, so nothing may be reinstalled (the venv stamps once named the
    # fact-gathering path and this run reinstalled both venvs and restarted Triton everywhere).
    # With AIOPS_LB_EE_IMAGE (make test: the EE that make ee built from this checkout) the run is the EE's, over
    # SSH (whose interpreter is discovered too), as AWX reaches a fleet.
    image = os.environ.get("AIOPS_LB_EE_IMAGE") or None
    entry, proc = step("no_change_site", "site.yml", True, env={"ANSIBLE_PYTHON_INTERPRETER": "auto_silent"},
                       lb_extra=RETRIES_OFF, run=ee_site(os.path.dirname(args.results), image) if image else None)
    changed = recap_changed(proc.stdout)
    entry["changed"] = changed
    entry["ee_image"] = image
    entry["retries_off"] = lb_config_has("retry-on %s" % RETRIES_OFF["triton_lb_retry_on"])
    check(entry["retries_off"], "the converge left HAProxy's retries on (group_vars/triton_lb/retries.yml)",
          results, args.results)
    check(all(changed.get(h) == 0 for h in HOSTS + [LB]), "no-change site.yml changed something: %s" % changed,
          results, args.results)
    check(entry["before"]["pid"] == entry["after"]["pid"], "no-change site.yml restarted Triton", results, args.results)
    check(entry["max_out"] == 0, "no-change site.yml took hosts out of traffic: %s" % entry["out_of_traffic"],
          results, args.results)


def flag_change_check(step, results, args, flag):
    """The flag change in check mode, as an operator previews it: the unit's diff once per host (the check pass; no
    batch follows it), every host counted as "would change" in the summary, and nothing else happens.

    Before, a serving host whose server setup would change went through the drain in check mode, waited
    triton_lb_drain_timeout for in-flight requests of a drain that never happened, and failed the run."""
    entry, proc = step("a_flag_change_check", "site.yml", True, extra=("--check", "--diff"), servers_extra=flag,
                       lb_extra=RETRIES_OFF)
    check(entry["before"]["pid"] == entry["after"]["pid"], "a (check mode): Triton restarted", results, args.results)
    check(entry["max_out"] == 0, "a (check mode): hosts were taken out of traffic: %s" % entry["out_of_traffic"],
          results, args.results)
    check(not any(unit_has(h, "--log-verbose=1") for h in HOSTS), "a (check mode): a unit was written",
          results, args.results)
    shown = [line for line in proc.stdout.splitlines() if line.startswith("+") and "--log-verbose=1" in line]
    check(len(shown) >= len(HOSTS), "a (check mode): the unit's diff was shown %d times, not once per host (%d)"
          % (len(shown), len(HOSTS)), results, args.results)
    # the check pass is the whole preview: every host counted as "would change", none as done by a batch
    for group, hosts in (("triton_canary", 1), ("triton_wave_1", len(HOSTS) - 1)):
        want = "%s: %d hosts, 0 done, %d would change, 0 failed" % (group, hosts, hosts)
        check(want in proc.stdout, "a (check mode): the summary lacks %r" % want, results, args.results)


# The balancer's own retries off (HAProxy `retry-on none`) from the converge until b_retries_on, while Triton
# restarts and hosts reboot: a request sent to a stopping Triton is then lost, not re-sent to another host, so 0
# failed comes from the drain alone. Every step that runs the balancer's play before b passes them again (the
# overlay carries no triton_lb group_vars).
with open(os.path.join(SCENARIO, "group_vars", "triton_lb", "retries.yml")) as _handle:
    RETRIES_OFF = yaml.safe_load(_handle)


def lb_config_has(text):
    return subprocess.run(["podman", "exec", LB, "grep", "-qxF", "    " + text, "/etc/haproxy/haproxy.cfg"],
                          check=False).returncode == 0


def retries_on(step, results, args, flag):
    """load_balancer.yml with the retries back to the role's default after a and b: the changed config reloads
    HAProxy under load (the role's reload handler), 0 failed requests."""
    step("b_retries_on", "playbooks/load_balancer.yml", True, servers_extra=flag)
    want = "retry-on conn-failure empty-response response-timeout"
    check(lb_config_has(want), "b_retries_on: HAProxy's config lacks %r" % want, results, args.results)


def flag_change(step, results, args, flag):
    entry, _proc = step("a_flag_change_site", "site.yml", True, servers_extra=flag, lb_extra=RETRIES_OFF,
                        drain_proof=HOSTS)
    check(all(entry["before"]["pid"][h] != entry["after"]["pid"][h] for h in HOSTS),
          "a: not every host restarted: %s" % entry["before"]["pid"], results, args.results)
    check(entry["max_out"] >= 1 and ["roll-1"] in entry["out_of_traffic"],
          "a: the sampler never saw the canary drained: %s" % entry["out_of_traffic"], results, args.results)
    check(all(unit_has(h, "--log-verbose=1") for h in HOSTS), "a: a unit lacks --log-verbose=1", results, args.results)
    check(not any(unit_has(h, "--http-address=0.0.0.0") for h in HOSTS), "a: a unit still binds HTTP to 0.0.0.0",
          results, args.results)


def reboot(step, results, args, flag):
    entry, _proc = step("b_rolling_reboot", "playbooks/reboot.yml", True, servers_extra=flag, lb_extra=RETRIES_OFF,
                        drain_proof=HOSTS)
    check(all(entry["before"]["boot"][h] != entry["after"]["boot"][h] for h in HOSTS),
          "b: not every host rebooted: %s -> %s" % (entry["before"]["boot"], entry["after"]["boot"]), results, args.results)
    check(all(entry["before"]["pid"][h] != entry["after"]["pid"][h] for h in HOSTS),
          "b: Triton did not start again everywhere", results, args.results)


def reboot_without_drain(step, results, args, flag):
    """The drain proof's own test: roll-4 rebooted with the drain skipped on purpose (triton_rolling_drain:
    false), retries still off. The proof must name roll-4; the requests HAProxy had sent it are recorded."""
    entry, _proc = step("b_reboot_without_drain", "playbooks/reboot.yml", True, batch_rule=False, servers_extra=flag,
                        lb_extra=RETRIES_OFF, drain_proof=["roll-4"], lost_ok=True,
                        extra=["--limit", "roll-4", "-e", json.dumps({"triton_rolling_drain": False})])
    check(entry["before"]["boot"]["roll-4"] != entry["after"]["boot"]["roll-4"], "b (no drain): roll-4 did not reboot",
          results, args.results)
    check("roll-4" in entry["drain_problems"] and "never in HAProxy's drain state" in entry["drain_problems"]["roll-4"],
          "b (no drain): the drain proof did not catch the skipped drain: %s" % entry["drain_problems"],
          results, args.results)


def serving_state():
    """Per host: READY versions of both models, /v2/health/ready, candidates in the index."""
    state = {}
    for h in HOSTS:
        ip = host_ip(h)
        index = repository_index(ip)
        ready = serving(ip, index)
        state[h] = {"anomaly_detector": ready["anomaly_detector"], "alert_classifier": ready["alert_classifier"],
                    "health_ready": health_ready(ip), "candidates": candidates(index)}
    return state


def wait_serving(host, model, version, timeout=600):
    """True once host serves model at version (READY), False after timeout seconds."""
    ip, deadline = host_ip(host), time.time() + timeout
    while time.time() < deadline:
        try:
            if version in serving(ip)[model]:
                return True
        except OSError:
            pass
        time.sleep(1)
    return False


def model_step(step, results, args, flag, name, pins, version, kind):
    """One step of the failure sequence: publish the version, roll it out under load, check every host.

    good: every host serves it. corrupt / regressed / slow: the canary alone tried it and was rolled back,
    wave_1 never fetched it, every host serves the last verified version, /v2/health/ready is 200 on every
    host, no candidate is left, and no client was ever answered by it (the driver's clients check each
    answer against the answering version's own)."""
    model = SEQUENCE_MODEL[kind]
    workdir = os.path.dirname(args.results)
    before = dict(pins)
    if kind == "slow":
        model_variants.publish_slow_classifier(workdir, version, SLOW_SECONDS)
        cases = []
    elif version > 2:
        cases = model_variants.publish_anomaly(workdir, version, kind)
    else:
        cases = []  # a version of the build, published by make publish-models
    pins[model] = version
    ok = kind == "good"
    # what must keep serving during the step: on every host when the candidate stops the version, on the wave
    # when the canary serves it before its bake (its rollback loads versions); a good version loads on every host
    held = {"corrupt": HOSTS, "regressed": HOSTS, "slow": HOSTS[1:]}.get(kind, [])
    entry, proc = step(name, "playbooks/model_upgrade.yml", ok, batch_rule=False, servers_extra=flag,
                       pins=pin_lists(pins), readiness=dict((h, dict(before)) for h in held))
    out = proc.stdout + proc.stderr
    entry["hosts"] = serving_state()
    entry["wave_1_on_disk"] = dict((h, on_disk(h, model)) for h in HOSTS[1:])
    entry["canary_on_disk"] = on_disk("roll-1", model)
    served = version if ok else before[model]
    check(entry["before"]["pid"] == entry["after"]["pid"], "%s: a model rollout restarted Triton" % name, results, args.results)
    check(all(s[model] == [served] for s in entry["hosts"].values()),
          "%s: every host must serve %s %s: %s" % (name, model, served, entry["hosts"]), results, args.results)
    check(all(s["health_ready"] == 200 and not s["candidates"] for s in entry["hosts"].values()),
          "%s: readiness / candidates: %s" % (name, entry["hosts"]), results, args.results)
    if ok:
        return
    check(str(version) not in entry["answered_by"].get(model, {}) or kind == "slow",
          "%s: clients were answered by the failed %s %s: %s" % (name, model, version, entry["answered_by"]),
          results, args.results)
    check(all(version not in v for v in entry["wave_1_on_disk"].values()),
          "%s: wave_1 fetched the failed version: %s" % (name, entry["wave_1_on_disk"]), results, args.results)
    check(before[model] in entry["canary_on_disk"],
          "%s: the canary lost its rollback target %s: on disk %s" % (name, before[model], entry["canary_on_disk"]),
          results, args.results)
    lines = [line for line in entry["summary"] if line.startswith("roll-1 [triton_canary]: rolled back")]
    entry["canary_summary"] = lines[-1] if lines else None
    check(bool(lines), "%s: the canary's summary does not say rolled back: %s" % (name, entry["summary"]), results, args.results)
    if kind == "regressed":
        entry["golden_cases_failed"] = scenario_checks.golden_case_failures(out, "roll-1", model, version)
        why = scenario_checks.rolled_back_for_golden_cases(out, "roll-1", model, version, cases)
        check(why is None, "%s: %s" % (name, why), results, args.results)
    elif kind == "corrupt":
        check("failed at load as a candidate" in lines[-1], "%s: not refused at load: %s" % (name, lines[-1]),
              results, args.results)
    else:
        entry["bake_breach"] = scenario_checks.bake_breach(lines[-1], model)
        check(entry["bake_breach"] is not None and entry["bake_breach"]["metric"] == "mean_latency_ratio",
              "%s: the canary was not baked out for %s's latency: %s" % (name, model, lines[-1]), results, args.results)
        check(entry["answered_by"].get(model, {}).get(str(version), 0) > 0,
              "%s: the slow version never served live traffic on the canary: %s" % (name, entry["answered_by"]),
              results, args.results)


def broken_canary(step, results, args, broken, pins_v2):
    entry, _proc = step("d_broken_canary", "playbooks/triton_server.yml", False, servers_extra=broken, pins=pins_v2)
    others = HOSTS[1:]
    check(entry["last_states"].get("roll-1") == "drained", "d: the canary is not left drained: %s" % entry["last_states"],
          results, args.results)
    check(all(entry["last_states"].get(h) == "up" for h in others), "d: other hosts not up: %s" % entry["last_states"],
          results, args.results)
    check(all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in others),
          "d: the run went on past the canary (MainPID changed)", results, args.results)
    check(not any(unit_has(h, BAD_ARG) for h in others) and unit_has("roll-1", BAD_ARG),
          "d: the broken unit is not on the canary alone", results, args.results)
    check(any(line.startswith("roll-1 [triton_canary]: failed, left drained") for line in entry["summary"]),
          "d: the summary does not name the canary as left drained: %s" % entry["summary"], results, args.results)


def repair(step, results, args, flag, pins_v2):
    """The operator's fix for d (the bad argument gone) is one more run: the canary is set up again but
    stays out of traffic (a failed host goes back only through undrain.yml, which verifies it first)."""
    entry, proc = step("f_repair_canary", "playbooks/triton_server.yml", True, batch_rule=False,
                       servers_extra=flag, pins=pins_v2)
    check(entry["before"]["pid"]["roll-1"] != entry["after"]["pid"]["roll-1"] and entry["after"]["pid"]["roll-1"] != "0",
          "f: the canary did not start again: %s -> %s" % (entry["before"]["pid"], entry["after"]["pid"]),
          results, args.results)
    check(not any(unit_has(h, BAD_ARG) for h in HOSTS), "f: a unit still has %s" % BAD_ARG, results, args.results)
    check(entry["last_states"].get("roll-1") == "drained" and any(
          line.startswith("roll-1 [triton_canary]: set up (was not serving); still out of traffic") for line in entry["summary"]),
          "f: the repaired canary is not named as still out of traffic: %s %s" % (entry["last_states"], entry["summary"]),
          results, args.results)
    entry, proc = step("f_undrain_canary", "playbooks/undrain.yml", True, batch_rule=False, extra=["--limit", "roll-1"],
                       servers_extra=flag, pins=pins_v2)
    check(all(entry["last_states"].get(h) == "up" for h in HOSTS), "f: not every host back in traffic: %s"
          % entry["last_states"], results, args.results)


if __name__ == "__main__":
    main()
