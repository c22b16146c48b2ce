"""Every benchmark starts here: no numbers from a machine that is busy with something else.

A benchmark calls ``start()`` before it does anything: it prints the load average and the core
count, and refuses to run (exit status 2, a message saying why) when the 1-minute load average
exceeds the number of cores, unless ``--allow-loaded`` is given or ``BENCH_ALLOW_LOADED=1`` is
set. Then the run goes on, and ``mark_tables()`` puts "LOADED MACHINE (load X on N cores): not a
result" above every table it writes, so such numbers cannot pass for results. ``finish()`` prints
the load after. (docs/benchmarks.md's earlier serving ratios came from load average 27-32 on 2
cores and overstated Triton's lead several times over; issue 23.)
"""

import os
import sys

ENV = "BENCH_ALLOW_LOADED"
FLAG = "--allow-loaded"
REFUSED = 2


class Load(object):
    """The load average (1, 5, 15 min) before and after a run, on ``cores`` cores."""

    def __init__(self, before, cores, allowed):
        self.before = tuple(before)
        self.after = None
        self.cores = cores
        self.allowed = allowed

    @property
    def loaded(self):
        return self.before[0] > self.cores

    def mark(self):
        """The line every table of a loaded run carries; empty on an idle machine."""
        if not self.loaded:
            return ""
        return "LOADED MACHINE (load %.2f on %d cores): not a result" % (self.before[0], self.cores)

    def describe(self):
        text = "Load average (1/5/15 min) before: %s" % _fmt(self.before)
        if self.after is not None:
            text += ", after: %s" % _fmt(self.after)
        return text + "; %d cores." % self.cores

    def as_dict(self):
        return {"load_before": list(self.before), "load_after": list(self.after) if self.after else None,
                "cores": self.cores, "loaded": self.loaded}


def _fmt(values):
    return " / ".join("%.2f" % v for v in values)


def allowed(argv=(), environ=None):
    environ = os.environ if environ is None else environ
    return FLAG in argv or environ.get(ENV, "") == "1"


def add_argument(parser):
    """For benchmarks with an argparse parser: ``--allow-loaded`` (read back by ``start``)."""
    parser.add_argument(FLAG, action="store_true", dest="allow_loaded",
                        help="run even when the 1-minute load average exceeds the cores (or %s=1); "
                             "every table is then marked as not a result" % ENV)


def only_flag(argv):
    """For benchmarks configured by environment: the only argument they take is ``--allow-loaded``."""
    unknown = [a for a in argv if a != FLAG]
    if unknown:
        raise SystemExit("unknown argument(s) %s; settings are environment variables, the only flag is %s"
                         % (" ".join(unknown), FLAG))
    return argv


def start(argv=(), allow=False, environ=None, getloadavg=None, cpu_count=None, out=None, err=None):
    """Measure the load before the run; exit ``REFUSED`` on a loaded machine unless allowed."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    load = Load((getloadavg or os.getloadavg)(), (cpu_count or os.cpu_count)() or 1, allow or allowed(argv, environ))
    print("bench: %s" % load.describe(), file=out, flush=True)
    if load.loaded and not load.allowed:
        print("bench: refusing to run: the 1-minute load average %.2f exceeds the %d cores, so other work would "
              "be measured too. Wait for an idle machine, or pass %s (or %s=1) to run anyway with every table "
              "marked \"%s\"." % (load.before[0], load.cores, FLAG, ENV, load.mark()), file=err, flush=True)
        raise SystemExit(REFUSED)
    if load.loaded:
        print("bench: %s (allowed by %s / %s=1)" % (load.mark(), FLAG, ENV), file=out, flush=True)
    return load


def finish(load, getloadavg=None, out=None):
    """Measure and print the load after the run."""
    load.after = tuple((getloadavg or os.getloadavg)())
    print("bench: %s" % load.describe(), file=sys.stdout if out is None else out, flush=True)
    return load


def mark_tables(text, load):
    """``text`` with the loaded-machine line above every markdown table in it (unchanged when idle)."""
    mark = load.mark()
    if not mark:
        return text
    out, in_table = [], False
    for line in text.split("\n"):
        is_row = line.lstrip().startswith("|")
        if is_row and not in_table:
            out += ([""] if out and out[-1].strip() else []) + ["**%s**" % mark, ""]
        in_table = is_row
        out.append(line)
    return "\n".join(out)
