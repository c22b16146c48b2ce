"""labctl: the local lab — disposable systemd hosts (podman), an S3 endpoint and a package cache.

    python3 lab/labctl.py image [--force]        build the Debian 12 systemd host image (cached by its inputs)
    labctl.py up --hosts N [--os debian12]
                                     start N lab hosts, the load balancer host lab-lb and the services,
                                     write inventories/lab/hosts.yml
    labctl.py services               start only the services (network, S3, wheelhouse) — molecule uses this
    labctl.py down                   remove hosts, services, network, state and the podman drop-in;
                                     leave nothing running
    labctl.py status                 what is running
    labctl.py eda [--dry-run|--stop] start the collection's rulebook (ansible-rulebook) on this machine for the lab:
                                     its webhook on the gateway, where lab-1's Alertmanager sends (make lab, make eda);
                                     down stops it
    labctl.py env                    shell exports for the lab's secrets (S3 credentials, the rulebook's token;
                                     never printed elsewhere), the rulebook's webhook and, while lab-lb runs, its
                                     HTTP and gRPC frontends (AIOPS_LAB_LB_HTTP/_GRPC)
    labctl.py ssh [NAME ...]         put the lab SSH key (lab/.state/ssh, made once) into root's authorized_keys of
                                     each named container of the lab image (default: the lab hosts and lab-lb),
                                     their host keys into lab/.state/ssh/known_hosts, log in once over SSH; prints
                                     {"key", "known_hosts", "hosts": {name: bridge address}} as JSON (`up` does it too)
    labctl.py memory [NAME ...]      each lab host's memory (default: every lab host): its container's cgroup usage,
                                     peak, rss/cache, and the PSS of its processes by command, as JSON
    labctl.py triton-image           build the Triton image (container method) and the podman lab host image,
                                     publish the Triton image as an OCI archive on the wheelhouse server
                                     (build/triton-image.json: its URL path, sha256 and image ID); cached

Everything binds to the lab bridge's gateway address, so test traffic stays between this machine and
its own containers.  podman gets the settings this kind of machine needs (lab/containers.conf) from a
drop-in, /etc/containers/containers.conf.d/90-aiops-lab.conf; the owner's containers.conf is never written.
A small "gateway keeper" container holds the bridge up so services can bind to it
before any host exists.

This file is the command line and the lab-wide steps (up, down, status); lab/labctl_lib/ has one module
per thing the lab manages: podman_conf, image, triton_image, services, hosts, ssh, memory, eda (common: shared
names, podman).
"""

import argparse
import json
import os
import shutil
import sys

from labctl_lib import common, eda, hosts, image, memory, podman_conf, services, ssh, triton_image


def up(count, os_name):
    if os_name not in common.SUPPORTED_OS:
        raise common.LabError("unknown OS %r: the lab supports %s" % (os_name, ", ".join(sorted(common.SUPPORTED_OS))))
    if not 1 <= count <= hosts.MAX_HOSTS:
        raise common.LabError("--hosts must be between 1 and %d, got %d" % (hosts.MAX_HOSTS, count))
    hosts.check_memory([hosts.host_name(i) for i in range(1, count + 1)])
    hosts.raise_inotify_limit(count)
    image.build_image(os_name)
    services.start_services(os_name)
    wanted = [hosts.host_name(i) for i in range(1, count + 1)]
    for extra in sorted(set(hosts.lab_hosts()) - set(wanted)):
        common.podman("rm", "-f", "-t", "5", extra)
        common.log("removed surplus host %s" % extra)
    started = [n for n in wanted if hosts.start_host(n, os_name)]
    if hosts.start_lb(os_name):
        started.append(hosts.LB_HOST)
    for name in wanted + [hosts.LB_HOST]:
        common.log("%s: %s" % (name, hosts.wait_booted(name)))
    hosts.write_inventory(wanted, dict((n, hosts.container_address(n)) for n in wanted + [hosts.LB_HOST]))
    # SSH for clients without the lab transport (the execution environment); a host from an older image has no
    # sshd and is left as it is (the lab transport does not need it)
    reachable = [n for n in wanted + [hosts.LB_HOST] if ssh.has_sshd(n)]
    for name in sorted(set(wanted + [hosts.LB_HOST]) - set(reachable)):
        common.log("%s has no sshd (made from an older lab image): recreate it for SSH (make lab-down lab-up)" % name)
    if reachable:
        ssh.authorize(reachable)
        common.log("SSH as root with %s: %s" % (os.path.relpath(ssh.KEY, common.ROOT), " ".join(reachable)))
    common.log("%d host(s) up (%d started now); inventory: %s" % (len(wanted), len(started), os.path.relpath(common.INVENTORY, common.ROOT)))


