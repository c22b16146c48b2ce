"""haproxy_in_flight and haproxy_server_state on answers recorded from Debian's HAProxy 2.6 runtime API
(tests/fixtures/haproxy: two servers b1, b2 in backend triton_http; one slow request on each, then b1
drained, b2 in maintenance, b1's backend stopped, both set ready)."""

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.haproxy import haproxy_in_flight, haproxy_server_state

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "haproxy")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_in_flight_counts_the_drained_servers_running_request():
    text = fixture("show-stat-b1-drained-1-in-flight.csv")
    assert haproxy_in_flight(text, "b1", ["triton_http"]) == 1
    assert haproxy_in_flight(text, "b1") == 1
    assert haproxy_in_flight(fixture("show-stat-b1-drained-idle.csv"), "b1", "triton_http") == 0


def test_in_flight_sums_over_load_balancers():
    busy = fixture("show-stat-b1-drained-1-in-flight.csv")
    assert haproxy_in_flight([busy, busy, fixture("show-stat-b1-drained-idle.csv")], "b1", ["triton_http"]) == 2


def test_in_flight_adds_queued_requests():
    lines = fixture("show-stat-b1-drained-idle.csv").splitlines()
    header = lines[0][2:].split(",")
    row = lines[[i for i, line in enumerate(lines) if line.startswith("triton_http,b1,")][0]].split(",")
    row[header.index("qcur")] = "4"
    lines[[i for i, line in enumerate(lines) if line.startswith("triton_http,b1,")][0]] = ",".join(row)
    assert haproxy_in_flight("\n".join(lines), "b1", ["triton_http"]) == 4


def test_in_flight_refuses_a_server_or_backend_that_is_not_there():
    text = fixture("show-stat-b1-drained-idle.csv")
    with pytest.raises(AnsibleFilterError, match="no server 'lab-9'"):
        haproxy_in_flight(text, "lab-9", ["triton_http"])
    with pytest.raises(AnsibleFilterError, match="triton_grpc"):
        haproxy_in_flight(text, "b1", ["triton_http", "triton_grpc"])
    with pytest.raises(AnsibleFilterError, match="not an answer to 'show stat'"):
        haproxy_in_flight("Unknown command\n", "b1")


@pytest.mark.parametrize("name, b1, b2", [
    ("servers-state-b1-drained.txt", "drained", "up"),
    ("servers-state-b1-drained-b2-maint.txt", "drained", "maint"),
    # HAProxy's show stat and exporter call this one DOWN; the operator's drain wins here.
    ("servers-state-b1-drained-down-b2-maint.txt", "drained", "maint"),
    ("servers-state-b1-down-b2-up.txt", "down", "up"),
])
def test_server_state(name, b1, b2):
    text = fixture(name)
    assert haproxy_server_state(text, "b1", ["triton_http"]) == b1
    assert haproxy_server_state(text, "b2", ["triton_http"]) == b2


def test_server_state_across_load_balancers_and_missing_backends():
    up = fixture("servers-state-b1-down-b2-up.txt")
    drained = fixture("servers-state-b1-drained.txt")
    assert haproxy_server_state([up, drained], "b2", ["triton_http"]) == "up"
    assert haproxy_server_state([up, drained], "b1", ["triton_http"]) == "drained"
    assert haproxy_server_state(up, "b2", ["triton_http", "triton_grpc"]) == "unknown"
    assert haproxy_server_state(up, "lab-9", ["triton_http"]) == "unknown"


def test_server_state_refuses_other_input():
    with pytest.raises(AnsibleFilterError, match="show servers state"):
        haproxy_server_state("Permission denied\n", "b1")
    with pytest.raises(AnsibleFilterError, match="string or a list of strings"):
        haproxy_server_state({"b1": "UP"}, "b1")


def test_server_states_of_every_server_at_once():
    from ansible_collections.aiops.triton.plugins.filter.haproxy import haproxy_server_states
    text = fixture("servers-state-b1-drained-b2-maint.txt")
    assert haproxy_server_states(text, ["b1", "b2", "lab-9"], "triton_http") == {"b1": "drained", "b2": "maint", "lab-9": "unknown"}
    with pytest.raises(AnsibleFilterError, match="list of server names"):
        haproxy_server_states(text, "b1")
