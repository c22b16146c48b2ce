import json
import tomllib

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import runtime_config as rc

USER_DAEMON_JSON = """{
  "log-driver": "json-file",
  "log-opts": {"max-size": "100m", "max-file": "3"},
  "registry-mirrors": ["https://mirror.internal:5000"],
  "runtimes": {"crun": {"path": "/usr/bin/crun"}},
  "features": {"buildkit": true}
}
"""

# Shape of `containerd config default` (1.6/1.7, version 2), trimmed, plus user edits and comments.
CONTAINERD_V2 = """# managed by the platform team -- keep this comment
version = 2
root = "/var/lib/containerd"
oom_score = -999

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.internal/pause:3.9"
    max_container_log_line_size = 16384

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      snapshotter = "overlayfs"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = true

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "/etc/containerd/certs.d"
"""

CONTAINERS_CONF = """# site policy
[containers]
default_ulimits = [
  "nofile=20000:20000",
  "nproc=32768:32768",
]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
"""


def cri(doc, version=2):
    plugin = "io.containerd.grpc.v1.cri" if version == 2 else "io.containerd.cri.v1.runtime"
    return doc["plugins"][plugin]


# ----------------------------------------------------------------------------- docker

def test_docker_merge_keeps_user_keys():
    merged = rc.merge("docker", USER_DAEMON_JSON, runtime_path="/usr/bin/nvidia-container-runtime", enable_cdi=True)
    data = json.loads(merged)
    assert data["runtimes"] == {"crun": {"path": "/usr/bin/crun"}, "nvidia": {"path": "/usr/bin/nvidia-container-runtime", "args": []}}
    assert data["log-opts"] == {"max-size": "100m", "max-file": "3"}
    assert data["registry-mirrors"] == ["https://mirror.internal:5000"]
    assert data["features"] == {"buildkit": True, "cdi": True}
    assert "default-runtime" not in data
    assert list(data)[:3] == ["log-driver", "log-opts", "registry-mirrors"]  # order kept


def test_docker_second_merge_is_byte_identical():
    once = rc.merge("docker", USER_DAEMON_JSON, set_as_default=True)
    assert json.loads(once)["default-runtime"] == "nvidia"
    assert rc.merge("docker", once, set_as_default=True) is once


def test_docker_already_configured_file_is_not_reformatted():
    text = '{"runtimes":{"nvidia":{"path":"/usr/bin/nvidia-container-runtime","args":["--debug"]}}}'
    assert rc.merge("docker", text) == text  # user args kept, compact formatting kept


def test_docker_empty_or_missing_file():
    assert json.loads(rc.merge("docker", "")) == {"runtimes": {"nvidia": {"path": rc.DEFAULT_RUNTIME_PATH, "args": []}}}


@pytest.mark.parametrize("text,message", [
    ("{not json", "not valid JSON"),
    ("[]", "must hold a JSON object"),
    ('{"runtimes": []}', "'runtimes' must be an object"),
    ('{"runtimes": {"nvidia": "x"}}', "'runtimes.nvidia' must be an object"),
])
def test_docker_refuses_to_clobber_bad_input(text, message):
    with pytest.raises(rc.RuntimeConfigError, match=message):
        rc.merge("docker", text)


# ----------------------------------------------------------------------------- containerd

