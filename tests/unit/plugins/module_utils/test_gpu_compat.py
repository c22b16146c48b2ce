"""The compatibility table and its checks (module_utils/gpu_compat.py): driver vs the CUDA a Triton release or the native
venv needs, forward compatibility where declared, the GPU architecture a TensorRT plan was built for, TensorRT versions.

The table's values are checked against the NVIDIA pages SOURCES names by the person who edits them; here: that it is
consistent (every release's CUDA has a driver minimum, minimums rise with CUDA) and that the checks read it right.
"""

import pytest

from ansible_collections.aiops.triton.plugins.module_utils import gpu_compat as gc

A10 = [{"index": 0, "name": "NVIDIA A10", "compute_capability": "8.6"}]
H100X2 = [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"},
          {"index": 1, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]


def image(tag):
    return {"method": "container", "image": "nvidia/tritonserver", "tag": tag}


def spec(driver=None, tag="24.12-py3", gpus=None, **extra):
    data = {"host": "lab-3", "gpus": A10 if gpus is None else gpus, "driver": driver, "pinned": None, "stack": image(tag),
            "forward_compat": False, "plans": []}
    data.update(extra)
    return data


def running(version):
    return {"version": version, "source": "running, from GPU facts"}


def pinned(version):
    return {"version": version, "source": "nvidia_driver_version"}


# --- the table ----------------------------------------------------------------------------------------------------

def test_every_release_has_a_driver_minimum_and_minimums_rise_with_cuda():
    for release, data in gc.TRITON_RELEASES.items():
        assert gc.cuda_minor(data["cuda"]) in gc.CUDA_MIN_DRIVER, release
        gc.version_tuple(data["min_compute_capability"])
    ordered = sorted(gc.CUDA_MIN_DRIVER, key=gc.version_tuple)
    drivers = [gc.version_tuple(gc.CUDA_MIN_DRIVER[c]) for c in ordered]
    assert drivers == sorted(drivers)


@pytest.mark.parametrize("cuda,driver", [("12.0", "525.60.13"), ("12.2", "535.54.03"), ("12.3", "545.23.06"),
                                         ("12.4", "550.54.14"), ("12.6", "560.28.03"), ("12.8", "570.26"),
                                         ("13.0", "580.65.06")])
def test_cuda_minimums_are_the_toolkit_release_notes_ga_drivers(cuda, driver):
    assert gc.CUDA_MIN_DRIVER[cuda] == driver


@pytest.mark.parametrize("release,cuda", [("24.01", "12.3.2"), ("24.05", "12.4.1"), ("24.08", "12.6.0"),
                                          ("24.12", "12.6.3"), ("25.01", "12.8.0")])
def test_triton_releases_are_on_the_cuda_of_their_release_notes(release, cuda):
    assert gc.TRITON_RELEASES[release]["cuda"] == cuda


def test_the_collections_default_image_is_in_the_table():
    from ansible_collections.aiops.triton.plugins.filter.gpu_fit import role_default
    assert gc.release_of_tag(role_default("triton_server", "triton_server_container_tag")) in gc.TRITON_RELEASES


@pytest.mark.parametrize("value,expected", [("8.6", "8.6"), (8.6, "8.6"), ("sm_86", "8.6"), ("sm_90a", "9.0"),
                                            ("86", "8.6"), ("sm_100", "10.0"), ("12.0", "12.0")])
def test_compute_capability_spellings(value, expected):
    assert gc.compute_capability(value) == expected


@pytest.mark.parametrize("value", ["", "eight", "8", "sm_", "8.6.1"])
def test_not_a_compute_capability(value):
    with pytest.raises(gc.CompatError):
        gc.compute_capability(value)


@pytest.mark.parametrize("name,capability", [("NVIDIA A100-SXM4-80GB", "8.0"), ("NVIDIA A10", "8.6"), ("NVIDIA A10G", "8.6"),
                                             ("Tesla T4", "7.5"), ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA L40S", "8.9"),
                                             ("NVIDIA L4", "8.9"), ("NVIDIA GH200 480GB", "9.0"), ("NVIDIA GeForce RTX 3090", None)])
def test_a_gpu_name_gives_its_compute_capability_as_whole_words(name, capability):
    assert gc.gpu_compute_capability(name) == capability


def test_release_of_tag():
    assert gc.release_of_tag("24.12-py3") == "24.12"
    assert gc.release_of_tag("25.01-trtllm-python-py3") == "25.01"
    assert gc.release_of_tag("latest") is None


def test_onnxruntime_gpu_cuda_major():
    assert gc.onnxruntime_cuda_major("1.26.0") == "12"
    assert gc.onnxruntime_cuda_major("1.27.1") == "13"
    assert gc.onnxruntime_cuda_major("1.18.0") is None


def test_a_branch_meets_a_minimum_of_its_own_branch_or_an_older_one():
    assert gc.driver_meets({"branch": "560"}, "560.28.03")
    assert gc.driver_meets({"branch": "570"}, "560.28.03")
    assert not gc.driver_meets({"branch": "555"}, "560.28.03")
    assert gc.driver_meets({"version": "560.28.03"}, "560.28.03")
    assert not gc.driver_meets({"version": "560.28.02"}, "560.28.03")
    assert gc.driver_meets({"version": "570.26"}, "560.35.05")


def test_forward_compatibility_is_per_branch_from_the_listed_version():
    supported = gc.TRITON_RELEASES["24.12"]["forward_compat"]
    assert gc.forward_compatible({"version": "535.161.08"}, supported) == "535.86"
    assert gc.forward_compatible({"version": "535.54.03"}, supported) is None  # R535 before 535.86
    assert gc.forward_compatible({"version": "550.54.15"}, supported) is None  # R550 is not listed
    assert gc.forward_compatible({"branch": "525"}, supported) == "525.85"


def test_newest_release_a_driver_runs():
    assert gc.newest_release_for({"version": "555.42.06"}) == "24.07"
    assert gc.newest_release_for({"version": "560.35.03"}) == "24.12"
    assert gc.newest_release_for({"version": "535.161.08"}) is None


# --- the checks -----------------------------------------------------------------------------------------------------

def test_a_running_driver_older_than_the_images_cuda_is_refused_with_what_to_do():
    result = gc.check_host(spec(running("525.147.05"), tag="24.01-py3"))
    assert result["status"] == "refused"
    (text,) = result["refusals"]
    assert text.startswith("lab-3 (GPU 0 NVIDIA A10): driver 525.147.05 (running, from GPU facts) is older than 545.23.06, "
                           "the minimum for CUDA 12.3 that Triton 24.01 (nvidia/tritonserver:24.01-py3) needs: upgrade with "
                           "playbooks/nvidia_driver_upgrade.yml (nvidia_driver_version 545.23.06 or newer, or "
                           "nvidia_driver_branch 545 or newer) or pin an older Triton")
    assert "declare triton_gpu_forward_compat: true" in text  # R525 from 525.85 is listed for 24.01


def test_a_pin_older_than_the_image_needs_is_refused_and_the_newest_release_it_runs_is_named():
    result = gc.check_host(spec(pinned("555.42.06")))
    (text,) = result["refusals"]
    assert "driver 555.42.06 (nvidia_driver_version) is older than 560.28.03, the minimum for CUDA 12.6 that Triton 24.12" in text
    assert "the newest in the table this driver runs: 24.07" in text
    assert "forward compatibility" not in text  # R555 is not forward compatible with CUDA 12.6


def test_the_pin_that_would_fix_a_running_driver_says_to_run_the_upgrade_first():
    result = gc.check_host(spec(running("550.54.15"), pinned=pinned("560.35.03")))
    assert "the inventory already pins driver 560.35.03 (nvidia_driver_version): run playbooks/nvidia_driver_upgrade.yml before this" \
        in result["refusals"][0]


def test_a_driver_at_the_minimum_passes():
    result = gc.check_host(spec(running("560.28.03")))
    assert result["status"] == "ok" and result["refusals"] == []
    assert result["requirement"]["min_driver"] == "560.28.03"


def test_declared_forward_compatibility_passes_a_listed_branch_and_says_so():
    result = gc.check_host(spec(pinned("535.161.08"), forward_compat=True))
    assert result["status"] == "ok"
    assert result["notes"] == ["lab-3: driver 535.161.08 (nvidia_driver_version) runs Triton 24.12 (nvidia/tritonserver:24.12-py3) "
                               "by CUDA forward compatibility (triton_gpu_forward_compat, data-center GPUs only)"]


def test_declared_forward_compatibility_does_not_pass_an_unlisted_branch():
    assert gc.check_host(spec(pinned("555.42.06"), forward_compat=True))["status"] == "refused"


def test_native_gpu_venv_needs_its_cuda_major_by_minor_version_compatibility():
    native = {"method": "native", "onnxruntime_gpu": "1.26.0"}
    assert gc.check_host(spec(pinned("535.161.08"), stack=native))["status"] == "ok"
    (text,) = gc.check_host(spec(pinned("470.256.02"), stack=native, forward_compat=True))["refusals"]
    assert "older than 525.60.13, the minimum for CUDA 12.x (minor-version compatibility) that onnxruntime-gpu 1.26.0" in text
    assert "forward compatibility" not in text  # the native venv has no cuda-compat


def test_no_driver_known_is_not_checked_never_refused():
    result = gc.check_host(spec(None, driver_hint="no GPU facts, no pin"))
    assert result["status"] == "not_checked"
    assert result["not_checked"] == ["lab-3: driver not known (no GPU facts, no pin)"]


def test_a_release_not_in_the_table_is_not_checked():
    result = gc.check_host(spec(running("535.161.08"), tag="23.05-py3"))
    assert result["status"] == "not_checked" and "Triton 23.05" in result["not_checked"][0]


def test_a_host_without_a_gpu_stack_is_not_checked():
    result = gc.check_host(spec(running("535.161.08"), stack=None, no_gpu_stack="triton_server_native_device is cpu"))
    assert result == {"host": "lab-3", "status": "not_checked", "refusals": [], "notes": [], "requirement": None,
                      "not_checked": ["lab-3: triton_server_native_device is cpu"]}


def test_a_gpu_older_than_the_release_supports_is_refused():
    gpus = [{"index": 0, "name": "Tesla P100-PCIE-16GB", "compute_capability": "6.0"}]
    (text,) = gc.check_host(spec(running("570.124.06"), tag="25.01-py3", gpus=gpus))["refusals"]
    assert text.startswith("lab-3 (GPU 0 Tesla P100-PCIE-16GB, compute capability 6.0): Triton 25.01")
    assert "supports compute capability 7.5 and later" in text and "the newest in the table for this GPU: 24.12" in text


def plan(**extra):
    data = {"model": "detector", "versions": [3], "gpus": None, "compute_capabilities": ["8.9"],
            "built_source": "tensorrt.compute_capability", "tensorrt": None, "version_compatible": False}
    data.update(extra)
    return data


def test_a_plan_for_another_architecture_is_refused_naming_the_gpu():
    (text,) = gc.check_host(spec(running("560.35.03"), plans=[plan()]))["refusals"]
    assert text.startswith("lab-3 (GPU 0 NVIDIA A10, compute capability 8.6): model detector version 3 is a TensorRT plan "
                           "built for compute capability 8.9 (tensorrt.compute_capability)")


def test_any_plan_of_cc_model_filenames_that_matches_passes():
    ok = plan(compute_capabilities=["8.6", "8.9"], built_source="cc_model_filenames")
    assert gc.check_host(spec(running("560.35.03"), plans=[ok]))["status"] == "ok"


def test_a_plan_is_judged_only_on_the_gpus_its_instances_use():
    mixed = [{"index": 0, "name": "NVIDIA A10", "compute_capability": "8.6"},
             {"index": 1, "name": "NVIDIA L4", "compute_capability": "8.9"}]
    assert gc.check_host(spec(running("560.35.03"), gpus=mixed, plans=[plan(gpus=[1])]))["status"] == "ok"
    (text,) = gc.check_host(spec(running("560.35.03"), gpus=mixed, plans=[plan(gpus=None)]))["refusals"]
    assert "GPU 0 NVIDIA A10, compute capability 8.6" in text


def test_plan_tensorrt_version_against_the_release():
    assert gc.check_host(spec(running("560.35.03"), gpus=H100X2, plans=[plan(compute_capabilities=["9.0"], tensorrt="10.7")]))[
        "status"] == "ok"
    (text,) = gc.check_host(spec(running("560.35.03"), gpus=H100X2, plans=[plan(compute_capabilities=["9.0"], tensorrt="10.3")]))[
        "refusals"]
    assert "built with TensorRT 10.3 and Triton 24.12 (nvidia/tritonserver:24.12-py3) ships TensorRT 10.7.0" in text
    assert "GPUs 0, 1 NVIDIA H100 80GB HBM3" in text
    compatible = plan(compute_capabilities=["9.0"], tensorrt="10.3", version_compatible=True)
    assert gc.check_host(spec(running("560.35.03"), gpus=H100X2, plans=[compatible]))["status"] == "ok"


def test_plan_tensorrt_version_of_a_release_the_table_lacks_is_not_checked():
    result = gc.check_host(spec(running("560.35.03"), tag="24.10-py3", gpus=H100X2, plans=[plan(compute_capabilities=["9.0"],
                                                                                                tensorrt="10.5")]))
    assert result["status"] == "not_checked" and result["refusals"] == []  # ok means every check ran
    assert result["not_checked"] == ["lab-3: model detector version 3: the TensorRT version of Triton 24.10 is not in the table"]


def test_an_untagged_plan_or_an_unknown_gpu_is_not_checked():
    result = gc.check_host(spec(None, plans=[plan(compute_capabilities=[], built_source=None)]))
    assert result["status"] == "not_checked" and "no architecture tag" in result["not_checked"][1]
    unknown = [{"index": 0, "name": "Some GPU", "compute_capability": None}]
    result = gc.check_host(spec(None, gpus=unknown, plans=[plan()]))
    assert result["refusals"] == [] and "declare compute_capability in triton_gpus" in result["not_checked"][1]


def test_host_gpus_from_facts_before_the_inventory():
    facts = {"gpus": [{"index": 0, "name": "Tesla T4", "memory_total_mib": 15360, "driver_version": "535.261.03"}]}
    gpus, source, problems = gc.host_gpus(facts, [{"name": "NVIDIA A10", "memory_mib": 23028}])
    assert (gpus, source, problems) == ([{"index": 0, "name": "Tesla T4", "memory_mib": 15360, "compute_capability": "7.5",
                                          "compute_capability_source": "name"}], "GPU facts", [])
    gpus, source, problems = gc.host_gpus({"gpus": []}, [{"name": "NVIDIA A10", "memory_mib": 23028}])
    assert source == "triton_gpus" and gpus[0]["compute_capability"] == "8.6" and problems == []
    assert gpus[0]["compute_capability_source"] == "name"


def test_host_gpus_take_the_compute_capability_nvidia_gpu_info_read_and_say_where_from():
    facts = {"gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 3090", "compute_capability": "8.6", "compute_capability_source": "nvidia-smi"},
                      {"index": 1, "name": "NVIDIA GeForce RTX 3090", "compute_capability": None, "compute_capability_source": None},
                      {"index": 2, "name": "Tesla T4", "compute_capability": "7.5", "compute_capability_source": "name"}]}
    gpus = gc.host_gpus(facts, None)[0]
    assert [(g["compute_capability"], g["compute_capability_source"]) for g in gpus] == [("8.6", "nvidia-smi"), (None, None), ("7.5", "name")]
    declared = gc.host_gpus(None, [{"name": "Custom Board", "compute_capability": "sm_89"}, {"name": "Custom Board"}])[0]
    assert [(g["compute_capability"], g["compute_capability_source"]) for g in declared] == [("8.9", "triton_gpus"), (None, None)]
    # what neither nvidia-smi (before R510) nor the name says, triton_gpus may, for the GPU of the same index
    gpus = gc.host_gpus(facts, [{"index": 1, "name": "NVIDIA GeForce RTX 3090", "compute_capability": "8.6"}])[0]
    assert [(g["compute_capability"], g["compute_capability_source"]) for g in gpus] == [("8.6", "nvidia-smi"), ("8.6", "triton_gpus"), ("7.5", "name")]


def test_host_gpus_declared_wrong_are_problems():
    gpus, source, problems = gc.host_gpus(None, [{"name": "x", "memory_mib": "lots", "compute_capability": "eight", "vram": 1}, 3])
    assert problems == ["triton_gpus[0]: unknown key(s) vram (index, name, memory_mib, compute_capability)",
                        "triton_gpus[0].memory_mib must be MiB (a positive integer), got 'lots'",
                        "triton_gpus[0].compute_capability: 'eight' is not a compute capability (8.6 or sm_86)",
                        "triton_gpus[1] must be a mapping (name, memory_mib, compute_capability), got 3"]
    assert gc.host_gpus(None, "A10")[2] == ["triton_gpus must be a list of GPUs ({name, memory_mib, compute_capability}), got 'A10'"]
