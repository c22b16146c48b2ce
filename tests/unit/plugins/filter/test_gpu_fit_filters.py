"""The GPU filters of playbooks/validate.yml (filter/gpu_fit.py): the inventory and GPU facts read as the checks need them.

GPU facts are aiops.triton.nvidia_gpu_info's result parsed from written nvidia-smi outputs in the real format
(tests/fixtures/nvidia_smi/written_*: there is no GPU here). Proven: a host nothing says anything about is not
checked and prints nothing (the lab); a pin or facts below the image's minimum are refused; forward compatibility
passes where declared; a plan for another architecture is refused; the budget reads facts or triton_gpus and the
footprints the catalog declares; only the named variables are read from hostvars.
"""

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter import gpu_fit
from ansible_collections.aiops.triton.plugins.module_utils import gpu_compat as gc
from ansible_collections.aiops.triton.plugins.module_utils import nvidia_smi as smi

RECORDINGS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvidia_smi")
API_KEY = "3f9c2b7e1a0d4c6b8e5f7a9d1c3b5e7f"


def facts(name):
    """nvidia_gpu_info's gpus and driver_version for a written --query-gpu output."""
    with open(os.path.join(RECORDINGS, name)) as handle:
        gpus = smi.parse_query_gpu(handle.read())
    return {"status": "ok", "host_kind": "gpu", "gpus": gpus, "driver_version": gpus[0]["driver_version"]}


ONNX = {"name": "anomaly_detector", "platform": "onnxruntime_onnx", "max_batch_size": 32,
        "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [4]}], "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}],
        "instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": [0]}]}
PLAN = {"name": "detector", "platform": "tensorrt_plan", "max_batch_size": 8,
        "input": [{"name": "images", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],
        "output": [{"name": "scores", "data_type": "TYPE_FP32", "dims": [1000]}],
        "instance_group": [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}]}


def catalog(**extra):
    data = {"anomaly_detector": {"config": ONNX}, "detector": {"config": PLAN}}
    for name, values in extra.items():
        data[name] = dict(data[name], **values)
    return data


def host(models=("anomaly_detector",), **values):
    data = {"triton_server_api_key": API_KEY, "triton_models_catalog": catalog(),
            "triton_models_list": [{"name": m, "versions": [2]} for m in models]}
    data.update(values)
    return data


def groups(hostvars, gpu_servers=()):
    return {"all": sorted(hostvars), "triton_servers": sorted(hostvars), "triton_gpu_servers": list(gpu_servers)}


def container(**values):
    out = {"triton_server_install_method": "container", "triton_server_container_tag": "24.12-py3"}
    out.update(values)
    return out


# --- compatibility --------------------------------------------------------------------------------------------------

def test_cpu_hosts_nothing_is_known_of_are_not_checked_and_print_nothing():
    hostvars = {"lab-1": host(triton_server_install_method="native"), "lab-2": host()}
    report = gpu_fit.gpu_compat_report(hostvars, groups(hostvars))
    assert report["refusals"] == [] and report["problems"] == [] and report["lines"] == []
    assert report["summary"] == "GPU compatibility: 0 ok, 0 refused, 2 not checked"
    assert report["not_checked"][0].startswith("lab-1: no GPU known")


def test_a_container_without_gpus_is_not_checked():
    hostvars = {"lab-1": host(**container(triton_server_container_gpu_mode="none", nvidia_driver_version="470.1.2"))}
    report = gpu_fit.gpu_compat_report(hostvars, groups(hostvars, ["lab-1"]))
    assert report["not_checked"] == ["lab-1: triton_server_container_gpu_mode is none: the container sees no GPU"]
    assert report["lines"] == [] and report["refusals"] == []


def test_a_gpu_server_without_a_pin_is_not_checked_and_says_what_the_roles_default_would_give():
    hostvars = {"gpu-1": host(**container())}
    report = gpu_fit.gpu_compat_report(hostvars, groups(hostvars, ["gpu-1"]))
    assert report["refusals"] == []
    (line,) = report["lines"]
    assert line.startswith("gpu-1: not checked (Triton 24.12 (nvidia/tritonserver:24.12-py3), CUDA 12.6: driver 560.28.03 or "
                           "newer): driver not known (no GPU facts, and neither nvidia_driver_version nor "
                           "nvidia_driver_branch is set: the nvidia_driver role's default branch 535 would be installed, "
                           "older than 560.28.03, the minimum for CUDA 12.6 that Triton 24.12")


