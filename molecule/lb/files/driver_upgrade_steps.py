"""The driver upgrade as a flow (issue 38 item 2), on the same four hosts behind HAProxy, under the same live load.

roll-4 joins triton_gpu_servers for these steps only (an inventory overlay) and gets the real Debian packages the
nvidia_driver role installs on a GPU host (lab hosts have no GPU: DKMS reports the kernel without headers, nothing
is loaded, so no reboot is due). These steps replaced the nvidia_driver molecule scenario. In order:
  i_driver_require_gpu  playbooks/gpu_stack.yml --limit roll-4 -e nvidia_driver_require_gpu=true: refused, as
                    roll-4 has no GPU, before any driver package is installed;
  i_driver_install  playbooks/gpu_stack.yml --limit roll-4: driver 535.261.03, an exact pin that is not the newest
                    (bookworm-security carries a newer 535), held, nouveau blacklisted, the persistence daemon
                    enabled; Triton untouched;
  i_driver_upgrade  playbooks/nvidia_driver_upgrade.yml with the pin moved to the newest 535 Debian offers: roll-4 is
                    drained (seen in HAProxy's drain state with nothing in flight before its Triton stops), Triton
                    stopped, the held packages released, upgraded and held again, the GPU check run, Triton
                    started, every served model's golden cases passed, roll-4 undrained; the other hosts untouched;
                    0 failed requests.
Each step records roll-4's packages, holds and apt policy (``state``), and the install the files the role wrote
(``snapshot``), for the verify tests.
"""

import re

import scenario_checks  # molecule/scenario_checks.py
from lab_hosts import podman

HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
HOST = "roll-4"
PINNED = "535.261.03"
PACKAGES = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1", "firmware-nvidia-gsp"]
DRIVER = {"nvidia_driver_source": "distro", "nvidia_driver_branch": "535", "nvidia_driver_reboot": False}
ORDER = ["i_driver_install", "i_driver_upgrade"]
# what the role leaves on the host besides the packages (the tests of the former nvidia_driver scenario)
FILES = {
    "policy": "apt-cache policy nvidia-smi",
    "pref": "cat /etc/apt/preferences.d/nvidia-driver.pref",
    "sources": "cat /etc/apt/sources.list.d/nvidia-driver-debian.sources",
    "blacklist": "stat -c %a /etc/modprobe.d/blacklist-nouveau.conf; cat /etc/modprobe.d/blacklist-nouveau.conf",
    "persistenced": "systemctl is-enabled nvidia-persistenced; systemctl is-active nvidia-persistenced || true",
}


def host_state():
    """roll-4's driver packages (name -> version), its held packages and the upstream 535 versions apt offers."""
    shown = podman("exec", HOST, "dpkg-query", "-W", "-f", "${Package} ${Version}\\n", *PACKAGES, check=False).stdout
    held = podman("exec", HOST, "apt-mark", "showhold").stdout.split()
    offered = podman("exec", HOST, "apt-cache", "madison", "nvidia-smi").stdout
    # a package dpkg knows but has not installed prints an empty version
    versions = dict(line.split(" ", 1) for line in shown.splitlines() if line.split(" ", 1)[-1].strip() and " " in line)
    return {"versions": versions, "held": held,
            "offered": sorted(set(re.findall(r"\| (535\.\d+\.\d+)-", offered)),
                              key=lambda v: [int(p) for p in v.split(".")])}


def run(step, check, results, args, flag, pins_now, gpu_vars, skip):
    """The steps above; ``step``/``check`` are the driver's; ``flag`` the servers' vars the fleet runs with,
    ``pins_now`` the group pins it serves; ``gpu_vars`` point triton_gpu_health at the GPU doubles (healthy)."""
    same = dict(pins=pins_now, gpu_hosts=[HOST])

    def verdict(cond, message):
        check(cond, message, results, args.results)

    if "i_driver_install" not in skip:
        entry, proc = step("i_driver_require_gpu", "playbooks/gpu_stack.yml", False,
                           extra=["--limit", HOST, "-e", "nvidia_driver_require_gpu=true"],
                           servers_extra=dict(flag, nvidia_driver_version=PINNED, **DRIVER), **same)
        entry["state"] = host_state()
        verdict("no NVIDIA GPU is on this host" in proc.stdout + proc.stderr and not entry["state"]["versions"],
                "i: nvidia_driver_require_gpu did not refuse roll-4 before installing: %s" % entry["state"]["versions"])
        entry, proc = step("i_driver_install", "playbooks/gpu_stack.yml", True, extra=["--limit", HOST],
                           servers_extra=dict(flag, nvidia_driver_version=PINNED, **DRIVER), **same)
        # DKMS reported for the running kernel: no headers in a container, so no module built for it
        kernel = podman("exec", HOST, "uname", "-r").stdout.strip()
        said = re.search(r"No NVIDIA DKMS module for kernel\(s\): [^.\"]*\b%s\b" % re.escape(kernel), proc.stdout)
        entry["dkms_report"] = said.group(0) if said else None
        verdict(said is not None, "i: the DKMS report does not name the running kernel %s as without a module" % kernel)
        entry["state"] = state = host_state()
        verdict(sorted(state["versions"]) == sorted(PACKAGES)
                and all(v.startswith(PINNED + "-") for v in state["versions"].values()),
                "i: the driver packages are not at the pin %s: %s" % (PINNED, state["versions"]))
        verdict(entry["before"]["pid"] == entry["after"]["pid"], "i: installing the driver restarted Triton somewhere")
        shown = podman("exec", HOST, "sh", "-c", scenario_checks.snapshot_script(FILES), check=False)
        try:
            entry["snapshot"] = scenario_checks.parse_snapshot(shown.stdout)
        except scenario_checks.SnapshotError as exc:
            verdict(False, "i: roll-4's driver files could not be read: %s (%s)" % (exc, shown.stderr[-500:]))

    if "i_driver_upgrade" not in skip:
        offered = host_state()["offered"]
        target = offered[-1] if offered else None
        verdict(target and target != PINNED, "i: Debian offers no 535 newer than the pin %s: %s" % (PINNED, offered))
        entry, _proc = step("i_driver_upgrade", "playbooks/nvidia_driver_upgrade.yml", True, drain_proof=[HOST],
                            servers_extra=dict(flag, nvidia_driver_version=target, **dict(DRIVER, **gpu_vars)), **same)
        entry["target"] = target
        entry["state"] = state = host_state()
        verdict(all(v.startswith(target + "-") for v in state["versions"].values()) and len(state["versions"]) == len(PACKAGES),
                "i: roll-4's driver packages are not at %s: %s" % (target, state["versions"]))
        verdict(set(PACKAGES) <= set(state["held"]), "i: the driver packages are not held again: %s" % state["held"])
        verdict(entry["before"]["pid"][HOST] != entry["after"]["pid"][HOST], "i: Triton on roll-4 was not restarted")
        verdict(all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in HOSTS if h != HOST),
                "i: a host outside triton_gpu_servers was restarted: %s -> %s" % (entry["before"]["pid"], entry["after"]["pid"]))
        verdict(all(entry["last_states"].get(h) == "up" for h in HOSTS), "i: not every host back: %s" % entry["last_states"])
