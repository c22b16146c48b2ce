"""Write tests/doubles/nvidia-smi-health.double: the nvidia-smi TEST DOUBLE of the GPU health tests, with the XML the
real nvidia-smi 535.261.03 printed for each state (tests/fixtures/nvidia_smi/recorded_real_535.261.03_q_x_*) inside it,
so a test copies one file onto a lab host. tests/unit/plugins/modules/test_nvidia_gpu_health.py checks that the
double prints those recordings byte for byte.

    python3 tests/doubles/build_nvidia_smi_health_double.py            write it
    python3 tests/doubles/build_nvidia_smi_health_double.py --check    exit 1 when the committed double is stale
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "nvidia_smi")
OUTPUT = os.path.join(HERE, "nvidia-smi-health.double")
PREFIX = "recorded_real_535.261.03_q_x_"
# The H100's states (the V100 recording is for the parser's tests only): state -> the state a GPU reset leaves, or ""
# when a reset cannot run
RESET = {
    "healthy": "healthy",
    "row_remap_pending": "healthy",      # the reset activates the remap
    "dbe_ecc": "ecc_aggregate",          # the volatile counters clear, the InfoROM keeps the aggregate one
    "ecc_aggregate": "ecc_aggregate",
    "pcie_degraded": "pcie_degraded",    # a link trained low stays low
    "hw_slowdown": "hw_slowdown",
    "xid79": "",                         # nothing answers: the reset fails
}
BUS_ID = "00000000:4E:00.0"
NAME_UUID = "NVIDIA H100 80GB HBM3 (UUID: GPU-5f0c3a1e-7b2d-4c9a-8e61-d0a4b3c2e1f0)"

HEADER = r'''#!/bin/sh
# TEST DOUBLE for nvidia-smi in the GPU health tests (written by tests/doubles/build_nvidia_smi_health_double.py from
# tests/fixtures/nvidia_smi/recorded_real_535.261.03_q_x_*: do not edit by hand). Never installed by a role: tests copy
# it onto lab hosts, where the triton_gpu_health role is pointed at it (triton_gpu_health_nvidia_smi_path).
# One H100 at @BUS_ID@. The state is the first line of $AIOPS_GPU_STATE_FILE (default /etc/aiops-test/gpu_state;
# missing: healthy): @STATES@.
#   -q -x [-i 0]        the XML the real binary printed for the state; xid79: its "GPU is lost" text, rc 15
#   -L                  the GPU's line, or the lost text (rc 15)
#   -r / --gpu-reset    the real binary's messages; a state a reset clears becomes the state after it
#                       (row_remap_pending -> healthy, dbe_ecc -> ecc_aggregate) and the cleared state is kept as a
#                       line "cleared <state> <epoch set>" for kernel-log.double; xid79 cannot be reset (rc 15)
#   --query-compute-apps=...   no process on the GPU (rc 0), or the lost text (rc 15)
# Every call is appended to $NVIDIA_SMI_DOUBLE_LOG when set.
state_file="${AIOPS_GPU_STATE_FILE:-/etc/aiops-test/gpu_state}"
[ -n "$NVIDIA_SMI_DOUBLE_LOG" ] && echo "$*" >> "$NVIDIA_SMI_DOUBLE_LOG"
state=healthy
if [ -s "$state_file" ]; then state=$(head -n 1 "$state_file"); fi

lost() {
  printf 'Unable to determine the device handle for %s: GPU is lost.  Reboot the system to recover this GPU\n\n\n' "$1"
  exit 15
}

xml() {
  case "$state" in
'''

FOOTER = r'''
    *) echo "nvidia-smi-health.double: unknown state '$state' in $state_file" >&2; exit 2 ;;
  esac
}

reset_to() {
  case "$state" in
@RESET_CASES@
    *) echo "nvidia-smi-health.double: unknown state '$state' in $state_file" >&2; exit 2 ;;
  esac
}

case "$*" in
  "-q -x"|"-q -x -i 0"|"-x -q") xml ;;
  "-L")
    [ "$state" = xid79 ] && lost "gpu 0"
    echo "GPU 0: @NAME_UUID@" ;;
  "-r"|"--gpu-reset"|"-r -i 0"|"--gpu-reset -i 0"|"-i 0 -r"|"-i 0 --gpu-reset")
    after=$(reset_to)
    [ -z "$after" ] && lost "gpu 0"
    if [ "$after" != "$state" ]; then
      set_at=$(stat -c %Y "$state_file")
      { echo "$after"; tail -n +2 "$state_file"; echo "cleared $state $set_at"; } > "$state_file.new"
      mv "$state_file.new" "$state_file"
    fi
    echo "GPU @BUS_ID@ was successfully reset."
    echo "All done." ;;
  --query-compute-apps=*)
    [ "$state" = xid79 ] && lost "gpu 0"
    : ;;
  *) echo "nvidia-smi-health.double: unsupported arguments: $*" >&2; exit 2 ;;
esac
exit 0
'''


def recordings():
    found = {}
    for name in sorted(os.listdir(FIXTURES)):
        if name.startswith(PREFIX) and name.endswith(".xml"):
            found[name[len(PREFIX):-4]] = os.path.join(FIXTURES, name)
    return found


def render():
    xmls = recordings()
    states = sorted(RESET)
    missing = [s for s in states if s != "xid79" and s not in xmls]
    if missing:
        raise SystemExit("no recording for %s" % ", ".join(missing))
    cases = []
    for state in states:
        if state == "xid79":
            cases.append('    xid79) lost GPU0 ;;')  # recorded_real_535.261.03_q_x_xid79.txt
            continue
        with open(xmls[state]) as handle:
            text = handle.read()
        assert "AIOPS_EOF" not in text
        cases.append("    %s) cat <<'AIOPS_EOF'\n%sAIOPS_EOF\n    ;;" % (state, text))
    reset_cases = "\n".join('    %s) echo "%s" ;;' % (state, RESET[state]) for state in states)
    return (HEADER.replace("@BUS_ID@", BUS_ID).replace("@STATES@", ", ".join(states)) + "\n".join(cases)
            + FOOTER.replace("@RESET_CASES@", reset_cases).replace("@BUS_ID@", BUS_ID).replace("@NAME_UUID@", NAME_UUID))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        with open(OUTPUT) as handle:
            if handle.read() != text:
                print("%s is stale: run %s" % (OUTPUT, sys.argv[0]), file=sys.stderr)
                return 1
        return 0
    with open(OUTPUT, "w") as handle:
        handle.write(text)
    os.chmod(OUTPUT, 0o755)
    return 0


if __name__ == "__main__":
    sys.exit(main())
