# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""alertmanager.py: an ansible-rulebook event source that receives Prometheus Alertmanager webhooks.

Arguments:
  host: the address to listen on (127.0.0.1)
  port: the TCP port to listen on (5050)
  token: the shared bearer token Alertmanager sends (required)
  host_label: the alert label that names the inventory host (host)
  path: the URL path Alertmanager posts to (/alerts)
  max_body_bytes: the largest request body accepted (1048576)

One event per alert of a webhook:
  {"alert": {...}, "alertmanager": {...}, "meta": {"hosts": "<the host label>"}}
"""

import asyncio
import hmac
import json
import logging

from aiohttp import web

DOCUMENTATION = r"""
---
short_description: Receive Prometheus Alertmanager webhooks, one event per alert.
description:
  - An ansible-rulebook event source that listens for the webhook notifications of Prometheus Alertmanager
    (C(webhook_configs)) and puts one event on the queue per alert of a notification.
  - Each event has C(alert) (C(status), C(labels), C(annotations), C(startsAt), C(endsAt), C(fingerprint),
    C(generatorURL)), C(alertmanager) (C(receiver), C(groupKey), C(externalURL) and the group's C(status))
    and, when the alert carries the label named by O(host_label), C(meta.hosts) set to that label's value,
    so that a C(run_playbook) action limits the playbook to that host.
  - Every POST must carry the header C(Authorization) set to C(Bearer <token>) with the shared O(token); the source refuses to start
    without one. A request with a missing or wrong token is answered 401, a body over O(max_body_bytes) 413,
    a body that is not JSON or not an Alertmanager notification 400; nothing is put on the queue for them.
  - C(GET /) answers C(up); C(GET /metrics) gives the request counts by result and the number of alerts
    accepted, in the Prometheus text format.
options:
  host:
    description:
      - The address to listen on. Use C(0.0.0.0) to accept webhooks from other hosts.
    type: str
    default: "127.0.0.1"
  port:
    description:
      - The TCP port to listen on.
    type: int
    default: 5050
  token:
    description:
      - The shared secret Alertmanager sends in the header C(Authorization) as C(Bearer <token>)
        (C(http_config.authorization.credentials) of its webhook receiver).
      - Required. It is never logged.
    type: str
    required: true
  host_label:
    description:
      - The alert label whose value names the inventory host the alert is about; it becomes the event's C(meta.hosts).
    type: str
    default: "host"
  path:
    description:
      - The URL path Alertmanager posts to.
    type: str
    default: "/alerts"
  max_body_bytes:
    description:
      - The largest request body accepted, in bytes; a larger one is answered 413 without being parsed.
    type: int
    default: 1048576
"""

EXAMPLES = r"""
# Alertmanager (alertmanager.yml):
#   receivers:
#     - name: eda
#       webhook_configs:
#         - url: http://eda.example.com:5050/alerts
#           send_resolved: true
#           http_config:
#             authorization:
#               type: Bearer
#               credentials_file: /etc/alertmanager/eda_token
#
# Rulebook (ansible-rulebook --env-vars ALERTMANAGER_TOKEN ...):
- name: Quarantine hosts whose GPUs Alertmanager reports unhealthy
  hosts: all
  sources:
    - aiops.triton.alertmanager:
        host: 0.0.0.0
        port: 5050
        token: "{{ ALERTMANAGER_TOKEN }}"
        host_label: host
  rules:
    - name: GPU unhealthy
      condition: event.alert.status == "firing" and event.alert.labels.alertname == "GpuUnhealthy"
      action:
        run_playbook:
          name: aiops.triton.quarantine
          extra_vars:
            triton_rolling_quarantine_reason: "{{ event.alert.labels.alertname }}: {{ event.alert.annotations.summary }}"
"""

LOGGER = logging.getLogger(__name__)

RESULTS = ("accepted", "bad_token", "bad_json", "bad_payload", "too_large", "error")

ALERT_FIELDS = ("status", "labels", "annotations", "startsAt", "endsAt", "fingerprint", "generatorURL")
GROUP_FIELDS = ("receiver", "groupKey", "externalURL", "status")


class PayloadError(ValueError):
    """JSON that is not an Alertmanager notification (an object with an "alerts" list of objects)."""


def token_ok(authorization, token):
    """True when an Authorization header value is "Bearer <token>" (the scheme in any case), compared in constant time."""
    if not authorization or not token:
        return False
    scheme, sep, credentials = authorization.strip().partition(" ")
    if not sep or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(credentials.strip().encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass"))


def alerts_to_events(payload, host_label="host"):
    """The events of one Alertmanager notification, one per alert; PayloadError when it is not one."""
    if not isinstance(payload, dict):
        raise PayloadError("the body is not a JSON object")
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise PayloadError('the body has no "alerts" list')
    group = {field: payload.get(field) for field in GROUP_FIELDS}
    events = []
    for index, alert in enumerate(alerts):
        if not isinstance(alert, dict):
            raise PayloadError("alert %d is not a JSON object" % index)
        fields = {field: alert.get(field) for field in ALERT_FIELDS}
        for field in ("labels", "annotations"):
            if fields[field] is None:
                fields[field] = {}
            elif not isinstance(fields[field], dict):
                raise PayloadError("the %s of alert %d are not a JSON object" % (field, index))
        event = {"alert": fields, "alertmanager": dict(group)}
        host = fields["labels"].get(host_label)
        if host not in (None, ""):
            event["meta"] = {"hosts": host}
        events.append(event)
    return events


def new_counters():
    """Request counts by result, all zero, and the number of alerts accepted."""
    counters = {result: 0 for result in RESULTS}
    counters["alerts_total"] = 0
    return counters


def metrics_text(counters):
    """The counters in the Prometheus text exposition format."""
    lines = [
        "# HELP aiops_eda_webhook_requests_total Alertmanager webhook requests received, by result.",
        "# TYPE aiops_eda_webhook_requests_total counter",
    ]
    for result in RESULTS:
        lines.append('aiops_eda_webhook_requests_total{result="%s"} %d' % (result, counters.get(result, 0)))
    lines.extend([
        "# HELP aiops_eda_webhook_alerts_total Alerts accepted and put on the event queue.",
        "# TYPE aiops_eda_webhook_alerts_total counter",
        "aiops_eda_webhook_alerts_total %d" % counters.get("alerts_total", 0),
    ])
    return "\n".join(lines) + "\n"


async def read_limited(content, limit):
    """At most limit + 1 bytes of a request body: more than limit means it is too large, whatever Content-Length said."""
    chunks = []
    size = 0
    while size <= limit:
        chunk = await content.read(limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _default(value, default):
    return default if value is None or value == "" else value


def _settings(args):
    """The source's arguments with their defaults, checked; ValueError before anything listens."""
    args = args or {}
    # Stripped like Alertmanager strips its credentials_file, so a token file's newline does not lock it out.
    token = "" if args.get("token") is None else str(args["token"]).strip()
    if not token:
        raise ValueError(
            "aiops.triton.alertmanager: the token argument is required; the source refuses to run without a shared token "
            "(Alertmanager sends it as Authorization: Bearer <token>)")
    path = str(args.get("path") or "/alerts")
    if not path.startswith("/"):
        raise ValueError("aiops.triton.alertmanager: path must start with /, got %r" % path)
    if path in ("/", "/metrics"):
        raise ValueError("aiops.triton.alertmanager: path must not be / or /metrics")
    max_body_bytes = int(_default(args.get("max_body_bytes"), 1048576))
    if max_body_bytes < 1:
        raise ValueError("aiops.triton.alertmanager: max_body_bytes must be at least 1")
    return {
        "host": str(args.get("host") or "127.0.0.1"),
        "port": int(_default(args.get("port"), 5050)),
        "token": token,
        "host_label": str(args.get("host_label") or "host"),
        "path": path,
        "max_body_bytes": max_body_bytes,
    }


def _json_response(status, body, counters, result, headers=None):
    counters[result] += 1
    return web.json_response(body, status=status, headers=headers)


def make_app(queue, settings, counters):
    """The aiohttp application: POST settings["path"], GET / and GET /metrics."""

    async def receive(request):
        try:
            if not token_ok(request.headers.get("Authorization"), settings["token"]):
                return _json_response(401, {"error": "missing or wrong bearer token"}, counters, "bad_token",
                                      headers={"WWW-Authenticate": "Bearer"})
            limit = settings["max_body_bytes"]
            if request.content_length is not None and request.content_length > limit:
                return _json_response(413, {"error": "body larger than %d bytes" % limit}, counters, "too_large")
            body = await read_limited(request.content, limit)
            if len(body) > limit:
                return _json_response(413, {"error": "body larger than %d bytes" % limit}, counters, "too_large")
            try:
                payload = json.loads(body)
            except (ValueError, RecursionError):
                return _json_response(400, {"error": "body is not JSON"}, counters, "bad_json")
            try:
                events = alerts_to_events(payload, settings["host_label"])
            except PayloadError as exc:
                return _json_response(400, {"error": str(exc)}, counters, "bad_payload")
            for event in events:
                await queue.put(event)
            counters["alerts_total"] += len(events)
            return _json_response(202, {"accepted": len(events)}, counters, "accepted")
        except Exception:  # any failure answers 500 and the source keeps serving
            # The traceback names the code and the exception, never the request's headers (the token).
            LOGGER.exception("aiops.triton.alertmanager: error handling a webhook from %s", request.remote)
            return _json_response(500, {"error": "internal error"}, counters, "error")

    async def up(request):
        return web.Response(text="up")

    async def metrics(request):
        return web.Response(text=metrics_text(counters), content_type="text/plain", charset="utf-8")

    app = web.Application()
    app.router.add_post(settings["path"], receive)
    app.router.add_get("/", up)
    app.router.add_get("/metrics", metrics)
    return app


async def main(queue, args):
    """Serve Alertmanager webhooks until cancelled, putting one event per alert on queue."""
    settings = _settings(args)
    counters = new_counters()
    runner = web.AppRunner(make_app(queue, settings, counters))
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings["host"], settings["port"])
        await site.start()
        LOGGER.info("aiops.triton.alertmanager: listening on %s:%d%s", settings["host"], settings["port"], settings["path"])
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    # Run by hand: print the events, for example with
    #   curl -H 'Authorization: Bearer secret' -d @notification.json http://127.0.0.1:5050/alerts

    class MockQueue:
        async def put(self, event):
            print(event)

    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(MockQueue(), {"token": "secret"}))
