"""Stand-in for pypa's get-pip.py, which ansible-test fetches from ci-files.testing.ansible.com.

That host is unreachable from these machines, so tools/sanity.sh puts this file where ansible-test
caches the script. It does what get-pip.py does — install pip into the running interpreter — using
the interpreter's own ensurepip, then pip from PyPI at the version ansible-test asked for.
"""
import subprocess
import sys

GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")

args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
