"""The aiops.triton.alertmanager event source (extensions/eda/plugins/event_source/alertmanager.py), run for real
on a free 127.0.0.1 port with aiohttp as the client: one event per alert, every refused request counted and
nothing queued for it, the source still serving afterwards, no start without a token, the port released when
the task is cancelled, and the token never in the logs."""

import asyncio
import importlib.util
import json
import logging
import os
import socket

import aiohttp
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLUGIN = os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "alertmanager.py")

SPEC = importlib.util.spec_from_file_location("aiops_triton_eda_alertmanager", PLUGIN)
source = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(source)

TOKEN = "s3cr3t-shared-token-4f2a"
AUTH = {"Authorization": "Bearer " + TOKEN}

NOTIFICATION = {
    "version": "4",
    "groupKey": '{}:{alertname="GpuUnhealthy"}',
    "truncatedAlerts": 0,
    "status": "firing",
    "receiver": "eda",
    "groupLabels": {"alertname": "GpuUnhealthy"},
    "commonLabels": {"alertname": "GpuUnhealthy"},
    "commonAnnotations": {},
    "externalURL": "http://alertmanager.example.com:9093",
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "GpuUnhealthy", "host": "gpu-infer-01.dc1.example.com", "gpu": "3"},
            "annotations": {"summary": "row remap pending"},
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus.example.com:9090/graph",
            "fingerprint": "a1b2c3",
        },
        {
            "status": "resolved",
            "labels": {"alertname": "GpuUnhealthy", "host": "gpu-infer-02.dc1.example.com"},
            "annotations": {"summary": "ECC errors"},
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "2026-01-01T00:05:00Z",
            "generatorURL": "http://prometheus.example.com:9090/graph",
            "fingerprint": "d4e5f6",
        },
    ],
}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port):
    """Nothing listens on the port any more (SO_REUSEADDR: the server's closed connections in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:
            return False
        return True


def run_source(scenario, queue=None, **args):
    """Start main(queue, args) on a free port, wait until it answers, run scenario(session, base, queue), cancel it.

    Returns what the scenario returned and the port (released by then)."""
    port = free_port()
    args = dict({"token": TOKEN, "port": str(port)}, **args)  # rulebook vars may arrive as strings

    async def go():
        events = asyncio.Queue() if queue is None else queue
        task = asyncio.create_task(source.main(events, args))
        base = "http://127.0.0.1:%d" % port
        try:
            async with aiohttp.ClientSession() as session:
                for attempt in range(200):
                    assert not task.done(), task.exception() if not task.cancelled() else "cancelled"
                    try:
                        async with session.get(base + "/") as response:
                            assert response.status == 200
                            assert await response.text() == "up"
                            break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.01 * min(attempt + 1, 5))
                else:
                    pytest.fail("the source did not start listening")
                result = await scenario(session, base, events)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return result

    return asyncio.run(asyncio.wait_for(go(), 8)), port


async def post(session, base, body, headers=None, path="/alerts"):
    data = body if isinstance(body, (bytes, str)) or hasattr(body, "__aiter__") else json.dumps(body)
    async with session.post(base + path, data=data, headers=headers if headers is not None else AUTH) as response:
        return response.status, await response.text()


async def read_metrics(session, base):
    async with session.get(base + "/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = int(value)
    return text, values


def drain(queue):
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return events


def test_two_alerts_make_two_events_with_hosts_from_the_host_label():
    async def scenario(session, base, queue):
        status, text = await post(session, base, NOTIFICATION)
        assert (status, json.loads(text)) == (202, {"accepted": 2})
        return drain(queue), (await read_metrics(session, base))[1]

    (events, metrics), port = run_source(scenario)
    group = {"receiver": "eda", "groupKey": NOTIFICATION["groupKey"], "externalURL": "http://alertmanager.example.com:9093",
             "status": "firing"}
    assert events == [
        {"alert": {key: NOTIFICATION["alerts"][0][key] for key in source.ALERT_FIELDS}, "alertmanager": group,
         "meta": {"hosts": "gpu-infer-01.dc1.example.com"}},
        {"alert": {key: NOTIFICATION["alerts"][1][key] for key in source.ALERT_FIELDS}, "alertmanager": group,
         "meta": {"hosts": "gpu-infer-02.dc1.example.com"}},
    ]
    assert events[0]["alert"]["labels"]["gpu"] == "3"
    assert events[1]["alert"]["annotations"] == {"summary": "ECC errors"}
    assert metrics['aiops_eda_webhook_requests_total{result="accepted"}'] == 1
    assert metrics["aiops_eda_webhook_alerts_total"] == 2
    assert port_is_free(port)


def test_an_alert_without_the_host_label_has_no_meta_hosts_and_the_label_is_configurable():
    alert = {"status": "firing", "labels": {"alertname": "TritonDown", "instance": "gpu-infer-03:8002"}}
    body = dict(NOTIFICATION, alerts=[alert, {"status": "firing", "labels": {"alertname": "Watchdog"}}])

    async def scenario(session, base, queue):
        assert (await post(session, base, body, path="/hook"))[0] == 202
        return drain(queue)

    events, port = run_source(scenario, host_label="instance", path="/hook")
    assert events[0]["meta"] == {"hosts": "gpu-infer-03:8002"}
    assert "hosts" not in events[1].get("meta", {})
    assert events[1]["alert"]["annotations"] == {}
    assert events[1]["alert"]["fingerprint"] is None


def test_refused_requests_are_counted_queue_nothing_and_the_source_keeps_serving():
    async def oversize_chunks():
        # No Content-Length (chunked): the source must count the bytes itself.
        for _index in range(4):
            yield b" " * 1000

    refused = [
        ({}, NOTIFICATION, 401),
        ({"Authorization": "Bearer wrong-token"}, NOTIFICATION, 401),
        ({"Authorization": TOKEN}, NOTIFICATION, 401),
        ({"Authorization": "Basic " + TOKEN}, NOTIFICATION, 401),
        (AUTH, "{not json", 400),
        (AUTH, b"\xff\xfe{", 400),
        (AUTH, {"alerts": [1]}, 400),
        (AUTH, {"alerts": 3}, 400),
        (AUTH, [{"alerts": []}], 400),
        (AUTH, {"alerts": [{"labels": ["host"]}]}, 400),
        (AUTH, " " * 3000 + "{}", 413),
        (AUTH, "oversize-chunked", 413),
    ]

    async def scenario(session, base, queue):
        statuses = []
        for headers, body, _expected in refused:
            if body == "oversize-chunked":
                body = oversize_chunks()
            statuses.append((await post(session, base, body, headers=headers))[0])
        assert queue.empty()
        after = await post(session, base, NOTIFICATION)
        return statuses, after, drain(queue), await read_metrics(session, base)

    (statuses, after, events, (text, metrics)), port = run_source(scenario, max_body_bytes="2048")
    assert statuses == [expected for _headers, _body, expected in refused]
    assert after == (202, '{"accepted": 2}')
    assert len(events) == 2
    assert metrics == {
        'aiops_eda_webhook_requests_total{result="accepted"}': 1,
        'aiops_eda_webhook_requests_total{result="bad_token"}': 4,
        'aiops_eda_webhook_requests_total{result="bad_json"}': 2,
        'aiops_eda_webhook_requests_total{result="bad_payload"}': 4,
        'aiops_eda_webhook_requests_total{result="too_large"}': 2,
        'aiops_eda_webhook_requests_total{result="error"}': 0,
        "aiops_eda_webhook_alerts_total": 2,
    }
    assert "# TYPE aiops_eda_webhook_requests_total counter" in text
    assert "# HELP aiops_eda_webhook_alerts_total" in text
    assert port_is_free(port)


@pytest.mark.parametrize("args", [{}, {"token": ""}, {"token": None}, {"token": "  "}])
def test_no_token_is_a_value_error_before_listening(args):
    port = free_port()
    queue = asyncio.Queue()
    with pytest.raises(ValueError, match="refuses to run without a shared token"):
        asyncio.run(source.main(queue, dict(args, port=port)))
    assert port_is_free(port)


def test_cancelling_the_task_releases_the_port():
    port = free_port()

    async def go():
        task = asyncio.create_task(source.main(asyncio.Queue(), {"token": TOKEN, "port": port}))
        for _attempt in range(200):
            if not port_is_free(port):
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the source did not start listening")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert port_is_free(port)


def test_a_failing_queue_answers_500_keeps_serving_and_never_logs_the_token(caplog):
    class BrokenQueue:
        async def put(self, event):
            raise RuntimeError("queue is broken")

        def empty(self):
            return True

    async def scenario(session, base, queue):
        first = await post(session, base, NOTIFICATION)
        second = await post(session, base, NOTIFICATION)
        return first, second, await read_metrics(session, base)

    caplog.set_level(logging.DEBUG)
    (first, second, (text, metrics)), port = run_source(scenario, queue=BrokenQueue())
    assert first[0] == second[0] == 500
    assert metrics['aiops_eda_webhook_requests_total{result="error"}'] == 2
    assert metrics["aiops_eda_webhook_alerts_total"] == 0
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert "127.0.0.1" in errors[0].getMessage()
    assert "queue is broken" in caplog.text  # the traceback is logged
    assert TOKEN not in caplog.text
    assert "Authorization" not in caplog.text and "Bearer" not in caplog.text


def test_pure_parts():
    assert source.token_ok("Bearer " + TOKEN, TOKEN)
    assert source.token_ok("bearer  " + TOKEN + " ", TOKEN)
    assert not source.token_ok(None, TOKEN)
    assert not source.token_ok("Bearer", TOKEN)
    assert not source.token_ok("Bearer " + TOKEN + "x", TOKEN)
    assert not source.token_ok("Bearer \udcff" + TOKEN, TOKEN)
    assert not source.token_ok("Bearer ", "")
    assert source.alerts_to_events({"alerts": []}) == []
    with pytest.raises(source.PayloadError):
        source.alerts_to_events({"alerts": [{"annotations": "x"}]})
    event = source.alerts_to_events({"alerts": [{"labels": {"host": ""}}]})[0]
    assert "meta" not in event and event["alert"]["labels"] == {"host": ""}
    text = source.metrics_text(source.new_counters())
    for result in source.RESULTS:
        assert 'aiops_eda_webhook_requests_total{result="%s"} 0\n' % result in text
    assert text.endswith("aiops_eda_webhook_alerts_total 0\n")
