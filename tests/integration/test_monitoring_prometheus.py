"""roles/triton_monitoring against a real Prometheus, node_exporter and tritonserver, all on loopback.

Two Triton "hosts" in an inventory the test writes:
  h1 (rollout group canary): the session's ops_triton, serving the built model set; pins what it serves.
  h2 (rollout group stable): a small Triton of its own (add_sub, key-guarded repository API) that the
      test stops and starts; its inventory pins add_sub version 1 while Triton serves version 2 (drift).
Each host gets its own node_exporter (Debian's prometheus-node-exporter) with a textfile directory the
drift reporter (the role's triton_model_drift.py) writes into. The role runs in existing mode through
ansible-playbook, the play then assembles prometheus.yml from the role's snippet as a user does once,
and the role's handler reloads Prometheus (Debian's prometheus, --web.enable-lifecycle). The alerts'
for: are shortened through the role's variables.
The GPU health alerts read what roles/triton_gpu_health's reporter writes into a host's textfile directory: the
tests run its CLI (aiops_gpu_health.py beside the collection's gpu_health.py, laid out as the role installs it) on
this machine against copies of the lab's nvidia-smi and kernel-log doubles, with the GPU state in a file of their own.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import pytest
import yaml

import host_lib
import triton_fixtures
from triton_fixtures import CHECKOUT, TritonServer, free_port, write_add_sub_version

pytestmark = pytest.mark.integration

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = shutil.which("prometheus-node-exporter")
ROLE = os.path.join(CHECKOUT, "roles", "triton_monitoring")
DRIFT = os.path.join(ROLE, "files", "triton_model_drift.py")
DASHBOARD = os.path.join(ROLE, "files", "grafana", "aiops-triton-dashboard.json")
GPU_ROLE = os.path.join(CHECKOUT, "roles", "triton_gpu_health")
DOUBLES = os.path.join(CHECKOUT, "tests", "doubles")
# The host's python3, as the reporters' units run them: no Ansible there (a venv python finds ansible_collections).
HOST_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
GPU_BUS_ID = "00000000:4E:00.0"  # the doubles' one H100
GPU_ALERTS = 'ALERTS{alertname=~"TritonGPU.*|TritonReadyOnUnhealthyGPU"}'
OPS_MODELS = ("anomaly_detector", "alert_classifier", "metric_forecaster", "ops_pipeline")
API_KEY = "monitoring-test-key-0123456789"
SUBSTITUTIONS = {"$__rate_interval": "30s", "$rollout_group": ".*", "$host": ".*", "$model": ".*"}

# A missing Prometheus is a broken set-up, not a pass: fail the collection loudly instead of skipping.
if PROMETHEUS is None or NODE_EXPORTER is None:  # pragma: no cover - machine set-up, not a result
    raise RuntimeError("needs Debian's prometheus and prometheus-node-exporter (make setup installs them)")


class Process(object):
    """A daemon on loopback with its log kept for failure messages."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def tail(self, lines=30):
        with open(self.log_path, "rb") as handle:
            return "\n".join(handle.read().decode("utf-8", "replace").splitlines()[-lines:])


def wait_for(what, check, timeout, interval=0.5, on_timeout=lambda: ""):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)\n%s" % (timeout, what, last, on_timeout()))


class FixedPortTriton(TritonServer):
    """A TritonServer that comes back on the same ports after stop(): Prometheus scrapes a fixed target."""

    ports = None

    def start(self):
        if self.ports is None:
            return TritonServer.start(self)
        ports = iter(self.ports)
        saved = triton_fixtures.free_port
        triton_fixtures.free_port = lambda: next(ports)
        try:
            return TritonServer.start(self)
        finally:
            triton_fixtures.free_port = saved

    def remember_ports(self):
        self.ports = (self.http_port, self.grpc_port, self.metrics_port)


