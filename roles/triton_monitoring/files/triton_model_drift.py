"""Write Triton's served model versions and the inventory's pins as a node_exporter textfile.

Installed by aiops.triton.triton_monitoring (tasks_from: drift_reporter) and run by a systemd
timer. Reads the repository index (POST /v2/repository/index, with the repository-API key the
triton_server role stores) and the pins file (JSON: {"model": [versions] or N, ...}; N is an inventory
entry `latest: N`: the N newest served versions count as pinned) and writes, atomically:

  aiops_triton_server_ready                        1 when /v2/health/ready answers 200
  aiops_triton_drift_index_success                 1 when the repository index was read
  aiops_triton_drift_last_run_timestamp_seconds    when this ran
  aiops_triton_model_version{model,version,served,pinned} 1   one per (model, version) served or pinned

A served version that is not pinned is drift (alert TritonModelVersionDrift); a pinned version that
is not served is TritonPinnedVersionNotServed. Standard library only: it runs with the host's python3, without
Ansible; the textfile is written by the collection's plugins/module_utils/fs.py, which the role installs under its
collection path in --lib (lib/ beside this script).
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request


def read_key(path):
    """The key from the server role's env file (a line TRITON_API_KEY=...); None without a file."""
    if not path or not os.path.exists(path):
        return None
    with open(path) as handle:
        for line in handle:
            name, sep, value = line.strip().partition("=")
            if sep and name == "TRITON_API_KEY":
                return value
    return None


def ready(url, timeout):
    try:
        with urllib.request.urlopen(url + "/v2/health/ready", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def served_versions(url, key, header, timeout):
    """{model: set(versions)} of READY versions, or None when the index cannot be read."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers[header] = key
    request = urllib.request.Request(url + "/v2/repository/index", data=b'{"ready": true}', headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            index = json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    served = {}
    for entry in index:
        if entry.get("state") == "READY" and entry.get("version"):
            served.setdefault(entry["name"], set()).add(str(entry["version"]))
    return served


def read_pins(path):
    """{model: set(versions) or int N (the N newest served)}."""
    with open(path) as handle:
        pins = json.load(handle)
    if not isinstance(pins, dict) or not all(isinstance(v, list) or (isinstance(v, int) and not isinstance(v, bool) and v > 0)
                                             for v in pins.values()):
        raise ValueError("%s: expected a JSON object of model name -> list of versions (or a positive count of newest versions)" % path)
    return dict((model, v if isinstance(v, int) else set(str(x) for x in v)) for model, v in pins.items())


def version_key(version):
    return (len(version), version)


def resolve(pins, served):
    """Turn ``latest: N`` pins into the N newest versions this host serves."""
    resolved = {}
    for model, want in pins.items():
        if isinstance(want, int):
            want = set(sorted(served.get(model, set()), key=version_key)[-want:])
        resolved[model] = want
    return resolved


def escape(value):
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def render(is_ready, served, pins, now):
    lines = [
        "# HELP aiops_triton_server_ready 1 when Triton's /v2/health/ready answers 200.",
        "# TYPE aiops_triton_server_ready gauge",
        "aiops_triton_server_ready %d" % int(is_ready),
        "# HELP aiops_triton_drift_index_success 1 when Triton's repository index was read.",
        "# TYPE aiops_triton_drift_index_success gauge",
        "aiops_triton_drift_index_success %d" % int(served is not None),
        "# HELP aiops_triton_drift_last_run_timestamp_seconds When the drift reporter last ran.",
        "# TYPE aiops_triton_drift_last_run_timestamp_seconds gauge",
        "aiops_triton_drift_last_run_timestamp_seconds %d" % now,
    ]
    # Without the index nothing is known about served versions: no series rather than false ones.
    if served is not None:
        lines += ["# HELP aiops_triton_model_version A model version served by Triton (READY) and/or pinned by the inventory.",
                  "# TYPE aiops_triton_model_version gauge"]
        pins = resolve(pins, served)
        for model in sorted(set(served) | set(pins)):
            have, want = served.get(model, set()), pins.get(model, set())
            for version in sorted(have | want, key=version_key):
                lines.append('aiops_triton_model_version{model="%s",version="%s",served="%s",pinned="%s"} 1'
                             % (escape(model), escape(version), str(version in have).lower(), str(version in want).lower()))
    return "\n".join(lines) + "\n"


def chmod_readable(tmp):
    """node_exporter, not root, reads the textfile (mkstemp makes it 0600)."""
    os.chmod(tmp, 0o644)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--url", required=True, help="Triton HTTP endpoint, e.g. http://127.0.0.1:8000")
    parser.add_argument("--pins", required=True, help="JSON file: model -> list of pinned versions")
    parser.add_argument("--output", required=True, help="textfile to write (*.prom in node_exporter's textfile dir)")
    parser.add_argument("--key-file", default="", help="env file holding TRITON_API_KEY=...")
    parser.add_argument("--key-header", default="triton-admin-key")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"),
                        help="directory holding ansible_collections/aiops/triton/plugins/module_utils/fs.py")
    args = parser.parse_args(argv)
    if not args.output.endswith(".prom"):
        parser.error("--output must end in .prom (node_exporter reads only those): %s" % args.output)
    try:
        pins = read_pins(args.pins)
    except (OSError, ValueError) as exc:
        parser.error("cannot read pins: %s" % exc)
    sys.path.insert(0, args.lib)
    from ansible_collections.aiops.triton.plugins.module_utils import fs  # pylint: disable=import-error

    url = args.url.rstrip("/")
    served = served_versions(url, read_key(args.key_file), args.key_header, args.timeout)
    # node_exporter must never read a half-written file: the collection's fs.write_atomic (fsynced, renamed,
    # directory fsynced), as the modules write theirs.
    text = render(ready(url, args.timeout), served, pins, int(time.time()))
    fs.write_atomic(args.output, text.encode("utf-8"), ".aiops-triton-", chmod_readable)
    return 0


if __name__ == "__main__":
    sys.exit(main())
