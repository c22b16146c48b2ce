"""The validation play (playbooks/validate.yml, first in site.yml) refuses a bad inventory before any host changes.

Each case copies inventories/production, breaks one thing, runs the real site.yml with ansible-playbook and
asserts: the run fails in the validation play with a message naming the host/group/field, and no later play
started (the hosts are unreachable names: contacting one would fail differently).
"""

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VAULT = ["-e", "vault_triton_server_api_key=3f9c2b7e1a0d4c6b8e5f7a9d1c3b5e7f9a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b",
         "-e", "vault_triton_models_s3_access_key=AKIAEXAMPLEKEY", "-e", "vault_triton_models_s3_secret_key=example-secret"]


@pytest.fixture
def inventory(tmp_path):
    dest = tmp_path / "production"
    shutil.copytree(os.path.join(ROOT, "inventories", "production"), dest)
    return dest


def _edit(path, change):
    with open(path) as handle:
        data = yaml.safe_load(handle)
    change(data)
    with open(path, "w") as handle:
        yaml.safe_dump(data, handle)


def _run(inventory, playbook="site.yml"):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collection"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_HOST_KEY_CHECKING="False")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                           os.path.join(ROOT, playbook)] + VAULT, env=env, capture_output=True, text=True, timeout=300, check=False)


def _assert_refused(result, *needles):
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "The inventory is invalid; no host was changed." in out, out
    for needle in needles:
        assert needle in out, (needle, out)
    # nothing after the validation play ran: no host was contacted
    assert "PLAY [Preflight" not in out, out
    assert "Gathering Facts" not in out, out