def test_a_pin_below_the_images_minimum_is_refused():
    hostvars = {"gpu-1": host(**container(nvidia_driver_version="535.161.08"))}
    (text,) = gpu_fit.gpu_compat_refusals(hostvars, groups(hostvars, ["gpu-1"]))
    assert text.startswith("gpu-1 (GPU unknown): driver 535.161.08 (nvidia_driver_version) is older than 560.28.03, the minimum "
                           "for CUDA 12.6 that Triton 24.12 (nvidia/tritonserver:24.12-py3) needs: upgrade with "
                           "playbooks/nvidia_driver_upgrade.yml")


def test_a_branch_pin_is_read_and_a_pin_off_the_gpu_stack_is_not():
    hostvars = {"gpu-1": host(**container(nvidia_driver_branch=560)),
                "gpu-2": host(**container(nvidia_driver_branch="550")),
                "other": host(**container(nvidia_driver_version="470.256.02"))}
    report = gpu_fit.gpu_compat_report(hostvars, groups(hostvars, ["gpu-1", "gpu-2"]))
    assert [r["status"] for r in report["hosts"]] == ["ok", "refused", "not_checked"]
    assert report["refusals"][0].startswith("gpu-2 (GPU unknown): driver branch 550 (nvidia_driver_branch) is older than 560.28.03")


def test_running_driver_from_written_facts_is_judged_before_the_pin():
    hostvars = {"gpu-1": host(**container(nvidia_gpu_facts=facts("written_t4_535_nopersist.csv"),
                                          nvidia_driver_version="560.35.03"))}
    (text,) = gpu_fit.gpu_compat_refusals(hostvars, groups(hostvars, ["gpu-1"]))
    assert text.startswith("gpu-1 (GPU 0 Tesla T4): driver 535.261.03 (running, from GPU facts) is older than 560.28.03")
    assert "the inventory already pins driver 560.35.03 (nvidia_driver_version): run playbooks/nvidia_driver_upgrade.yml" in text


def test_forward_compatibility_declared_for_data_center_gpus_passes():
    hostvars = {"gpu-1": host(**container(nvidia_gpu_facts=facts("written_t4_535_nopersist.csv"),
                                          triton_gpu_forward_compat=True))}
    report = gpu_fit.gpu_compat_report(hostvars, groups(hostvars, ["gpu-1"]))
    assert report["refusals"] == [] and report["hosts"][0]["status"] == "ok"
    assert report["lines"] == ["gpu-1: ok (Triton 24.12 (nvidia/tritonserver:24.12-py3), CUDA 12.6: driver 560.28.03 or newer)",
                               report["notes"][0]]


def test_native_gpu_host_is_judged_by_the_onnxruntime_gpu_the_role_pins():
    pinned = gpu_fit.native_onnxruntime_gpu()
    assert gc.onnxruntime_cuda_major(pinned) == "12"  # a pin the table knows (a CUDA 13 build needs driver >= 580)
    hostvars = {"gpu-1": host(nvidia_gpu_facts=facts("written_h100x2_535.csv"))}
    report = gpu_fit.gpu_compat_report(hostvars, groups(hostvars))
    assert report["hosts"][0]["status"] == "ok"
    assert report["lines"] == ["gpu-1: ok (onnxruntime-gpu %s of the native GPU venv, CUDA 12.x (minor-version "
                               "compatibility): driver 525.60.13 or newer)" % pinned]


def test_a_plan_for_another_architecture_is_refused_and_cc_model_filenames_passes():
    a10 = [{"name": "NVIDIA A10", "memory_mib": 23028}]
    wrong = host(["detector"], triton_gpus=a10, triton_models_catalog=catalog(detector={"tensorrt": {"arch": "sm_89"}}))
    (text,) = gpu_fit.gpu_compat_refusals({"gpu-1": wrong}, groups({"gpu-1": wrong}))
    assert text.startswith("gpu-1 (GPU 0 NVIDIA A10, compute capability 8.6): model detector version 2 is a TensorRT plan built "
                           "for compute capability 8.9 (tensorrt.compute_capability)")
    several = dict(PLAN, cc_model_filenames={"8.6": "model_sm86.plan", "8.9": "model_sm89.plan"})
    right = host(["detector"], triton_gpus=a10, triton_models_catalog=dict(catalog(), detector={"config": several}))
    assert gpu_fit.gpu_compat_refusals({"gpu-1": right}, groups({"gpu-1": right})) == []


def test_a_plan_tag_per_version():
    a10 = [{"name": "NVIDIA A10", "memory_mib": 23028}]
    tags = {2: {"compute_capability": "8.6", "version": "10.7"}, 3: {"compute_capability": "9.0"}}
    hv = host(["detector"], triton_gpus=a10, triton_models_catalog=catalog(detector={"tensorrt": tags}))
    hv["triton_models_list"] = [{"name": "detector", "versions": [2, 3]}]
    (text,) = gpu_fit.gpu_compat_refusals({"gpu-1": hv}, groups({"gpu-1": hv}))
    assert "model detector version 3 is a TensorRT plan built for compute capability 9.0" in text


