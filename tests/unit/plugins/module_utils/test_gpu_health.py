"""The GPU health verdict (plugins/module_utils/gpu_health.py) on the XML the real nvidia-smi 535.261.03 printed for
each state (recorded_real_535.261.03_q_x_*), on public real outputs of other drivers (public_telegraf_*), and the Xid
classification against NVIDIA's catalogue."""

import os
import re

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import gpu_health as gh

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvidia_smi"))
SOURCE = os.path.abspath(gh.__file__)
BUS = "00000000:4E:00.0"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def recorded(state):
    return fixture("recorded_real_535.261.03_q_x_%s.xml" % state)


def verdict_of(xml, events=(), pci=(), thresholds=None, **state):
    smi_state = {"status": "ok", "gpus": gh.parse_q_x(xml)["gpus"]}
    smi_state.update(state)
    return gh.evaluate(smi_state, list(events), list(pci), thresholds or {})


# --- every recorded state ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("state, verdict, reasons, reset", [
    ("healthy", "healthy", [], False),
    ("row_remap_pending", "unhealthy", ["GPU 0 (%s): row remap pending, reset required" % BUS], True),
    ("dbe_ecc", "unhealthy", ["GPU 0 (%s): 1 uncorrectable ECC error(s) since the driver loaded (DRAM 1), more than "
                              "ecc_uncorrectable_volatile_max (0), reset required" % BUS], True),
    ("ecc_aggregate", "degraded", ["GPU 0 (%s): 1 uncorrectable ECC error(s) over the GPU's life (none since the driver loaded)" % BUS],
     False),
    ("pcie_degraded", "degraded", ["GPU 0 (%s): PCIe link gen 3 x8, capable of gen 5 x16" % BUS], False),
    ("hw_slowdown", "degraded", ["GPU 0 (%s): clocks held down by the hardware (HW slowdown, HW thermal slowdown)" % BUS], False),
    ("v100_pages_pending", "unhealthy", [
        "GPU 0 (%s): 1 uncorrectable ECC error(s) since the driver loaded (DRAM 1), more than ecc_uncorrectable_volatile_max (0), "
        "reset required" % BUS,
        "GPU 0 (%s): page retirement pending, reset required" % BUS], True),
])
def test_verdict_of_every_recorded_state(state, verdict, reasons, reset):
    fact = verdict_of(recorded(state))
    assert (fact["verdict"], fact["reasons"], fact["reset_recommended"]) == (verdict, reasons, reset)
    assert fact["host_kind"] == "gpu" and fact["gpu_count"] == 1
    gpu = fact["gpus"][0]
    assert gpu["verdict"] == verdict and gpu["bus_id"] == BUS
    assert gpu["name"] == ("Tesla V100-SXM2-32GB" if state.startswith("v100") else "NVIDIA H100 80GB HBM3")
    assert gpu["uuid"] == "GPU-5f0c3a1e-7b2d-4c9a-8e61-d0a4b3c2e1f0"
    assert fact["status"].startswith(verdict + ": 1 GPU(s) answer nvidia-smi")


