#!/usr/bin/env bash
# artifact_check.sh [--lab]: the collection as a user gets it. Builds the artifact, runs galaxy-importer
# on it (offline), installs it with `ansible-galaxy collection install --offline` into a clean
# collections path, asserts it ships no development files, and syntax-checks every playbook by FQCN
# from a directory outside the checkout, with only that path (no checkout, no bundled collections) and
# an inventory copied out of inventories/lab. A file the playbooks need but the artifact lacks fails here.
#   --lab  also runs aiops.triton.site twice against the lab hosts (`make lab-up publish-models` first)
#          through the installed collection; the second run must report changed=0 on every host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lab=false
[ "${1:-}" = --lab ] && lab=true
cd "$root"
# outside the checkout, like a user's project
work=${TMPDIR:-/tmp}/aiops-artifact-check
rm -rf "$work"
mkdir -p "$work/dist" "$work/collections" "$work/project"
export PATH=$root/.venv/bin:$PATH

# Built from the files git would ship (tracked + untracked-not-ignored), as a clone would hold them;
# ARTIFACT_REF=HEAD builds only what is committed (others' work in progress left out).
mkdir -p "$work/src"
if [ -n "${ARTIFACT_REF:-}" ]; then
  git -C "$root" archive "$ARTIFACT_REF" | tar -x -C "$work/src"
else
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
    if [ -e "$file" ]; then cp --parents -P "$file" "$work/src"; fi  # a tracked file deleted in the tree is not shipped
  done
fi
ansible-galaxy collection build "$work/src" --output-path "$work/dist" >/dev/null
tarball=$(ls "$work"/dist/aiops-triton-*.tar.gz)
echo "artifact: $(basename "$tarball") $(du -k "$tarball" | cut -f1) KiB"

# Only what a user runs: no tests, scenarios, lab, dev tools, build code or checkout entry points.
shipped=$(tar tzf "$tarball")
dev=$(grep -E '^(\./)?(tests|molecule|lab|tools|model_repository|build|\.ci|\.config|inventories/lab[^/]*)(/|$)|^(\./)?(Makefile|ansible\.cfg|site\.yml|pytest\.ini)$' <<<"$shipped" || true)
[ -z "$dev" ] || { echo "FAIL: the artifact ships development files:"; echo "$dev" | head -20; exit 1; }

# galaxy-importer as Galaxy / Automation Hub run it, minus what needs a network (ansible-test's
# container) and its ansible-lint (make test's lint stage runs the same profile over the tree: 30 s saved).
# Any warning or error it logs fails the check.
(cd "$work" && GALAXY_IMPORTER_CONFIG=$root/tools/galaxy-importer.cfg python -m galaxy_importer.main "$tarball") >"$work/importer.log" 2>&1 \
  || { cat "$work/importer.log"; echo "FAIL: galaxy-importer"; exit 1; }
if grep -E '^(WARNING|ERROR)|WARNING:|ERROR:' "$work/importer.log" | grep -v ' (warning)$'; then
  echo "FAIL: galaxy-importer reported the above"; exit 1
fi
grep -q "Importer processing completed successfully" "$work/importer.log"
echo "galaxy-importer: clean"

ANSIBLE_COLLECTIONS_PATH=$work/collections ansible-galaxy collection install --offline -p "$work/collections" "$tarball" >/dev/null
[ -f "$work/collections/ansible_collections/aiops/triton/MANIFEST.json" ]

# A user's project: an inventory copied out of the lab's, nothing of the checkout on any path.
cp -r "$root/inventories/lab" "$work/project/inventory"
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false ANSIBLE_CONFIG="" \
  ANSIBLE_ROLES_PATH=$work/project/roles ANSIBLE_NOCOLOR=1
cd "$work/project"
checked=0
for path in "$work"/collections/ansible_collections/aiops/triton/playbooks/*.yml; do
  playbook=$(basename "$path" .yml)
  ansible-playbook -i inventory "aiops.triton.$playbook" --syntax-check >"$work/syntax-$playbook.log" 2>&1 \
    || { cat "$work/syntax-$playbook.log"; echo "FAIL: aiops.triton.$playbook --syntax-check"; exit 1; }
  checked=$((checked + 1))
done
[ "$checked" -ge 9 ] || { echo "FAIL: only $checked playbooks in the artifact"; exit 1; }
echo "syntax-check by FQCN from $work/project: $checked playbooks"

if $lab; then
  # The lab's own transport (lab/plugins/connection) is the lab's, not the collection's: named here.
  export ANSIBLE_CONNECTION_PLUGINS=$root/lab/plugins/connection ANSIBLE_FORKS=20 ANSIBLE_GATHERING=smart
  eval "$("$root/.venv/bin/python" "$root/lab/labctl.py" env)"
  [ -f inventory/hosts.yml ] || { echo "FAIL: no lab hosts (make lab-up publish-models)"; exit 1; }
  for run in 1 2; do
    ansible-playbook -i inventory aiops.triton.site >"$work/site-$run.log" 2>&1 \
      || { tail -60 "$work/site-$run.log"; echo "FAIL: aiops.triton.site run $run"; exit 1; }
  done
  recap=$(sed -n '/PLAY RECAP/,$p' "$work/site-2.log" | grep -E ' ok=')
  echo "$recap"
  if grep -Ev ' changed=0 .*failed=0 ' <<<"$recap"; then echo "FAIL: the second run changed or failed something"; exit 1; fi
  echo "installed aiops.triton.site on the lab: second run changed=0 on $(wc -l <<<"$recap") hosts"
fi