def infer(url, model, case):
    inputs = [dict(name=name, **tensor) for name, tensor in case["inputs"].items()]
    request = urllib.request.Request("%s/v2/models/%s/infer" % (url, model), data=json.dumps({"inputs": inputs}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=60) as resp:
        assert resp.status == 200


def golden_cases(repository, model):
    versions = sorted((d for d in os.listdir(os.path.join(repository, model)) if d.isdigit()), key=int)
    with open(os.path.join(repository, model, versions[-1], "golden_cases.json")) as handle:
        return json.load(handle)["cases"]


def built_versions(repository):
    """h1's pins: what its Triton serves (the build pins every version it built, as the role pins a
    group's versions; the ensemble has one); h1 is the host without drift."""
    return dict((model, sorted(int(d) for d in os.listdir(os.path.join(repository, model)) if d.isdigit())) for model in OPS_MODELS)


class Lab(object):
    """Everything the tests share; built once by the module fixture."""

    def __init__(self, tmp, ops_triton):
        self.tmp = tmp
        self.h1 = ops_triton
        self.procs = []
        repo = os.path.join(tmp, "h2-repo")
        os.makedirs(repo)
        write_add_sub_version(repo, 1)
        write_add_sub_version(repo, 2)  # Triton's default policy serves the latest: version 2
        self.h2 = FixedPortTriton(repo, api_key=API_KEY, extra_args=["--metrics-config=summary_latencies=true"])
        self.h2.start()
        self.h2.remember_ports()
        self.prom_port = free_port()
        self.prom_url = "http://127.0.0.1:%d" % self.prom_port
        self.textfile = {}
        self.node_ports = {}
        for host in ("h1", "h2"):
            self.textfile[host] = os.path.join(tmp, "textfile-" + host)
            os.makedirs(self.textfile[host])
            self.node_ports[host] = free_port()
            self.procs.append(Process([NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % self.node_ports[host],
                                       "--collector.disable-defaults", "--collector.textfile",
                                       "--collector.textfile.directory=" + self.textfile[host]],
                                      os.path.join(tmp, "node-%s.log" % host)))
        self.key_file = os.path.join(tmp, "tritonserver.env")
        with open(self.key_file, "w") as handle:
            handle.write("TRITON_API_KEY=%s\n" % API_KEY)
        self.pins = {"h1": built_versions(ops_triton.repository), "h2": {"add_sub": [1]}}
        self.config_dir = os.path.join(tmp, "prometheus")
        os.makedirs(os.path.join(self.config_dir, "file_sd"))
        os.makedirs(os.path.join(self.config_dir, "rules"))
        self.config = os.path.join(self.config_dir, "prometheus.yml")
        with open(self.config, "w") as handle:  # until the play writes the real one
            handle.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n")
        self.prometheus = Process([PROMETHEUS, "--config.file=" + self.config, "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                                   "--web.listen-address=127.0.0.1:%d" % self.prom_port, "--web.enable-lifecycle",
                                   "--storage.tsdb.retention.time=1h"], os.path.join(tmp, "prometheus.log"))
        self.procs.append(self.prometheus)
        wait_for("Prometheus ready", lambda: self.http_ok(self.prom_url + "/-/ready"), 60, on_timeout=self.prometheus.tail)

    @staticmethod
    def http_ok(url):
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False

    def stop(self):
        for proc in self.procs:
            proc.stop()
        self.h2.stop()

    # -- the drift reporter, as its systemd timer runs it ------------------------------------
    def report(self, host):
        server = self.h1 if host == "h1" else self.h2
        pins = os.path.join(self.tmp, "pins-%s.json" % host)
        with open(pins, "w") as handle:
            json.dump(self.pins[host], handle)
        args = [HOST_PYTHON, self.drift_reporter(), "--url", server.http_url, "--pins", pins,
                "--output", os.path.join(self.textfile[host], "aiops_triton_models.prom"), "--timeout", "5"]
        if host == "h2":
            args += ["--key-file", self.key_file]
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stderr

    def drift_reporter(self):
        """The script beside its lib/ (the collection's fs.py), as drift_reporter.yml lays it out."""
        base = os.path.join(self.tmp, "drift")
        if not os.path.isdir(base):
            host_lib.lay_out("triton_monitoring", base)
            shutil.copy(DRIFT, base)
        return os.path.join(base, os.path.basename(DRIFT))

    # -- the GPU health reporter, as its systemd timer runs it -----------------------------
    def gpu_reporter(self, host):
        """host's reporter directory as roles/triton_gpu_health/tasks/reporter.yml lays it out (the CLI, the
        collection's module_utils it installs under their collection path, its settings with the role's thresholds),
        pointed at copies of the doubles; the GPU state file is the doubles' AIOPS_GPU_STATE_FILE."""
        base = os.path.join(self.tmp, "gpu-health-" + host)
        if os.path.isdir(base):
            return base
        assert "gpu_health.py" in host_lib.lay_out("triton_gpu_health", base)
        shutil.copy(os.path.join(GPU_ROLE, "files", "aiops_gpu_health.py"), base)
        for double in ("nvidia-smi-health.double", "kernel-log.double"):
            shutil.copy(os.path.join(DOUBLES, double), base)
            os.chmod(os.path.join(base, double), 0o755)
        with open(os.path.join(GPU_ROLE, "defaults", "main.yml")) as handle:
            defaults = yaml.safe_load(handle)
        with open(os.path.join(GPU_ROLE, "vars", "main.yml")) as handle:
            threshold_names = list(yaml.safe_load(handle)["_triton_gpu_health_thresholds"])
        config = {"nvidia_smi_path": os.path.join(base, "nvidia-smi-health.double"),
                  "kernel_log_command": [os.path.join(base, "kernel-log.double")],
                  "since_file": os.path.join(base, "since"), "quarantine_file": os.path.join(base, "quarantine.json"),
                  "dcgm": True, "dcgm_diag": False,
                  "thresholds": dict((name, defaults["triton_gpu_health_" + name]) for name in threshold_names)}
        with open(os.path.join(base, "config.json"), "w") as handle:
            json.dump(config, handle)
        return base

    def gpu_textfile(self, host):
        return os.path.join(self.textfile[host], "aiops_gpu_health.prom")

    def gpu_report(self, host, state):
        """Put host's GPU in state (a state of the doubles) and run its reporter once."""
        base = self.gpu_reporter(host)
        with open(os.path.join(base, "gpu_state"), "w") as handle:
            handle.write(state + "\n")
        env = dict(os.environ, AIOPS_GPU_STATE_FILE=os.path.join(base, "gpu_state"), PATH="/usr/bin:/bin")
        env.pop("PYTHONPATH", None)
        proc = subprocess.run([HOST_PYTHON, os.path.join(base, "aiops_gpu_health.py"), "--config", os.path.join(base, "config.json"),
                               "--output", self.gpu_textfile(host)], capture_output=True, text=True, env=env, cwd=base, check=False)
        assert proc.returncode == 0, proc.stderr

    # -- the role --------------------------------------------------------------------------
    def inventory(self):
        hosts = {}
        for host, server in (("h1", self.h1), ("h2", self.h2)):
            hosts[host] = {"ansible_host": "127.0.0.1", "triton_server_metrics_port": server.metrics_port,
                           "triton_monitoring_node_exporter_port": self.node_ports[host]}
        return {"all": {"vars": {"triton_rollout_groups": ["canary", "stable"]}, "children": {
            "triton_servers": {"children": {"canary": {"hosts": {"h1": hosts["h1"]}}, "stable": {"hosts": {"h2": hosts["h2"]}}}},
            "triton_monitoring": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}},
        }}}

    def run_role(self, extra_vars=None):
        role_vars = {
            "triton_monitoring_mode": "existing",
            "triton_monitoring_config_dir": self.config_dir,
            "triton_monitoring_reload_url": self.prom_url + "/-/reload",
            "triton_monitoring_scrape_interval": "1s",
            "triton_monitoring_file_sd_refresh_interval": "2s",
            "triton_monitoring_alert_for_down": "3s",
            "triton_monitoring_alert_for_drift": "3s",
            "triton_monitoring_alert_for_gpu_unhealthy": "3s",
            "triton_monitoring_alert_for_gpu_row_remap": "3s",
            "triton_monitoring_alert_for_gpu_ecc": "3s",
            "triton_monitoring_alert_for_ready_on_unhealthy_gpu": "3s",
        }
        role_vars.update(extra_vars or {})
        play = [{
            # as playbooks/monitoring.yml's first play: where each host's Triton listens (no host contacted)
            "name": "Where Triton runs on each host",
            "hosts": "triton_servers",
            "gather_facts": False,
            "tasks": [{"ansible.builtin.import_role": {"name": "aiops.triton.triton_server", "tasks_from": "endpoint"}}],
        }, {
            "name": "Monitoring for the test fleet",
            "hosts": "triton_monitoring",
            "gather_facts": False,
            "roles": [{"role": "aiops.triton.triton_monitoring"}],
            # What a user of an existing Prometheus does once: include the snippet and the rules.
            "tasks": [{
                "name": "Assemble prometheus.yml from the role's snippet",
                "ansible.builtin.copy": {
                    "dest": self.config, "mode": "0644",
                    "content": "{{ {'global': {'scrape_interval': '1s', 'evaluation_interval': '1s'},"
                               " 'rule_files': [triton_monitoring_rules_dir ~ '/*.yml'],"
                               " 'scrape_configs': lookup('ansible.builtin.file', triton_monitoring_scrape_snippet) | from_yaml}"
                               " | to_nice_yaml }}",
                    "validate": "promtool check config %s"},
                "notify": "Reload prometheus",
            }],
        }]
        for name, data in (("inventory.yml", self.inventory()), ("play.yml", play)):
            with open(os.path.join(self.tmp, name), "w") as handle:
                yaml.safe_dump(data, handle)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(CHECKOUT, ".collection"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0")
        env["PATH"] = os.pathsep.join((os.path.dirname(sys.executable), env.get("PATH", "")))
        return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", os.path.join(self.tmp, "inventory.yml"),
                               "-e", json.dumps(role_vars), os.path.join(self.tmp, "play.yml")],
                              capture_output=True, text=True, env=env, cwd=self.tmp, timeout=300, check=False)

    # -- Prometheus's HTTP API --------------------------------------------------------------
    def api(self, path, **params):
        url = "%s/api/v1/%s?%s" % (self.prom_url, path, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def firing(self, alertname):
        return [a["labels"] for a in self.firing_alerts(alertname)]

    def firing_alerts(self, alertname):
        """The firing alerts of alertname, with their annotations."""
        return [a for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == alertname and a["state"] == "firing"]


@pytest.fixture(scope="module")
def lab(ops_triton):
    tmp = tempfile.mkdtemp(prefix="monitoring-test-")
    lab = Lab(tmp, ops_triton)
    try:
        for host in ("h1", "h2"):
            lab.report(host)
        proc = lab.run_role()
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
        lab.play_output = proc.stdout
        for model in OPS_MODELS:
            for case in golden_cases(ops_triton.repository, model):
                infer(ops_triton.http_url, model, case)
        infer(lab.h2.http_url, "add_sub", golden_cases(lab.h2.repository, "add_sub")[0])
        wait_for("every target up", lambda: len(lab.query('up{job=~"aiops-triton.*"} == 1')) == 4, 60,
                 on_timeout=lambda: json.dumps(lab.api("targets")["activeTargets"], indent=1)[-3000:])
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_role_wrote_targets_with_host_rollout_group_and_install_method(lab):
    with open(os.path.join(lab.config_dir, "file_sd", "aiops-triton.json")) as handle:
        groups = json.load(handle)
    assert groups == [
        {"targets": ["127.0.0.1:%d" % lab.h1.metrics_port], "labels": {"host": "h1", "rollout_group": "canary", "install_method": "native"}},
        {"targets": ["127.0.0.1:%d" % lab.h2.metrics_port], "labels": {"host": "h2", "rollout_group": "stable", "install_method": "native"}},
    ]
    with open(os.path.join(lab.config_dir, "file_sd", "aiops-triton-dcgm.json")) as handle:
        assert json.load(handle) == []  # DCGM exporter off by default
    assert "RUNNING HANDLER [aiops.triton.triton_monitoring : Reload prometheus]" in lab.play_output
    targets = lab.api("targets")["activeTargets"]
    assert sorted((t["labels"]["job"], t["labels"]["host"], t["labels"]["rollout_group"], t["health"]) for t in targets) == [
        ("aiops-triton", "h1", "canary", "up"), ("aiops-triton", "h2", "stable", "up"),
        ("aiops-triton-node", "h1", "canary", "up"), ("aiops-triton-node", "h2", "stable", "up")]
    assert len(lab.query('ALERTS{alertname="TritonDown"}')) == 0
    rules = lab.api("rules")["groups"]
    assert [g["name"] for g in rules] == ["aiops-triton"]
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "roles", "triton_monitoring", "templates",
                           "aiops-triton.rules.yml.j2"), encoding="utf-8") as handle:
        templated = re.findall(r"^\s*- alert: (\w+)$", handle.read(), re.M)
    # every rule the template holds is loaded by the real Prometheus, the LB ones included
    assert len(templated) >= 12 and sorted(r["name"] for r in rules[0]["rules"]) == sorted(templated)