def test_containerd_v2_merge_edits_only_its_lines():
    merged = rc.merge("containerd", CONTAINERD_V2, set_as_default=True, enable_cdi=True)
    doc = tomllib.loads(merged)
    runtimes = cri(doc)["containerd"]["runtimes"]
    assert runtimes["nvidia"] == {
        "runtime_type": "io.containerd.runc.v2",
        "options": {"BinaryName": rc.DEFAULT_RUNTIME_PATH, "SystemdCgroup": True},
    }
    assert runtimes["runc"]["options"] == {"SystemdCgroup": True}
    assert cri(doc)["containerd"]["default_runtime_name"] == "nvidia"
    assert cri(doc)["enable_cdi"] is True
    assert cri(doc)["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert cri(doc)["sandbox_image"] == "registry.internal/pause:3.9"
    assert cri(doc)["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert doc["oom_score"] == -999
    # Every original line is still there except the one default_runtime_name line we replaced.
    before, after = CONTAINERD_V2.splitlines(), merged.splitlines()
    removed = [line for line in before if line not in after]
    assert removed == ['      default_runtime_name = "runc"']
    assert '      default_runtime_name = "nvidia"' in after
    assert '    enable_cdi = true' in after  # indented like its table's keys


def test_containerd_merge_is_idempotent():
    once = rc.merge("containerd", CONTAINERD_V2, enable_cdi=True)
    assert once != CONTAINERD_V2
    assert rc.merge("containerd", once, enable_cdi=True) is once


def test_containerd_updates_changed_runtime_path():
    once = rc.merge("containerd", CONTAINERD_V2)
    moved = rc.merge("containerd", once, runtime_path="/opt/nvidia/bin/nvidia-container-runtime")
    assert cri(tomllib.loads(moved))["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/opt/nvidia/bin/nvidia-container-runtime"
    assert len(moved.splitlines()) == len(once.splitlines())


def test_containerd_empty_file_gets_version_2():
    merged = rc.merge("containerd", "")
    assert merged.splitlines()[0] == "version = 2"
    assert cri(tomllib.loads(merged))["containerd"]["runtimes"]["nvidia"]["runtime_type"] == "io.containerd.runc.v2"


def test_containerd_v3_uses_the_2x_plugin_name():
    merged = rc.merge("containerd", 'version = 3\n\n[plugins."io.containerd.cri.v1.runtime".containerd]\n  default_runtime_name = "runc"\n')
    doc = tomllib.loads(merged)
    assert cri(doc, 3)["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == rc.DEFAULT_RUNTIME_PATH
    assert cri(doc, 3)["containerd"]["default_runtime_name"] == "runc"
    assert "io.containerd.grpc.v1.cri" not in doc["plugins"]


@pytest.mark.parametrize("text,message", [
    ('root = "/var/lib/containerd"\n', "version None is not supported"),
    ("version = 1\n", "version 1 is not supported"),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  runtimes = { runc = { runtime_type = "io.containerd.runc.v2" } }\n',
     "inline value"),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  runtimes.nvidia.runtime_type = "x"\n', "dotted keys"),
])
def test_containerd_refuses_what_it_cannot_merge_safely(text, message):
    with pytest.raises(rc.RuntimeConfigError, match=message):
        rc.merge("containerd", text)


# ----------------------------------------------------------------------------- podman

def test_podman_adds_runtime_and_keeps_site_policy():
    merged = rc.merge("podman", CONTAINERS_CONF)
    doc = tomllib.loads(merged)
    assert doc["engine"]["runtimes"] == {"nvidia": [rc.DEFAULT_RUNTIME_PATH]}
    assert doc["engine"]["runtime"] == "runc"
    assert doc["containers"]["default_ulimits"] == ["nofile=20000:20000", "nproc=32768:32768"]
    assert merged.startswith(CONTAINERS_CONF)  # only appended
    assert rc.merge("podman", merged) is merged


def test_podman_set_as_default_replaces_one_line():
    merged = rc.merge("podman", CONTAINERS_CONF, set_as_default=True)
    assert tomllib.loads(merged)["engine"]["runtime"] == "nvidia"
    assert 'runtime = "runc"' not in merged
    assert 'cgroup_manager = "cgroupfs"' in merged


def test_multiline_array_value_is_replaced_whole():
    text = '[engine.runtimes]\nnvidia = [\n  "/old/path",  # old\n]\ncrun = ["/usr/bin/crun"]\n'
    merged = rc.merge("podman", text)
    assert merged == '[engine.runtimes]\nnvidia = ["/usr/bin/nvidia-container-runtime"]\ncrun = ["/usr/bin/crun"]\n'


# ----------------------------------------------------------------------------- TOML helpers

@pytest.mark.parametrize("key,parts", [
    ('plugins."io.containerd.grpc.v1.cri".containerd', ("plugins", "io.containerd.grpc.v1.cri", "containerd")),
    ("engine . runtimes", ("engine", "runtimes")),
    ("'literal.key'.x", ("literal.key", "x")),
])
def test_split_key(key, parts):
    assert rc.split_key(key) == parts


def test_unknown_runtime():
    with pytest.raises(rc.RuntimeConfigError, match="unknown runtime 'cri-o'"):
        rc.merge("cri-o", "")
