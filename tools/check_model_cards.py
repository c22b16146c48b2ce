"""Check that the committed model cards (docs/models/*.md) are what the build produces.

The build rewrites docs/models/ in the work tree; this compares it with the committed version
(HEAD). Text must match exactly; numbers may differ by what float rounding on another CPU
explains (OpenBLAS picks its kernels per CPU, and a held-out sample sitting on the decision
boundary can flip), never more. Integers (set sizes, counts) must match exactly.

Usage: python tools/check_model_cards.py [--abs-tol 0.02] [--rel-tol 1e-3]
"""

import argparse
import difflib
import glob
import os
import re
import subprocess
import sys

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def committed(path):
    proc = subprocess.run(["git", "show", "HEAD:%s" % path], cwd=CHECKOUT, capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def number_close(old, new, abs_tol, rel_tol):
    if "." not in old + new and "e" not in (old + new).lower():
        return old == new
    a, b = float(old), float(new)
    return abs(a - b) <= max(abs_tol, rel_tol * abs(a))


def compare(old_text, new_text, abs_tol, rel_tol):
    """Return a list of problems (empty when the card matches within tolerance)."""
    if NUMBER.sub("#", old_text) != NUMBER.sub("#", new_text):
        return ["text differs:\n" + "".join(difflib.unified_diff(
            old_text.splitlines(True), new_text.splitlines(True), "committed", "built", n=1))]
    problems = []
    for old, new in zip(NUMBER.finditer(old_text), NUMBER.finditer(new_text)):
        if not number_close(old.group(), new.group(), abs_tol, rel_tol):
            line = old_text.count("\n", 0, old.start()) + 1
            problems.append("line %d: committed %s, built %s" % (line, old.group(), new.group()))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abs-tol", type=float, default=0.02, help="absolute tolerance for decimals")
    parser.add_argument("--rel-tol", type=float, default=1e-3, help="relative tolerance for decimals")
    args = parser.parse_args(argv)
    paths = sorted(os.path.relpath(p, CHECKOUT) for p in glob.glob(os.path.join(CHECKOUT, "docs", "models", "*.md")))
    if not paths:
        print("no model cards under docs/models: did the build run?", file=sys.stderr)
        return 1
    failed = False
    for path in paths:
        old = committed(path)
        if old is None:
            print("%s: built but not committed" % path, file=sys.stderr)
            failed = True
            continue
        with open(os.path.join(CHECKOUT, path), encoding="utf-8") as handle:
            problems = compare(old, handle.read(), args.abs_tol, args.rel_tol)
        for problem in problems:
            print("%s: %s" % (path, problem), file=sys.stderr)
        failed = failed or bool(problems)
        print("%s: %s" % (path, "DIFFERS" if problems else "matches the build"))
    if failed:
        print("The committed model cards are not what the build produces: run `make models` and commit docs/models.",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