def test_the_recorded_healthy_gpu_is_read_field_by_field():
    gpu = gh.parse_q_x(recorded("healthy"))["gpus"][0]
    assert gpu["ecc"]["mode"] == "enabled"
    assert [gpu["ecc"][k] for k in ("uncorrectable_volatile", "uncorrectable_aggregate", "sram_uncorrectable_volatile",
                                    "dram_uncorrectable_volatile", "correctable_volatile")] == [0, 0, 0, 0, 0]
    assert gpu["ecc"]["sram_threshold_exceeded"] is False
    assert gpu["remapped_rows"] == {"pending": False, "failure": False, "correctable": 0, "uncorrectable": 0,
                                    "histogram": {"max": 2560, "high": 0, "partial": 0, "low": 0, "none": 0}}
    # Hopper remaps rows instead of retiring pages: nvidia-smi prints N/A
    assert gpu["retired_pages"] == {"single_bit": None, "double_bit": None, "total": None, "pending": None}
    assert gpu["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16, "replay_counter": 0}
    assert gpu["clocks_event_reasons"]["gpu_idle"] is True and gpu["clocks_event_reasons"]["hw_slowdown"] is False
    assert gpu["persistence_mode"] is True


def test_the_recorded_v100_old_ecc_names_and_retired_pages():
    gpu = gh.parse_q_x(recorded("v100_pages_pending"))["gpus"][0]
    assert gpu["retired_pages"] == {"single_bit": 2, "double_bit": 1, "total": 3, "pending": True}
    assert (gpu["ecc"]["uncorrectable_volatile"], gpu["ecc"]["dram_uncorrectable_volatile"], gpu["ecc"]["correctable_volatile"]) == (1, 1, 0)
    assert gpu["remapped_rows"] == {"pending": None, "failure": None, "correctable": None, "uncorrectable": None, "histogram": None}


def test_row_remap_counts_are_read():
    remap = gh.parse_q_x(recorded("row_remap_pending"))["gpus"][0]["remapped_rows"]
    assert (remap["pending"], remap["correctable"], remap["histogram"]["partial"]) == (True, 1, 1)


# --- the element names the parser reads exist in the real outputs --------------------------------------------------
# Every path gh reads from a 535 <gpu>; the test also checks each is spelled in gpu_health.py, so the list follows the parser.
PATHS_535 = [
    "uuid", "product_name", "persistence_mode", "performance_state", "pci/pci_bus_id", "ecc_mode/current_ecc",
    "ecc_errors/volatile/dram_uncorrectable", "ecc_errors/volatile/dram_correctable", "ecc_errors/volatile/sram_correctable",
    "ecc_errors/volatile/sram_uncorrectable_parity", "ecc_errors/volatile/sram_uncorrectable_secded",
    "ecc_errors/aggregate/dram_uncorrectable", "ecc_errors/aggregate/sram_threshold_exceeded",
    "retired_pages/multiple_single_bit_retirement/retired_count", "retired_pages/double_bit_retirement/retired_count",
    "retired_pages/pending_retirement", "retired_pages/pending_blacklist",
    "remapped_rows/remapped_row_pending", "remapped_rows/remapped_row_failure", "remapped_rows/remapped_row_corr",
    "remapped_rows/remapped_row_unc", "remapped_rows/row_remapper_histogram/row_remapper_histogram_none",
    "clocks_event_reasons/clocks_event_reason_gpu_idle", "clocks_event_reasons/clocks_event_reason_hw_slowdown",
    "clocks_event_reasons/clocks_event_reason_hw_thermal_slowdown", "clocks_event_reasons/clocks_event_reason_hw_power_brake_slowdown",
    "pci/pci_gpu_link_info/pcie_gen/current_link_gen", "pci/pci_gpu_link_info/pcie_gen/max_link_gen",
    "pci/pci_gpu_link_info/link_widths/current_link_width", "pci/pci_gpu_link_info/link_widths/max_link_width",
    "pci/replay_counter", "gpu_reset_status/reset_required", "gpu_reset_status/drain_and_reset_recommended",
]
XML_STATES = ["healthy", "row_remap_pending", "dbe_ecc", "ecc_aggregate", "pcie_degraded", "hw_slowdown"]  # the H100's


def _read_leaves(monkeypatch, xml):
    """The element names the parser asks for while it reads ``xml`` (every read goes through gh._text)."""
    asked = set()
    real = gh._text

    def spy(node, path):
        asked.add(path.split("/")[-1])
        return real(node, path)

    monkeypatch.setattr(gh, "_text", spy)
    gh.parse_q_x(xml)
    monkeypatch.setattr(gh, "_text", real)
    return asked


@pytest.mark.parametrize("state", XML_STATES + ["i0_xid79_second_of_two"])
def test_every_element_the_parser_reads_is_in_the_real_535_output(state):
    from xml.etree import ElementTree
    gpu = ElementTree.fromstring(recorded(state)).find("gpu")
    missing = [path for path in PATHS_535 if gpu.find(path) is None]
    assert not missing, "not in the real 535 XML: %s" % missing
    assert ElementTree.fromstring(recorded(state)).find("driver_version").text == "535.261.03"


def test_the_path_list_follows_the_parser(monkeypatch):
    """PATHS_535 names every element the parser reads from a 535 output (so the test above covers them all)."""
    leaves = set(p.split("/")[-1] for p in PATHS_535)
    asked = _read_leaves(monkeypatch, recorded("healthy"))
    # older or newer drivers' names the parser also tries, each found in a public real output (next test)
    other = {"sram_uncorrectable", "total", "device_memory", "unrepairable_memory", "gpu_recovery_action",
             "row_remapper_histogram_max", "row_remapper_histogram_high", "row_remapper_histogram_partial",
             "row_remapper_histogram_low", "driver_version", "cuda_version", "attached_gpus"}
    # every child of clocks_event_reasons is read as it comes (the hardware ones above decide)
    asked = set(a for a in asked if not a.startswith("clocks_event_reason_") or a in leaves)
    assert sorted(asked - leaves - other) == []


def test_every_name_the_parser_asks_for_is_in_a_real_output(monkeypatch):
    """Recorded 535 or public 515/535/595 outputs: no name the parser reads is invented."""
    tags, asked = set(), set()
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".xml"):
            tags.update(re.findall(r"<([a-z_0-9]+)[ >]", fixture(name)))
            asked |= _read_leaves(monkeypatch, fixture(name))
    assert sorted(asked - tags) == []
    assert {"clocks_throttle_reasons", "clocks_event_reasons", "double_bit", "device_memory", "sram_uncorrectable",
            "sram_uncorrectable_parity", "gpu_recovery_action", "pending_retirement"} <= tags


