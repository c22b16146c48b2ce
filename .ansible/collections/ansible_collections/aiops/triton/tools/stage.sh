#!/usr/bin/env bash
# stage.sh NAME CMD...: run one test stage, keep its log, print a one-line summary, fail loudly.
set -uo pipefail
name=$1; shift
mkdir -p build/logs
log=build/logs/$name.log
start=$(date +%s)
"$@" >"$log" 2>&1
rc=$?
secs=$(( $(date +%s) - start ))
if [ $rc -eq 0 ]; then
  summary=$(grep -Eo '[0-9]+ passed[^=]*' "$log" | tail -1)
  printf 'STAGE %-22s PASS  %4ss  %s\n' "$name" "$secs" "$summary"
else
  printf 'STAGE %-22s FAIL  %4ss  (rc=%s, log: %s)\n' "$name" "$secs" "$rc" "$log"
  echo "----- last 80 lines of $log -----"
  tail -n 80 "$log"
  exit $rc
fi
