#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

DOCUMENTATION = r"""
---
module: triton_rollout_bake
short_description: Bake a rollout batch on live traffic and fail when its failure ratio or latency breaches a limit
description:
  - Run on the controller after a rollout batch changed its hosts' models. Waits O(bake_seconds), then
    judges the traffic the batch (O(changed_hosts)) served in that window for each of O(models), by its
    failure ratio, its mean latency per request, and its mean latency against the hosts not yet changed
    (O(baseline_hosts)) for the same model.
  - The numbers come from Triton's own counters (C(nv_inference_request_success),
    C(nv_inference_request_failure) over all its C(reason) labels, C(nv_inference_count),
    C(nv_inference_request_duration_us), C(nv_inference_queue_duration_us)), summed over the versions of
    each model and over the hosts of each group.
  - With O(prometheus_url), from a Prometheus server that scrapes the hosts, by one PromQL C(increase) query
    per counter over the window at its end. Without it, from each host's Triton C(/metrics), read at the
    start and at the end of the window. A counter that went down in between (Triton restarted) counts from
    0 again, never negative; a series that appears in the window (a version loaded) counts from 0.
  - Fails when any limit is breached; the message names the model, the metric, its value, the hosts and
    the limit, one sentence per breach, so a C(block)/C(rescue) can roll the batch back and stop the run.
  - Fails as well, before any waiting when it can, when the bake cannot be judged, that is a changed host's
    metrics unreadable (at the start or the end), a changed host reporting no counters for a model in
    O(models) (Triton does not serve it there), Prometheus answering an error or holding no series for a
    changed host. A baseline host that cannot be read is left out with a warning.
  - The bake sees what Triton counts as failed. Measured on Triton 2.51, it counts neither a request it refuses
    up front (a wrong shape or data type, a missing input; in no counter at all) nor an error response a
    python model returns (an C(InferenceResponse) with C(error) set, counted as a success). A model fails a
    request in the counters by raising from C(execute) (reason C(BACKEND)); Triton fails the ones it rejects
    or cancels in its queue.
version_added: "0.2.0"
author:
  - aiops.triton contributors (@aiops)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads metrics only, so it bakes in check mode too and can fail there. Use C(when) to skip it.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  changed_hosts:
    description:
      - The hosts the batch just changed, each with C(name) (the inventory name; it names the host in
        results and messages) and C(metrics_url) (Triton's metrics endpoint as the controller reaches it,
        for example V(http://10.0.0.5:8002/metrics)).
      - With O(prometheus_url), C(prometheus_label_value) may give the host's value of
        O(prometheus_host_label) instead; see there.
    type: list
    elements: dict
    required: true
  baseline_hosts:
    description:
      - Hosts not changed yet (the later rollout groups), same shape as O(changed_hosts). Their traffic is
        the reference for O(max_latency_ratio). A host that does not serve a model does not count for it.
    type: list
    elements: dict
    default: []
  models:
    description:
      - The model names to judge; normally the models the batch changed. Empty means nothing to judge,
        the module passes at once without waiting.
    type: list
    elements: str
    required: true
  group:
    description: What the changed hosts are, in messages (the rollout group's name).
    type: str
    default: the changed hosts
  bake_seconds:
    description:
      - How long to watch the live traffic, in seconds. With Prometheus make it several scrape intervals,
        or PromQL's C(increase) has too few samples to see anything.
    type: float
    default: 60
  max_failure_ratio:
    description:
      - Largest failed share of a model's requests on the changed hosts in the window, between 0 and 1.
      - The default V(0.0) fails the bake on any failed request (errors in the model, requests rejected by
        its queue, cancelled ones). A canary exists to stop on evidence, and a model that is right has
        no failed requests in Triton's counters, since malformed requests never reach them. Raise it for
        a fleet whose clients cancel requests routinely.
    type: float
    default: 0.0
  max_latency_ms:
    description:
      - Largest mean latency per successful request (Triton's request duration, queueing included) of a
        model on the changed hosts, in milliseconds. Not checked when unset.
    type: float
  max_latency_ratio:
    description:
      - Largest ratio of the changed hosts' mean latency to the baseline hosts' mean latency for the same
        model. Judged only when the baseline served at least O(min_requests) (and at least one)
        successful requests of the model in the window; a note says when it was not.
      - V(null) turns the comparison off.
    type: float
    default: 1.5
  min_requests:
    description:
      - Fewest requests of each model the changed hosts together must serve in the window for a verdict;
        fewer is a breach (metric C(requests)), so the batch is rolled back as unproven.
      - With the default V(0), a model with no traffic in the window passes, with a note in RV(notes)
        and a warning saying it was not judged.
    type: int
    default: 0
  prometheus_url:
    description:
      - Base URL of a Prometheus server that scrapes the Triton hosts (for example
        V(http://prometheus.example.com:9090)). When unset, each host's C(metrics_url) is read instead.
    type: str
  prometheus_host_label:
    description:
      - The label that tells the hosts' Triton series apart in Prometheus.
      - A host's value is its C(prometheus_label_value) when given; else, for V(instance), the host:port of its
        C(metrics_url) (what Prometheus records for a target it scrapes at that address); else its C(name).
      - The aiops.triton.triton_monitoring role gives every Triton target a C(host) label holding the inventory
        name, so V(host) needs no addresses there.
    type: str
    default: instance
  prometheus_job:
    description: Only series of this scrape job (C(job) label); the triton_monitoring role's is V(aiops-triton).
    type: str
  timeout:
    description: Seconds to wait for each HTTP answer (a host's metrics, a Prometheus query).
    type: int
    default: 10
  validate_certs:
    description: Verify TLS certificates of https URLs.
    type: bool
    default: true
notes:
  - Runs where it is called; call it on the controller with C(delegate_to) V(localhost) and C(run_once).
  - URLs are reached directly; proxy environment variables are ignored.
  - Requests of all versions of a model count together; after a rollout only the new version serves.
  - Mean latencies divide Triton's durations by successful requests (Triton adds no duration for a failed one).
seealso:
  - module: aiops.triton.triton_verify
"""

