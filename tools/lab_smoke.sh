#!/usr/bin/env bash
# The lab's acceptance: bad input is refused, 2 hosts come up (twice: idempotent), Ansible pings them,
# and teardown leaves no container, network, process or mount behind.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
if $py lab/labctl.py up --hosts 0 2>/tmp/lab_err; then echo "0 hosts accepted" >&2; exit 1; fi
grep -q "between 1 and" /tmp/lab_err
if $py lab/labctl.py up --os centos7 2>/tmp/lab_err; then echo "unknown OS accepted" >&2; exit 1; fi
grep -q "unknown OS 'centos7'" /tmp/lab_err
$py lab/labctl.py up --hosts 2
$py lab/labctl.py up --hosts 2 | grep -q "2 host(s) up (0 started now)"
ansible -i inventories/lab/hosts.yml triton_servers -m ansible.builtin.ping -o | tee /tmp/lab_ping
[ "$(grep -c SUCCESS /tmp/lab_ping)" -eq 2 ]
$py lab/labctl.py down
left=$(podman ps -a --filter label=aiops.lab=1 --format '{{.Names}}')
[ -z "$left" ] || { echo "containers left: $left" >&2; exit 1; }
! podman network exists aiops-lab || { echo "network aiops-lab left" >&2; exit 1; }
! pgrep -f "moto_server -H 10.89.77.1|http.server --bind 10.89.77.1" || { echo "lab services left running" >&2; exit 1; }
! grep -q " $(podman info --format '{{.Store.GraphRoot}}')/overlay/.*/merged" /proc/mounts || { echo "container mounts left" >&2; exit 1; }
# one test per line: under set -e only the last command of an && list fails the script
[ ! -e inventories/lab/hosts.yml ] || { echo "inventories/lab/hosts.yml left after lab down" >&2; exit 1; }
[ ! -e lab/.state ] || { echo "lab/.state left after lab down" >&2; exit 1; }
echo "lab smoke: 2 hosts up, pinged, torn down, nothing left"
