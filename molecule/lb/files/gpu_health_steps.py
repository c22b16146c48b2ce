"""The GPU-health steps of molecule/lb (issue 31), on the same four hosts behind HAProxy, under the same live load.

Lab hosts have no GPU: each gets the test doubles of nvidia-smi (it prints the `-q -x` XML recorded from the real
535 binary for the state named in a file on the host, and `-r` clears a state a reset clears) and of the kernel
log (the driver's Xid lines for that state), at paths only the triton_gpu_health role is pointed at; every other
role still sees a CPU host. Then, in order:
  g_canary_row_remap        the canary's GPU has a pending row remap: the rollout stops before any host changes
                            and says the canary has no healthy host;
  g_wave_fault_mid_rollout  a wave_1 host's GPU falls off the bus (Xid 79) once the canary serves the new version:
                            that host is drained, quarantined and named a host fault, not a model fault; the model
                            is not rolled back; every other host upgrades; 0 failed requests;
  g_undrain_refused         undrain.yml refuses the unhealthy host and leaves it drained;
                            (the cap, triton_gpu_health_max_unhealthy (1), stops a rollout before any host changes
                            in g_canary_row_remap, the same task; through the alert path in eda_steps' storm)
  g_quarantine_repaired     quarantine.yml on the same host with a pending row remap instead: the reset clears it,
                            the host is verified and back in traffic, its quarantine released (a fault the reset and
                            the reboot cannot clear, Xid 79, left drained and quarantined with the GPU to replace
                            named: files/eda_steps.py's k_eda_gpu_storm, where the alert runs quarantine.yml);
  g_rollout_after_repair    the repaired host takes the rollout it sat out; every host serves the same version.
"""

import os

from lab_hosts import podman

HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DOUBLES = os.path.join(ROOT, "tests", "doubles")
SMI = "/usr/local/lib/aiops-test/nvidia-smi"
KERNEL_LOG = "/usr/local/lib/aiops-test/kernel-log"
STATE_FILE = "/etc/aiops-test/gpu_state"
QUARANTINE_FILE = "/var/lib/aiops-triton/gpu_health/quarantine.json"
HEALTH_VARS = {"triton_gpu_health_nvidia_smi_path": SMI, "triton_gpu_health_kernel_log_command": [KERNEL_LOG],
               "triton_gpu_health_max_unhealthy": 1}
ORDER = ["g_canary_row_remap", "g_wave_fault_mid_rollout", "g_undrain_refused", "g_quarantine_repaired", "g_rollout_after_repair"]


def install_doubles():
    """The doubles on every host (tests only: a role never installs them), every GPU healthy."""
    for host in HOSTS:
        podman("exec", host, "mkdir", "-p", os.path.dirname(SMI), os.path.dirname(STATE_FILE))
        podman("cp", os.path.join(DOUBLES, "nvidia-smi-health.double"), "%s:%s" % (host, SMI))
        podman("cp", os.path.join(DOUBLES, "kernel-log.double"), "%s:%s" % (host, KERNEL_LOG))
        podman("exec", host, "chmod", "0755", SMI, KERNEL_LOG)
        set_state(host, "healthy")


def set_state(host, state):
    podman("exec", host, "sh", "-c", "printf '%%s\\n' %s > %s" % (state, STATE_FILE))


def quarantined(host):
    return podman("exec", host, "test", "-e", QUARANTINE_FILE, check=False).returncode == 0


def clear_quarantine(host):
    podman("exec", host, "rm", "-f", QUARANTINE_FILE)


