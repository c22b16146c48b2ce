"""labctl memory: a lab host's cgroup figures and its processes' PSS by command, read from files laid out as
cgroup v1 and /proc lay them out (written here; no podman, no container)."""

from labctl_lib import memory  # lab/, put on sys.path by conftest.py


def _proc(root, pid, comm, argv, pss_kib):
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "comm").write_text(comm + "\n")
    (d / "cmdline").write_text("\0".join(argv) + "\0")
    (d / "smaps_rollup").write_text("00400000-7ffd0000 ---p 00000000 00:00 0 [rollup]\nRss:  9000 kB\nPss:  %d kB\n" % pss_kib)


def test_host_memory_sums_pss_by_command_and_names_stubs_by_model(tmp_path):
    proc, cgroup = tmp_path / "proc", tmp_path / "cg"
    cgroup.mkdir()
    stub = "/opt/tritonserver/backends/python/triton_python_backend_stub"
    _proc(proc, 10, "tritonserver", ["/opt/tritonserver/bin/tritonserver", "--model-repository=/var/lib/triton/models"], 39000)
    _proc(proc, 11, "triton_python_b", [stub, "/var/lib/triton/models/alert_classifier/1/model.py", "shm", "1048576"], 164000)
    _proc(proc, 12, "triton_python_b", [stub, "/var/lib/triton/models/anomaly_detector/2/model.onnx", "shm"], 56000)
    _proc(proc, 13, "triton_python_b", [stub, "/var/lib/triton/models/anomaly_detector/2/model.onnx", "shm"], 1024)
    (cgroup / "cgroup.procs").write_text("10\n11\n12\n13\n99\n")  # 99 exited since: counted with no memory
    (cgroup / "memory.usage_in_bytes").write_text(str(489 * 1024 * 1024))
    (cgroup / "memory.max_usage_in_bytes").write_text(str(600 * 1024 * 1024))
    (cgroup / "memory.stat").write_text("cache 1\nrss 2\ntotal_cache %d\ntotal_rss %d\ntotal_shmem %d\n"
                                        % (235 * 1024 * 1024, 245 * 1024 * 1024, 5 * 1024 * 1024))
    report = memory.host_memory(str(cgroup), proc=str(proc))
    assert (report["usage_mib"], report["peak_mib"], report["rss_mib"], report["cache_mib"], report["shmem_mib"]) == \
        (489, 600, 245, 235, 5)
    assert report["processes"]["python stub (alert_classifier)"] == [1, 164000 / 1024.0]
    assert report["processes"]["python stub (anomaly_detector)"] == [2, (56000 + 1024) / 1024.0]
    assert report["processes"]["tritonserver"] == [1, 39000 / 1024.0]
    assert report["processes"]["?"] == [1, 0.0]
