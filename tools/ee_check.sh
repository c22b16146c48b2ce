#!/usr/bin/env bash
# ee_check.sh: the execution environment (`make ee`) as AWX / ansible-navigator use it (`make test-ee`).
# From a project directory outside the checkout, with nothing of the checkout on any path, ansible-navigator
# runs the image (--ee true, --pull-policy never) and inside it:
#   1. the collection is installed (from the artifact) with its Python dependencies importable;
#   2. every module and filter of the collection loads in ansible-doc, community.general.haproxy included;
#   3. every playbook of the collection passes --syntax-check by FQCN against a copy of the lab inventory;
#   4. tests/ee/controller.yml: the controller-side module and filters really run (write, no change, refuse);
#   5. aiops.triton.verify by FQCN with no Triton hosts: its controller play writes the fleet report.
#   --lab  then aiops.triton.site from inside the EE against the converged lab hosts (`make lab` first) over
#          SSH, as an EE reaches a fleet: the lab key (lab/labctl.py ssh) in each host, their host keys checked
#          strictly, the EE on the lab network. Every host's PLAY RECAP must say changed=0 unreachable=0
#          failed=0. The inventory is a copy of inventories/lab with the lab transport swapped for SSH
#          (tools/ee_site.sh, which molecule/lb's no-change step runs on its own fleet in make test).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lab=false
case ${1:-} in --lab) lab=true ;; "") ;; *) echo "usage: $0 [--lab]" >&2; exit 2 ;; esac
image=${EE_IMAGE:?EE_IMAGE=localhost/aiops-triton-ee:<version> (make test-ee sets it)}
export PATH=$root/.venv/bin:$PATH
podman image exists "$image" || { echo "FAIL: no image $image (make ee)"; exit 1; }

work=${TMPDIR:-/tmp}/aiops-ee-check
rm -rf "$work"
mkdir -p "$work/project"
cp -r "$root/inventories/lab" "$work/project/inventory"
# the lab's groups without the lab's hosts: the lab transport cannot reach them from inside the EE
printf '%s\n' '---' 'triton_servers:' '  hosts: {}' >"$work/project/inventory/hosts.yml"
cp "$root/tests/ee/controller.yml" "$work/project/"
cd "$work/project"
# nothing of this machine's Ansible set-up leaks into the EE run
unset ANSIBLE_COLLECTIONS_PATH ANSIBLE_CONFIG ANSIBLE_ROLES_PATH
# shellcheck source=tools/ee_navigator.sh
. "$root/tools/ee_navigator.sh"

# names from the checkout: one the artifact lacks fails inside the EE
names() { find "$1" -maxdepth 1 -name "*.$2" -printf '%f\n' | sed "s/\.$2\$//" | sort | tr '\n' ' '; }
# shellcheck disable=SC2016  # expanded inside the EE
inside='set -euo pipefail
ansible --version | head -1
ansible-galaxy collection list aiops.triton | grep -E "^aiops\.triton "
python3 -c "import tritonclient.grpc.model_config_pb2, google.protobuf, matplotlib.pyplot; print(\"python deps: ok\")"
n=0; for m in $EE_CHECK_MODULES; do ansible-doc -t module "aiops.triton.$m" >/dev/null; n=$((n+1)); done
ansible-doc -t module community.general.haproxy >/dev/null
echo "ansible-doc modules: $n + community.general.haproxy"
n=0; for f in $EE_CHECK_FILTERS; do ansible-doc -t filter "aiops.triton.$f" >/dev/null; n=$((n+1)); done
echo "ansible-doc filters: $n"
n=0; for p in $EE_CHECK_PLAYBOOKS; do ansible-playbook -i inventory "aiops.triton.$p" --syntax-check >/dev/null; n=$((n+1)); done
echo "syntax-check by FQCN: $n playbooks"'
ansible-navigator exec "${navigator[@]}" --senv "EE_CHECK_MODULES=$(names "$root/plugins/modules" py)" \
  --senv "EE_CHECK_FILTERS=$(names "$root/plugins/filter" yml)" --senv "EE_CHECK_PLAYBOOKS=$(names "$root/playbooks" yml)" \
  -- "$inside" | plain "$work/exec.log"
grep -q "^python deps: ok" "$work/exec.log"
grep -qE "^syntax-check by FQCN: [0-9]+ playbooks" "$work/exec.log"

ansible-navigator run controller.yml -i localhost, "${navigator[@]}" | plain "$work/controller.log"
grep -qE 'localhost +: ok=[0-9]+ +changed=1 +unreachable=0 +failed=0' "$work/controller.log" \
  || { echo "FAIL: tests/ee/controller.yml in the EE"; exit 1; }

ansible-navigator run aiops.triton.verify -i inventory "${navigator[@]}" | plain "$work/verify.log"
grep -q 'fleet report: 0 hosts' "$work/verify.log" || { echo "FAIL: aiops.triton.verify in the EE"; exit 1; }
if grep -E 'Unable to parse|No inventory was parsed' "$work/exec.log" "$work/verify.log"; then
  echo "FAIL: the EE did not read the project's inventory"; exit 1
fi
echo "EE $image: collection, dependencies, docs, playbooks and the controller-side plays pass"
$lab || exit 0

# --- aiops.triton.site from inside the EE against the lab hosts, over SSH ----------------------------------
started=$SECONDS
rc=0
EE_SITE_WORK=$work/site EE_IMAGE=$image "$root/tools/ee_site.sh" >"$work/site.out" 2>&1 || rc=$?
took=$((SECONDS - started))
recap=$(sed -n '/PLAY RECAP/,$p' "$work/site.out" | grep -E '^[^ ]+ +: ok=[0-9]+' || true)
if [ "$rc" -ne 0 ] || [ -z "$recap" ]; then tail -60 "$work/site.out"; echo "FAIL: aiops.triton.site in the EE (rc $rc)"; exit 1; fi
echo "$recap"
# every host ee_site.sh reached (the lab inventory's), each with its own recap line
mapfile -t hosts <"$work/site/hosts"
for host in "${hosts[@]}"; do
  grep -qE "^$host +: ok=[1-9][0-9]* +changed=0 +unreachable=0 +failed=0 " <<<"$recap" \
    || { echo "FAIL: $host: its PLAY RECAP is not ok, changed=0 unreachable=0 failed=0"; exit 1; }
done
if grep -Ev ' changed=0 +unreachable=0 +failed=0 ' <<<"$recap"; then echo "FAIL: the above changed or failed"; exit 1; fi
echo "EE $image: aiops.triton.site over SSH, ${#hosts[@]} lab hosts (${hosts[*]}), changed=0, ${took}s (log: $work/site.out)"