def run(step, check, results, args, flag, pins_of, serving_state, wait_serving, skip):
    """The steps above; ``step``/``check`` are the driver's; ``pins_of(version)`` the group pins with
    anomaly_detector at that version; ``serving_state()`` each host's READY versions and readiness;
    ``wait_serving(host, model, version)`` returns once that host serves it."""
    extra = dict(flag, **HEALTH_VARS)

    def out_of(proc):
        return proc.stdout + proc.stderr

    def verdict(cond, message):
        check(cond, message, results, args.results)

    install_doubles()
    # what every host serves when the steps begin (5 after the failure sequence; 1 after a bare converge, --start-at)
    base = serving_state()["roll-1"]["anomaly_detector"][0]
    new = 2 if base != 2 else 5
    if "g_canary_row_remap" not in skip:
        set_state("roll-1", "row_remap_pending")
        entry, proc = step("g_canary_row_remap", "playbooks/model_upgrade.yml", False, batch_rule=False,
                           servers_extra=extra, pins=pins_of(new))
        entry["hosts"] = serving_state()
        verdict("triton_canary (the canary) has no healthy host" in out_of(proc) and "row remap pending" in out_of(proc),
                "g: the rollout did not stop for the canary's pending row remap (log g_canary_row_remap.log)")
        verdict(all(s["anomaly_detector"] == [base] for s in entry["hosts"].values()),
                "g: a host changed although the canary had no healthy GPU: %s" % entry["hosts"])
        verdict(not any(quarantined(h) for h in HOSTS), "g: a host was quarantined by a rollout that changed nothing")
        set_state("roll-1", "healthy")

    if "g_wave_fault_mid_rollout" not in skip:
        import threading

        def fault_after_canary():
            # once the canary serves the new version: the wave's check has passed, its batches have not begun
            if wait_serving("roll-1", "anomaly_detector", new):
                set_state("roll-3", "xid79")
        injector = threading.Thread(target=fault_after_canary, daemon=True)
        injector.start()
        entry, proc = step("g_wave_fault_mid_rollout", "playbooks/model_upgrade.yml", True, batch_rule=False,
                           servers_extra=extra, pins=pins_of(new))
        injector.join(timeout=5)
        entry["hosts"] = serving_state()
        verdict(entry["last_states"].get("roll-3") == "drained", "g: the host whose GPU fell off the bus is not drained: %s"
                % entry["last_states"])
        verdict(all(entry["last_states"].get(h) == "up" for h in ("roll-1", "roll-2", "roll-4")),
                "g: a healthy host is out of traffic: %s" % entry["last_states"])
        verdict(all(entry["hosts"][h]["anomaly_detector"] == [new] for h in ("roll-1", "roll-2", "roll-4")),
                "g: the healthy hosts did not all upgrade: %s" % entry["hosts"])
        verdict(entry["hosts"]["roll-3"]["anomaly_detector"] == [base], "g: the faulted host changed: %s" % entry["hosts"])
        verdict("host fault, not model fault" in out_of(proc) and "rolled back" not in "".join(entry["summary"]),
                "g: the summary does not name roll-3 a host fault, or a model was rolled back: %s" % entry["summary"])
        verdict(quarantined("roll-3"), "g: roll-3 was not quarantined on the host")

    if "g_undrain_refused" not in skip:
        entry, proc = step("g_undrain_refused", "playbooks/undrain.yml", False, batch_rule=False,
                           extra=["--limit", "roll-3"], servers_extra=extra, pins=pins_of(new))
        verdict(entry["last_states"].get("roll-3") == "drained" and "host fault" in out_of(proc)
                and "fallen off the bus" in out_of(proc),
                "g: undrain.yml did not refuse the unhealthy roll-3 by its fault: %s" % entry["last_states"])

    if "g_quarantine_repaired" not in skip:
        set_state("roll-3", "row_remap_pending")
        entry, proc = step("g_quarantine_repaired", "playbooks/quarantine.yml", True, batch_rule=False,
                           extra=["--limit", "roll-3"], servers_extra=extra, pins=pins_of(new))
        verdict(entry["before"]["boot"]["roll-3"] == entry["after"]["boot"]["roll-3"],
                "g: the reset should have cleared the pending row remap without a reboot")
        verdict(all(entry["last_states"].get(h) == "up" for h in HOSTS) and not quarantined("roll-3"),
                "g: roll-3 is not back in traffic with its quarantine released: %s" % entry["last_states"])

    if "g_rollout_after_repair" not in skip:
        entry, proc = step("g_rollout_after_repair", "playbooks/model_upgrade.yml", True, batch_rule=False,
                           servers_extra=extra, pins=pins_of(new))
        entry["hosts"] = serving_state()
        verdict(all(s["anomaly_detector"] == [new] and s["health_ready"] == 200 for s in entry["hosts"].values()),
                "g: after the repair every host must serve anomaly_detector %s: %s" % (new, entry["hosts"]))
        verdict(all(entry["last_states"].get(h) == "up" for h in HOSTS), "g: not every host up: %s" % entry["last_states"])
    for host in HOSTS:  # the doubles stay; every GPU healthy for what runs after
        set_state(host, "healthy")