# --- public real outputs of other drivers ----------------------------------------------------------------------------
def test_public_a100_535_54_mig_host():
    fact = verdict_of(fixture("public_telegraf_a100-sxm4-v12.xml"))
    gpu = fact["gpus"][0]
    assert gpu["bus_id"] == "00000000:01:00.0" and gpu["ecc"]["sram_uncorrectable_volatile"] == 0
    assert gpu["remapped_rows"]["pending"] is None  # N/A with MIG on
    assert fact["reasons"] == ["GPU 0 (00000000:01:00.0): persistence mode is off"] and fact["verdict"] == "degraded"


def test_public_a10g_515_old_names_and_an_idle_link():
    gpu = verdict_of(fixture("public_telegraf_a10g.xml"))["gpus"][0]
    assert gpu["clocks_event_reasons"]["gpu_idle"] is True  # clocks_throttle_reasons before 535
    assert gpu["remapped_rows"]["pending"] is False and gpu["remapped_rows"]["correctable"] == 0
    # gen 1 of 4 while idle is power saving, not a fault; x8 of x16 is reported
    assert gpu["reasons"] == ["PCIe link x8, capable of x16", "persistence mode is off"]
    relaxed = verdict_of(fixture("public_telegraf_a10g.xml"),
                         thresholds={"pcie_min_link_width": 8, "degrade_on_persistence_off": False})
    assert relaxed["verdict"] == "healthy"


def test_public_t4_retired_pages_and_pending_retirement():
    xml = fixture("public_telegraf_tesla-t4.xml")
    gpu = verdict_of(xml)["gpus"][0]
    assert gpu["retired_pages"] == {"single_bit": 0, "double_bit": 0, "total": 0, "pending": False}
    pending = xml.replace("<pending_retirement>No</pending_retirement>", "<pending_retirement>Yes</pending_retirement>")
    fact = verdict_of(pending)
    assert fact["verdict"] == "unhealthy" and fact["reset_recommended"] is True
    assert "GPU 0 (00000000:00:1E.0): page retirement pending, reset required" in fact["reasons"]
    many = re.sub(r"(<double_bit_retirement>\s*<retired_count>)0", r"\g<1>60", xml)
    assert "60 retired pages, more than retired_pages_max (59): replace the GPU" in verdict_of(many)["gpus"][0]["reasons"]


def test_public_595_output_with_newer_names():
    fact = verdict_of(fixture("public_telegraf_rtx-4000-sff-ada-v13.xml"))
    assert fact["verdict"] == "healthy" and fact["gpus"][0]["recovery_action"] == "None"
    reboot = fixture("public_telegraf_rtx-4000-sff-ada-v13.xml").replace(
        "<gpu_recovery_action>None</gpu_recovery_action>", "<gpu_recovery_action>Reboot</gpu_recovery_action>")
    assert verdict_of(reboot)["reasons"] == ["GPU 0 (00000000:06:00.0): the driver's recovery action: Reboot"]


# --- the rules on changed values ---------------------------------------------------------------------------------------
def _set(xml, old, new):
    assert old in xml
    return xml.replace(old, new, 1)


