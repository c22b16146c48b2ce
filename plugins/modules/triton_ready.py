#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_ready
short_description: Wait until Triton reports ready, or name at once why its unit cannot
description:
  - Polls Triton's C(/v2/health/ready) until it answers 200, for at most O(timeout) seconds.
  - With O(unit), reads the systemd unit every round (C(systemctl show -p
    LoadState,ActiveState,SubState,Result,NRestarts,ExecMainStatus)) and fails at once, without waiting out
    O(timeout), when the unit cannot become ready. That is a unit that is stopped or failed (C(inactive), C(failed)),
    not installed or masked, or crash-looping under C(Restart=). Crash-looping means waiting to restart
    (C(auto-restart)), or C(NRestarts) grown since the wait began, so Triton exited at least once during the wait.
  - The failure names the unit, its state in words (for example
    C(activating (auto-restart, result exit-code, status 1, restarted 2 times))), the last readiness answer and what
    to run next (C(journalctl -u <unit> -n 50)). A timeout names the unit's state too.
  - A unit whose state cannot be read (no systemd, C(systemctl) failing) does not end the wait; the timeout then
    says the state is unknown.
version_added: "0.2.0"
author:
  - aiops.triton contributors (@aiops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiops.triton.attributes.actiongroup_triton_api
  - aiops.triton.triton_api
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  unit:
    description:
      - The systemd unit that runs Triton, read every round. Omitted, only C(/v2/health/ready) is polled.
    type: str
  timeout:
    description: Seconds Triton has to answer 200. V(0) asks once.
    type: int
    default: 300
  delay:
    description: Seconds between rounds.
    type: float
    default: 2
notes:
  - C(/v2/health/ready) is not a restricted API on the hosts the C(triton_server) role sets up, so O(api_key) is
    needed only where a site restricts health too.
  - Reads only, in check mode as well; C(changed) is always false.
"""

EXAMPLES = r"""
- name: Wait until Triton reports ready (a stopped or crash-looping unit is named at once)
  aiops.triton.triton_ready:
    url: http://127.0.0.1:8000
    unit: tritonserver.service
    timeout: 180

- name: Wait, and build an own message from the result
  aiops.triton.triton_ready:
    unit: tritonserver.service
    timeout: 300
  register: __ready
  failed_when: false

- name: Say why Triton is not ready
  ansible.builtin.fail:
    msg: "{{ inventory_hostname }}: {{ __ready.msg }}"
  when: not __ready.ready
"""

RETURN = r"""
ready:
  description: Whether C(/v2/health/ready) answered 200.
  returned: always
  type: bool
  sample: false
reason:
  description:
    - How the wait ended. V(ready); V(stopped), the unit is stopped, failed, not installed or masked; V(crash_loop),
      systemd restarts Triton after it exited; V(timeout), no 200 within O(timeout) seconds.
  returned: always
  type: str
  sample: crash_loop
cause:
  description: Why the wait ended, in words (empty when ready).
  returned: always
  type: str
  sample: "Triton exited and systemd is about to restart it: a crash loop, not a slow start"
seconds:
  description: Seconds the wait took.
  returned: always
  type: float
  sample: 6.1
rounds:
  description: Readiness requests made.
  returned: always
  type: int
  sample: 4
answer:
  description: "The last readiness answer in words: C(200), C(HTTP 400: Bad Request), C(Connection refused)."
  returned: always
  type: str
  sample: Connection refused
unit:
  description:
    - The unit's properties as the last C(systemctl show) gave them (strings); empty without O(unit), or when they
      could not be read.
  returned: always
  type: dict
  sample: {"LoadState": "loaded", "ActiveState": "activating", "SubState": "auto-restart", "Result": "exit-code",
           "NRestarts": "2", "ExecMainStatus": "1"}
status:
  description: The unit's state in words; empty without O(unit).
  returned: always
  type: str
  sample: activating (auto-restart, result exit-code, status 1, restarted 2 times)
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiops.triton.plugins.module_utils import triton_ready as tr
from ansible_collections.aiops.triton.plugins.module_utils.triton_api import (
    CONNECTION_ARGSPEC, TritonApiError, TritonClient)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            CONNECTION_ARGSPEC,
            unit=dict(type="str"),
            timeout=dict(type="int", default=300),
            delay=dict(type="float", default=2),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] < 0 or params["delay"] <= 0:
        module.fail_json(msg="timeout must be 0 or more and delay more than 0 (got timeout=%s, delay=%s)"
                         % (params["timeout"], params["delay"]))
    client = TritonClient(params["url"], api_key=params["api_key"], api_key_header=params["api_key_header"])
    unit = params["unit"]

    def probe(seconds):
        client.timeout = seconds
        try:
            status = client.request("GET", tr.READY_PATH)[0]
        except TritonApiError as exc:
            return False, exc.cause
        return status == 200, str(status)

    def read_unit():
        systemctl = module.get_bin_path("systemctl")
        if not systemctl:
            return {}, "systemctl not found"
        rc, out, err = module.run_command(tr.show_argv(systemctl, unit))
        if rc != 0:
            said = (err or out).strip().splitlines()
            return {}, said[0] if said else "systemctl show exited %d" % rc
        return tr.parse_show(out), None

    result = tr.wait_ready(probe, read_unit if unit else None, params["timeout"], params["delay"])
    result["msg"] = tr.message(result, params["url"], unit, params["timeout"])
    if not result["ready"]:
        module.fail_json(changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
