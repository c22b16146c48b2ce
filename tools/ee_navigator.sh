# ee_navigator.sh (sourced): ansible-navigator's settings for running the collection's EE (tools/ee_check.sh,
# tools/ee_site.sh). Needs $image and $work; sets the array navigator and the function plain.
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # navigator is the caller's; image and work are read from the caller
# ansible-runner starts the EE with --ipc=host and navigator refuses podman without /dev/mqueue; a machine
# booted by systemd has it (dev-mqueue.mount), this one may not: mount it the same way.
if ! mountpoint -q /dev/mqueue; then mkdir -p /dev/mqueue && mount -t mqueue mqueue /dev/mqueue; fi
# ansible-runner's event markers (ESC[K<base64>ESC[<n>D) out of the logs
plain() { sed -E $'s/\x1b\\[K[A-Za-z0-9+/=]*\x1b\\[[0-9]+D\x1b\\[K//g' | tee "$1"; }
navigator=(--ee true --ce podman --eei "$image" --pull-policy never --mode stdout --pae false
           --lf "$work/navigator.log" --ll warning)
