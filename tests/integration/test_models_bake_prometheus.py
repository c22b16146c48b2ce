"""The canary bake as playbooks/models.yml runs it, reading a real Prometheus through the inventory's
triton_rollout_bake_prometheus_url (issue 38 item 2; tests/integration/test_rollout_bake_live.py drives the
module alone).

The plays are the rollout's own: rolling_plan.yml, then, in a play with models.yml's rollout play header, the
triton_rollout role's bake entry point (the tasks its batch entry point imports after the deploy), with the role's
defaults for every setting the inventory leaves out. Only what the deploy would have done before it is given: each
host's triton_models_result.upgraded. Debian's Prometheus scrapes two stand-in Tritons' /metrics (counters this
test drives) as roles/triton_monitoring labels its targets; the hosts' own metrics URLs lead nowhere, so a verdict
can only come from Prometheus.
"""

import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest
import yaml

from test_rollout_bake_live import PROMETHEUS, wait_scraped
from triton_fixtures import CHECKOUT, COLLECTIONS_PATH, free_port

pytestmark = pytest.mark.integration

MODELS_YML = os.path.join(CHECKOUT, "playbooks", "models.yml")
MODEL = "bake_probe"
BAKE_SECONDS = 6
LATENCY_US = 20000  # the same for both hosts: only the failure ratio tells good from bad