def test_remap_failure_and_banks_without_spare_rows():
    xml = _set(recorded("healthy"), "<remapped_row_failure>No</remapped_row_failure>", "<remapped_row_failure>Yes</remapped_row_failure>")
    xml = _set(xml, "<row_remapper_histogram_none>0 bank(s)", "<row_remapper_histogram_none>2 bank(s)")
    fact = verdict_of(xml)
    assert fact["reasons"] == [
        "GPU 0 (%s): row remapping failed: memory can no longer be repaired, replace the GPU" % BUS,
        "GPU 0 (%s): 2 memory bank(s) have no spare row left: the next row failure there cannot be remapped" % BUS]
    assert fact["reset_recommended"] is False


def test_persistence_off_power_brake_and_thresholds():
    xml = _set(recorded("healthy"), "<persistence_mode>Enabled</persistence_mode>", "<persistence_mode>Disabled</persistence_mode>")
    xml = _set(xml, "<clocks_event_reason_hw_power_brake_slowdown>Not Active", "<clocks_event_reason_hw_power_brake_slowdown>Active")
    assert verdict_of(xml)["gpus"][0]["reasons"] == ["clocks held down by the hardware (HW power brake slowdown)", "persistence mode is off"]
    assert verdict_of(xml, thresholds={"degrade_on_hw_slowdown": False, "degrade_on_persistence_off": False})["verdict"] == "healthy"
    assert verdict_of(recorded("dbe_ecc"), thresholds={"ecc_uncorrectable_volatile_max": 1})["verdict"] == "degraded"


def test_unknown_threshold_is_refused():
    with pytest.raises(gh.GpuHealthError, match="unknown threshold"):
        gh.thresholds_with_defaults({"ecc_max": 1})


def test_expected_gpu_count():
    fact = verdict_of(recorded("healthy"), thresholds={"expected_gpu_count": 8})
    assert fact["verdict"] == "unhealthy" and fact["reasons"] == ["expected 8 GPUs, 1 answer nvidia-smi"]


# --- Xid ------------------------------------------------------------------------------------------------------------
XID79 = "2026-12-05T10:00:00+0000 gpu-infer-02 kernel: NVRM: Xid (PCI:0000:4e:00): 79, pid=0, GPU has fallen off the bus."
XID63 = ("2026-12-05T10:00:00+0000 gpu-infer-02 kernel: NVRM: Xid (PCI:0000:3b:00): 63, pid=1234, name=tritonserver, Row Remapper: "
         "New row (0x00000000000c3e12) marked for remapping, reset gpu to activate.")


def test_xid_lines_in_the_drivers_form():
    events = gh.parse_xid_lines("\n".join([XID79, XID63, "2026-12-05T10:00:01+0000 h kernel: nvidia-nvlink: Nvlink Core is being initialized"]))
    assert [(e["xid"], e["bus_id"], e["class"], e["time"]) for e in events] == [
        (79, "00000000:4E:00.0", "hardware", "2026-12-05T10:00:00+0000"), (63, "00000000:3B:00.0", "hardware", "2026-12-05T10:00:00+0000")]
    assert events[0]["epoch"] == 1796464800 and events[0]["line"] == XID79
    assert events[1]["message"].startswith("pid=1234, name=tritonserver, Row Remapper")
    # older drivers: no pid, no PCI: prefix; dmesg --time-format iso
    old = gh.parse_xid_lines("2026-12-05T11:00:00,123456+01:00 NVRM: Xid (0000:4e:00): 48, An uncorrectable double bit error")
    assert (old[0]["xid"], old[0]["bus_id"], old[0]["epoch"]) == (48, "00000000:4E:00.0", 1796464800.123456)


# The lists (NVIDIA's catalogue: https://docs.nvidia.com/deploy/xid-errors/)
@pytest.mark.parametrize("xid", [48, 63, 64, 74, 79, 92, 94, 95, 119, 120])
def test_hardware_xids_are_unhealthy(xid):
    assert gh.classify_xid(xid)[0] == "hardware"
    line = "2026-12-05T10:00:00+0000 h kernel: NVRM: Xid (PCI:0000:4e:00): %d, pid=0, x" % xid
    fact = verdict_of(recorded("healthy"), gh.parse_xid_lines(line))
    assert fact["verdict"] == "unhealthy"
    assert fact["reasons"][0].startswith("GPU 0 (%s): Xid %d at 2026-12-05T10:00:00+0000: " % (BUS, xid))


