"""Debian's Chromium, headless, for the fleet report's browser test and its screenshots in docs/img.

Nothing is downloaded (no playwright, no driver): `chromium --headless --dump-dom` loads the page, a script
appended to a copy of it measures the page and writes what it found into the DOM, and the test reads the
dumped DOM. As root (CI runs `make test` as root) Chromium needs --no-sandbox.
"""

import os
import shutil
import subprocess
import tempfile

INSTALL = "apt-get install -y --no-install-recommends chromium (the Makefile's APT_PACKAGES)"


def binary():
    """The Chromium to run ($AIOPS_CHROMIUM, else chromium on PATH), or None."""
    return os.environ.get("AIOPS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args, width, height, timeout=180):
    with tempfile.TemporaryDirectory(prefix="aiops-chromium-") as profile:
        argv = [binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--user-data-dir=%s" % profile, "--window-size=%d,%d" % (width, height)] + args
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def dump_dom(html_path, width, height):
    """The DOM after the page's scripts ran, as Chromium serialises it."""
    proc = _run(["--dump-dom", "file://" + os.path.abspath(html_path)], width, height)
    if proc.returncode != 0 or "<html" not in proc.stdout:
        raise RuntimeError("chromium --dump-dom failed (rc %d): %s" % (proc.returncode, proc.stderr[-2000:]))
    return proc.stdout


def screenshot(html_path, png_path, width=1280, height=2000):
    proc = _run(["--hide-scrollbars", "--screenshot=%s" % os.path.abspath(png_path), "file://" + os.path.abspath(html_path)], width, height)
    if proc.returncode != 0 or not os.path.exists(png_path):
        raise RuntimeError("chromium --screenshot failed (rc %d): %s" % (proc.returncode, proc.stderr[-2000:]))
    return png_path
