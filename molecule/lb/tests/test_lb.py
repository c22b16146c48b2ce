"""The rolling operations of the side effect (files/rolling_under_load.py), from its results file, and the
hosts after them: a broken model and a broken server change stopped at the canary, the canary fixed and put
back, every host serving.

The driver asserts as it goes; these tests read what it recorded so a failed promise is named here too.
"""

import json
import os

import pytest

RESULTS = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""), "lb_results.json")
HOSTS = ["roll-1", "roll-2", "roll-3", "roll-4"]
SEQUENCE = ["c_model_rollout", "c_corrupt_model", "c_regressed_model", "c_slow_on_live_traffic"]
FAILED = {"c_corrupt_model": ("anomaly_detector", 3, 2), "c_regressed_model": ("anomaly_detector", 4, 2),
          "c_slow_on_live_traffic": ("alert_classifier", 2, 1)}
STEPS = (["no_change_site", "a_flag_change_site", "b_rolling_reboot", "b_retries_on"] + SEQUENCE
         + ["d_broken_canary", "f_repair_canary", "f_undrain_canary"]
         + ["g_canary_row_remap", "g_wave_fault_mid_rollout", "g_undrain_refused", "g_quarantine_repaired",
            "g_rollout_after_repair"]
         + ["h_lb_down_flag_change", "h_undrain_stopped_unit_drain", "h_undrain_stopped_unit",
            "h_undrain_wrong_answer", "h_undrain_started_unit", "h_drain_refused_canary", "h_drain_force", "h_drain_force_undrain"]
         + ["i_driver_require_gpu", "i_driver_install", "i_driver_upgrade"]
         + ["k_eda_gpu_storm", "k_eda_storm_repaired", "k_eda_gpu_fault", "k_eda_triton_stopped"])


@pytest.fixture(scope="module")
def results():
    with open(RESULTS) as handle:
        return json.load(handle)


@pytest.mark.parametrize("step", STEPS)
def test_no_request_through_the_load_balancer_failed(results, step):
    entry = results["steps"][step]
    assert entry["failed"] == 0, [c["errors"] for c in entry["clients"]]
    # every answer is the one the version that gave it must give
    assert entry["wrong"] == 0, [c["wrong_examples"] for c in entry["clients"]]
    assert all(c["ok"] > 0 for c in entry["clients"])
    assert {c["protocol"] for c in entry["clients"]} == {"grpc", "http"}


@pytest.mark.parametrize("step", STEPS)
def test_haproxys_sampler_ran_until_the_step_ended(results, step):
    """A sampler that died (an empty admin-socket answer once ended its reader), stopped or froze would leave
    a short record that every out-of-traffic check below reads as the truth."""
    entry = results["steps"][step]
    assert entry["sampler_problem"] is None, (entry["sampler_problem"], entry["samples"])


# the hosts whose served versions must hold during each step of the failure sequence (a good version loads everywhere;
# the slow one serves on the canary before its bake, whose rollback loads versions there)
HELD = {"c_model_rollout": [], "c_corrupt_model": HOSTS, "c_regressed_model": HOSTS,
        "c_slow_on_live_traffic": HOSTS[1:]}


@pytest.mark.parametrize("step", SEQUENCE)
def test_readiness_was_sampled_throughout_each_step_of_the_failure_sequence(results, step):
    """Sampled every 0.5 s while the step ran, not only read after it: where a failure is stopped, the last
    verified versions stayed READY at every probe and /v2/health/ready was 200 but while the canary's candidate
    loaded, failed or unloaded (Triton's strict readiness); on the wave, never reached, 200 at every probe."""
    readiness = results["steps"][step]["readiness"]
    assert readiness["problem"] is None, readiness
    assert set(readiness["samples"]) == set(HOSTS) and min(readiness["samples"].values()) >= 10, readiness["samples"]
    assert readiness["checked"] == sorted(HELD[step]), readiness["checked"]
    assert readiness["unexplained_count"] == 0, readiness["unexplained"]


@pytest.mark.parametrize("step", ["a_flag_change_site", "b_rolling_reboot"])
def test_every_host_went_out_of_traffic_one_batch_at_a_time(results, step):
    entry = results["steps"][step]
    assert entry["rc"] == 0
    assert not entry["batch_rule_broken"]
    out = [set(s) for s in entry["out_of_traffic"]]
    assert set(HOSTS) == set().union(*out), "every host was drained at some point"
    assert entry["max_out"] <= 2  # the largest batch of the plan