def test_inference_counts_are_nonzero_for_every_host_and_model(lab):
    expected = set([("h1", m) for m in OPS_MODELS] + [("h2", "add_sub")])

    def counts():
        result = lab.query('sum by (host, model) (nv_inference_count{job="aiops-triton"})')
        seen = dict(((r["metric"]["host"], r["metric"]["model"]), float(r["value"][1])) for r in result)
        return seen if all(seen.get(key, 0) > 0 for key in expected) else None

    seen = wait_for("nv_inference_count > 0 per host and model", counts, 30)
    assert set(seen) == expected


def dashboard_queries():
    with open(DASHBOARD) as handle:
        board = json.load(handle)
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for var in board["templating"]["list"]:
        if var["type"] == "query":  # label_values(<selector>, label): Grafana asks for the selector's series
            yield "variable " + var["name"], var["query"][len("label_values("):].rsplit(",", 1)[0]


def test_every_dashboard_query_returns_a_series(lab):
    gpu = len(lab.query("nv_gpu_utilization")) > 0
    empty, gpu_panels = [], []
    for title, expr in dashboard_queries():
        for name, value in SUBSTITUTIONS.items():
            expr = expr.replace(name, value)
        on_gpu = "nv_gpu_" in expr or "aiops_gpu_" in expr
        if on_gpu:
            gpu_panels.append(title)
        result = wait_for(title, lambda: lab.query(expr), 20) if (not on_gpu or (gpu and "nv_gpu_" in expr)) else lab.query(expr)
        if not result:
            empty.append(title)
    # Triton exports nv_gpu_* only on GPU hosts, and the GPU health reporter writes aiops_gpu_* only where nvidia-smi
    # answers (the GPU alert tests write them from the doubles): on this CPU machine exactly the GPU panels are empty.
    assert "GPU utilisation" in gpu_panels and "GPU memory used" in gpu_panels and len(gpu_panels) > 2
    assert sorted(empty) == ([] if gpu else sorted(gpu_panels))


