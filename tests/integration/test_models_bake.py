"""The canary bake in playbooks/models.yml (issue 21 item 3): two hosts (a canary and a wave, each its own
real Triton), a real S3 (moto over HTTP), ansible-playbook over both with local connections, and a client
sending live traffic to both throughout.

Version 3 of add_sub passes its golden cases but fails on inputs the golden cases do not cover (the live
traffic's): the candidate check passes it, the canary serves it, the bake sees its failures on live
traffic and rolls the canary back; the wave never loads it.
"""

import json
import os
import subprocess
import sys
import threading

import pytest

from ansible_collections.aiops.triton.plugins.module_utils.triton_api import TritonApiError, TritonClient
from s3_fixtures import publish_version
from test_models_playbook import ADD_SUB, KEY, add_sub_files
from triton_fixtures import ADD_SUB_INPUTS, CHECKOUT, COLLECTIONS_PATH, TritonServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "molecule"))
import scenario_checks  # noqa: E402  (molecule/scenario_checks.py: the summary's lines and the bake's breach, unit-tested)

pytestmark = pytest.mark.integration

BUCKET = "bake-models"
# Traffic the golden cases do not send: version 3 fails on it.
LIVE_INPUTS = {"INPUT0": {"datatype": "FP32", "shape": [4], "data": [9.0, 9.0, 9.0, 9.0]},
               "INPUT1": ADD_SUB_INPUTS["INPUT1"]}
READ_INPUT0 = '            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()\n'
# raised, not answered as an error response: Triton 2.51 counts an error response from a python model as a
# success in nv_inference_request_success (measured), and only a failure is what the bake can see
FAIL_ON_LIVE_INPUT = READ_INPUT0 + (
    '            if float(a[0]) == 9.0:\n'
    '                raise pb_utils.TritonModelException("v3 cannot take 9.0")\n')


def live_failing_files(version):
    files = add_sub_files(version)
    source = files["model.py"].decode()
    assert READ_INPUT0 in source
    files["model.py"] = source.replace(READ_INPUT0, FAIL_ON_LIVE_INPUT).encode()
    return files


class Traffic(threading.Thread):
    def __init__(self, servers):
        super().__init__(daemon=True)
        self.clients = {name: TritonClient(s.http_url) for name, s in servers.items()}
        self.stop = threading.Event()
        self.answers = {name: set() for name in servers}
        self.failures = {name: 0 for name in servers}
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                for name, client in self.clients.items():
                    try:
                        self.answers[name].update(client.infer("add_sub", LIVE_INPUTS)["VERSION"]["data"])
                    except TritonApiError:
                        self.failures[name] += 1
        except Exception as exc:  # kept: traffic that stopped early would leave counts that prove nothing
            self.error = "%s: %s" % (type(exc).__name__, exc)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, moto_server):
    assert os.geteuid() == 0, "the role deploys root-owned files: run as root"
    root = tmp_path_factory.mktemp("bake")
    s3 = moto_server.client()
    s3.create_bucket(Bucket=BUCKET)
    publish_version(s3, BUCKET, "models", "add_sub", 2, add_sub_files(2))
    publish_version(s3, BUCKET, "models", "add_sub", 3, live_failing_files(3))
    servers = {}
    try:
        for name in ("canary", "wave"):
            (root / name / "models").mkdir(parents=True)
            servers[name] = TritonServer(str(root / name / "models"), api_key=KEY)
            servers[name].start()
        yield {"root": root, "servers": servers, "moto": moto_server}
    finally:
        for server in servers.values():
            server.stop()


def rollout(fleet, version, bake_seconds):
    root, servers = fleet["root"], fleet["servers"]
    hosts = {}
    for name, server in servers.items():
        hosts[name] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "triton_models_repository": server.repository, "triton_models_state_dir": str(root / name / "state"),
            "triton_models_url": server.http_url, "triton_models_grpc_url": server.grpc_url,
            "triton_rollout_bake_metrics_url": server.metrics_url,
        }
    inventory = {"triton_servers": {
        "children": {"triton_canary": {"hosts": {"canary": hosts["canary"]}},
                     "triton_wave_1": {"hosts": {"wave": hosts["wave"]}}},
        "vars": {
            "triton_rollout_groups": ["triton_canary", "triton_wave_1"],
            "triton_models_list": [{"name": "add_sub", "config": ADD_SUB, "versions": [version]}],
            "triton_models_s3_bucket": BUCKET, "triton_models_s3_endpoint_url": fleet["moto"].endpoint,
            "triton_models_s3_access_key": "testing", "triton_models_s3_secret_key": "testing",
            "triton_models_api_key": KEY, "triton_models_python": sys.executable,
            "triton_rollout_bake_seconds": bake_seconds,
        }}}
    (root / "hosts.json").write_text(json.dumps(inventory))
    # -v: the bake's verdict (numbers per model and host) is in the log
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="0")
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(root / "hosts.json"),
         os.path.join(CHECKOUT, "playbooks", "model_upgrade.yml"), "-v"],
        cwd=CHECKOUT, capture_output=True, text=True, env=env, timeout=900, check=False)


def test_a_version_that_fails_only_on_live_traffic_is_baked_out_on_the_canary(fleet):
    proc = rollout(fleet, 2, bake_seconds=5)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    servers = fleet["servers"]
    traffic = Traffic(servers)
    traffic.start()
    try:
        proc = rollout(fleet, 3, bake_seconds=8)
    finally:
        alive_at_stop = traffic.is_alive()
        traffic.stop.set()
        traffic.join(10)
    assert traffic.error is None and alive_at_stop, "the live traffic stopped before the rollout ended: %s" % traffic.error
    out = proc.stdout + proc.stderr
    (fleet["root"] / "rollout.log").write_text(out)  # kept for a failed run
    assert proc.returncode != 0, out[-6000:]
    # the canary's own summary line: rolled back, for the bake's breach of add_sub's failure ratio on its group
    rolled = [line for line in scenario_checks.summary_lines(out, "canary")
              if line.startswith("canary [triton_canary]: rolled back")]
    assert rolled, "the canary's summary does not say rolled back: %s" % scenario_checks.summary_lines(out, "canary")
    breach = scenario_checks.bake_breach(rolled[-1], "add_sub")
    assert breach is not None and breach["metric"] == "failure_ratio", rolled[-1]
    assert breach["value"] > breach["limit"] and breach["where"].startswith("triton_canary (canary)"), breach
    for name in ("canary", "wave"):  # the canary is rolled back; the wave never changed
        assert TritonClient(servers[name].http_url, api_key=KEY).ready_versions("add_sub") == [2], name
    assert 3 not in traffic.answers["wave"] and traffic.failures["wave"] == 0, "the wave never saw version 3"
    assert traffic.failures["canary"] > 0, "the live traffic did reach version 3 on the canary (what the bake judged)"
    record = json.loads((fleet["root"] / "canary" / "state" / "add_sub.json").read_text())
    assert record["versions"] == [2], "a version that failed its bake is not the rollback target"