def test_malformed_gpu_declarations_are_problems():
    hv = host(["anomaly_detector"], triton_gpus=[{"name": "A10", "memory_mib": 0}], triton_gpu_forward_compat="yes",
              triton_models_catalog=catalog(anomaly_detector={"tensorrt": {"arch": "sm_86"}}))
    problems = gpu_fit.gpu_compat_refusals({"gpu-1": hv}, groups({"gpu-1": hv}))
    assert problems == ["host gpu-1: triton_gpus[0].memory_mib must be MiB (a positive integer), got 0",
                        "host gpu-1: triton_gpu_forward_compat must be true or false, got 'yes'",
                        "host gpu-1: model anomaly_detector: tensorrt is set but the model is not a TensorRT plan "
                        "(platform tensorrt_plan)"]


class Guarded(dict):
    """hostvars of a host whose other variables must not be read (the lab's image variable needs a file lookup)."""

    def get(self, key, default=None):
        if key.startswith("aiops_lab_") or key == "triton_server_container_digest":
            raise AssertionError("read %s" % key)
        return dict.get(self, key, default)

    def __getitem__(self, key):
        return self.get(key)


def test_only_the_variables_it_needs_are_read():
    hostvars = {"lab-1": Guarded(host(**container(triton_server_container_gpu_mode="none",
                                                  triton_server_container_digest="{{ aiops_lab_triton_image.id }}",
                                                  aiops_lab_triton_image="{{ lookup('file', 'nope') }}")))}
    gpu_fit.gpu_compat_report(hostvars, groups(hostvars))
    gpu_fit.gpu_memory_budget(hostvars, groups(hostvars))


def test_groups_must_be_a_mapping():
    with pytest.raises(AnsibleFilterError):
        gpu_fit.gpu_compat_report({}, ["lab-1"])
    with pytest.raises(AnsibleFilterError):
        gpu_fit.gpu_memory_budget({}, ["lab-1"])


# --- budget ---------------------------------------------------------------------------------------------------------

def test_budget_without_footprints_is_not_declared():
    hostvars = {"lab-1": host()}
    budget = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars))
    assert budget["declared"] is False and budget["refusals"] == [] and budget["problems"] == []


def test_budget_reads_written_facts_declared_gpus_and_catalog_footprints():
    fp = {"footprint": {2: {"gpu_mib": 30000, "host_mib": 500}}}
    hostvars = {"gpu-1": host(nvidia_gpu_facts=facts("written_h100x2_535.csv"), triton_models_catalog=catalog(anomaly_detector=fp),
                              triton_host_memory_mib=8192),
                "gpu-2": host(triton_gpus=[{"name": "NVIDIA L4", "memory_mib": 23034}], triton_models_catalog=catalog(anomaly_detector=fp))}
    budget = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars))
    assert budget["declared"] is True and budget["problems"] == []
    rows = dict(((r["host"], r["device"]), r) for r in budget["rows"])
    assert rows[("gpu-1", "GPU 0")]["capacity_mib"] == 81559 and rows[("gpu-1", "GPU 0")]["peak_mib"] == 120000
    assert ("gpu-1", "GPU 1") in rows and rows[("gpu-1", "GPU 1")]["peak_mib"] == 0
    assert rows[("gpu-1", "host memory")]["capacity_mib"] == 8192
    assert [r.split(":")[0] for r in budget["refusals"]] == ["gpu-1 GPU 0 (NVIDIA H100 80GB HBM3)", "gpu-2 GPU 0 (NVIDIA L4)"]
    assert budget["lines"][0].split()[0] == "host"


def test_budget_problems_name_the_host():
    hostvars = {"lab-1": host(triton_gpu_budget_headroom="lots"),
                "lab-2": host(triton_models_catalog=catalog(anomaly_detector={"footprint": {"gpu_mib": "1GiB"}})),
                "lab-3": host(triton_host_memory_mib=-1)}
    problems = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars))["problems"]
    assert problems == ["host lab-1: triton_gpu_budget_headroom must be a percentage of each device (10%) or MiB (2048), got 'lots'",
                        "host lab-2: footprint gpu_mib must be MiB (a non-negative integer) or unknown, got '1GiB'",
                        "host lab-3: triton_host_memory_mib must be MiB (a positive integer), got -1"]