def test_drift_alert_fires_for_the_host_serving_an_unpinned_version(lab):
    drift = wait_for("TritonModelVersionDrift firing", lambda: lab.firing("TritonModelVersionDrift"), 30)
    assert [(a["host"], a["rollout_group"], a["model"], a["version"]) for a in drift] == [("h2", "stable", "add_sub", "2")]
    missing = wait_for("TritonPinnedVersionNotServed firing", lambda: lab.firing("TritonPinnedVersionNotServed"), 30)
    assert [(a["host"], a["model"], a["version"]) for a in missing] == [("h2", "add_sub", "1")]


def test_drift_clears_when_the_pins_match(lab):
    # the drift this test clears must be there first (run alone, "cleared" would otherwise hold from the start)
    assert lab.pins["h2"] == {"add_sub": [1]}
    wait_for("TritonModelVersionDrift firing", lambda: lab.firing("TritonModelVersionDrift"), 30)
    lab.pins["h2"] = {"add_sub": [2]}
    lab.report("h2")
    try:
        wait_for("drift cleared", lambda: not lab.query('ALERTS{alertname=~"TritonModelVersionDrift|TritonPinnedVersionNotServed"}'), 30)
    finally:
        lab.pins["h2"] = {"add_sub": [1]}
        lab.report("h2")