@pytest.mark.parametrize("step", ["a_flag_change_site", "b_rolling_reboot"])
def test_every_host_was_drained_with_nothing_in_flight_before_its_triton_stopped(results, step):
    """With HAProxy's retries off (retry-on none), so 0 failed requests above comes from the drain alone: each
    host seen in HAProxy's drain admin state (not only DOWN from its health check) with 0 requests in flight,
    in a sample taken before the first readiness probe that found its Triton not answering."""
    entry = results["steps"][step]
    assert entry["drain_problems"] == {}, entry["drain_problems"]
    assert set(entry["drain_margin_s"]) == set(HOSTS) and all(m is not None and m > 0 for m in entry["drain_margin_s"].values())
    # the converge left them off (group_vars/triton_lb/retries.yml) until b_retries_on
    assert results["steps"]["no_change_site"]["retries_off"] is True and results["steps"]["b_retries_on"]["rc"] == 0


def test_a_reboot_with_the_drain_skipped_fails_the_drain_proof(results):
    """The proof above can fail: roll-4 rebooted with triton_rolling_drain false (retries still off) is named."""
    entry = results["steps"]["b_reboot_without_drain"]
    assert entry["before"]["boot"]["roll-4"] != entry["after"]["boot"]["roll-4"]
    assert "never in HAProxy's drain state" in entry["drain_problems"]["roll-4"], entry["drain_problems"]


def test_a_site_run_that_changes_nothing_drains_and_restarts_nothing(results):
    entry = results["steps"]["no_change_site"]
    assert entry["rc"] == 0 and entry["max_out"] == 0
    assert entry["before"]["pid"] == entry["after"]["pid"]
    assert all(entry["changed"][h] == 0 for h in HOSTS)


def test_the_flag_change_restarted_every_host(results):
    entry = results["steps"]["a_flag_change_site"]
    assert all(entry["before"]["pid"][h] != entry["after"]["pid"][h] for h in HOSTS)


def test_the_rolling_reboot_rebooted_every_host(results):
    entry = results["steps"]["b_rolling_reboot"]
    assert all(entry["before"]["boot"][h] != entry["after"]["boot"][h] for h in HOSTS)


def test_the_model_rollout_restarted_nothing(results):
    entry = results["steps"]["c_model_rollout"]
    assert entry["rc"] == 0 and entry["before"]["pid"] == entry["after"]["pid"]


@pytest.mark.parametrize("step", SEQUENCE)
def test_after_every_step_of_the_failure_sequence_every_host_serves_the_last_verified_version(results, step):
    entry = results["steps"][step]
    model, version, target = FAILED.get(step, ("anomaly_detector", None, None))
    assert entry["before"]["pid"] == entry["after"]["pid"], "a model rollout restarted Triton"
    for host, state in entry["hosts"].items():
        assert state["health_ready"] == 200 and state["candidates"] == [], (host, state)
        if version is None:
            assert state[model] == [entry["hosts"]["roll-1"][model][0]], entry["hosts"]
        else:
            assert state[model] == [target], (host, state)


@pytest.mark.parametrize("step", sorted(FAILED))
def test_a_failed_version_stops_at_the_canary_and_never_reaches_wave_1(results, step):
    entry = results["steps"][step]
    model, version, target = FAILED[step]
    assert entry["rc"] != 0
    assert all(version not in v for v in entry["wave_1_on_disk"].values()), entry["wave_1_on_disk"]
    assert target in entry["canary_on_disk"], "the rollback target stays on the canary's disk"
    assert entry["canary_summary"].startswith("roll-1 [triton_canary]: rolled back")


@pytest.mark.parametrize("step", ["c_corrupt_model", "c_regressed_model"])
def test_no_client_was_answered_by_a_version_that_failed_its_checks(results, step):
    model, version, _target = FAILED[step]
    assert str(version) not in results["steps"][step]["answered_by"][model]


def test_two_failures_in_a_row_roll_back_to_the_last_verified_version(results):
    """The corrupt 3, then the regressed 4 (issue 21's case): the canary serves 2, never 3, after both."""
    regressed = results["steps"]["c_regressed_model"]
    assert regressed["hosts"]["roll-1"]["anomaly_detector"] == [2]
    assert 3 not in regressed["canary_on_disk"], "retention keeps the verified 2, not the failed 3"
    # rolled back for its own golden cases (v2's, which v1's graph fails), not for a failure at sync or load
    assert regressed["golden_cases_failed"]


