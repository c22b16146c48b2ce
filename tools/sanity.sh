#!/usr/bin/env bash
# ansible-test needs the collection at .../ansible_collections/aiops/triton: test a clean copy of the
# files git would ship (tracked + untracked-not-ignored), never the working tree with its venvs.
# --copy-only: make the copy and stop (tests/unit/tools/test_sanity_copy.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/build/sanity/ansible_collections/aiops/triton
rm -rf "$root/build/sanity"
mkdir -p "$dest"
cd "$root"
# A tracked file deleted in the working tree is not shipped; every other path must copy, or the run
# stops here (a file that failed to copy would otherwise escape sanity unseen).
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' path; do if [ -e "$path" ] || [ -L "$path" ]; then printf '%s\0' "$path"; fi; done \
  | sort -zu | xargs -0 --no-run-if-empty cp --parents -P -t "$dest" \
  || { echo "sanity: the files above did not copy into $dest: sanity would not have tested them" >&2; exit 1; }
if [ "${1:-}" = --copy-only ]; then exit 0; fi
# ansible-test bootstraps pip in each sanity venv with a script from an unreachable host.
pipver=$("$root/.venv-sanity/bin/python" -c 'from ansible_test._internal.python_requirements import PIP_VERSION; print(PIP_VERSION)' 2>/dev/null || echo 24.2)
mkdir -p ~/.ansible/test/cache
cp "$root/tools/get_pip_offline.py" ~/.ansible/test/cache/"get_pip_${pipver//./_}.py"
cd "$dest"
git init -q && git add -A >/dev/null 2>&1
exec "$root/.venv-sanity/bin/ansible-test" sanity --color no --python "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
  --requirements "$@"
