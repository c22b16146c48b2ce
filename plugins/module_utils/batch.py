# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several models in one module call: the ``batch`` option of s3_model_sync, triton_model_config and triton_model.

A module call costs about 0.26 CPU-s of Python start-up and Ansible plumbing before it does any work
(docs/scaling.md); a role that loops over a host's models pays it once per model. With ``batch`` the module
runs each element, over the module's other options, in one process, and answers as a loop does: one result
per element in ``results`` (with ``item``, the element), ``changed`` when any changed, and every element
tried even after one failed, the task then failing with each failed element's message.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


class ItemFailed(Exception):
    """One model's failure: ``msg`` for the task, ``details`` merged into that model's result."""

    def __init__(self, msg, **details):
        super(ItemFailed, self).__init__(msg)
        self.details = details


def element_params(params, element):
    """The module's options for one element: the element's own values (those set) over the shared ones."""
    merged = dict(params)
    merged["batch"] = None
    merged.update((key, value) for key, value in element.items() if value is not None)
    return merged


def run(params, run_one):
    """``run_one(params)`` for each element of ``params['batch']``; returns the results, in order."""
    results = []
    for element in params["batch"]:
        item = dict((key, value) for key, value in element.items() if value is not None)
        try:
            result = run_one(element_params(params, element))
        except ItemFailed as exc:
            result = dict(exc.details, failed=True, changed=False, msg=str(exc))
        result["item"] = item
        results.append(result)
    return results


def answer(module, results):
    """Exit as a loop's task would: changed when any element changed, failed when any failed, naming each."""
    out = dict(changed=any(r.get("changed") for r in results), results=results)
    diffs = [r["diff"] for r in results if r.get("diff")]
    if module._diff and diffs:
        out["diff"] = diffs
    failed = [r for r in results if r.get("failed")]
    if failed:
        module.fail_json(msg="; ".join(r["msg"] for r in failed), **out)
    module.exit_json(**out)


def answer_one(module, params, run_one):
    """The single-model form: the same ``run_one``, its failure as the task's."""
    try:
        result = run_one(params)
    except ItemFailed as exc:
        module.fail_json(msg=str(exc), **exc.details)
    module.exit_json(**result)