def test_a_version_slow_only_on_live_traffic_is_baked_out_on_the_canary(results):
    entry = results["steps"]["c_slow_on_live_traffic"]
    assert entry["bake_breach"]["metric"] == "mean_latency_ratio"
    assert entry["bake_breach"]["value"] > entry["bake_breach"]["limit"]
    assert entry["answered_by"]["alert_classifier"].get("2", 0) > 0, "the canary served it to live traffic"


def test_good_versions_reach_every_host(results):
    """2 before the failures; 5 (version 2's files again) after them, by the GPU steps' rollout after the repair."""
    assert all(s["anomaly_detector"] == [2] for s in results["steps"]["c_model_rollout"]["hosts"].values())
    assert all(s["anomaly_detector"] == [5] for s in results["steps"]["g_rollout_after_repair"]["hosts"].values())


def test_the_fixed_canary_is_set_up_then_put_back_only_by_undrain(results):
    repaired, back = results["steps"]["f_repair_canary"], results["steps"]["f_undrain_canary"]
    assert repaired["rc"] == 0 and repaired["last_states"]["roll-1"] == "drained"
    assert repaired["after"]["pid"]["roll-1"] not in ("0", repaired["before"]["pid"]["roll-1"])
    assert back["rc"] == 0 and all(back["last_states"][h] == "up" for h in HOSTS)


def test_a_broken_server_change_stops_at_the_canary_which_stays_drained(results):
    entry = results["steps"]["d_broken_canary"]
    assert entry["rc"] != 0
    assert entry["last_states"]["roll-1"] == "drained"
    assert all(entry["last_states"][h] == "up" for h in HOSTS[1:])
    assert all(entry["before"]["pid"][h] == entry["after"]["pid"][h] for h in HOSTS[1:])
    assert any(line.startswith("roll-1 [triton_canary]: failed, left drained") for line in entry["summary"])


def test_the_operations_ran_through_the_collection_make_test_installed(results):
    """make test's artifact stage installs the built artifact; every step here ran its playbooks from there.

    Unset, the scenario runs the checkout's playbooks; that passes only when asked for by name
    (AIOPS_LB_FROM_CHECKOUT=1, a developer's `molecule test -s lb`), never because the variable went missing
    from make test."""
    installed = os.environ.get("AIOPS_LB_COLLECTIONS_PATH")
    if not installed:
        assert os.environ.get("AIOPS_LB_FROM_CHECKOUT") == "1", (
            "AIOPS_LB_COLLECTIONS_PATH is unset or empty: make test runs this scenario on the installed artifact "
            "(the artifact stage's collections path). Set AIOPS_LB_FROM_CHECKOUT=1 to run it on the checkout on purpose.")
        assert results["collections_path"] == "checkout"
        return
    assert results["collections_path"] == installed
    assert os.path.isfile(os.path.join(installed, "ansible_collections", "aiops", "triton", "MANIFEST.json"))


def test_the_no_change_site_ran_from_inside_the_execution_environment_under_make_test(results):
    """make test builds the EE (the ee stage) and the no-change site.yml runs from inside it over SSH, as AWX
    reaches a fleet: the EE's collection, its Python and SSH against hosts that serve under load. Only a developer's
    run on the checkout (AIOPS_LB_FROM_CHECKOUT=1) may run it with this machine's ansible-playbook."""
    image = os.environ.get("AIOPS_LB_EE_IMAGE")
    if os.environ.get("AIOPS_LB_COLLECTIONS_PATH") or not os.environ.get("AIOPS_LB_FROM_CHECKOUT") == "1":
        assert image, "AIOPS_LB_EE_IMAGE is unset or empty: make test runs the no-change site.yml inside the EE"
    assert results["steps"]["no_change_site"]["ee_image"] == (image or None)


def test_an_unanswering_balancer_and_a_stopped_unit_are_named_at_once(results):
    """Issue 38 item 5: the flag change stopped before any restart with the silent socket named; undrain.yml refused
    a stopped unit within 90 s (not after polling readiness for minutes) and left the host drained."""
    down = results["steps"]["h_lb_down_flag_change"]
    assert down["rc"] != 0 and down["before"]["pid"] == down["after"]["pid"]
    stopped = results["steps"]["h_undrain_stopped_unit"]
    assert stopped["rc"] != 0 and stopped["seconds"] < 90 and stopped["last_states"]["roll-2"] == "drained"
    assert results["steps"]["h_undrain_started_unit"]["last_states"]["roll-2"] == "up"


