"""Triton by the container method on container-1 after converge + side effect: the unit runs the pinned
image from the archive, the container is locked down, the key is in no command line, and the side
effect's hot update and restart on kill held (files/side_effect.py's results)."""

import json
import os

import pytest

UNIT = "tritonserver.service"
testinfra_hosts = ["ansible://container-1"]
with open(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "build", "triton-image.json")) as _fh:
    IMAGE = json.load(_fh)


@pytest.fixture(scope="module")
def state(snapshot):
    return snapshot({
        "active": "systemctl is-active %s" % UNIT,
        "exec_start": "systemctl show -p ExecStart --value %s" % UNIT,
        "main_pid": "systemctl show -p MainPID --value %s" % UNIT,
        "inspect": "podman inspect tritonserver",
        "images": "podman images --quiet --no-trunc",
        "archives": "ls -A /var/cache/aiops-triton",
        "argv": "ps -eo args",
        # (no Go templates here: testinfra's ansible backend would read {{ }} as Jinja)
        "status": "cat /proc/$(podman container inspect tritonserver | python3 -c "
                  "'import json, sys; print(json.load(sys.stdin)[0][\"State\"][\"Pid\"])')/status",
        "key_file": "stat -c '%U:%G %a' /etc/tritonserver/api-key",
        "key_content": "cat /etc/tritonserver/api-key",
        "ready": "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8000/v2/health/ready",
        "exposure": "systemd-analyze security %s 2>&1 | tail -1" % UNIT,
    })


@pytest.fixture(scope="module")
def inspect(state):
    return json.loads(state["inspect"])[0]


@pytest.fixture(scope="module")
def side_effect():
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "container_results.json")) as handle:
        return json.load(handle)


def test_unit_runs_the_pinned_image_from_the_archive(state, inspect):
    assert state["active"] == "active"
    assert state["ready"] == "200"
    assert "podman run --rm --name tritonserver" in state["exec_start"]
    assert inspect["State"]["Running"]
    assert "sha256:" + inspect["Image"] == IMAGE["id"]
    assert IMAGE["id"] in state["images"].split()
    assert state["archives"] == ""  # the archive is removed once loaded


def test_container_is_locked_down(state, inspect):
    host_config = inspect["HostConfig"]
    assert host_config["ReadonlyRootfs"] is True
    assert "no-new-privileges" in " ".join(host_config["SecurityOpt"] or [])
    assert inspect["Config"]["User"] not in ("", "0", "root") and not inspect["Config"]["User"].startswith("0:")
    status = dict(line.split(":", 1) for line in state["status"].splitlines() if ":" in line)
    assert status["CapEff"].strip() == "0000000000000000"
    assert status["CapBnd"].strip() == "0000000000000000"
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Uid"].split()[0] != "0"
    writable = [m["Destination"] for m in inspect["Mounts"] if m.get("RW")]
    assert set(writable) <= {"/tmp", "/dev/shm"}, writable  # models and key are read-only binds


def test_key_is_in_no_command_line(state, inspect):
    key = os.environ["AIOPS_LAB_TRITON_API_KEY"]
    assert len(key) >= 16
    # positive controls: the key searched for is the host's, and the views searched hold Triton's command
    # line (a view that came back empty would pass every "not in" below)
    assert state["key_content"] == key
    assert "tritonserver" in state["argv"] and "--http-restricted-api=" in state["argv"]
    assert "--http-restricted-api=" in state["inspect"] and "--http-restricted-api=" in state["exec_start"]
    assert key not in state["argv"]
    assert key not in state["inspect"]
    assert key not in state["exec_start"]
    assert "--http-restricted-api=model-repository:triton-admin-key=@/run/secrets/triton-api-key" in " ".join(inspect["Args"])
    assert state["key_file"] == "root:triton 640"


def test_unit_exposure_is_bounded(state):
    # systemd-analyze on the host, as systemd runs the unit (the offline bound: tests/integration).
    score = float(state["exposure"].split("level for %s:" % UNIT)[1].split()[0])
    assert score <= 5.0, state["exposure"]


def test_hot_update_kept_the_container(side_effect):
    hot = side_effect["hot_update"]
    assert hot["rc"] == 0 and hot["container_kept"]
    assert hot["serving"]["anomaly_detector"] == [2] and hot["serving"]["ops_pipeline"] == [1]


def test_shipped_default_key_is_hidden_from_unprivileged_users(side_effect):
    # triton_server_container_key_file_args: false (the default, NVIDIA's image): the key is in Triton's
    # argv (root sees it: the positive control), and nobody on the host reads it anywhere it looked.
    shipped = side_effect["shipped_default"]
    assert shipped["ready"]
    assert shipped["root_ps_has_key"]
    assert "hidepid=invisible" in shipped["proc_mount"]
    # every view ran: the process views printed, podman and the journal printed or refused (no `|| true` hiding a
    # view that could not run at all)
    assert shipped["nobody_failed"] == [] and shipped["nobody_ps_lines"] > 1, shipped["nobody_views"]
    assert all(shipped["nobody_views"][v] == "shown" for v in ("proc_cmdline", "ps", "systemctl_show"))
    assert shipped["nobody_views"]["podman_inspect"] in ("shown", "denied"), shipped["nobody_views"]
    assert shipped["nobody_sees_key"] == []
    # then switched to key_file_args true on the live host: the key left Triton's argv, the models still serve
    switched = side_effect["key_file_args_on"]
    assert switched["rc"] == 0 and switched["ready"] and not switched["root_ps_has_key"]
    assert switched["serving"]["anomaly_detector"] == [2]


def test_kill_restarts_and_serves(side_effect):
    kill = side_effect["kill"]
    assert kill["new_container"] and kill["ready"] and kill["n_restarts"] == 1
    assert kill["serving"]["anomaly_detector"] == [2]
    assert kill["classified"]["class_label"] and kill["classified"]["confidence"]
    assert "failed_check" not in side_effect
