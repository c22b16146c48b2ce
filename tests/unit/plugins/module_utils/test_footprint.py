"""Measured footprints (triton_footprint) on written /proc trees and written nvidia-smi compute-apps output.

The /proc entries are written per test in tmp_path: the stub command lines are those a real Triton 2.51 gave its
python-backend stubs (<stub> <repository>/<model>/<version>/<file> <shm region> <sizes> <parent pid> <backend dir>
<ipc handle> <instance name> <runtime dir>, as tests/integration/test_ops_models.py reads them on a real server).
"""

import os

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import footprint as fp
from ansible_collections.aiops.triton.plugins.module_utils import gpu_budget
from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvidia_smi")
STUB = "/opt/tritonserver/backends/python/triton_python_backend_stub"
REPO = "/var/lib/triton/models"


def stub_argv(model, version, instance, filename="model.py", runtime="DEFAULT"):
    return [STUB, "%s/%s/%s/%s" % (REPO, model, version, filename), "triton_python_backend_shm_region_0d1f", "1048576",
            "1048576", "48213", "/opt/tritonserver/backends/python", "336", instance, runtime]


# pid: (comm, ppid, argv, VmRSS kB or None)
WRITTEN_TREE = {
    1: ("systemd", 0, ["/sbin/init"], 12000),
    48213: ("tritonserver", 1, ["/opt/tritonserver/bin/tritonserver", "--model-repository=" + REPO], 900000),
    48391: ("triton_python_b", 48213, stub_argv("alert_classifier", 1, "alert_classifier_0_0"), 187840),
    48392: ("triton_python_b", 48213, stub_argv("alert_classifier", 1, "alert_classifier_0_1"), 189184),
    48405: ("triton_python_b", 48213, stub_argv("metric_forecaster", 2, "metric_forecaster_0_0"), 116724),
    48406: ("triton_python_b", 48213, stub_argv("anomaly_detector", 2, "anomaly_detector_0_0", "model.onnx",
                                                "/opt/tritonserver/backends/onnxruntime"), 68064),
    # another server's stub (not under 48213) and a process that is not a stub
    50001: ("tritonserver", 1, ["/usr/bin/tritonserver"], 500000),
    50002: ("triton_python_b", 50001, stub_argv("alert_classifier", 1, "alert_classifier_0_0"), 999999),
    51777: ("python3", 1, ["/usr/bin/python3", "train.py"], 4000000),
}


