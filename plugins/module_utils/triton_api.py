# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small client for Triton's HTTP API (KServe v2 plus the model-repository extension).

Only the standard library is used, so modules built on it run on hosts without
tritonclient.  Every non-2xx answer becomes a ``TritonApiError`` carrying Triton's own
``error`` text, which is what a person needs to act on.
"""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type

import json
import socket

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import quote
from ansible.module_utils.six.moves.urllib.request import Request, build_opener, ProxyHandler

DEFAULT_API_KEY_HEADER = "triton-admin-key"

# Connection options every Triton module takes; documented by the aiops.triton.triton_api doc fragment.
CONNECTION_ARGSPEC = dict(
    url=dict(type="str", default="http://127.0.0.1:8000"),
    api_key=dict(type="str", no_log=True),
    api_key_header=dict(type="str", default=DEFAULT_API_KEY_HEADER, no_log=False),
)


class TritonApiError(Exception):
    """Triton answered with an error, or could not be reached.

    ``status`` is the HTTP status (``None`` when no answer came back); ``cause`` the answer or the reason in a
    few words (``HTTP 400: ...``, ``Connection refused``), without the URL and errno a message quoting it repeats.
    """

    def __init__(self, message, status=None, cause=None):
        super(TritonApiError, self).__init__(message)
        self.status = status
        self.cause = cause or message


class TritonClient(object):
    """Talks to one Triton server at ``url`` (``http://host:8000``)."""

    def __init__(self, url, api_key=None, api_key_header=DEFAULT_API_KEY_HEADER, timeout=30):
        self.url = url.rstrip("/")
        self.headers = {}
        self.key_header = api_key_header
        if api_key:
            self.headers[api_key_header] = api_key
        self.timeout = timeout
        # Triton is addressed directly; an environment proxy must not intercept it
        self._opener = build_opener(ProxyHandler({}))

    # -- transport -----------------------------------------------------------------
    def request(self, method, path, body=None):
        """Send one request; return (status, decoded JSON or None)."""
        data = None
        headers = dict(self.headers)
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = Request(self.url + path, data=data, headers=headers)
        req.get_method = lambda: method
        try:
            resp = self._opener.open(req, timeout=self.timeout)
            try:
                return resp.getcode(), _decode(resp.read())
            finally:
                resp.close()
        except HTTPError as exc:
            payload = _decode(exc.read())
            text = payload.get("error") if isinstance(payload, dict) else None
            cause = "HTTP %s: %s" % (exc.code, text or exc.reason)
            raise TritonApiError("%s %s: %s" % (method, path, cause), status=exc.code, cause=cause)
        except (URLError, socket.timeout, socket.error) as exc:
            reason = getattr(exc, "reason", exc)
            raise TritonApiError("cannot reach Triton at %s (%s %s): %s" % (self.url, method, path, reason),
                                 cause=getattr(reason, "strerror", None) or str(reason))

    def _probe(self, path):
        """True when GET ``path`` answers 200, False on any other answer."""
        try:
            return self.request("GET", path)[0] == 200
        except TritonApiError as exc:
            if exc.status is None:
                raise
            return False

    # -- health and metadata -------------------------------------------------------
    def live(self):
        return self._probe("/v2/health/live")

    def ready(self):
        return self._probe("/v2/health/ready")

    def server_metadata(self):
        return self.request("GET", "/v2")[1]

    def model_ready(self, name, version=None):
        return self._probe(_model_path(name, version) + "/ready")

    def model_metadata(self, name, version=None):
        return self.request("GET", _model_path(name, version))[1]

    def model_config(self, name, version=None):
        return self.request("GET", _model_path(name, version) + "/config")[1]

    def model_statistics(self, name, version=None):
        """GET /v2/models/<name>[/versions/<v>]/stats: ``{"model_stats": [...]}``."""
        return self.request("GET", _model_path(name, version) + "/stats")[1] or {}

    # -- repository API (restricted by the admin key on our hosts) ------------------
    def repository_index(self, ready_only=False):
        """List of ``{name, version, state, reason}`` for every model Triton knows."""
        return self.request("POST", "/v2/repository/index", {"ready": bool(ready_only)})[1] or []

    def model_index(self, name=None):
        """The repository index as ``{model: {version(int): (state, reason)}}``, or one model's entry.

        The one reader of the index: modules read versions and their states through it.
        """
        models = {}
        for entry in self.repository_index():
            if entry.get("name") and entry.get("version"):
                state = (entry.get("state", "UNKNOWN"), entry.get("reason", ""))
                models.setdefault(entry["name"], {})[int(entry["version"])] = state
        return models.get(name, {}) if name is not None else models

    def model_versions(self, name):
        """``{version(int): state}`` of one model from the repository index."""
        return dict((version, state) for version, (state, _reason) in self.model_index(name).items())

    def ready_versions(self, name):
        return sorted(v for v, state in self.model_versions(name).items() if state == "READY")

    def load_model(self, name, config=None, files=None):
        """Load or reload ``name``; ``config`` (dict) overrides config.pbtxt for this load.

        Triton answers only when the load finished: 200 once the new versions are ready,
        an error with the reason otherwise.  ``files`` maps ``file:<path>`` to base64.
        """
        parameters = {}
        if config is not None:
            parameters["config"] = json.dumps(config)
        if files:
            parameters.update(files)
        body = {"parameters": parameters} if parameters else {}
        self.request("POST", "/v2/repository/models/%s/load" % quote(name, safe=""), body)

    def unload_model(self, name, unload_dependents=False):
        body = {"parameters": {"unload_dependents": bool(unload_dependents)}}
        self.request("POST", "/v2/repository/models/%s/unload" % quote(name, safe=""), body)

    # -- inference -----------------------------------------------------------------
    def infer(self, name, inputs, version=None, outputs=None):
        """Run one inference with JSON tensors.

        ``inputs`` maps tensor name to ``{datatype, shape, data}`` (``data`` nested or flat;
        BYTES as strings).  Returns ``{output name: {datatype, shape, data}}``.
        """
        body = {"inputs": [dict(name=tensor, datatype=spec["datatype"], shape=list(spec["shape"]), data=spec["data"])
                           for tensor, spec in sorted(inputs.items())]}
        if outputs:
            body["outputs"] = [{"name": out} for out in outputs]
        result = self.request("POST", _model_path(name, version) + "/infer", body)[1] or {}
        return dict((out["name"], {"datatype": out.get("datatype"), "shape": out.get("shape"), "data": out.get("data")})
                    for out in result.get("outputs", []))


def _model_path(name, version=None):
    path = "/v2/models/%s" % quote(name, safe="")
    if version is not None and str(version) != "":
        path += "/versions/%s" % quote(str(version), safe="")
    return path


def _decode(raw):
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        return {"error": raw.decode("utf-8", "replace")}
