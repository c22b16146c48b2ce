"""rollout_bake_hosts / rollout_bake_baseline through ansible-playbook: real (lazy, templated) hostvars, not dicts,
with each host's triton_server_endpoint fact set by triton_server's entry point, as models.yml's first plays do."""

import json
import os
import subprocess

import yaml

CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

INVENTORY = {"triton_servers": {"children": {
    "triton_canary": {"hosts": {"gpu-1": {"ansible_host": "10.0.0.1", "triton_server_metrics_address": "0.0.0.0"}}},
    "triton_wave_1": {"hosts": {
        "gpu-2": {"ansible_host": "10.0.0.2", "mgmt": "10.9.0.2", "triton_server_metrics_address": "{{ mgmt }}",
                  "triton_server_metrics_port": "{{ 9000 + 102 }}"},
        "gpu-3": {"triton_rollout_bake_metrics_url": "https://metrics.example/gpu-3"},
        "gpu-4": {"triton_server_metrics_port": 9002}}}},
    "vars": {"ansible_connection": "local"}}}

ENDPOINT_PLAY = {"hosts": "triton_servers", "gather_facts": False, "tasks": [
    {"ansible.builtin.include_role": {"name": "aiops.triton.triton_server", "tasks_from": "endpoint"}}]}
PLAY = [ENDPOINT_PLAY, {"hosts": "localhost", "gather_facts": False, "tasks": [{
    "ansible.builtin.copy": {
        "dest": "{{ out }}",
        "content": "{{ {'changed': hostvars | aiops.triton.rollout_bake_hosts(['gpu-1']),"
                   " 'baseline': hostvars | aiops.triton.rollout_bake_hosts(plan | aiops.triton.rollout_bake_baseline(['gpu-1'])),"
                   " 'after_wave': plan | aiops.triton.rollout_bake_baseline(['gpu-3', 'gpu-2'])} | to_json }}",
        "mode": "0644"}}]}]


def test_filters_read_real_hostvars(tmp_path):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(INVENTORY))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY))
    out = tmp_path / "out.json"
    plan = {"order": ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(CHECKOUT, ".collection"))
    proc = subprocess.run(["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", json.dumps({"out": str(out), "plan": plan})],
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["changed"] == [{"name": "gpu-1", "metrics_url": "http://10.0.0.1:8002/metrics"}]
    assert got["baseline"] == [{"name": "gpu-2", "metrics_url": "http://10.9.0.2:9102/metrics"},
                               {"name": "gpu-3", "metrics_url": "https://metrics.example/gpu-3"},
                               {"name": "gpu-4", "metrics_url": "http://gpu-4:9002/metrics"}]
    assert got["after_wave"] == ["gpu-4"]