def written_proc(root, tree):
    for pid, (comm, ppid, argv, rss) in tree.items():
        base = root / str(pid)
        base.mkdir()
        (base / "comm").write_text(comm + "\n")
        (base / "stat").write_text("%d (%s) S %d %d 0 0 -1\n" % (pid, comm, ppid, ppid))
        (base / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
        status = "Name:\t%s\nState:\tS (sleeping)\n" % comm
        if rss is not None:
            status += "VmRSS:\t%8d kB\nRssAnon:\t%8d kB\n" % (rss, rss // 2)
        (base / "status").write_text(status)
    (root / "self").mkdir()
    return str(root)


def written_apps():
    with open(os.path.join(FIXTURES, "written_compute_apps_h100_python_stubs.csv")) as handle:
        return smi.parse_compute_apps(handle.read())


def by_key(results):
    return dict(((r["name"], r["version"]), r) for r in results)


def test_proc_parsers():
    assert fp.parse_status_rss_kib("Name:\tx\nVmRSS:\t  187840 kB\n") == 187840
    assert fp.parse_status_rss_kib("Name:\tkthreadd\n") is None
    assert fp.parse_stat_ppid("48391 (triton python b) S 48213 48213 0") == 48213
    assert fp.parse_stat_ppid("garbage") == 0
    assert fp.parse_cmdline(b"/bin/a\0b c\0\0") == ["/bin/a", "b c", ""]
    assert fp.parse_cmdline(b"") == []


def test_stub_identity_reads_model_version_and_instance_from_the_argv():
    assert fp.stub_identity(stub_argv("metric_forecaster", 2, "metric_forecaster_0_0")) == {
        "model": "metric_forecaster", "version": 2, "instance": "metric_forecaster_0_0"}
    onnx = stub_argv("anomaly_detector", 1, "anomaly_detector_0_1", "model.onnx", "/opt/tritonserver/backends/onnxruntime")
    assert fp.stub_identity(onnx)["model"] == "anomaly_detector"
    assert fp.stub_identity(["/usr/bin/python3", "/srv/x/1/model.py"]) is None
    assert fp.stub_identity([STUB, "/srv/x/notaversion/model.py"]) is None


def test_stubs_are_the_ones_under_the_given_server(tmp_path):
    procs = fp.processes(written_proc(tmp_path, WRITTEN_TREE))
    assert fp.server_pids(procs) == [48213, 50001]
    found = fp.stubs(procs, 48213)
    assert [s["pid"] for s in found] == [48391, 48392, 48405, 48406]
    assert found[0] == {"pid": 48391, "model": "alert_classifier", "version": 1, "instance": "alert_classifier_0_0",
                        "rss_kib": 187840}
    assert [s["pid"] for s in fp.stubs(procs, 50001)] == [50002]


def test_measure_on_a_gpu_host(tmp_path):
    procs = fp.processes(written_proc(tmp_path, WRITTEN_TREE))
    models = [{"name": "alert_classifier", "versions": [1]}, {"name": "metric_forecaster", "versions": [2]}]
    usage = {("alert_classifier", 1): [{"type": "GPU", "id": 0, "byte_size": 1048576}]}
    got = by_key(fp.measure(models, fp.stubs(procs, 48213), written_apps(), None, usage, 48213, "2026-12-06T09:44:20Z"))
    classifier = got[("alert_classifier", 1)]
    assert classifier["instances"] == 2
    assert classifier["host_mib"] == 369  # ceil((187840 + 189184) / 1024)
    assert classifier["gpu_mib"] == 1094 + 1102  # 48213's pool and the foreign python3 are not counted
    assert [i["gpu_mib"] for i in classifier["per_instance"]] == [1094, 1102]
    assert classifier["per_instance"][0]["host_mib"] == 183.4
    assert classifier["triton_memory_usage"] == usage[("alert_classifier", 1)]
    assert classifier["footprint"] == {"gpu_mib": 1102, "host_mib": 185, "source": "triton_footprint",
                                       "measured": "2026-12-06T09:44:20Z"}
    assert classifier["unknown"] == []
    forecaster = got[("metric_forecaster", 2)]
    assert forecaster["gpu_mib"] == 1000  # one stub on two GPUs: both rows
    assert forecaster["footprint"]["host_mib"] == 114
    assert forecaster["triton_memory_usage"] == []


def test_the_footprint_is_what_gpu_budget_reads(tmp_path):
    procs = fp.processes(written_proc(tmp_path, WRITTEN_TREE))
    entry = fp.measure([{"name": "alert_classifier", "versions": [1]}], fp.stubs(procs, 48213), written_apps(),
                       measured="2026-12-06T09:44:20Z")[0]
    assert gpu_budget.footprint(entry["footprint"], 1) == {"gpu_mib": 1102, "host_mib": 185}
    assert gpu_budget.footprint({1: entry["footprint"]}, 1) == {"gpu_mib": 1102, "host_mib": 185}


def test_no_nvidia_smi_leaves_gpu_unknown_with_the_reason(tmp_path):
    procs = fp.processes(written_proc(tmp_path, WRITTEN_TREE))
    entry = fp.measure([{"name": "metric_forecaster", "versions": [2]}], fp.stubs(procs, 48213), None, fp.NO_NVIDIA_SMI)[0]
    assert entry["host_mib"] == 114 and entry["gpu_mib"] is None
    assert entry["footprint"]["gpu_mib"] is None and "measured" not in entry["footprint"]
    assert entry["unknown"] == ["GPU memory: nvidia-smi not installed"]
    assert gpu_budget.footprint(entry["footprint"], 2) == {"gpu_mib": None, "host_mib": 114}


def test_a_stub_nvidia_smi_does_not_list_uses_no_gpu_memory(tmp_path):
    procs = fp.processes(written_proc(tmp_path, WRITTEN_TREE))
    entry = fp.measure([{"name": "anomaly_detector", "versions": [2]}], fp.stubs(procs, 48213), written_apps())[0]
    assert entry["gpu_mib"] == 0 and entry["footprint"]["gpu_mib"] == 0 and entry["unknown"] == []


def test_na_memory_and_unreadable_rss_are_unknown_never_zero(tmp_path):
    tree = dict(WRITTEN_TREE)
    tree[48392] = tree[48392][:3] + (None,)
    procs = fp.processes(written_proc(tmp_path, tree))
    apps = smi.parse_compute_apps("48391, %s, [N/A], GPU-6513270e-269e-0d37-f2a7-4de452e6b438\n" % STUB)
    entry = fp.measure([{"name": "alert_classifier", "versions": [1]}], fp.stubs(procs, 48213), apps)[0]
    assert entry["host_mib"] is None and entry["gpu_mib"] is None
    assert entry["footprint"]["host_mib"] is None and entry["footprint"]["gpu_mib"] is None
    assert entry["unknown"] == ["RSS of stub pid(s) 48392 unreadable",
                                "GPU memory of stub pid(s) 48391 not reported by nvidia-smi ([N/A], e.g. under MIG)"]


@pytest.mark.parametrize("server_pid, where", [(48213, " (pid 48213)"), (None, "")])
def test_a_version_without_stubs_is_unknown(tmp_path, server_pid, where):
    procs = fp.processes(written_proc(tmp_path, WRITTEN_TREE))
    entry = fp.measure([{"name": "ops_pipeline", "versions": [1]}], fp.stubs(procs, 48213), [], None, None, server_pid)[0]
    assert entry["instances"] == 0 and entry["host_mib"] is None and entry["gpu_mib"] is None
    assert entry["unknown"][0].startswith("no python-backend stub of ops_pipeline version 1 under tritonserver%s:" % where)


def test_memory_usage_picks_the_version():
    stats = {"model_stats": [{"name": "m", "version": "1", "memory_usage": [{"type": "CPU", "id": 0, "byte_size": 5}]},
                             {"name": "m", "version": "2", "memory_usage": []}]}
    assert fp.memory_usage(stats, 1) == [{"type": "CPU", "id": 0, "byte_size": 5}]
    assert fp.memory_usage(stats, 2) == []
    assert fp.memory_usage({}, 3) == []


class WrittenModule(object):
    """Just what triton_footprint.server_pid asks of AnsibleModule: params, get_bin_path, run_command."""

    def __init__(self, pid=None, main_pid=None, models=(), url=None):
        self.params = {"pid": pid, "unit": "tritonserver.service", "models": [{"name": m} for m in models], "url": url}
        self.main_pid = main_pid

    def get_bin_path(self, name, opt_dirs=None):
        return "/usr/bin/systemctl" if self.main_pid is not None else None

    def run_command(self, argv):
        assert argv == ["/usr/bin/systemctl", "show", "-p", "MainPID", "--value", "tritonserver.service"]
        return 0, "%s\n" % self.main_pid, ""


@pytest.mark.parametrize("module, expected", [
    (WrittenModule(pid=48213), (48213, None)),
    (WrittenModule(pid=4), (None, "no process 4")),
    (WrittenModule(main_pid=50001), (50001, None)),
    (WrittenModule(main_pid=0), (None, "several tritonserver processes (48213, 50001): give pid")),
    (WrittenModule(), (None, "several tritonserver processes (48213, 50001): give pid")),
    # among several servers, the only one whose stubs serve a model asked about
    (WrittenModule(models=["metric_forecaster"]), (48213, None)),
    (WrittenModule(models=["alert_classifier"]), (None, "several tritonserver processes (48213, 50001): give pid")),
])
def test_server_pid(tmp_path, module, expected):
    from ansible_collections.aiops.triton.plugins.modules.triton_footprint import server_pid
    assert server_pid(module, fp.processes(written_proc(tmp_path, WRITTEN_TREE))) == expected


def test_server_pid_is_the_one_named_tritonserver(tmp_path):
    from ansible_collections.aiops.triton.plugins.modules.triton_footprint import server_pid
    tree = dict((pid, entry) for pid, entry in WRITTEN_TREE.items() if pid < 50000)
    (tmp_path / "one").mkdir()
    assert server_pid(WrittenModule(), fp.processes(written_proc(tmp_path / "one", tree))) == (48213, None)
    del tree[48213]
    (tmp_path / "none").mkdir()
    assert server_pid(WrittenModule(), fp.processes(written_proc(tmp_path / "none", tree))) == (
        None, "no tritonserver process (tritonserver.service has no MainPID and none is named tritonserver)")


# /proc/net/tcp6 as the kernel writes it: a LISTEN (0A) socket on [::]:8000 (0x1F40), inode 771234; and an
# established one on the same port that is no listener
WRITTEN_TCP6 = (
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 "
    "00000000   998        0 771234 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0000000000000000FFFF00000100007F:1F40 0000000000000000FFFF00000100007F:D3A2 01 00000000:00000000 00:00000000 "
    "00000000   998        0 771299 1 0000000000000000 20 4 30 10 -1\n")


@pytest.mark.parametrize("url, expected", [
    # 50001 holds the socket listening on 8000: the server the module talks to
    ("http://127.0.0.1:8000", (50001, None)),
    ("http://[::1]:8000/", (50001, None)),
    # nobody listens on 8001; 48213's stubs serve metric_forecaster
    ("http://127.0.0.1:8001", (48213, None)),
])
def test_among_several_servers_the_one_listening_on_the_url_port(tmp_path, url, expected):
    from ansible_collections.aiops.triton.plugins.modules.triton_footprint import server_pid
    proc = written_proc(tmp_path, WRITTEN_TREE)
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "tcp").write_text(WRITTEN_TCP6.splitlines()[0] + "\n")
    (tmp_path / "net" / "tcp6").write_text(WRITTEN_TCP6)
    for pid, inode in ((48213, 771299), (50001, 771234)):
        (tmp_path / str(pid) / "fd").mkdir()
        (tmp_path / str(pid) / "fd" / "7").symlink_to("socket:[%d]" % inode)
    module = WrittenModule(models=["metric_forecaster"], url=url)
    assert server_pid(module, fp.processes(proc), proc) == expected


@pytest.mark.parametrize("url, port", [("http://127.0.0.1:8000", 8000), ("https://h.example/v2", 443),
                                       ("http://[fd00::5]:8010", 8010), ("http://h", 80), ("", None)])
def test_url_port(url, port):
    assert fp.url_port(url) == port