def down():
    services.stop_services()
    names = left = hosts.lab_containers()
    # podman can lose a race with a container that is stopping by itself ("container state
    # improper: stopped"); the next rm removes it, so try a few times before giving up.
    for _attempt in range(3):
        if not left:
            break
        common.podman("rm", "-f", "-t", "5", *left, check=False)
        left = hosts.lab_containers()
    if names:
        common.log("removed containers: %s" % " ".join(sorted(set(names) - set(left))))
    if common.podman("network", "exists", common.NETWORK, check=False).returncode == 0:
        common.podman("network", "rm", "-f", common.NETWORK)
        common.log("removed network %s" % common.NETWORK)
    if os.path.exists(common.INVENTORY):
        os.remove(common.INVENTORY)
    shutil.rmtree(common.STATE, ignore_errors=True)
    if left:
        raise common.LabError("containers survived teardown: %s" % left)
    # Last: the containers above were created with the lab's runtime and are removed with it.
    podman_conf.unconfigure_podman()
    common.log("lab is down")


def status():
    for name in hosts.lab_hosts() + [hosts.LB_HOST]:
        common.log("%s running=%s" % (name, common.container_running(name)))
    for name in ("s3", "wheelhouse", "eda"):
        common.log("%s pid=%s" % (name, services.service_pid(name)))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="labctl", description=__doc__.split("\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_img = sub.add_parser("image")
    p_img.add_argument("--force", action="store_true")
    p_img.add_argument("--os", default="debian12")
    p_up = sub.add_parser("up")
    p_up.add_argument("--hosts", type=int, default=2)
    p_up.add_argument("--os", default="debian12")
    p_srv = sub.add_parser("services")
    p_srv.add_argument("--os", default="debian12")
    sub.add_parser("down")
    sub.add_parser("status")
    sub.add_parser("env")
    p_eda = sub.add_parser("eda")
    p_eda.add_argument("--dry-run", action="store_true", help="the gate records what it would run and runs nothing")
    p_eda.add_argument("--stop", action="store_true", help="stop the rulebook (down stops it too)")
    p_ssh = sub.add_parser("ssh")
    p_ssh.add_argument("names", nargs="*", metavar="NAME")
    sub.add_parser("triton-image")
    p_mem = sub.add_parser("memory")
    p_mem.add_argument("names", nargs="*", metavar="NAME")
    args = parser.parse_args(argv)
    try:
        if args.cmd in ("image", "services") and args.os not in common.SUPPORTED_OS:
            raise common.LabError("unknown OS %r: the lab supports %s" % (args.os, ", ".join(sorted(common.SUPPORTED_OS))))
        if args.cmd == "image":
            image.build_image(args.os, force=args.force)
        elif args.cmd == "up":
            up(args.hosts, args.os)
        elif args.cmd == "services":
            image.build_image(args.os)
            services.start_services(args.os)
        elif args.cmd == "down":
            down()
        elif args.cmd == "triton-image":
            triton_image.build_podman_host_image()
            triton_image.build_triton_image()
        elif args.cmd == "ssh":
            names = args.names or hosts.lab_hosts() + [n for n in [hosts.LB_HOST] if common.container_running(n)]
            print(json.dumps({"key": ssh.KEY, "known_hosts": ssh.KNOWN_HOSTS, "hosts": ssh.authorize(names)}, sort_keys=True))
        elif args.cmd == "memory":
            names = args.names or hosts.lab_hosts()
            print(json.dumps(dict((n, memory.host_memory(memory.cgroup_dir(n))) for n in names), indent=1, sort_keys=True))
        elif args.cmd == "eda":
            if args.stop:
                services.stop_service("eda", grace=20)
            else:
                eda.start(dry_run=args.dry_run)
        elif args.cmd == "status":
            status()
        elif args.cmd == "env":
            for key, value in services.credentials().items():
                print("export %s=%s" % (key, value))
            print("export AIOPS_LAB_S3_ENDPOINT=%s" % services.s3_endpoint())
            print("export AIOPS_LAB_WHEELHOUSE=http://%s:%d/" % (common.GATEWAY, common.WHEELHOUSE_PORT))
            print("export AIOPS_LAB_MODEL_DIR=%s" % os.path.join(common.ROOT, "model_repository"))
            print("export AIOPS_LAB_EDA_URL=%s" % eda.webhook_url())
            for proto, endpoint in sorted(hosts.lb_endpoints().items()):
                print("export AIOPS_LAB_LB_%s=%s" % (proto.upper(), endpoint))
    except common.LabError as exc:
        print("labctl: error: %s" % exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
