# lab_ssh_project.sh (sourced): a project directory for a container on the lab network that reaches lab hosts over
# SSH, as an execution or decision environment reaches a fleet (tools/ee_site.sh, tools/de_check.sh --lab). Needs
# $root (the checkout) and $work (a scratch dir); sets $project (inventory/, models/, ansible.cfg), $ssh_dir (the lab
# key and known_hosts, to mount at /lab-ssh), the array hosts and the array env_args (ansible-navigator's
# --senv/--penv for what the lab's group_vars look up; the variables are exported).
# The inventory: $ssh_inventory (a directory; default the converged lab's, inventories/lab) and the hosts named in
# $ssh_hosts (space-separated; default every host of inventories/lab/hosts.yml). molecule/lb passes its own.
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # its variables are the caller's, and it reads the caller's root and work
ssh_inventory=${ssh_inventory:-$root/inventories/lab}
if [ -n "${ssh_hosts:-}" ]; then
  read -r -a hosts <<<"$ssh_hosts"
else
  inventory=$root/inventories/lab/hosts.yml
  [ -f "$inventory" ] || { echo "FAIL: no lab hosts ($inventory): make lab"; exit 1; }
  # every host of the lab's inventory (lab-N, lab-lb)
  mapfile -t hosts < <(python - "$inventory" <<'EOF'
import sys
import yaml
def walk(group):
    yield from (group.get("hosts") or {})
    for child in (group.get("children") or {}).values():
        yield from walk(child or {})
print("\n".join(sorted({h for group in yaml.safe_load(open(sys.argv[1])).values() for h in walk(group or {})})))
EOF
  )
fi
[ "${#hosts[@]}" -gt 0 ] || { echo "FAIL: no hosts in $ssh_inventory"; exit 1; }
# the lab key into each host, their host keys into known_hosts: {"key", "known_hosts", "hosts": {name: address}}
ssh_json=$(python "$root/lab/labctl.py" ssh "${hosts[@]}")

project=$work/lab
mkdir -p "$project/models"
# a copy with every link followed (molecule's inventory links its group_vars and host_vars)
cp -rL "$ssh_inventory" "$project/inventory"
# host_vars: each host at its bridge address as labctl reads it now, over SSH. A host's own file wins over its
# group_vars and its inline variables, so the inventory's own transport (lab_podman, set in group_vars or
# host_vars) gives way to SSH wherever it was set.
rm -rf "$project/inventory/host_vars"
mkdir -p "$project/inventory/host_vars"
ssh_dir=$(python - "$ssh_json" "$project/inventory/host_vars" <<'EOF'
import json
import os
import sys
answer = json.loads(sys.argv[1])
# /lab-ssh is lab/.state/ssh mounted read-only: the lab key, and known_hosts with each host's own host key (read
# through podman by lab/labctl.py ssh), checked strictly.
SSH = """# Written by tools/lab_ssh_project.sh: the lab host over SSH, as an execution environment reaches a fleet.
ansible_connection: ansible.builtin.ssh
ansible_user: root
ansible_pipelining: true
ansible_ssh_private_key_file: /lab-ssh/id_ed25519
ansible_ssh_common_args: -o UserKnownHostsFile=/lab-ssh/known_hosts -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes
"""
for name, address in answer["hosts"].items():
    with open(os.path.join(sys.argv[2], name + ".yml"), "w") as fh:
        fh.write("---\n%sansible_host: %s\n" % (SSH, address))
assert os.path.dirname(answer["known_hosts"]) == os.path.dirname(answer["key"])
print(os.path.dirname(answer["key"]))
EOF
)
# the catalog the lab's group_vars read from AIOPS_LAB_MODEL_DIR/<model>/model.yml, copied into the project
(cd "$root/model_repository" && find . -mindepth 2 -maxdepth 2 -name model.yml -exec cp --parents {} "$project/models/" \;)
# the project's own settings, the checkout's ansible.cfg less its lab transport path
printf '%s\n' '[defaults]' 'forks = 20' 'gathering = smart' >"$project/ansible.cfg"

# the controller-side environment the lab's group_vars look up: S3, the Triton API key, the wheelhouse
eval "$(python "$root/lab/labctl.py" env)"
env_args=(--senv "AIOPS_LAB_MODEL_DIR=$project/models")
for var in AIOPS_LAB_S3_ENDPOINT AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AIOPS_LAB_TRITON_API_KEY AIOPS_LAB_WHEELHOUSE; do
  [ -n "${!var:-}" ] || { echo "FAIL: lab/labctl.py env set no $var"; exit 1; }
  env_args+=(--penv "$var")  # passed by name: no secret on a command line
done