def test_production_example_is_valid(inventory):
    result = _run(inventory, "playbooks/validate.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Inventory valid: 6 Triton hosts." in result.stdout


def test_host_in_two_rollout_groups(inventory):
    _edit(inventory / "hosts.yml",
          lambda d: d["triton_servers"]["children"]["triton_wave_2"]["hosts"].update({"gpu-infer-02.dc1.example.com": None}))
    _assert_refused(_run(inventory), "host gpu-infer-02.dc1.example.com must be in exactly one rollout group",
                    "['triton_wave_1', 'triton_wave_2']")


def test_host_in_no_rollout_group(inventory):
    _edit(inventory / "hosts.yml",
          lambda d: d["triton_servers"]["children"]["triton_cpu_servers"]["hosts"].update({"cpu-infer-09.dc1.example.com": None}))
    _assert_refused(_run(inventory), "host cpu-infer-09.dc1.example.com must be in exactly one rollout group", "is in none")


def test_group_without_model_list(inventory):
    os.unlink(inventory / "group_vars" / "triton_wave_2" / "models.yml")
    _assert_refused(_run(inventory), "rollout group triton_wave_2: no triton_models_list for host(s)",
                    "gpu-infer-04.dc2.example.com")


def test_typo_variable(inventory):
    with open(inventory / "group_vars" / "triton_wave_1" / "typo.yml", "w") as handle:
        handle.write("---\ntriton_model_list: []\n")
    _assert_refused(_run(inventory), "unknown variable triton_model_list (did you mean triton_models_list?)",
                    "host gpu-infer-02.dc1.example.com")


def test_ensemble_step_names_a_model_the_group_does_not_serve(inventory):
    def add_ensemble(data):
        data["triton_models_list"].append({"name": "ops_pipeline", "versions": [1], "config": {
            "name": "ops_pipeline", "platform": "ensemble", "max_batch_size": 32,
            "input": [{"name": "metrics_input", "data_type": "TYPE_FP32", "dims": [60, 20]}],
            "output": [{"name": "anomaly_score", "data_type": "TYPE_FP32", "dims": [1]}],
            "ensemble_scheduling": {"step": [{"model_name": "anomaly_detector_v9", "model_version": -1,
                                              "input_map": {"metrics_input": "metrics_input"},
                                              "output_map": {"anomaly_score": "anomaly_score"}}]}}})
    _edit(inventory / "group_vars" / "triton_canary" / "models.yml", add_ensemble)
    _assert_refused(_run(inventory), "rollout group triton_canary: model ops_pipeline", "anomaly_detector_v9")


def test_version_policy_is_derived_not_set(inventory):
    _edit(inventory / "group_vars" / "triton_wave_1" / "models.yml",
          lambda d: d["triton_models_list"][1].update({"config": {"name": "alert_classifier", "backend": "python",
                                                                  "version_policy": {"all": {}}}}))
    _assert_refused(_run(inventory), "rollout group triton_wave_1", "config.version_policy is derived from versions")


def test_rollout_group_that_is_not_a_group(inventory):
    _edit(inventory / "group_vars" / "triton_servers" / "rollout.yml",
          lambda d: d.update({"triton_rollout_groups": ["triton_canary", "triton_wave_1", "triton_wave_2", "triton_wave_3"]}))
    _assert_refused(_run(inventory), "rollout group triton_wave_3 (in triton_rollout_groups) is not an inventory group")


# --- GPU compatibility (issue 33): the pins against the table of plugins/module_utils/gpu_compat.py ------------------

def _gpu_servers(inventory, **values):
    _edit(inventory / "group_vars" / "triton_gpu_servers" / "triton.yml", lambda d: d.update(values))


def _add_plan(inventory, tensorrt=None, cc_model_filenames=None):
    """A TensorRT plan model in the catalog, served by triton_wave_1 (two GPU hosts)."""
    config = {"name": "detector_trt", "platform": "tensorrt_plan", "max_batch_size": 8,
              "input": [{"name": "images", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],
              "output": [{"name": "scores", "data_type": "TYPE_FP32", "dims": [1000]}],
              "instance_group": [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}]}
    if cc_model_filenames:
        config["cc_model_filenames"] = cc_model_filenames
    entry = {"config": config}
    if tensorrt:
        entry["tensorrt"] = tensorrt
    _edit(inventory / "group_vars" / "triton_servers" / "rollout.yml",
          lambda d: d["triton_models_catalog"].update({"detector_trt": entry}))
    _edit(inventory / "group_vars" / "triton_wave_1" / "models.yml",
          lambda d: d["triton_models_list"].append({"name": "detector_trt", "versions": [1]}))


def test_production_example_gpu_hosts_are_reported_not_checked(inventory):
    result = _run(inventory, "playbooks/validate.yml")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "Inventory valid: 6 Triton hosts. GPU compatibility: 0 ok, 0 refused, 6 not checked." in out
    assert "gpu-infer-01.dc1.example.com: not checked (Triton 24.12 (nvidia/tritonserver:24.12-py3), CUDA 12.6: driver " \
           "560.28.03 or newer): driver not known" in out


def test_driver_pin_below_the_pinned_tritons_minimum(inventory):
    _gpu_servers(inventory, nvidia_driver_version="535.161.08")
    _assert_refused(_run(inventory), "gpu-infer-01.dc1.example.com (GPU unknown): driver 535.161.08 (nvidia_driver_version) "
                    "is older than 560.28.03, the minimum for CUDA 12.6 that Triton 24.12",
                    "upgrade with playbooks/nvidia_driver_upgrade.yml", "gpu-infer-04.dc2.example.com (GPU unknown)")


def test_driver_pin_at_the_minimum_or_by_declared_forward_compatibility_passes(inventory):
    _gpu_servers(inventory, nvidia_driver_branch="560")
    result = _run(inventory, "playbooks/validate.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "GPU compatibility: 4 ok, 0 refused, 2 not checked." in result.stdout
    _gpu_servers(inventory, nvidia_driver_version="535.161.08", triton_gpu_forward_compat=True)
    result = _run(inventory, "playbooks/validate.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "by CUDA forward compatibility (triton_gpu_forward_compat, data-center GPUs only)" in result.stdout


def test_tensorrt_plan_for_another_architecture(inventory):
    _gpu_servers(inventory, triton_gpus=[{"name": "NVIDIA A10", "memory_mib": 23028}])
    _add_plan(inventory, tensorrt={"compute_capability": "8.9", "version": "10.7"})
    _assert_refused(_run(inventory), "gpu-infer-02.dc1.example.com (GPU 0 NVIDIA A10, compute capability 8.6): model "
                    "detector_trt version 1 is a TensorRT plan built for compute capability 8.9",
                    "gpu-infer-03.dc1.example.com (GPU 0 NVIDIA A10")


def test_tensorrt_plans_per_architecture_with_one_for_the_gpu_pass(inventory):
    _gpu_servers(inventory, triton_gpus=[{"name": "NVIDIA A10", "memory_mib": 23028}])
    _add_plan(inventory, cc_model_filenames={"8.6": "model_sm86.plan", "8.9": "model_sm89.plan"})
    result = _run(inventory, "playbooks/validate.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def _footprints(inventory, v2, v3):
    _edit(inventory / "group_vars" / "triton_servers" / "rollout.yml",
          lambda d: d["triton_models_catalog"]["anomaly_detector"].update(
              {"footprint": {2: {"gpu_mib": v2, "host_mib": 300}, 3: {"gpu_mib": v3, "host_mib": 300}}}))


def test_gpu_memory_budget_that_does_not_fit_is_refused_before_any_host_changes(inventory):
    _gpu_servers(inventory, triton_gpus=[{"name": "Tesla T4", "memory_mib": 15360}])
    _footprints(inventory, 3500, 3600)
    result = _run(inventory)
    _assert_refused(result, "gpu-infer-01.dc1.example.com GPU 0 (Tesla T4): serving anomaly_detector v3 2×3,600 MiB = 7,200 MiB; "
                    "reloading anomaly_detector adds 7,200 MiB (Triton loads the new set beside the serving one: anomaly_detector v3 "
                    "2×3,600 MiB): peak 14,400 MiB > 15,360 MiB − 10% headroom (13,824 MiB) by 576 MiB. To fit: lower the instance "
                    "count of anomaly_detector", "gpu-infer-04.dc2.example.com GPU 0 (Tesla T4)")
    out = result.stdout + result.stderr
    assert "Show the GPU memory budget" in out and "NO, over by 576" in out
    assert "alert_classifier v1 (2 instances)" in out  # no footprint: unknown, shown, never refused


def test_gpu_memory_budget_that_fits_is_printed_and_passes(inventory):
    _gpu_servers(inventory, triton_gpus=[{"name": "Tesla T4", "memory_mib": 15360}])
    _footprints(inventory, 3000, 3000)
    result = _run(inventory, "playbooks/validate.yml")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "GPU 0 Tesla T4  15,360    1,536     6,000    3,000 (1 model)  6,000 (anomaly_detector)  12,000  yes" in out


def test_one_more_instance_that_no_longer_fits_is_refused_until_the_gpus_are_larger(inventory):
    """The sequence an operator meets: the set fits; one more anomaly_detector instance does not (refused with the
    numbers, on every GPU host that serves it); one host's GPU raised in its host_vars fits there while the others
    are still named; every GPU host's raised, the same set passes."""
    _gpu_servers(inventory, triton_gpus=[{"name": "Tesla T4", "memory_mib": 15360}])
    _footprints(inventory, 2500, 2500)
    result = _run(inventory, "playbooks/validate.yml")
    assert result.returncode == 0, result.stdout + result.stderr  # 2×2,500 serving + 5,000 reloading ≤ 13,824
    _edit(inventory / "group_vars" / "triton_servers" / "rollout.yml",
          lambda d: d["triton_models_catalog"]["anomaly_detector"]["config"]["instance_group"][0].update({"count": 3}))
    hosts = ["gpu-infer-01.dc1.example.com", "gpu-infer-02.dc1.example.com", "gpu-infer-03.dc1.example.com",
             "gpu-infer-04.dc2.example.com"]
    _assert_refused(_run(inventory), "gpu-infer-01.dc1.example.com GPU 0 (Tesla T4): serving anomaly_detector v3 3×2,500 MiB "
                    "= 7,500 MiB", "peak 15,000 MiB > 15,360 MiB − 10% headroom (13,824 MiB) by 1,176 MiB",
                    *["%s GPU 0 (Tesla T4)" % h for h in hosts])
    (inventory / "host_vars").mkdir()
    (inventory / "host_vars" / (hosts[0] + ".yml")).write_text("triton_gpus: [{name: NVIDIA L4, memory_mib: 23034}]\n")
    result = _run(inventory)
    _assert_refused(result, *["%s GPU 0 (Tesla T4)" % h for h in hosts[1:]])
    assert hosts[0] + " GPU 0" not in result.stdout, result.stdout
    _gpu_servers(inventory, triton_gpus=[{"name": "NVIDIA L4", "memory_mib": 23034}])
    result = _run(inventory, "playbooks/validate.yml")
    assert result.returncode == 0, result.stdout + result.stderr