def server_ready(lab, host):
    """aiops_triton_server_ready of host as Prometheus last scraped it (None before the first scrape)."""
    result = lab.query('aiops_triton_server_ready{host="%s"}' % host)
    return result[0]["value"][1] if result else None


def gpu_health(lab, host):
    """aiops_gpu_host_health of host as Prometheus last scraped it (None before the reporter's first scrape)."""
    result = lab.query('aiops_gpu_host_health{host="%s"}' % host)
    return result[0]["value"][1] if result else None


def start_healthy(lab):
    """h2 ready (its Triton up, as the drift reporter saw it) and its GPU healthy, with no GPU alert pending or firing."""
    lab.report("h2")
    wait_for("h2 reported ready", lambda: server_ready(lab, "h2") == "1", 15)
    lab.gpu_report("h2", "healthy")
    wait_for("h2's GPU reported healthy", lambda: gpu_health(lab, "h2") == "0", 15, on_timeout=lambda: gpu_health(lab, "h2"))
    assert lab.query(GPU_ALERTS) == []


def resolve(lab):
    """The GPU healthy again: every GPU alert resolves (none pending or firing)."""
    lab.gpu_report("h2", "healthy")
    wait_for("the GPU alerts resolved", lambda: not lab.query(GPU_ALERTS), 30,
             on_timeout=lambda: json.dumps(lab.query(GPU_ALERTS), indent=1)[-3000:])
    assert gpu_health(lab, "h2") == "0"