EXAMPLES = r"""
- name: Bake the canary for 5 minutes on its own /metrics, against the later groups
  aiops.triton.triton_rollout_bake:
    group: triton_canary
    changed_hosts:
      - {name: gpu-infer-01, metrics_url: "http://10.0.1.11:8002/metrics"}
    baseline_hosts:
      - {name: gpu-infer-02, metrics_url: "http://10.0.1.12:8002/metrics"}
      - {name: gpu-infer-03, metrics_url: "http://10.0.1.13:8002/metrics"}
    models: [anomaly_detector]
    bake_seconds: 300
    max_failure_ratio: 0.001
    max_latency_ms: 50
    max_latency_ratio: 1.5
    min_requests: 100
  delegate_to: localhost
  run_once: true

- name: The same from a Prometheus that the triton_monitoring role configured (host label = inventory name)
  aiops.triton.triton_rollout_bake:
    group: triton_canary
    changed_hosts: [{name: gpu-infer-01}]
    baseline_hosts: [{name: gpu-infer-02}, {name: gpu-infer-03}]
    models: [anomaly_detector, ops_pipeline]
    bake_seconds: 300
    prometheus_url: http://prometheus.example.com:9090
    prometheus_host_label: host
    prometheus_job: aiops-triton
  delegate_to: localhost
  run_once: true

- name: Roll the batch back when the bake fails
  block:
    - name: Bake
      aiops.triton.triton_rollout_bake:
        changed_hosts: [{name: lab-1, metrics_url: "http://10.89.77.2:8002/metrics"}]
        models: [anomaly_detector]
        bake_seconds: 60
      delegate_to: localhost
      run_once: true
  rescue:
    - name: Restore the last verified model set
      ansible.builtin.include_role:
        name: aiops.triton.triton_models
        tasks_from: rollback
"""

