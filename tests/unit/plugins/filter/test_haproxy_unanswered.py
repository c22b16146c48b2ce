"""haproxy_unanswered: which load balancers' admin sockets did not answer, from the registered socat calls
(roles/triton_lb/tasks/haproxy_answers.yml), with socat's errno text as the reason."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiops.triton.plugins.filter.haproxy import haproxy_unanswered


def call(host, rc=0, stdout="Name: HAProxy\nVersion: 2.6.12\n", stderr="", socket="/run/haproxy/admin.sock", **extra):
    return dict({"item": host, "rc": rc, "stdout": stdout, "stderr": stderr,
                 "cmd": ["socat", "-t", "5", "stdio", "unix-connect:" + socket]}, **extra)


REFUSED = '2026/05/04 10:00:00 socat[812] E connect(5, AF=1 "/run/haproxy/admin.sock", 25): Connection refused'
MISSING = '2026/05/04 10:00:00 socat[813] E connect(5, AF=1 "/tmp/a.sock", 13): No such file or directory'


def test_only_the_silent_balancers_with_socket_and_errno_text():
    results = {"results": [call("lb1"), call("lb2", rc=1, stdout="", stderr=REFUSED),
                           call("lb3", rc=1, stdout="", stderr=MISSING, socket="/tmp/a.sock")]}
    assert haproxy_unanswered(results) == [
        {"host": "lb2", "socket": "/run/haproxy/admin.sock", "reason": "Connection refused"},
        {"host": "lb3", "socket": "/tmp/a.sock", "reason": "No such file or directory"}]


def test_a_shell_pipe_names_socats_reason_not_the_broken_pipe_after_it():
    shell = {"item": "lb1", "rc": 1, "stdout": "", "cmd": "set -o pipefail; echo \"show info\" | socat -t 5 stdio unix-connect:'/run/h a/s'",
             "stderr": REFUSED + "\nbash: line 1: echo: write error: Broken pipe\n"}
    assert haproxy_unanswered([shell]) == [{"host": "lb1", "socket": "/run/h a/s", "reason": "Connection refused"}]


def test_every_balancer_answered():
    assert haproxy_unanswered([call("lb1"), call("lb2")]) == []
    assert haproxy_unanswered({"results": []}) == []


def test_an_empty_answer_is_no_answer():
    # socat exits 0 after its timeout when HAProxy accepts and says nothing
    assert haproxy_unanswered([call("lb1", stdout="")]) == [
        {"host": "lb1", "socket": "/run/haproxy/admin.sock", "reason": "no answer within socat's timeout"}]


def test_unreachable_host_and_missing_socat():
    unreachable = {"item": "lb1", "unreachable": True, "msg": "ssh: connect to host lb1 port 22: No route to host"}
    no_socat = {"item": "lb2", "rc": 2, "msg": "[Errno 2] No such file or directory: b'socat'", "cmd": "socat -t 5 stdio unix-connect:/s"}
    assert haproxy_unanswered([unreachable, no_socat]) == [
        {"host": "lb1", "socket": "", "reason": "the host could not be reached: ssh: connect to host lb1 port 22: No route to host"},
        {"host": "lb2", "socket": "/s", "reason": "[Errno 2] No such file or directory: b'socat'"}]


def test_skipped_calls_are_not_counted():
    assert haproxy_unanswered([{"item": "lb1", "skipped": True}]) == []


def test_refuses_what_is_not_a_list_of_results():
    with pytest.raises(AnsibleFilterError):
        haproxy_unanswered("Connection refused")
