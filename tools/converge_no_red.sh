#!/usr/bin/env bash
# converge_no_red.sh LOG SCENARIO: a molecule scenario's converge, as the molecule stage logged it, printed no red
# (no `fatal:`/`failed:` line, no `[ERROR]`): a first converge of site.yml on fresh hosts handles every failure it
# expects quietly (issue 38 item 4: a newcomer reads red as breakage). Fails too when LOG holds no such converge,
# so a renamed scenario or a changed log format cannot pass it unread.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 LOG SCENARIO" >&2; exit 2; }
log=$1 scenario=$2
[ -r "$log" ] || { echo "FAIL: no log $log" >&2; exit 1; }
# Ansible's lines as Ansible printed them: without colours, and without the box molecule draws around them
section=$(sed -E $'s/\x1b\\[[0-9;]*m//g; s/^ *\xe2\x94\x82 ?//' "$log" | awk -v s="$scenario" '
  index($0, s " ➜ converge: Executing") { inside = 1; next }
  inside && index($0, s " ➜ converge: Executed") { inside = 0; done = 1 }
  inside { print }
  END { if (!done) print "@@no-end@@" }')
if [ -z "$section" ] || ! grep -q "PLAY RECAP" <<<"$section" || grep -qx "@@no-end@@" <<<"$section"; then
  echo "FAIL: $log holds no complete converge of molecule/$scenario (no PLAY RECAP between its Executing and Executed lines)" >&2
  exit 1
fi
if grep -nE '^(fatal|failed):|^\[ERROR\]' <<<"$section" >&2; then
  echo "FAIL: molecule/$scenario's converge printed the errors above (a fresh converge prints no red)" >&2
  exit 1
fi
echo "molecule/$scenario: a fresh converge, no red ($(grep -c '^TASK \[' <<<"$section") tasks)"
