"""Synthetic but realistic ops telemetry for the anomaly detector, from a seeded generator.

A window is 60 steps (5 s apart) of 20 metrics.  One latent load factor (traffic) drives the
correlated metrics (requests -> CPU, network, latency, DB); every metric adds its own level,
periodic component (batch jobs, GC, scrapes), phase of the day and noise.  Anomalies are
injected into 1-3 metrics of about half the windows, starting in the newer part of the window
(where an ops alert cares about them): spikes, level shifts and drifts.  Labels are per metric.
"""

import numpy as np

STEPS = 60
METRICS = (
    # name, base level, noise, load coupling, periodic amplitude, period (steps)
    ("cpu_util_pct", 45.0, 2.0, 18.0, 3.0, 24),
    ("mem_util_pct", 62.0, 0.6, 4.0, 1.0, 60),
    ("load_avg_1m", 3.2, 0.25, 1.5, 0.3, 12),
    ("net_in_mbps", 120.0, 6.0, 60.0, 8.0, 20),
    ("net_out_mbps", 95.0, 5.0, 45.0, 6.0, 20),
    ("disk_io_iops", 800.0, 40.0, 250.0, 120.0, 30),
    ("latency_p50_ms", 35.0, 1.5, 8.0, 1.0, 15),
    ("latency_p99_ms", 180.0, 12.0, 60.0, 10.0, 15),
    ("error_rate_pct", 0.5, 0.08, 0.2, 0.05, 40),
    ("request_rate_rps", 1500.0, 45.0, 700.0, 60.0, 20),
    ("gc_pause_ms", 12.0, 1.5, 3.0, 4.0, 10),
    ("thread_count", 220.0, 4.0, 30.0, 2.0, 60),
    ("conn_count", 640.0, 15.0, 200.0, 10.0, 30),
    ("queue_depth", 14.0, 2.0, 8.0, 3.0, 12),
    ("cache_hit_ratio", 0.93, 0.006, -0.02, 0.004, 30),
    ("disk_used_pct", 71.0, 0.05, 0.0, 0.02, 60),
    ("swap_used_mb", 256.0, 3.0, 10.0, 1.0, 60),
    ("iowait_pct", 2.5, 0.3, 0.8, 0.5, 30),
    ("db_qps", 900.0, 30.0, 420.0, 40.0, 20),
    ("db_latency_ms", 8.0, 0.6, 2.5, 0.5, 15),
)
NAMES = [m[0] for m in METRICS]
N_METRICS = len(METRICS)
_BASE, _NOISE, _LOAD, _AMP, _PERIOD = (np.array([m[i] for m in METRICS]) for i in range(1, 6))
ANOMALY_KINDS = ("spike", "level_shift", "drift")


def _normal_windows(rng, count):
    steps = np.arange(STEPS)[None, :, None]
    day_phase = rng.uniform(0.0, 2 * np.pi, size=(count, 1, 1))
    # the host's size: each window comes from a differently sized host
    scale = rng.uniform(0.6, 1.6, size=(count, 1, N_METRICS))
    traffic = 0.5 + 0.5 * np.sin(day_phase)                                  # time of day
    traffic = traffic + np.cumsum(rng.normal(0, 0.01, (count, STEPS, 1)), axis=1)  # slow wander
    periodic = np.sin(2 * np.pi * steps / _PERIOD + rng.uniform(0, 2 * np.pi, (count, 1, N_METRICS)))
    noise = rng.normal(0.0, 1.0, (count, STEPS, N_METRICS)) * _NOISE
    return (_BASE + _LOAD * traffic + _AMP * periodic) * scale + noise * scale


def _inject(rng, window, labels, metric):
    kind = ANOMALY_KINDS[rng.integers(len(ANOMALY_KINDS))]
    # size anomalies in units of this window's own step-to-step noise, as an operator sees them
    noise = max(float(np.std(np.diff(window[:25, metric]))) / np.sqrt(2.0), 1e-6)
    sign = rng.choice((-1.0, 1.0))
    magnitude = rng.uniform(4.0, 10.0) * noise
    if kind == "spike":
        start = int(rng.integers(30, STEPS - 1))
        width = int(rng.integers(1, 4))
        window[start:start + width, metric] += sign * magnitude * rng.uniform(1.2, 2.0)
    elif kind == "level_shift":
        start = int(rng.integers(30, 52))
        window[start:, metric] += sign * magnitude
    else:
        start = int(rng.integers(25, 42))
        ramp = np.linspace(0.0, 1.0, STEPS - start)
        window[start:, metric] += sign * magnitude * 1.5 * ramp
    labels[metric] = 1
    return kind


def generate(seed, count, anomaly_fraction=0.5):
    """Return (windows float32 [count,60,20], labels int32 [count,20], [[(kind, metric), ...], ...])."""
    rng = np.random.default_rng(seed)
    windows = _normal_windows(rng, count)
    labels = np.zeros((count, N_METRICS), dtype=np.int32)
    kinds = []
    for i in range(count):
        if rng.uniform() >= anomaly_fraction:
            kinds.append([])
            continue
        metrics = rng.choice(N_METRICS, size=int(rng.integers(1, 4)), replace=False)
        kinds.append([(_inject(rng, windows[i], labels[i], int(m)), int(m)) for m in metrics])
    return windows.astype(np.float32), labels, kinds