@pytest.mark.parametrize("xid", [13, 31, 43, 45])
def test_application_xids_are_reported_not_a_host_fault(xid):
    line = "2026-12-05T10:00:00+0000 h kernel: NVRM: Xid (PCI:0000:4e:00): %d, pid=77, name=python3, x" % xid
    fact = verdict_of(recorded("healthy"), gh.parse_xid_lines(line))
    assert fact["verdict"] == "healthy" and fact["reasons"] == []
    assert fact["xid_events"][0]["class"] == "application"
    assert fact["notes"][0].startswith("Xid %d on %s at 2026-12-05T10:00:00+0000: " % (xid, BUS))


def test_unknown_xid_is_reported_and_degraded():
    fact = verdict_of(recorded("healthy"), gh.parse_xid_lines("2026-12-05T10:00:00+0000 h kernel: NVRM: Xid (PCI:0000:4e:00): 157, x"))
    assert fact["verdict"] == "degraded" and fact["xid_events"][0]["class"] == "unknown"
    assert "Xid 157 at 2026-12-05T10:00:00+0000: not classified" in fact["reasons"][0]
    assert verdict_of(recorded("healthy"), fact["xid_events"], thresholds={"degrade_on_unknown_xid": False})["verdict"] == "healthy"


def test_the_catalogue_cites_nvidia_and_reset_follows_nvidias_action():
    with open(SOURCE) as handle:
        assert "https://docs.nvidia.com/deploy/xid-errors/" in handle.read()
    assert [x for x, entry in sorted(gh.XID_CATALOGUE.items()) if entry[2]] == [48, 61, 62, 63, 64, 74, 94, 95, 119, 120, 121, 140]
    assert gh.classify_xid(79)[2] is False  # fallen off the bus: a reboot at least


def test_repeated_xids_are_one_reason_and_unplaced_ones_name_their_bus():
    log = "\n".join([XID79.replace("10:00:00", "10:00:0%d" % i) for i in range(3)])
    fact = verdict_of(recorded("healthy").replace("4E:00.0", "1B:00.0").replace("<pci_bus>4E", "<pci_bus>1B"),
                      gh.parse_xid_lines(log))
    assert fact["reasons"] == ["00000000:4E:00.0 (not listed by nvidia-smi): Xid 79 (3 times, last at 2026-12-05T10:00:02+0000): "
                               "GPU has fallen off the bus"]
    assert fact["fallen_off_bus"] == ["00000000:4E:00.0"]


def test_since_drops_older_lines():
    log = "\n".join([XID63.replace("10:00:00", "09:00:00"), XID79])
    assert [e["xid"] for e in gh.parse_xid_lines(log, since=1796464800 - 60)] == [79]
    assert [e["xid"] for e in gh.parse_xid_lines(log, since=1796464800 + 1)] == []
    assert [e["xid"] for e in gh.parse_xid_lines(log)] == [63, 79]


def test_since_file(tmp_path):
    path = tmp_path / "since"
    assert gh.read_since(None, str(path)) is None
    path.write_text("1796464800.5\n")
    assert gh.read_since(None, str(path)) == 1796464800.5
    assert gh.read_since("1796464900", str(path)) == 1796464900.0
    path.write_text("yesterday")
    with pytest.raises(gh.GpuHealthError, match="epoch seconds"):
        gh.read_since(None, str(path))


# --- hosts: lost GPU, CPU host, broken host --------------------------------------------------------------------------
def fake(outputs, found=("nvidia-smi",)):
    """runner/which doubles: ``outputs`` maps an argv tail (joined) to (rc, stdout)."""
    calls = []

    def runner(argv):
        calls.append(argv)
        key = " ".join(argv[1:])
        if key not in outputs:
            raise AssertionError("unexpected command %s" % argv)
        rc, out = outputs[key]
        return rc, out, ""

    def which(name):
        return "/usr/bin/%s" % name if name in found else None

    return runner, which, calls


def recorded_text(name):
    """A recording of the binary's text: what it printed, without the 'rc=N' line the capture appended."""
    text = fixture(name)
    return text[:text.rindex("rc=")]


