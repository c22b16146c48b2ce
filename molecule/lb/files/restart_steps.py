"""The rolling restart (playbooks/restart.yml, what the EDA rulebook runs when Triton is down or not ready; issue 34),
on the same four hosts behind HAProxy, under the same live load, balancer retries on (as since b_retries_on):
  j_restart_stopped  roll-3's Triton unit stopped (HAProxy's health check takes it out); restart.yml --limit roll-3
                     drains it (seen in HAProxy's drain state), restarts the unit, waits until ready, runs every served
                     model's golden cases and the GPU gate, and undrains it; the other hosts untouched; 0 failed
                     requests.
"""

import re
import time

from lab_hosts import podman

HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
HOST = "roll-3"
ORDER = ["j_restart_stopped"]


def stop_out_of_traffic(host, unit, lb_states, timeout=30):
    """Stop the host's Triton, then wait until HAProxy's health check has it out (a fault injected before a step:
    a Triton dying under load loses what it was answering, which no drain can save); HAProxy's state then
    ("up" if it still sends there after ``timeout`` s)."""
    podman("exec", host, "systemctl", "stop", unit)
    deadline = time.time() + timeout
    while time.time() < deadline and lb_states().get(host) == "up":
        time.sleep(0.5)
    return lb_states().get(host)


def run(step, check, results, args, flag, pins_now, unit, lb_states, skip):
    """``step``/``check`` are the driver's; ``flag`` the servers' vars the fleet runs with, ``pins_now`` the group
    pins it serves, ``unit`` Triton's unit, ``lb_states`` a function returning HAProxy's state per host."""
    if "j_restart_stopped" in skip:
        return

    def verdict(cond, message):
        check(cond, message, results, args.results)

    stopped = stop_out_of_traffic(HOST, unit, lb_states)
    verdict(stopped != "up", "j: HAProxy still sends to roll-3 30 s after its Triton stopped")
    entry, proc = step("j_restart_stopped", "playbooks/restart.yml", True, extra=["--limit", HOST], readiness={},
                       servers_extra=flag, pins=pins_now)
    entry["state_before"] = stopped
    verdict(entry["after"]["pid"][HOST] not in (None, "", "0", 0), "j: Triton on roll-3 is not running after the restart")
    verdict(all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in HOSTS if h != HOST),
            "j: a host other than roll-3 was restarted: %s -> %s" % (entry["before"]["pid"], entry["after"]["pid"]))
    verdict(any(HOST in s for s in entry["out_of_traffic"]) and entry["last_states"].get(HOST) == "up",
            "j: roll-3 was not drained and put back: %s, last %s" % (entry["out_of_traffic"][-3:], entry["last_states"]))
    flow = re.search(r"Drain - set the server to DRAIN.*Restart Triton.*Every served model answers its golden cases"
                     r".*Put the host back into traffic", proc.stdout, re.S)
    verdict(flow is not None, "j: restart.yml did not go drain, restart, golden cases, undrain (log)")
