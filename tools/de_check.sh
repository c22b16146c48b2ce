#!/usr/bin/env bash
# de_check.sh --lab: the decision environment (`make de`) runs the collection's rulebook against the converged lab
# (`make lab` first; `make test-de`). On the lab network, reaching the lab hosts over SSH as an EE does
# (tools/lab_ssh_project.sh), the DE runs `ansible-rulebook -r aiops.triton.alertmanager_remediation` with
# aiops_eda_dry_run: true and its state on a mounted directory. This machine then sends what Alertmanager would:
#   - a signed TritonModelVersionDrift for a wave host: one `dry-run` record, "ansible-playbook aiops.triton.models
#     --limit <host> --check --diff";
#   - a signed TritonGPUUnhealthy for the same host: the gate reads HAProxy's state over SSH from inside the DE and
#     refuses (a 2-host lab: quarantining the wave's only host would leave its group no host up), recorded `refused`;
#   - no token, a wrong token, malformed JSON: refused and counted (bad_token 2, bad_json 1), nothing recorded;
# and the source still answers. Nothing on a lab host changes (a dry run, and a refusal before any drain).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ "${1:-}" = --lab ] || { echo "usage: $0 --lab" >&2; exit 2; }
image=${DE_IMAGE:?DE_IMAGE=localhost/aiops-triton-de:<version> (make test-de sets it)}
export PATH=$root/.venv/bin:$PATH
podman image exists "$image" || { echo "FAIL: no image $image (make de)"; exit 1; }

work=${TMPDIR:-/tmp}/aiops-de-check
rm -rf "$work"
mkdir -p "$work/state"
# the lab project (the lab hosts over SSH): $project, $ssh_dir, hosts, env_args (exports the lab's variables)
# shellcheck source=tools/lab_ssh_project.sh
. "$root/tools/lab_ssh_project.sh"
# a wave host (not the canary, not the balancer)
target=$(printf '%s\n' "${hosts[@]}" | grep -E '^lab-[0-9]+$' | sort -V | sed -n 2p)
[ -n "$target" ] || { echo "FAIL: the lab has no second Triton host (make lab)"; exit 1; }
printf '%s\n' '---' 'aiops_eda_listen_host: 0.0.0.0' 'aiops_eda_listen_port: 5050' 'aiops_eda_dry_run: true' \
  'aiops_eda_state_dir: /state' >"$project/vars.yml"
AIOPS_EDA_TOKEN=$(python -c 'import secrets; print(secrets.token_hex(16))')
export AIOPS_EDA_TOKEN

name=aiops-de-check
podman rm -f "$name" >/dev/null 2>&1 || true
trap 'podman logs "$name" >"$work/rulebook.log" 2>&1 || true; podman rm -f "$name" >/dev/null 2>&1 || true' EXIT
# the variables by name (-e NAME): no secret on a command line. As root in the container, as ansible-navigator runs
# an EE under podman (--user=root): the lab key (mode 0600) and the state directory are root's here.
podman run -d --name "$name" --user root --network aiops-lab -v "$project:/project:ro" -v "$ssh_dir:/lab-ssh:ro" \
  -v "$work/state:/state" -w /project -e AIOPS_EDA_TOKEN -e AIOPS_LAB_MODEL_DIR=/project/models \
  -e AIOPS_LAB_S3_ENDPOINT -e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY -e AIOPS_LAB_TRITON_API_KEY -e AIOPS_LAB_WHEELHOUSE \
  "$image" ansible-rulebook -r aiops.triton.alertmanager_remediation -i /project/inventory --vars /project/vars.yml \
  -E AIOPS_EDA_TOKEN >/dev/null
address=$(podman inspect --format '{{(index .NetworkSettings.Networks "aiops-lab").IPAddress}}' "$name")

python - "$address" "$target" "$work/state" "$name" <<'EOF'
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

address, target, state, name = sys.argv[1:]
token = os.environ["AIOPS_EDA_TOKEN"]
base = "http://%s:5050" % address


def fail(message):
    logs = subprocess.run(["podman", "logs", "--tail", "40", name], capture_output=True, text=True).stdout
    sys.exit("FAIL: %s\n%s" % (message, logs))


def http(path, body=None, auth=token):
    request = urllib.request.Request(base + path, data=body, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    if auth:
        request.add_header("Authorization", "Bearer " + auth)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return None, ""


def webhook(alertname):
    return json.dumps({"version": "4", "status": "firing", "receiver": "aiops-eda", "alerts": [{
        "status": "firing", "labels": {"alertname": alertname, "host": target, "severity": "critical"},
        "annotations": {"summary": "de_check.sh"}, "startsAt": "2026-12-07T00:00:00Z",
        "fingerprint": "de-check-" + alertname}]}).encode()


def records():
    path = os.path.join(state, "results.jsonl")
    return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []


deadline = time.time() + 180  # the JVM and drools start inside the DE
while http("/", auth=None)[0] != 200:
    if time.time() > deadline:
        fail("the DE's event source did not answer in 180 s")
    time.sleep(1)
forged = [http("/alerts", webhook("TritonGPUUnhealthy"), auth=None)[0],
          http("/alerts", webhook("TritonGPUUnhealthy"), auth="wrong-" + token)[0],
          http("/alerts", b"{not json")[0]]
if forged != [401, 401, 400]:
    fail("forged requests answered %s, not [401, 401, 400]" % forged)
for alertname in ("TritonModelVersionDrift", "TritonGPUUnhealthy"):
    status = http("/alerts", webhook(alertname))[0]
    if status != 202:
        fail("the signed %s was answered %s" % (alertname, status))
deadline = time.time() + 240
while len(records()) < 2 and time.time() < deadline:
    time.sleep(1)
found = records()
outcomes = sorted((r["alert"]["alertname"], r["outcome"]) for r in found)
if outcomes != [("TritonGPUUnhealthy", "refused"), ("TritonModelVersionDrift", "dry-run")]:
    fail("records %s, not one dry-run (drift) and one refusal (GPU): %s" % (outcomes, found))
drift = [r for r in found if r["outcome"] == "dry-run"][0]
if drift["would_run"] != "ansible-playbook aiops.triton.models --limit %s --check --diff" % target:
    fail("the drift dry run would run %r" % drift["would_run"])
refused = [r for r in found if r["outcome"] == "refused"][0]
if "would have no host up" not in refused["reason"]:
    fail("the GPU alert was refused for another reason than the balancer's state: %s" % refused["reason"])
status, text = http("/metrics", auth=None)
counts = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
wanted = {'aiops_eda_webhook_requests_total{result="bad_token"}': "2", 'aiops_eda_webhook_requests_total{result="bad_json"}': "1",
          'aiops_eda_webhook_requests_total{result="accepted"}': "2"}
if status != 200 or any(counts.get(k) != v for k, v in wanted.items()):
    fail("the source's counts %s, not %s" % (counts, wanted))
print("DE: dry run %r; refused: %s; forged requests refused and counted; the source still answers"
      % (drift["would_run"], refused["reason"][:160]))
EOF
echo "DE $image: aiops.triton.alertmanager_remediation against the lab over SSH (target $target); log $work/rulebook.log"