def test_a_gpu_fallen_off_the_bus_fires_the_gpu_alerts_for_its_host_and_they_resolve_when_healthy(lab):
    start_healthy(lab)
    try:
        lab.gpu_report("h2", "xid79")
        ready_on_unhealthy = wait_for("TritonReadyOnUnhealthyGPU firing", lambda: lab.firing("TritonReadyOnUnhealthyGPU"), 30,
                                      on_timeout=lambda: json.dumps(lab.query(GPU_ALERTS), indent=1)[-3000:])
        assert [(a["host"], a["rollout_group"], a["job"], a["severity"]) for a in ready_on_unhealthy] == [
            ("h2", "stable", "aiops-triton-node", "critical")]
        off_bus = wait_for("TritonGPUFallenOffBus firing", lambda: lab.firing("TritonGPUFallenOffBus"), 15)
        assert [(a["host"], a["rollout_group"], a["severity"]) for a in off_bus] == [("h2", "stable", "critical")]
        unhealthy = wait_for("TritonGPUUnhealthy firing", lambda: lab.firing_alerts("TritonGPUUnhealthy"), 15)
        assert [(a["labels"]["host"], a["labels"]["rollout_group"], a["labels"]["severity"]) for a in unhealthy] == [
            ("h2", "stable", "critical")]
        # the description lists the reporter's reasons, read back from Prometheus by the rule's query
        description = unhealthy[0]["annotations"]["description"]
        assert "Xid 79" in description and "fallen off the bus" in description and "GPU is lost" in description, description
        xid = wait_for("TritonGPUXidHardwareEvent firing", lambda: lab.firing("TritonGPUXidHardwareEvent"), 15)
        assert [(a["host"], a["xid"], a["bus_id"], a["severity"]) for a in xid] == [("h2", "79", GPU_BUS_ID, "critical")]
        # only h2's GPU and only these: no row remap or ECC alert for a GPU that is lost, nothing for h1
        firing = sorted((a["labels"]["alertname"], a["labels"]["host"]) for a in lab.api("alerts")["alerts"]
                        if a["state"] == "firing" and a["labels"]["alertname"] in (
                            "TritonGPUUnhealthy", "TritonGPUXidHardwareEvent", "TritonGPURowRemapPending", "TritonGPUECCUncorrectable",
                            "TritonGPUFallenOffBus", "TritonReadyOnUnhealthyGPU", "TritonGPUHealthReporterStale"))
        assert firing == [("TritonGPUFallenOffBus", "h2"), ("TritonGPUUnhealthy", "h2"), ("TritonGPUXidHardwareEvent", "h2"),
                          ("TritonReadyOnUnhealthyGPU", "h2")]
        resolve(lab)
    finally:
        if os.path.exists(lab.gpu_textfile("h2")):
            os.unlink(lab.gpu_textfile("h2"))