RETURN = r"""
passed:
  description: No limit was breached (the module fails otherwise).
  returned: always
  type: bool
  sample: false
group:
  description: The changed hosts' name in messages (O(group)).
  returned: always
  type: str
  sample: triton_canary
source:
  description: Where the numbers came from, V(metrics) (each host's /metrics) or V(prometheus).
  returned: always
  type: str
  sample: metrics
window:
  description: The window judged, start and end as Unix times, and its length.
  returned: always
  type: dict
  sample: {start: 1796300000.0, end: 1796300060.2, seconds: 60.2}
limits:
  description: The limits applied.
  returned: always
  type: dict
  sample: {max_failure_ratio: 0.0, max_latency_ms: null, max_latency_ratio: 1.5, min_requests: 0}
hosts:
  description: The hosts whose traffic counted, C(changed) and C(baseline) (a baseline host left out is not listed).
  returned: always
  type: dict
  sample: {changed: [lab-1], baseline: [lab-2]}
models:
  description:
    - Per model, the numbers of the window for C(changed) and C(baseline) (V(null) when no baseline host
      serves the model), and C(latency_ratio) (changed over baseline mean latency, V(null) when either has none).
    - Each group's numbers are C(requests) (successes + failures), C(successes), C(failures),
      C(failures_by_reason), C(inferences) (batch items), C(failure_ratio), C(mean_latency_ms),
      C(mean_queue_ms) (V(null) without requests / successes) and C(hosts), the same per host.
  returned: always
  type: dict
  sample:
    anomaly_detector:
      changed:
        requests: 412
        successes: 362
        failures: 50
        failures_by_reason: {BACKEND: 50}
        inferences: 362
        failure_ratio: 0.1214
        mean_latency_ms: 3.412
        mean_queue_ms: 0.051
        hosts:
          lab-1: {requests: 412, successes: 362, failures: 50, failures_by_reason: {BACKEND: 50}, inferences: 362,
                  failure_ratio: 0.1214, mean_latency_ms: 3.412, mean_queue_ms: 0.051}
      baseline:
        requests: 398
        successes: 398
        failures: 0
        failures_by_reason: {}
        inferences: 398
        failure_ratio: 0.0
        mean_latency_ms: 3.1
        mean_queue_ms: 0.049
        hosts:
          lab-2: {requests: 398, successes: 398, failures: 0, failures_by_reason: {}, inferences: 398,
                  failure_ratio: 0.0, mean_latency_ms: 3.1, mean_queue_ms: 0.049}
      latency_ratio: 1.101
breaches:
  description:
    - Each limit breached, C(metric) one of V(failure_ratio), V(mean_latency_ms), V(mean_latency_ratio),
      V(requests); C(hosts) the changed hosts that breached it on their own (all with traffic when only their
      sum did); C(msg) one sentence. V(mean_latency_ratio) breaches carry C(baseline), the baseline's mean latency.
  returned: always
  type: list
  elements: dict
  sample:
    - model: anomaly_detector
      metric: failure_ratio
      value: 0.1214
      limit: 0.0
      hosts: [lab-1]
      msg: "bake: anomaly_detector failure_ratio 0.1214 on triton_canary (lab-1) > limit 0.0"
notes:
  description: What was not judged and why (no traffic, too little baseline traffic).
  returned: always
  type: list
  elements: str
  sample: ["anomaly_detector: the baseline served 0 successful request(s) in the window (needs 1), latency ratio not judged"]
msg:
  description: On failure, every breach's sentence joined by C(; ), or why the bake could not be judged.
  returned: failure
  type: str
  sample: "bake: anomaly_detector failure_ratio 0.1214 on triton_canary (lab-1) > limit 0.0"
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible.module_utils.urls import open_url

from ansible_collections.aiops.triton.plugins.module_utils.rollout_bake import BakeError, run_bake

try:
    from concurrent.futures import ThreadPoolExecutor
except ImportError:  # pragma: no cover - Python 2 controllers are not supported by ansible-core 2.19
    ThreadPoolExecutor = None

MAX_PARALLEL_SCRAPES = 16


def _get(url, timeout, validate_certs):
    resp = open_url(url, timeout=timeout, validate_certs=validate_certs, use_proxy=False)
    try:
        return to_text(resp.read(), errors="surrogate_or_strict")
    finally:
        resp.close()


def fetcher(timeout, validate_certs):
    """fetch_many for run_bake: every host read at once, so the window starts and ends alike for all."""
    def fetch_one(url):
        try:
            return _get(url, timeout, validate_certs)
        except Exception as exc:  # any failure to read is reported per host, never raised
            return exc

    def fetch_many(urls, hosts):
        with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL_SCRAPES, len(urls)))) as pool:
            return list(zip(hosts, pool.map(fetch_one, urls)))
    return fetch_many


def json_fetcher(timeout, validate_certs):
    def fetch_json(url, query):
        try:
            text = _get(url + "?" + urlencode(query), timeout, validate_certs)
        except HTTPError as exc:
            # Prometheus explains a bad query in its JSON body
            text = to_text(exc.read(), errors="surrogate_or_strict")
            if not text.strip().startswith("{"):
                raise BakeError("Prometheus query %s: HTTP %s %s" % (url, exc.code, exc.reason))
        except Exception as exc:
            raise BakeError("cannot reach Prometheus at %s: %s" % (url, exc))
        try:
            return json.loads(text)
        except ValueError:
            raise BakeError("Prometheus at %s answered no JSON: %r" % (url, text[:200]))
    return fetch_json


def main():
    module = AnsibleModule(
        argument_spec=dict(
            changed_hosts=dict(type="list", elements="dict", required=True),
            baseline_hosts=dict(type="list", elements="dict", default=[]),
            models=dict(type="list", elements="str", required=True),
            group=dict(type="str", default="the changed hosts"),
            bake_seconds=dict(type="float", default=60),
            max_failure_ratio=dict(type="float", default=0.0),
            max_latency_ms=dict(type="float"),
            max_latency_ratio=dict(type="float", default=1.5),
            min_requests=dict(type="int", default=0),
            prometheus_url=dict(type="str"),
            prometheus_host_label=dict(type="str", default="instance"),
            prometheus_job=dict(type="str"),
            timeout=dict(type="int", default=10),
            validate_certs=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = run_bake(params, fetcher(params["timeout"], params["validate_certs"]),
                          json_fetcher(params["timeout"], params["validate_certs"]), time.sleep, time.time)
    except BakeError as exc:
        module.fail_json(msg="bake: %s" % exc, passed=False)
    for warning in result.pop("warnings"):
        module.warn(warning)
    for note in result["notes"]:
        if "no requests" in note:
            module.warn("bake: %s" % note)
    if result["breaches"]:
        module.fail_json(msg="; ".join(b["msg"] for b in result["breaches"]), changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
