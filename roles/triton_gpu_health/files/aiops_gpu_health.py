"""Write this host's GPU health verdict, its reasons and the counters the alert rules read as a node_exporter textfile.

Installed by aiops.triton.triton_gpu_health (tasks_from: reporter) and run by a systemd timer. The verdict is the
collection's own: this script imports plugins/module_utils/gpu_health.py (and the nvidia_smi.py it uses), installed
under their collection path in --lib, the code the nvidia_gpu_health module runs; the textfile is written by the
collection's fs.py (installed beside them), as the modules write theirs. Standard library only: it runs
with the host's python3, without Ansible.

  --config   JSON written by the role: nvidia_smi_path, kernel_log_command, since_file, quarantine_file, dcgm,
             dcgm_diag, thresholds (the role's triton_gpu_health_* variables)
  --output   the *.prom file, written atomically (node_exporter never reads half a file)
  --json     print the whole verdict as JSON too (what the module would return)

Metrics: aiops_gpu_health_read_success, aiops_gpu_health_read_timestamp_seconds, aiops_gpu_host_health{host_kind}
(0 healthy, 1 degraded, 2 unhealthy), aiops_gpu_health_verdict{gpu,bus_id,uuid}, aiops_gpu_health_reason{severity,
reason}, aiops_gpu_quarantined, aiops_gpu_fallen_off_bus, aiops_gpu_reset_recommended,
aiops_gpu_row_remap_pending{gpu,bus_id}, aiops_gpu_ecc_uncorrectable_volatile{gpu,bus_id},
aiops_gpu_xid_events_total{xid,class,bus_id}. A read that fails writes read_success 0 and nothing else (no stale
verdict), and exits 1 so the unit's journal says why.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def runner(argv):
    """(rc, stdout, stderr) as Ansible's run_command gives them; a missing binary raises OSError."""
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, timeout=300)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def which(name):
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(("/usr/bin", "/usr/sbin", "/bin", "/sbin"))
    return shutil.which(name, path=path)


def chmod_readable(tmp):
    """node_exporter, not root, reads the textfile (mkstemp makes it 0600)."""
    os.chmod(tmp, 0o644)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--config", required=True, help="JSON settings written by the triton_gpu_health role")
    parser.add_argument("--output", required=True, help="textfile to write (*.prom in node_exporter's textfile directory)")
    parser.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"),
                        help="directory holding ansible_collections/aiops/triton/plugins/module_utils/gpu_health.py")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON too")
    args = parser.parse_args(argv)
    if not args.output.endswith(".prom"):
        parser.error("--output must end in .prom (node_exporter reads only those): %s" % args.output)
    sys.path.insert(0, args.lib)
    from ansible_collections.aiops.triton.plugins.module_utils import fs, gpu_health  # pylint: disable=import-error

    def write_textfile(text):
        """node_exporter never reads half a file: the collection's fs.write_atomic (fsynced, renamed, directory fsynced)."""
        fs.write_atomic(args.output, text.encode("utf-8"), ".aiops-gpu-health-", chmod_readable)

    with open(args.config) as handle:
        config = json.load(handle)
    now = time.time()
    try:
        fact = gpu_health.read_host(runner, which, nvidia_smi_path=config.get("nvidia_smi_path"),
                                    kernel_log_command=config.get("kernel_log_command"),
                                    since_file=config.get("since_file"), dcgm=config.get("dcgm", True),
                                    dcgm_diag=config.get("dcgm_diag", False), thresholds=config.get("thresholds"))
    except (gpu_health.GpuHealthError, OSError, subprocess.SubprocessError) as exc:
        write_textfile(gpu_health.render_metrics(None, now, success=False))
        print("aiops_gpu_health: cannot read the GPUs' health: %s" % exc, file=sys.stderr)
        return 1
    record = gpu_health.read_quarantine(config.get("quarantine_file"))
    fact.update(quarantined=record is not None, quarantine=record, read_at=now)
    write_textfile(gpu_health.render_metrics(fact, now))
    if args.json:
        print(json.dumps(fact, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
