"""alert_classifier: a generated corpus of ops alert texts and a TF-IDF + logistic regression.

Texts imitate what Prometheus Alertmanager, Zabbix, Nagios/Icinga and Kubernetes events send:
alert names, hostnames, pods, mount points, numbers and units.  Templates are filled from a
seeded RNG; the held-out set uses a different seed, so hosts, numbers and template mixes differ.
The fitted pipeline is stored with skops (no code runs on load; the served classify.py refuses
any type skops does not trust by default).
"""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, classification_report, f1_score
from sklearn.pipeline import FeatureUnion, Pipeline

CLASSES = ("cpu", "memory", "network", "disk", "application", "database", "unknown")

TEMPLATES = {
    "cpu": [
        "CPU usage on {host} is above {pct}% for {mins} minutes",
        "[FIRING:1] HighCpuLoad instance={host}:9100 cpu utilisation {pct}%",
        "Problem: High CPU utilization (over {pct}% for {mins}m) on {host}",
        "SERVICE ALERT: {host};CPU Load;CRITICAL;HARD;3;CRITICAL - load average: {load}, {load}, {load}",
        "Container {pod} CPU throttling {pct}% of periods in namespace {ns}",
        "Node {host} load average {load} exceeds {cores} cores",
        "CPUThrottlingHigh: pod {pod} is throttled {pct}% of the time",
        "Processor steal time on {host} reached {pct}%",
        "{host}: system cpu iowait normal but user cpu saturated at {pct}%",
        "Pod {pod} cpu usage exceeds {pct}% of its limit",
    ],
    "memory": [
        "Pod memory usage exceeds {pct}% threshold",
        "Memory usage on {host} is {pct}% (available {mb} MB)",
        "[FIRING:1] HostOutOfMemory instance={host}:9100 memory available < {pct2}%",
        "Problem: Lack of available memory on server {host} ({mb} MB of {gb} GB free)",
        "Container {pod} OOMKilled in namespace {ns}, memory limit {mb}Mi",
        "KubeMemoryOvercommit: cluster has overcommitted memory resource requests",
        "SERVICE ALERT: {host};Memory;CRITICAL;HARD;3;CRITICAL - RAM used {pct}%",
        "Swap usage on {host} is {pct}%, heavy paging detected",
        "JVM heap usage of {svc} at {pct}% after full GC",
        "High memory pressure on node {host}, page faults {num}/s",
    ],
    "network": [
        "Network latency P99 increased to {ms}ms",
        "Packet loss {pct2}% between {host} and {host2}",
        "[FIRING:1] HostNetworkReceiveErrors instance={host}:9100 device eth{dev} errors {num}/s",
        "Problem: Interface eth{dev} on {host} is down",
        "SERVICE ALERT: {host};PING;CRITICAL;HARD;3;PING CRITICAL - Packet loss = {pct}%, RTA = {ms} ms",
        "TCP retransmissions on {host} at {pct2}% of segments",
        "DNS resolution failures for {svc}.{ns}.svc.cluster.local",
        "Bandwidth on uplink {host} at {pct}% of {gbps} Gbps",
        "Connection timeout to {host2}:{port} from {host}",
        "BGP session to peer {ip} went down on {host}",
    ],
    "disk": [
        "Disk space on /dev/sda{dev} is {pct}% full",
        "Filesystem {mount} on {host} has {pct2}% free space left",
        "[FIRING:1] HostOutOfDiskSpace instance={host}:9100 mountpoint={mount} available {pct2}%",
        "Problem: Free disk space is less than {pct2}% on volume {mount}",
        "SERVICE ALERT: {host};Disk {mount};CRITICAL;HARD;3;DISK CRITICAL - free space: {mount} {mb} MB",
        "Disk I/O latency on /dev/nvme{dev}n1 is {ms}ms",
        "Inodes on {mount} of {host} are {pct}% used",
        "SMART failure predicted for disk /dev/sd{letter} on {host}",
        "Persistent volume {pvc} in {ns} is {pct}% full",
        "Read-only filesystem remount on {mount} at {host}",
    ],
    "application": [
        "HTTP 5xx error rate of {svc} is {pct2}%",
        "[FIRING:1] HighErrorRate service={svc} error ratio {pct2}%",
        "Deployment {svc} in {ns} has {num} unavailable replicas",
        "Pod {pod} is in CrashLoopBackOff, restarted {num} times",
        "Problem: {svc} health check failed with status {code}",
        "SERVICE ALERT: {host};HTTP {svc};CRITICAL;HARD;3;HTTP CRITICAL - HTTP/1.1 {code} Internal Server Error",
        "Request latency of endpoint /api/{path} above SLO at {ms}ms",
        "Exception rate in {svc} rose to {num} per minute: NullPointerException",
        "Kafka consumer group {svc} lag is {num} messages",
        "Job {svc}-batch failed after {num} retries",
    ],
    "database": [
        "MySQL replication lag on {db} is {num} seconds",
        "[FIRING:1] PostgresqlTooManyConnections instance={db}:5432 connections {pct}% of max",
        "Problem: Slow queries on {db} ({num} queries over {ms}ms)",
        "Deadlocks detected on database {db}: {num} in the last {mins} minutes",
        "SERVICE ALERT: {db};MySQL;CRITICAL;HARD;3;CRITICAL - Threads_connected {num}",
        "Redis {db} evicted {num} keys, memory fragmentation ratio {load}",
        "MongoDB replica set member {db} is in RECOVERING state",
        "Postgres {db} transaction ID wraparound in {num} transactions",
        "Database {db} connection pool exhausted for {svc}",
        "Elasticsearch cluster {db} health is red, {num} unassigned shards",
    ],
    "unknown": [
        "Test notification from Alertmanager",
        "Watchdog alert is firing to ensure the pipeline works",
        "Scheduled maintenance window starts at {hh}:00 UTC",
        "Heartbeat received from {host}",
        "Alert rule group {svc} was reloaded",
        "User {user} acknowledged the incident",
        "Silence created by {user} for {mins} minutes",
        "Ticket {num} was reassigned to the on-call engineer",
        "Reminder: weekly on-call handover at {hh}:30",
        "Notification channel updated by {user}",
    ],
}