def test_one_gpu_of_two_lost_reads_the_other_alone(tmp_path):
    runner, which, calls = fake({
        "-q -x": (15, recorded_text("recorded_real_535.261.03_q_x_xid79_second_of_two.txt")),
        "-L": (15, recorded_text("recorded_real_535.261.03_L_xid79_second_of_two.txt")),
        "-q -x -i 0": (0, recorded("i0_xid79_second_of_two")),
    }, found=("nvidia-smi",))
    fact = gh.read_host(runner, which, pci_devices_path=str(tmp_path))
    assert fact["verdict"] == "unhealthy" and fact["host_kind"] == "gpu" and fact["gpu_count"] == 2
    assert [(g["index"], g["verdict"]) for g in fact["gpus"]] == [(0, "healthy")]
    assert fact["reasons"] == ["GPU 1: fallen off the bus (nvidia-smi: GPU is lost. Reboot the system to recover this GPU): "
                               "reboot, replace the GPU if it stays lost"]
    assert fact["fallen_off_bus"] == ["index 1"]
    assert fact["kernel_log"]["error"].startswith("neither journalctl nor dmesg")


def test_the_only_gpu_lost():
    runner, which, _calls = fake({"-q -x": (15, recorded_text("recorded_real_535.261.03_q_x_xid79.txt")),
                                  "-L": (15, "Unable to determine the device handle for gpu 0: GPU is lost.  Reboot the system to recover this GPU\n")})
    state = gh.read_nvidia_smi(runner, "/usr/bin/nvidia-smi")
    assert state["gpus"] == [] and state["lost"] == [{"id": "0", "message": "GPU is lost.  Reboot the system to recover this GPU"}]
    fact = gh.evaluate(state, [], [], {})
    assert fact["verdict"] == "unhealthy" and fact["host_kind"] == "gpu"


def test_cpu_host_is_healthy_and_says_why(tmp_path):
    runner, which, calls = fake({}, found=())
    fact = gh.read_host(runner, which, pci_devices_path=str(tmp_path))
    assert (fact["verdict"], fact["host_kind"], fact["gpus"], fact["reasons"]) == ("healthy", "cpu", [], [])
    assert fact["status"] == "CPU host: no NVIDIA GPU on the PCI bus and no nvidia-smi; nothing to check"
    assert calls == []


def _pci(tmp_path, *names):
    for name in names:
        device = tmp_path / name
        device.mkdir(parents=True)
        (device / "vendor").write_text("0x10de\n")
        (device / "class").write_text("0x030200\n")
    return str(tmp_path)


def test_broken_host_pci_shows_gpus_nvidia_smi_does_not(tmp_path):
    pci = _pci(tmp_path, "0000:4e:00.0", "0000:cb:00.0")
    runner, which, _calls = fake({"-q -x": (0, recorded("healthy")), "-k -b --no-pager -o short-iso": (0, "")},
                                 found=("nvidia-smi", "journalctl"))
    fact = gh.read_host(runner, which, pci_devices_path=pci, dcgm=False)
    assert fact["verdict"] == "unhealthy" and fact["host_kind"] == "gpu"
    assert fact["reasons"] == ["1 NVIDIA GPU(s) on the PCI bus that nvidia-smi does not list (00000000:CB:00.0): fallen off the bus or "
                               "without a driver"]
    assert fact["fallen_off_bus"] == ["00000000:CB:00.0"]


@pytest.mark.parametrize("rc, recording, why", [
    (9, "recorded_real_535.261.03_no_driver.txt", "nvidia-smi cannot talk to the NVIDIA driver (not loaded or failed)"),
    (6, "recorded_real_535.261.03_no_devices.txt", "the driver sees none of them"),
])
def test_broken_host_without_a_working_driver(tmp_path, rc, recording, why):
    pci = _pci(tmp_path, "0000:4e:00.0")
    runner, which, _calls = fake({"-q -x": (rc, recorded_text(recording))}, found=("nvidia-smi",))
    fact = gh.read_host(runner, which, pci_devices_path=pci)
    assert (fact["verdict"], fact["host_kind"]) == ("unhealthy", "broken")
    assert fact["reasons"] == ["1 NVIDIA GPU(s) on the PCI bus (0000:4e:00.0) but %s" % why]


