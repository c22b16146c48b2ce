#!/usr/bin/env bash
# stage.sh [--pytest] NAME CMD...: run one test stage, keep its log, print a one-line summary, fail loudly.
# A skipped test is no pass: the stage fails when a test skipped without an entry in the skip allow-list
# (tests/skip_allowlist.txt, or $STAGE_SKIP_ALLOWLIST) saying why, or when pytest reported more skips
# than it listed reasons for (the reasons come from -rs/-ra, which pytest.ini's addopts turn on).
# --pytest: the stage runs pytest, so its closing line must be there to read: a stage without one (pytest
# cut short, its output lost, a summary in a form this script cannot read) fails rather than pass with its
# passes and skips uncounted. Where the log is split into sections by lines "== <what>" (the molecule loop
# prints one per scenario), every section must have its own.
set -uo pipefail
pytest_stage=no
if [ "${1:-}" = --pytest ]; then pytest_stage=yes; shift; fi
name=$1; shift
allowlist=${STAGE_SKIP_ALLOWLIST:-$(cd "$(dirname "$0")/.." && pwd)/tests/skip_allowlist.txt}
mkdir -p build/logs
log=build/logs/$name.log
start=$(date +%s)
"$@" >"$log" 2>&1
rc=$?
secs=$(( $(date +%s) - start ))
# pytest's lines as pytest printed them: without colours, and without the box molecule draws around them
plain=$(mktemp)
trap 'rm -f "$plain"' EXIT
sed -E $'s/\x1b\\[[0-9;]*m//g; s/^ *\xe2\x94\x82 ?//' "$log" >"$plain"

# pytest's closing lines ("=== 5 passed, 2 skipped in 3.1s ===", or bare under -q), summed over every
# pytest run in the stage (molecule runs one per scenario)
totals=$(grep -E '^(=+ )?[0-9]+ [a-z]+.* in [0-9.]+s( \([0-9:]+\))?( =+)?$' "$plain" \
  | awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^(passed|skipped)/) n[substr($(i + 1), 1, 6)] += $i }
         END { printf "%d %d", n["passed"], n["skippe"] }')
passed=${totals% *}
skipped=${totals#* }
summary=""
if grep -qE '^(=+ )?[0-9]+ [a-z]+.* in [0-9.]+s( \([0-9:]+\))?( =+)?$' "$plain"; then
  summary="$passed passed, $skipped skipped"
fi

# "SKIPPED [N] path:line: reason" lines; each must contain an allow-list entry's text
problem=""
if [ "$pytest_stage" = yes ]; then
  # each "== <what>" section (or the whole log when there is none) needs a pytest closing line
  unread=$(awk -v summary='^(=+ )?[0-9]+ [a-z]+.* in [0-9.]+s( \\([0-9:]+\\))?( =+)?$' '
      /^== / { if (section != "" && !seen) print section; section = substr($0, 4); seen = 0; next }
      $0 ~ summary { seen = 1 }
      END { if (section == "" && !seen) print "(the whole log)"; else if (section != "" && !seen) print section }' "$plain")
  if [ -n "$unread" ]; then
    problem="no pytest summary line to read (no \"N passed ... in Ns\" line), so nothing was counted, in: $(tr '\n' ';' <<<"$unread" | sed 's/;$//; s/;/; /g')"
  fi
fi
if [ -z "$problem" ] && [ "$skipped" -gt 0 ]; then
  if [ ! -r "$allowlist" ]; then
    problem="$skipped test(s) skipped and there is no skip allow-list $allowlist"
  elif grep -vE '^[[:space:]]*(#|$)' "$allowlist" | grep -vqE '^.+[^[:space:]][[:space:]]+\|[[:space:]]+[^[:space:]].*$'; then
    problem="$allowlist: every entry is 'TEXT OF THE SKIP LINE | why it may skip'"
  else
    listed=0
    unexplained=""
    while IFS= read -r line; do
      count=$(sed -E 's/^SKIPPED \[([0-9]+)\].*/\1/' <<<"$line")
      listed=$(( listed + count ))
      allowed=no
      while IFS= read -r entry; do
        text=$(sed -E 's/[[:space:]]+\|[[:space:]]+.*$//' <<<"$entry")
        if [[ "$line" == *"$text"* ]]; then allowed=yes; break; fi
      done < <(grep -vE '^[[:space:]]*(#|$)' "$allowlist")
      [ "$allowed" = yes ] || unexplained+="  $line"$'\n'
    done < <(grep -E '^SKIPPED \[[0-9]+\] ' "$plain")
    if [ -n "$unexplained" ]; then
      problem="skipped without an allow-list entry ($allowlist):"$'\n'"$unexplained"
    elif [ "$listed" -ne "$skipped" ]; then
      problem="$skipped test(s) skipped but $listed listed with a reason (run pytest with -rs)"
    fi
  fi
fi

if [ $rc -eq 0 ] && [ -z "$problem" ]; then
  printf 'STAGE %-22s PASS  %4ss  %s\n' "$name" "$secs" "$summary"
elif [ $rc -eq 0 ]; then
  printf 'STAGE %-22s FAIL  %4ss  %s (log: %s)\n' "$name" "$secs" "$summary" "$log"
  printf '%s\n' "$problem"
  exit 1
else
  printf 'STAGE %-22s FAIL  %4ss  %s (rc=%s, log: %s)\n' "$name" "$secs" "$summary" "$rc" "$log"
  echo "----- last 80 lines of $log -----"
  tail -n 80 "$log"
  # Last, as CI shows a run's tail: why, from above the tail. A scenario driver's "... CHECK FAILED: why" (inside
  # a result Ansible prints), pytest's FAILED and E lines, and the last three Ansible task failures that were not
  # ignored (each "[ERROR]: Task failed" block up to the next task, unless it ends in "...ignoring"; a rescued
  # one cannot be told apart, so the last: a failed run stops at its own).
  why=$(awk '
      function flush() { if (block != "" && !ignored) blocks[++n] = block; block = ""; ignored = 0 }
      /CHECK FAILED: / { line = $0; sub(/.*CHECK FAILED: /, "CHECK FAILED: ", line); sub(/\\n.*/, "", line)
                         sub(/['"'"'",]+$/, "", line); print substr(line, 1, 400) }
      /^FAILED [^ ]+::/ || /^E {3}/ { print substr($0, 1, 300) }
      /^(TASK|PLAY|RUNNING HANDLER) / { flush() }
      /^\[ERROR\]: / { flush(); block = substr($0, 1, 300); kept = 1; next }
      block != "" { if (/\.\.\.ignoring/) ignored = 1; else if (kept++ < 8) block = block "\n" substr($0, 1, 300) }
      END { flush(); for (i = (n > 3 ? n - 2 : 1); i <= n; i++) print blocks[i] }' "$plain" | awk '!seen[$0]++' | head -n 60)
  if [ -n "$why" ]; then
    echo "----- why $name failed (from $log) -----"
    printf '%s\n' "$why"
  fi
  exit $rc
fi
