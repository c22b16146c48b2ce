"""Test client run on the lab host during a hot update: infers anomaly_detector (no version pinned)
in a loop for a fixed time and writes how many requests succeeded and failed."""
import json
import sys
import time
import urllib.request

url, case_file, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
with open(case_file) as fh:
    case = json.load(fh)["cases"][0]
body = json.dumps({"inputs": [dict(name=name, **tensor) for name, tensor in case["inputs"].items()]}).encode()
ok = failed = 0
errors = []
deadline = time.time() + seconds
while time.time() < deadline:
    req = urllib.request.Request(url + "/v2/models/anomaly_detector/infer", data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            json.load(resp)
        ok += 1
    except Exception as exc:  # every failure counts; the test asserts there are none
        failed += 1
        errors.append(str(exc))
with open(out, "w") as fh:
    json.dump({"ok": ok, "failed": failed, "errors": errors[:5]}, fh)