class FakeTriton(object):
    """Triton's /metrics for one model: counters that grow at ``ok`` successes and ``failing`` failures a second."""

    def __init__(self):
        self.ok, self.failing, self.lock = 20.0, 0.0, threading.Lock()
        self.successes = self.failures = 0.0
        self.last = time.monotonic()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = fake.render().encode() if self.path == "/metrics" else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set_rates(self, ok, failing):
        with self.lock:
            self._advance()
            self.ok, self.failing = ok, failing

    def _advance(self):
        now = time.monotonic()
        self.successes += self.ok * (now - self.last)
        self.failures += self.failing * (now - self.last)
        self.last = now

    def render(self):
        with self.lock:
            self._advance()
            successes, failures = int(self.successes), int(self.failures)
        labels = 'model="%s",version="1"' % MODEL
        return "".join("%s\n" % line for line in (
            "# TYPE nv_inference_request_success counter",
            "nv_inference_request_success{%s} %d" % (labels, successes),
            "# TYPE nv_inference_request_failure counter",
            'nv_inference_request_failure{%s,reason="BACKEND"} %d' % (labels, failures),
            "# TYPE nv_inference_count counter",
            "nv_inference_count{%s} %d" % (labels, successes + failures),
            "# TYPE nv_inference_request_duration_us counter",
            "nv_inference_request_duration_us{%s} %d" % (labels, successes * LATENCY_US),
            "# TYPE nv_inference_queue_duration_us counter",
            "nv_inference_queue_duration_us{%s} %d" % (labels, successes * 100)))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("bake-prometheus")
    tritons = {"canary": FakeTriton(), "stable": FakeTriton()}
    # As roles/triton_monitoring writes its file_sd: job aiops-triton, labels host and rollout_group.
    sd = root / "aiops-triton.json"
    sd.write_text(json.dumps([{"targets": ["127.0.0.1:%d" % t.port], "labels": {"host": name, "rollout_group": name}}
                              for name, t in tritons.items()]))
    (root / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n  - job_name: aiops-triton\n    file_sd_configs: [{files: ['%s'], refresh_interval: 1s}]\n" % sd)
    port = free_port()
    log = open(str(root / "prometheus.log"), "wb")
    prometheus = subprocess.Popen([PROMETHEUS, "--config.file=%s" % (root / "prometheus.yml"),
                                   "--storage.tsdb.path=%s" % (root / "tsdb"), "--web.listen-address=127.0.0.1:%d" % port],
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        url = "http://127.0.0.1:%d" % port
        wait_scraped(url, 60)
        yield {"root": root, "tritons": tritons, "prometheus_url": url}
    finally:
        prometheus.terminate()
        prometheus.wait(30)
        log.close()
        for triton in tritons.values():
            triton.server.shutdown()


def bake_play(out_dir):
    """rolling_plan.yml, and models.yml's rollout play header with the triton_rollout role's bake entry point; the
    test's `always` keeps the bake's result (the verdict's failure ends the play)."""
    with open(MODELS_YML) as handle:
        plays = yaml.safe_load(handle)
    assert plays[0].get("ansible.builtin.import_playbook") == "rolling_plan.yml", plays[0]
    (rollout,) = [p for p in plays if "serial" in p]
    assert [t.get("ansible.builtin.import_role") for t in rollout["tasks"]] == [
        {"name": "aiops.triton.triton_rollout", "tasks_from": "batch"}], rollout["tasks"]
    with open(os.path.join(CHECKOUT, "roles", "triton_rollout", "tasks", "batch.yml")) as handle:
        assert "import_tasks: bake.yml" in handle.read(), "the batch no longer bakes"
    keep = {"name": "Keep the bake's result for the test", "delegate_to": "localhost", "run_once": True,
            "ansible.builtin.copy": {"content": "{{ __triton_rollout_bake | to_json }}\n", "mode": "0644",
                                     "dest": "%s/bake-{{ inventory_hostname }}.json" % out_dir}}
    bake = {"name": "The bake", "ansible.builtin.import_role": {"name": "aiops.triton.triton_rollout", "tasks_from": "bake"}}
    header = dict((k, v) for k, v in rollout.items() if k not in ("pre_tasks", "tasks", "post_tasks", "handlers", "roles"))
    return [{"name": "Plan", "ansible.builtin.import_playbook": os.path.join(CHECKOUT, "playbooks", "rolling_plan.yml")},
            dict(header, tasks=[{"name": "Bake, keep the result", "block": [bake], "always": [keep]}])]


def run_bake(fleet, name):
    root = fleet["root"]
    out = root / name
    out.mkdir()
    hosts = {}
    for host, upgraded in (("canary", [MODEL]), ("stable", [])):
        hosts[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       # What the role leaves for the bake: the models this host changed.
                       "triton_models_result": {"upgraded": upgraded},
                       # Nothing answers here: without Prometheus the bake has no numbers.
                       "triton_rollout_bake_metrics_url": "http://127.0.0.1:%d/metrics" % free_port()}
    inventory = {"triton_servers": {
        "children": {"triton_canary": {"hosts": {"canary": hosts["canary"]}}, "triton_wave_1": {"hosts": {"stable": hosts["stable"]}}},
        "vars": {"triton_rollout_groups": ["triton_canary", "triton_wave_1"], "triton_rollout_bake_seconds": BAKE_SECONDS,
                 "triton_rollout_bake_prometheus_url": fleet["prometheus_url"]}}}
    (out / "hosts.json").write_text(json.dumps(inventory))
    (out / "play.yml").write_text(yaml.safe_dump(bake_play(out), sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(out / "hosts.json"),
                           str(out / "play.yml")], cwd=CHECKOUT, capture_output=True, text=True, env=env, timeout=300, check=False)
    (out / "run.log").write_text(proc.stdout + proc.stderr)
    kept = out / "bake-canary.json"
    return proc, json.loads(kept.read_text()) if kept.exists() else None


def test_the_playbooks_bake_fails_the_canary_on_prometheus_failure_counts(fleet):
    fleet["tritons"]["canary"].set_rates(ok=15.0, failing=5.0)  # a quarter of the canary's requests fail
    fleet["tritons"]["stable"].set_rates(ok=20.0, failing=0.0)
    proc, bake = run_bake(fleet, "bad")
    out = proc.stdout + proc.stderr
    assert bake is not None, out[-6000:]
    assert proc.returncode != 0, out[-6000:]
    assert bake["source"] == "prometheus" and bake["passed"] is False, bake
    assert bake["hosts"] == {"changed": ["canary"], "baseline": ["stable"]}, bake["hosts"]
    numbers = bake["models"][MODEL]
    # Prometheus' increase() over the window: about 6 s of 15 ok and 5 failing a second on the canary.
    assert 0.15 < numbers["changed"]["failure_ratio"] < 0.35, numbers
    assert numbers["changed"]["failures_by_reason"].keys() == {"BACKEND"}, numbers
    assert numbers["baseline"]["failures"] == 0 and numbers["baseline"]["requests"] > 0, numbers
    assert [(b["model"], b["metric"], b["hosts"]) for b in bake["breaches"]] == [(MODEL, "failure_ratio", ["canary"])], bake
    # the playbook's verdict task failed the batch with the bake's message
    assert "bake: %s failure_ratio" % MODEL in out and "The bake passed" in out, out[-6000:]


def test_the_playbooks_bake_passes_the_canary_on_clean_prometheus_counts(fleet):
    fleet["tritons"]["canary"].set_rates(ok=20.0, failing=0.0)
    fleet["tritons"]["stable"].set_rates(ok=20.0, failing=0.0)
    time.sleep(BAKE_SECONDS + 2)  # the failures of the test before are out of any window that follows
    proc, bake = run_bake(fleet, "good")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert bake is not None and bake["source"] == "prometheus" and bake["passed"] is True, bake
    numbers = bake["models"][MODEL]
    assert numbers["changed"]["failures"] == 0 and numbers["changed"]["requests"] >= BAKE_SECONDS * 20 * 0.5, numbers
    assert numbers["changed"]["mean_latency_ms"] == pytest.approx(LATENCY_US / 1000.0, rel=0.05), numbers
    assert bake["breaches"] == [], bake
