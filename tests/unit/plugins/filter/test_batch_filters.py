"""sync_batch and load_batch: the batch of one s3_model_sync / triton_model call for a host's models, as the
loops they replaced passed each model's arguments."""

from ansible_collections.aiops.triton.plugins.filter.fleet import FilterModule, load_batch, sync_batch

PRESENT = [
    {"name": "anomaly_detector", "versions": [2], "config": {}, "ensemble": False},
    {"name": "alert_classifier", "latest": 2, "keep_versions": 0, "config": {}, "ensemble": False},
    {"name": "ops_pipeline", "versions": [1], "config": {}, "ensemble": True},
]


def test_sync_batch_pins_versions_else_latest_and_keeps_only_verified():
    records = {"anomaly_detector": {"verified": [1, 3]}, "ops_pipeline": {}}
    assert sync_batch(PRESENT, records, 1) == [
        {"model": "anomaly_detector", "versions": [2], "keep_versions": 1, "verified_versions": [1, 3]},
        {"model": "alert_classifier", "latest": 2, "keep_versions": 0, "verified_versions": []},
        {"model": "ops_pipeline", "versions": [1], "keep_versions": 1, "verified_versions": []},
    ]


def test_sync_batch_of_a_rollback_refetch_list():
    refetch = [{"name": "anomaly_detector", "versions": [1]}]
    assert sync_batch(refetch, {"anomaly_detector": {"verified": [1]}}, 2) == [
        {"model": "anomaly_detector", "versions": [1], "keep_versions": 2, "verified_versions": [1]}]


def test_load_batch_reloads_what_this_run_changed_and_leaves_ensembles_their_policy():
    sync = [{"changed": False}, {"changed": True}, {"changed": False}]
    config = [{"changed": False}, {"changed": False}, {"changed": True}]
    assert load_batch(PRESENT, sync, config) == [
        {"name": "anomaly_detector", "versions": [2], "reload": False},
        {"name": "alert_classifier", "reload": True},
        {"name": "ops_pipeline", "reload": True},
    ]


def test_filters_are_registered():
    filters = FilterModule().filters()
    assert filters["sync_batch"] is sync_batch and filters["load_batch"] is load_batch


def test_model_changes_names_each_model_and_kind_of_change():
    sync = [{"changed": True, "versions_added": [2], "versions_replaced": [], "versions_removed": [1], "recovered": []},
            {"changed": False}, {"changed": False}]
    config = [{"changed": False}, {"changed": True, "path": "/m/alert_classifier/config.pbtxt"}, {"changed": False}]
    load = [{"changed": True, "before": [1], "after": [2], "action": "load"},
            {"changed": True, "before": [1], "after": [1], "action": "load"},
            {"failed": True, "changed": False, "msg": "Triton could not load model 'ops_pipeline'"}]
    assert FilterModule().filters()["model_changes"](PRESENT, sync, config, load) == [
        "anomaly_detector: files - fetch [2], remove [1]",
        "anomaly_detector: READY versions [1] -> [2] (load)",
        "alert_classifier: config.pbtxt - /m/alert_classifier/config.pbtxt is not what the inventory renders",
        "alert_classifier: READY versions [1] -> [1] (load)",
        "ops_pipeline: failed - Triton could not load model 'ops_pipeline'",
    ]


def test_model_changes_of_a_run_that_changed_nothing_or_stopped_early():
    unchanged = [{"changed": False}] * 3
    assert FilterModule().filters()["model_changes"](PRESENT, unchanged, unchanged, unchanged) == []
    # the load never ran (the sync failed first): fewer results than models
    assert FilterModule().filters()["model_changes"](PRESENT, [{"changed": True, "versions_added": [2]}], [], []) == [
        "anomaly_detector: files - fetch [2]"]
