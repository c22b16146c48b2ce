"""The lab's Event-Driven Ansible: the collection's rulebook under ansible-rulebook on this machine, its
Alertmanager webhook bound to the bridge's gateway, where lab-1's Alertmanager (make lab) sends its alerts.
Its gate's child playbooks run against inventories/lab; its records go to lab/.state/eda/results.jsonl."""

import os
import sys

from . import common, hosts, services

PORT = int(os.environ.get("AIOPS_LAB_EDA_PORT", "5050"))
# The host inventories/lab-monitoring makes the lab's Prometheus and Alertmanager.
MONITORING_HOST = hosts.host_name(1)
ALERTMANAGER_PORT = 9093
STATE = os.path.join(common.STATE, "eda")
VARS = os.path.join(common.STATE, "eda-vars.yml")
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"


def webhook_url():
    return "http://%s:%d/alerts" % (common.GATEWAY, PORT)


def rulebook_vars(dry_run, alertmanager_address):
    """The rulebook's --vars: where it listens, the gate's state and dry-run switch, the Alertmanager it pages."""
    return {"aiops_eda_listen_host": common.GATEWAY, "aiops_eda_listen_port": PORT, "aiops_eda_dry_run": bool(dry_run),
            "aiops_eda_state_dir": STATE,
            "aiops_eda_alertmanager_url": "http://%s:%d" % (alertmanager_address, ALERTMANAGER_PORT) if alertmanager_address else ""}


def command():
    return [os.path.join(os.path.dirname(sys.executable), "ansible-rulebook"), "--rulebook", "aiops.triton.alertmanager_remediation",
            "-i", os.path.dirname(common.INVENTORY), "--vars", VARS, "-E", "AIOPS_EDA_TOKEN"]


def environment(base):
    """The rulebook's environment: the lab's (labctl env: S3 credentials, the token) plus the checkout's Ansible
    settings, which its gate's runs need from any working directory (the lab's connection plugin path)."""
    env = dict(base, AIOPS_EDA_TOKEN=services.credentials()["AIOPS_EDA_TOKEN"],
               ANSIBLE_CONFIG=os.path.join(common.ROOT, "ansible.cfg"))
    env.setdefault("JAVA_HOME", JAVA_HOME)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(common.ROOT, ".collection"))
    return env


def start(dry_run=False):
    if not os.path.exists(common.INVENTORY):
        raise common.LabError("no lab inventory: run make lab first (the rulebook acts on its hosts)")
    address = hosts.container_address(MONITORING_HOST)
    if not address:
        raise common.LabError("%s is not running: run make lab first (its Alertmanager sends the alerts)" % MONITORING_HOST)
    import yaml  # controller venv, imported late like boto3 in services.py
    os.makedirs(STATE, exist_ok=True)
    with open(VARS, "w") as handle:
        yaml.safe_dump(rulebook_vars(dry_run, address), handle, explicit_start=True)
    # ansible-rulebook starts its rules engine (Java) before the source listens
    services.start_service("eda", command(), PORT, env=environment(os.environ), timeout=180)
    common.log("rulebook aiops.triton.alertmanager_remediation%s: webhook %s, records %s, log %s" % (
        " (dry run)" if dry_run else "", webhook_url(), os.path.relpath(os.path.join(STATE, "results.jsonl"), common.ROOT),
        os.path.relpath(os.path.join(common.STATE, "eda.log"), common.ROOT)))
