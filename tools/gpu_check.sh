#!/usr/bin/env bash
# GPU check (issue #14): for a machine with an NVIDIA GPU and a working driver. Reads the GPUs' health
# verdict first (aiops.triton.nvidia_gpu_health: nvidia-smi -q -x, the kernel log's Xid lines, the PCI bus,
# DCGM where installed) and FAILS on an unhealthy one, naming the reasons. Then installs Triton with the
# native method on this host (localhost) from a wheelhouse directory, serves the anomaly_detector ONNX
# model on GPU 0 and runs aiops.triton.triton_verify with require_gpu: CUDA placement (nvidia-smi compute
# apps and the onnxruntime backend's placement line), golden cases over HTTP and gRPC, latency budget.
# Prints one line, PASS (with the GPU health verdict) or FAIL with the reason; exit code 0 or 1. The result
# JSON (its path is printed on FAIL) holds the verdict and its reasons under gpu_health. Not part of
# `make test` (no GPU in CI).
#
#   sudo tools/gpu_check.sh WHEELHOUSE_DIR        (from a checkout after `make setup`)
#
# WHEELHOUSE_DIR: the wheels of roles/triton_server/files/requirements-native-gpu.txt and
# requirements-tools.txt, e.g. `pip download -d DIR -r ...requirements-native-gpu.txt -r ...requirements-tools.txt`
# with the host's Python. Budget: GPU_CHECK_P50_MS (default 20), GPU_CHECK_P99_MS (50, as the production
# rollout pins), GPU_CHECK_REQUESTS (100). The host keeps what the role installed (tritonserver.service).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
fail() { echo "FAIL gpu_check: $*"; exit 1; }

wheelhouse=${1:-}
if [ -z "$wheelhouse" ] || [ ! -d "$wheelhouse" ]; then fail "usage: $0 WHEELHOUSE_DIR (a directory of wheels)"; fi
wheelhouse=$(cd "$wheelhouse" && pwd)
[ "$(id -u)" = 0 ] || fail "run as root (it installs tritonserver.service on this host)"
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: install the NVIDIA driver (roles/nvidia_driver)"
gpus=$(nvidia-smi -L 2>&1) || fail "nvidia-smi does not answer: $gpus"
echo "$gpus" | grep -q '^GPU 0:' || fail "nvidia-smi lists no GPU: $gpus"
[ -x .venv/bin/ansible-playbook ] || fail "no .venv: run make setup first"
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$PWD/.collection"

work=$(mktemp -d /tmp/gpu-check.XXXXXX)
log="$work/gpu_check.log"
.venv/bin/python -m model_repository._build --out "$work/build" --no-docs >"$log" 2>&1 \
  || fail "model build failed, see $log"
key=$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(32))')
extra=$(.venv/bin/python -c 'import json, sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
  gpu_check_wheelhouse "$wheelhouse" gpu_check_models "$work/build/model_repository" gpu_check_api_key "$key" \
  gpu_check_result "$work/result.json" gpu_check_p50_ms "${GPU_CHECK_P50_MS:-20}" \
  gpu_check_p99_ms "${GPU_CHECK_P99_MS:-50}" gpu_check_requests "${GPU_CHECK_REQUESTS:-100}")
ansible-playbook -i localhost, tools/gpu_check.yml -e "$extra" >>"$log" 2>&1
played=$?
last_msg=$(grep -o '"msg": "[^"]*' "$log" | tail -1 | cut -c9-)
.venv/bin/python - "$work/result.json" "$log" "$played" "$last_msg" <<'PY'
import json, sys
path, log, played, last_msg = sys.argv[1:5]
try:
    with open(path) as handle:
        result = json.load(handle)
except (OSError, ValueError):
    result = {}
health = result.get("gpu_health") or {}
if health.get("verdict") == "unhealthy":  # a host fault: the playbook stopped before installing anything
    print("FAIL gpu_check: GPU health unhealthy: %s (result: %s, log: %s)" % ("; ".join(health.get("reasons") or []), path, log))
    sys.exit(1)
if played != "0":
    print("FAIL gpu_check: %s (log: %s)" % (last_msg, log))
    sys.exit(1)
if not health.get("verdict"):
    print("FAIL gpu_check: no GPU health verdict in %s (log: %s)" % (path, log))
    sys.exit(1)
if result.get("failed") or not result.get("models"):
    print("FAIL gpu_check: %s (result: %s, log: %s)" % (result.get("msg", "no result"), path, log))
    sys.exit(1)
model = result["models"][0]
gpu, latency = model["gpu"], [v["latency"] for v in model["versions"]]
providers = sorted(set("%s:%s" % (p["provider"], p["device_id"]) for p in (gpu["execution_providers"] or {}).values()))
if not providers:  # the native method serves ONNX through the collection's backend, which always logs it
    print("FAIL gpu_check: no onnxruntime placement line in tritonserver.service's journal (log: %s)" % sys.argv[2])
    sys.exit(1)
cases = sum(len(v["cases"]) for v in model["versions"])
verdict = health["verdict"] + (" (%s)" % "; ".join(health["reasons"]) if health.get("reasons") else "")
print("PASS gpu_check: GPU health %s; anomaly_detector versions %s on GPU %s (%s), %d golden case runs, p50/p99 %s ms"
      % (verdict, [v["version"] for v in model["versions"]], gpu["expected_gpus"], ", ".join(providers),
         cases, ", ".join("%.1f/%.1f" % (l["p50_ms"], l["p99_ms"]) for l in latency)))
PY
