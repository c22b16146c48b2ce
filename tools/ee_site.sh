#!/usr/bin/env bash
# ee_site.sh [INVENTORY_DIR HOST...]: aiops.triton.site from inside the collection's EE (EE_IMAGE) against lab hosts
# over SSH, as an EE reaches a fleet: the lab key (lab/labctl.py ssh) in each host, their host keys checked strictly,
# the EE on the lab network. The inventory is a copy of INVENTORY_DIR (default inventories/lab and its hosts) with
# the lab transport swapped for SSH (tools/lab_ssh_project.sh). Prints the run's output (also in
# $EE_SITE_WORK/site.log) and exits with ansible-navigator's status; the caller judges the recap
# (tools/ee_check.sh --lab on the lab; molecule/lb's no_change_site on its fleet, under load).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
image=${EE_IMAGE:?EE_IMAGE=localhost/aiops-triton-ee:<version> (make ee builds it)}
if [ $# -gt 0 ]; then
  if [ $# -lt 2 ] || [ ! -d "$1" ]; then echo "usage: $0 [INVENTORY_DIR HOST...]" >&2; exit 2; fi
  ssh_inventory=$1; shift
  ssh_hosts="$*"
fi
export PATH=$root/.venv/bin:$PATH
podman image exists "$image" || { echo "FAIL: no image $image (make ee)"; exit 1; }
work=${EE_SITE_WORK:-${TMPDIR:-/tmp}/aiops-ee-site}
rm -rf "$work"
mkdir -p "$work"
# shellcheck source=tools/ee_navigator.sh
. "$root/tools/ee_navigator.sh"
# the project (the hosts over SSH): $project, $ssh_dir, hosts, env_args
# shellcheck source=tools/lab_ssh_project.sh
. "$root/tools/lab_ssh_project.sh"
# nothing of this machine's Ansible set-up leaks into the EE run
unset ANSIBLE_COLLECTIONS_PATH ANSIBLE_CONFIG ANSIBLE_ROLES_PATH ANSIBLE_CONNECTION_PLUGINS
printf '%s\n' "${hosts[@]}" >"$work/hosts"
cd "$project"
ansible-navigator run aiops.triton.site -i inventory "${navigator[@]}" "${env_args[@]}" \
  --eev "$ssh_dir:/lab-ssh:ro" --co=--network=aiops-lab 2>&1 | plain "$work/site.log"