def test_undrain_refuses_a_host_whose_model_answers_wrongly(results):
    """Issue 38 item 2: roll-2 serving another version's graph (it loads and answers) is refused on its golden cases,
    named, and left drained; the right graph back, the same playbook puts it back (test above)."""
    wrong = results["steps"]["h_undrain_wrong_answer"]
    assert wrong["rc"] != 0 and wrong["last_states"]["roll-2"] == "drained"
    assert "Triton verification failed" in wrong["message"] and "anomaly_detector" in wrong["message"]


def test_drain_force_drains_what_drain_refuses(results):
    refused, forced = results["steps"]["h_drain_refused_canary"], results["steps"]["h_drain_force"]
    assert refused["rc"] != 0 and refused["last_states"]["roll-1"] == "up"
    assert forced["rc"] == 0 and forced["last_states"]["roll-1"] == "drained"
    assert results["steps"]["h_drain_force_undrain"]["last_states"]["roll-1"] == "up"


def test_the_driver_upgrade_runs_as_a_flow_on_a_drained_host(results):
    """Issue 38 item 2: nvidia_driver_upgrade.yml on roll-4 (Debian's 535 packages, pinned below the newest): drained
    with nothing in flight before Triton stopped, packages moved to the new pin and held again, Triton restarted there
    alone, back in traffic, 0 failed requests."""
    install, upgrade = results["steps"]["i_driver_install"], results["steps"]["i_driver_upgrade"]
    assert install["rc"] == 0 and install["state"]["versions"]
    assert all(v.startswith("535.261.03-") for v in install["state"]["versions"].values())
    assert upgrade["rc"] == 0 and upgrade["target"] != "535.261.03" and upgrade["state"]["versions"]
    assert all(v.startswith(upgrade["target"] + "-") for v in upgrade["state"]["versions"].values())
    assert set(upgrade["state"]["versions"]) <= set(upgrade["state"]["held"])
    assert upgrade["drain_problems"] == {} and upgrade["failed"] == 0
    assert [h for h in upgrade["before"]["pid"] if upgrade["before"]["pid"][h] != upgrade["after"]["pid"][h]] == ["roll-4"]
    assert upgrade["last_states"]["roll-4"] == "up"


# --- the nvidia_driver role on roll-4, as the former nvidia_driver scenario checked it ------------------------------
def test_a_required_gpu_that_is_absent_is_refused_before_any_package(results):
    refused = results["steps"]["i_driver_require_gpu"]
    assert refused["rc"] != 0 and refused["state"]["versions"] == {}


def test_the_driver_pin_holds_an_exact_version_although_a_newer_one_exists(results):
    install = results["steps"]["i_driver_install"]
    files = install["snapshot"]
    assert sorted(install["state"]["versions"]) == sorted(["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1",
                                                           "firmware-nvidia-gsp"])
    assert set(install["state"]["versions"]) | {"nvidia-persistenced"} <= set(install["state"]["held"])
    assert not [name for name in install["state"]["held"] if name.startswith(("nvidia-container", "libnvidia-container"))]
    assert "Pin: version 535.261.03-*" in files["pref"].splitlines()
    assert "Candidate: 535.261.03-" in files["policy"]
    assert [v for v in install["state"]["offered"] if v != "535.261.03"]  # a newer 535 is offered, not chosen


def test_the_dkms_report_names_the_running_kernel_without_a_module(results):
    assert results["steps"]["i_driver_install"]["dkms_report"].startswith("No NVIDIA DKMS module for kernel(s): ")


def test_the_driver_sources_blacklist_and_persistence_daemon(results):
    files = results["steps"]["i_driver_install"]["snapshot"]
    assert "Components: contrib non-free non-free-firmware" in files["sources"]
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in files["sources"]
    lines = files["blacklist"].splitlines()
    assert lines[0] == "644" and "blacklist nouveau" in lines and "options nouveau modeset=0" in lines
    enabled, active = files["persistenced"].splitlines()
    assert enabled == "enabled" and active in ("inactive", "failed")  # no module to talk to


def test_alerts_acted_by_themselves_within_the_stated_time(results):
    """files/eda_steps.py: Prometheus -> Alertmanager -> ansible-rulebook -> the gate -> the collection's playbooks."""
    eda = results["eda"]
    assert eda["fault_first_state"] == "drained"
    assert eda["fault_to_out_of_traffic_s"] is not None and eda["fault_to_out_of_traffic_s"] <= 90, eda["fault_to_out_of_traffic_s"]
    storm = eda["storm"]
    assert storm["quarantined"] in ("roll-2", "roll-3", "roll-4") and len(storm["refused"]) == 2, storm
    assert storm["quarantined"] in storm["pages"]