def test_a_release_the_table_lacks_still_judges_the_plans_architecture():
    a10 = [{"name": "NVIDIA A10", "memory_mib": 23028}]
    hv = host(["detector"], triton_gpus=a10, triton_models_catalog=catalog(detector={"tensorrt": {"compute_capability": "9.0"}}),
              **container(triton_server_container_tag="23.05-py3"))
    report = gpu_fit.gpu_compat_report({"gpu-1": hv}, groups({"gpu-1": hv}))
    assert report["hosts"][0]["status"] == "refused" and len(report["refusals"]) == 1
    assert report["lines"][0].startswith("gpu-1: refused; not checked: Triton 23.05 (nvidia/tritonserver:23.05-py3) is not in the "
                                         "compatibility table")


def test_budget_honours_each_hosts_stage_candidates_switch():
    """Eight one-instance models: staging them all at once is the peak; a host that stages none adds one reload."""
    many = dict(("m%d" % i, {"config": dict(ONNX, name="m%d" % i, instance_group=[{"count": 1, "kind": "KIND_GPU"}]),
                             "footprint": {"gpu_mib": 1000, "host_mib": 10}}) for i in range(8))
    t4 = [{"name": "Tesla T4", "memory_mib": 16384}]

    def hv(**values):
        return host(["m%d" % i for i in range(8)], triton_gpus=t4, triton_models_catalog=many, **values)
    hostvars = {"gpu-1": hv(), "gpu-2": hv(triton_models_stage_candidates=False), "gpu-3": hv(triton_models_stage_candidates="no"),
                "gpu-4": hv(triton_models_stage_candidates="sometimes")}
    budget = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars))
    peaks = dict((r["host"], (r["stage_candidates"], r["peak_mib"])) for r in budget["rows"] if r["device"] == "GPU 0")
    assert peaks == {"gpu-1": (True, 16000), "gpu-2": (False, 9000), "gpu-3": (False, 9000), "gpu-4": (True, 16000)}
    assert [r.split(":")[0] for r in budget["refusals"]] == ["gpu-1 GPU 0 (Tesla T4)", "gpu-4 GPU 0 (Tesla T4)"]
    assert budget["problems"] == ["host gpu-4: triton_models_stage_candidates must be true or false, got 'sometimes'"]


def test_budget_reads_the_gpu_facts_a_caller_passes_before_triton_gpus():
    fp = {"footprint": {2: {"gpu_mib": 30000, "host_mib": 500}}}
    hostvars = {"gpu-1": host(triton_gpus=[{"name": "NVIDIA L4", "memory_mib": 23034}], triton_models_catalog=catalog(anomaly_detector=fp))}
    budget = gpu_fit.gpu_memory_budget(hostvars, groups(hostvars), gpu_facts={"gpu-1": facts("written_h100x2_535.csv"), "gone": None})
    assert [(r["device"], r["name"], r["capacity_mib"], r["fits"]) for r in budget["rows"]] == [
        ("GPU 0", "NVIDIA H100 80GB HBM3", 81559, False), ("GPU 1", "NVIDIA H100 80GB HBM3", 81559, True),
        ("host memory", None, None, None)]
    assert gpu_fit.gpu_memory_budget(hostvars, groups(hostvars), gpu_facts={"gpu-1": None})["rows"][0]["name"] == "NVIDIA L4"


def test_a_plan_is_judged_by_the_compute_capability_nvidia_smi_reports_for_a_gpu_the_name_table_lacks():
    rtx = facts("written_rtx3090_noecc_535.csv")  # NVIDIA GeForce RTX 3090: not in the name table
    plan = catalog(detector={"tensorrt": {"compute_capability": "8.9"}})
    unknown = host(["detector"], nvidia_gpu_facts=rtx, triton_models_catalog=plan)
    report = gpu_fit.gpu_compat_report({"gpu-1": unknown}, groups({"gpu-1": unknown}))
    assert report["refusals"] == [] and "compute capability of GPU 0 NVIDIA GeForce RTX 3090 unknown" in report["not_checked"][-1]
    # nvidia_gpu_info with compute_cap read (a driver from R510 on)
    rtx["gpus"][0].update(compute_capability=smi.parse_compute_cap(open(os.path.join(RECORDINGS, "written_compute_cap_rtx3090_535.csv")).read())[0],
                          compute_capability_source="nvidia-smi")
    known = host(["detector"], nvidia_gpu_facts=rtx, triton_models_catalog=plan)
    (text,) = gpu_fit.gpu_compat_refusals({"gpu-1": known}, groups({"gpu-1": known}))
    assert text.startswith("gpu-1 (GPU 0 NVIDIA GeForce RTX 3090, compute capability 8.6): model detector version 2 is a TensorRT "
                           "plan built for compute capability 8.9")