_SERVICES = ("checkout", "payments", "auth", "search", "orders", "cart", "inventory", "gateway", "billing", "profile")
_NAMESPACES = ("prod", "staging", "default", "monitoring", "shop", "platform")
_DBS = ("orders-db", "pg-main", "mysql-01", "users-db", "redis-cache", "es-logs", "mongo-rs0")
_MOUNTS = ("/", "/var", "/var/log", "/data", "/home", "/opt", "/var/lib/docker")
_USERS = ("alice", "bob", "oncall", "sre-bot", "chen", "priya")


def _host(rng):
    role = rng.choice(("web", "api", "node", "db", "worker", "k8s-node", "edge", "cache"))
    return "%s-%02d.%s" % (role, rng.integers(1, 60), rng.choice(("dc1", "dc2", "eu-west", "us-east", "prod.local")))


def _fill(rng, template):
    values = {
        "host": _host(rng), "host2": _host(rng), "pct": int(rng.integers(70, 100)), "pct2": int(rng.integers(1, 20)),
        "mins": int(rng.integers(2, 30)), "load": "%.2f" % rng.uniform(2, 40), "cores": int(rng.choice((4, 8, 16, 32))),
        "pod": "%s-%x" % (rng.choice(_SERVICES), rng.integers(0x10000, 0xfffff)), "ns": rng.choice(_NAMESPACES),
        "mb": int(rng.integers(50, 4000)), "gb": int(rng.choice((8, 16, 32, 64))), "num": int(rng.integers(2, 5000)),
        "svc": rng.choice(_SERVICES), "ms": int(rng.integers(200, 9000)), "dev": int(rng.integers(0, 4)),
        "gbps": int(rng.choice((1, 10, 25))), "port": int(rng.choice((443, 5432, 6379, 8080, 9092))),
        "ip": "10.%d.%d.%d" % tuple(rng.integers(0, 255, 3)), "mount": rng.choice(_MOUNTS),
        "letter": rng.choice(list("abcd")), "pvc": "data-%s-0" % rng.choice(_SERVICES), "db": rng.choice(_DBS),
        "code": int(rng.choice((500, 502, 503, 504))), "path": rng.choice(("v1/orders", "v2/users", "login", "cart")),
        "hh": int(rng.integers(0, 24)), "user": rng.choice(_USERS),
    }
    text = template.format(**values)
    # alerts arrive in every case style; some systems prefix a severity
    style = rng.integers(0, 6)
    if style == 0:
        text = text.lower()
    elif style == 1:
        text = "[%s] %s" % (rng.choice(("CRITICAL", "WARNING", "P1", "P2")), text)
    return text


def corpus(seed, per_class, unseen=False):
    """Texts and labels, ``per_class`` of each class.

    The last template of every class is held back from training: ``unseen=False`` fills the
    others, ``unseen=True`` only the held-back ones, so the held-out set also measures wording
    the model never saw.
    """
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for label in CLASSES:
        templates = TEMPLATES[label][-1:] if unseen else TEMPLATES[label][:-1]
        for i in range(per_class):
            texts.append(_fill(rng, templates[i % len(templates)]))
            labels.append(label)
    return texts, labels


def train(texts, labels):
    features = FeatureUnion([
        ("words", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, lowercase=True)),
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=3, sublinear_tf=True, max_features=5000)),
    ])
    pipe = Pipeline([("tfidf", features), ("clf", LogisticRegression(C=10.0, max_iter=2000))])
    pipe.fit(texts, labels)
    return pipe


def evaluate(pipe, texts, labels):
    pred = pipe.predict(texts)
    report = classification_report(labels, pred, labels=list(CLASSES), output_dict=True, zero_division=0)
    return {
        "accuracy": round(float(accuracy_score(labels, pred)), 4),
        "macro_f1": round(float(f1_score(labels, pred, average="macro")), 4),
        "per_class_f1": {c: round(float(report[c]["f1-score"]), 4) for c in CLASSES},
        "held_out_size": len(texts),
    }
