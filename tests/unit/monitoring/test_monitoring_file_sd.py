"""The file_sd targets the role writes: address, port and labels per host, rollout group fallbacks."""

from monitoring_render import render_file_sd


def endpoint(method="native", address="0.0.0.0", port=8002):
    """triton_server's endpoint fact as playbooks/monitoring.yml's first play sets it (the keys the template reads)."""
    return {"triton_server_endpoint": {"method": method, "metrics_address": address, "metrics_port": port}}


FLEET = {
    "gpu-1": dict(endpoint(), group_names=["triton_servers", "triton_canary"], ansible_host="10.0.0.1",
                  triton_rollout_groups=["triton_canary", "triton_wave_1"]),
    "gpu-2": dict(endpoint("container", port=9002), group_names=["triton_servers", "triton_wave_1"],
                  triton_rollout_groups=["triton_canary", "triton_wave_1"],
                  triton_monitoring_target_address="gpu-2.mgmt.example"),
    "cpu-1": dict(endpoint(), group_names=["triton_servers", "triton_other"], triton_monitoring_target_address="",
                  triton_rollout_groups=["triton_canary", "triton_wave_1"]),
    # metrics bound to a management address: scraped there (the rule HAProxy and the bake use)
    "gpu-3": dict(endpoint(address="10.9.0.3"), group_names=["triton_servers"], ansible_host="10.0.0.3"),
}


def test_one_target_group_per_host_with_its_labels():
    assert render_file_sd(FLEET, ["gpu-1", "gpu-2", "cpu-1", "gpu-3"]) == [
        {"targets": ["10.0.0.1:8002"], "labels": {"host": "gpu-1", "rollout_group": "triton_canary", "install_method": "native"}},
        {"targets": ["gpu-2.mgmt.example:9002"], "labels": {"host": "gpu-2", "rollout_group": "triton_wave_1", "install_method": "container"}},
        # in none of the rollout groups: the default label
        {"targets": ["cpu-1:8002"], "labels": {"host": "cpu-1", "rollout_group": "ungrouped", "install_method": "native"}},
        {"targets": ["10.9.0.3:8002"], "labels": {"host": "gpu-3", "rollout_group": "ungrouped", "install_method": "native"}},
    ]


def test_a_host_without_the_endpoint_fact_is_named_not_guessed():
    import pytest
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="h has no triton_server_endpoint fact"):
        render_file_sd({"h": {"group_names": [], "triton_server_metrics_port": 9002}}, ["h"])


def test_without_rollout_groups_every_host_is_ungrouped():
    hostvars = {"h": dict(endpoint(), group_names=["triton_servers", "triton_canary"], ansible_host="192.0.2.7")}
    assert render_file_sd(hostvars, ["h"])[0]["labels"]["rollout_group"] == "ungrouped"


def test_rollout_group_follows_the_ordered_list_not_group_names():
    hostvars = {"h": dict(endpoint(), group_names=["a_group", "b_group", "triton_servers"], triton_rollout_groups=["b_group", "a_group"])}
    assert render_file_sd(hostvars, ["h"])[0]["labels"]["rollout_group"] == "b_group"


def test_exporter_port_defaults_and_per_host_override():
    hostvars = {"a": dict(endpoint(), group_names=[]), "b": dict(endpoint(), group_names=[], triton_monitoring_node_exporter_port=19100)}
    groups = render_file_sd(hostvars, ["a", "b"], port_var="triton_monitoring_node_exporter_port", port_default=9100)
    assert [g["targets"] for g in groups] == [["a:9100"], ["b:19100"]]


def test_no_hosts_is_an_empty_list():
    assert render_file_sd({}, []) == []


def test_load_balancers_are_scraped_on_their_exporter_port():
    from monitoring_render import render_file_sd_lb
    hostvars = {"lb-1": {"ansible_host": "10.0.0.9"}, "lb-2": {"triton_lb_metrics_port": 9405},
                "lab-lb": {"triton_monitoring_target_address": "10.89.77.6", "ansible_host": "lab-lb"}}
    assert render_file_sd_lb(hostvars, ["lb-1", "lb-2", "lab-lb"]) == [
        {"targets": ["10.0.0.9:8405"], "labels": {"host": "lb-1"}},
        {"targets": ["lb-2:9405"], "labels": {"host": "lb-2"}},
        {"targets": ["10.89.77.6:8405"], "labels": {"host": "lab-lb"}},
    ]
    assert render_file_sd_lb({}, []) == []