def test_nvidia_smi_installed_on_a_cpu_host(tmp_path):
    runner, which, _calls = fake({"-q -x": (9, recorded_text("recorded_real_535.261.03_no_driver.txt"))}, found=("nvidia-smi",))
    fact = gh.read_host(runner, which, pci_devices_path=str(tmp_path))
    assert (fact["verdict"], fact["host_kind"]) == ("healthy", "cpu")
    assert fact["status"].startswith("CPU host: no NVIDIA GPU on the PCI bus (nvidia-smi: no_driver)")


def test_an_unexpected_nvidia_smi_failure_never_reads_healthy(tmp_path):
    runner, which, _calls = fake({"-q -x": (255, "Internal NVML error\n")})
    fact = gh.read_host(runner, which, pci_devices_path=str(tmp_path))
    assert fact["verdict"] == "unhealthy" and fact["reasons"] == ["nvidia-smi -q -x failed (rc=255): Internal NVML error"]


def test_xml_that_is_not_nvidia_smis_is_an_error():
    with pytest.raises(gh.GpuHealthError, match="no XML"):
        gh.parse_q_x("No devices were found")


# --- DCGM (written: the table dcgmi health -c prints, NVIDIA DCGM user guide) ------------------------------------------
DCGM_WARNING = """Health Monitor Report
+----------------------------------------------------------------------------+
| Group 0          | Overall Health: Warning                                 |
+==================+=========================================================+
| GPU ID: 0        | Warning                                                 |
|                  | PCIe system: Warning - Detected more than 8 PCIe        |
|                  | replays per minute for GPU 0: 13                        |
+------------------+---------------------------------------------------------+
"""


def test_dcgm_health_warning_degrades_and_failure_is_unhealthy():
    view = gh.parse_dcgm_health(DCGM_WARNING)
    assert view["overall"] == "warning" and view["details"] == ["PCIe system: Warning - Detected more than 8 PCIe"]
    fact = verdict_of(recorded("healthy"))
    fact = gh.evaluate({"status": "ok", "gpus": gh.parse_q_x(recorded("healthy"))["gpus"]}, [], [], {},
                       dcgm={"health": view, "diag": None, "error": None})
    assert fact["verdict"] == "degraded" and fact["reasons"][0].startswith("DCGM health check: warning")
    failed = gh.parse_dcgm_health(DCGM_WARNING.replace("Overall Health: Warning", "Overall Health: Failure"))
    assert failed["overall"] == "failure"
    assert gh.parse_dcgm_health('{"body": {"Overall Health": {"value": "Healthy"}}}')["overall"] is None
    assert gh.parse_dcgm_health('{"Overall Health": "Healthy"}')["overall"] == "healthy"


def test_dcgm_not_answering_is_a_note():
    runner, which, _calls = fake({"health -c": (255, "Error: unable to establish a connection to the specified host: localhost")},
                                 found=("dcgmi",))
    view = gh.read_dcgm(runner, which)
    assert view["health"] is None and view["error"].startswith("dcgmi health -c failed (rc=255)")
    assert gh.read_dcgm(*fake({}, found=())[:2]) is None


# --- the textfile --------------------------------------------------------------------------------------------------------
def test_metrics_carry_verdict_reasons_and_counters():
    fact = verdict_of(recorded("row_remap_pending"), gh.parse_xid_lines(XID63.replace("3b:00", "4e:00")))
    fact["quarantined"] = True
    text = gh.render_metrics(fact, 1796464800)
    assert 'aiops_gpu_host_health{host_kind="gpu"} 2' in text
    assert 'aiops_gpu_health_verdict{bus_id="00000000:4E:00.0",gpu="0",uuid="GPU-5f0c3a1e-7b2d-4c9a-8e61-d0a4b3c2e1f0"} 2' in text
    assert 'aiops_gpu_row_remap_pending{bus_id="00000000:4E:00.0",gpu="0"} 1' in text
    assert 'aiops_gpu_xid_events_total{bus_id="00000000:4E:00.0",class="hardware",xid="63"} 1' in text
    assert 'aiops_gpu_health_reason{reason="GPU 0 (00000000:4E:00.0): row remap pending, reset required",severity="unhealthy"} 1' in text
    assert "aiops_gpu_quarantined 1" in text and "aiops_gpu_reset_recommended 1" in text
    assert "aiops_gpu_health_read_timestamp_seconds 1796464800" in text
    failed = gh.render_metrics(None, 1796464800, success=False)
    assert "aiops_gpu_health_read_success 0" in failed and "aiops_gpu_host_health" not in failed