def test_a_pending_row_remap_fires_for_its_gpu_and_resolves_when_healthy(lab):
    start_healthy(lab)
    try:
        lab.gpu_report("h2", "row_remap_pending")
        remap = wait_for("TritonGPURowRemapPending firing", lambda: lab.firing("TritonGPURowRemapPending"), 30,
                         on_timeout=lambda: json.dumps(lab.query(GPU_ALERTS), indent=1)[-3000:])
        assert [(a["host"], a["rollout_group"], a["gpu"], a["bus_id"], a["severity"]) for a in remap] == [
            ("h2", "stable", "0", GPU_BUS_ID, "warning")]
        unhealthy = wait_for("TritonGPUUnhealthy firing", lambda: lab.firing_alerts("TritonGPUUnhealthy"), 15)
        assert [a["labels"]["host"] for a in unhealthy] == ["h2"]
        assert "GPU 0 (%s): row remap pending, reset required" % GPU_BUS_ID in unhealthy[0]["annotations"]["description"]
        xid = wait_for("TritonGPUXidHardwareEvent firing", lambda: lab.firing("TritonGPUXidHardwareEvent"), 15)
        assert [(a["host"], a["xid"], a["bus_id"]) for a in xid] == [("h2", "63", GPU_BUS_ID)]
        assert wait_for("TritonReadyOnUnhealthyGPU firing", lambda: lab.firing("TritonReadyOnUnhealthyGPU"), 15)[0]["host"] == "h2"
        assert lab.firing("TritonGPUFallenOffBus") == [] and lab.firing("TritonGPUECCUncorrectable") == []
        resolve(lab)
    finally:
        if os.path.exists(lab.gpu_textfile("h2")):
            os.unlink(lab.gpu_textfile("h2"))


def test_stopping_triton_fires_triton_down_and_starting_it_clears_it(lab):
    assert lab.firing("TritonDown") == []
    lab.report("h2")
    wait_for("h2 reported ready", lambda: server_ready(lab, "h2") == "1", 15)
    lab.h2.stop()
    try:
        down = wait_for("TritonDown firing", lambda: lab.firing("TritonDown"), 45)
        assert [(a["host"], a["rollout_group"], a["severity"]) for a in down] == [("h2", "stable", "critical")]
        lab.report("h2")  # the drift reporter's view of a stopped Triton: not ready
        wait_for("h2 reported not ready", lambda: server_ready(lab, "h2") == "0", 15, on_timeout=lambda: server_ready(lab, "h2"))
    finally:
        lab.h2.start()
    wait_for("TritonDown cleared", lambda: not lab.query('ALERTS{alertname="TritonDown"}'), 45)
    assert lab.query('up{job="aiops-triton", host="h2"}')[0]["value"][1] == "1"
    lab.report("h2")
    wait_for("h2 reported ready again", lambda: server_ready(lab, "h2") == "1", 15)


def test_a_new_host_is_scraped_without_a_reload(lab):
    """Re-running the role with one more host changes only the file_sd file; Prometheus is not reloaded."""
    reloaded_at = lab.api("status/runtimeinfo")["lastConfigTime"]
    inventory = lab.inventory
    extra_port = free_port()

    def with_h3():
        data = inventory()
        data["all"]["children"]["triton_servers"]["children"]["stable"]["hosts"]["h3"] = {
            "ansible_host": "127.0.0.1", "triton_server_metrics_port": extra_port, "triton_monitoring_node_exporter_port": extra_port}
        return data

    lab.inventory = with_h3
    try:
        proc = lab.run_role()
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert "RUNNING HANDLER" not in proc.stdout  # only targets changed
        wait_for("h3 among the targets", lambda: [t for t in lab.api("targets")["activeTargets"] if t["labels"]["host"] == "h3"], 30)
        assert lab.api("status/runtimeinfo")["lastConfigTime"] == reloaded_at
    finally:
        lab.inventory = inventory  # the last test: h3's file_sd entry may stay
