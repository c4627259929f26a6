"""Ctrl-C in the harness's Python entry points bench.sh (and make) runs at
start-up: they die by SIGINT (lib/entry.py: the calling shell stops too, as
for any program ended by Ctrl-C) and print no traceback (settings.py printed
KeyboardInterrupt's traceback on a Ctrl-C 0.2 s into `make bench`).
Deterministic: a trace function raises KeyboardInterrupt as the script's
main() is entered, where a real SIGINT's handler would raise it; nothing is
timed."""
import os
import signal
import subprocess
import sys
import unittest

from util import LIB  # noqa: E402

# the script run as __main__, KeyboardInterrupt raised on entering its main()
WRAPPER = r"""
import runpy, sys
path = sys.argv[1]
sys.argv = sys.argv[1:]
def trace(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "main" and frame.f_code.co_filename == path:
        raise KeyboardInterrupt
sys.settrace(trace)
runpy.run_path(path, run_name="__main__")
"""

# bench.sh's start-up calls, and make's check of its command line
ENTRY_POINTS = [("settings.py", "check-env"), ("settings.py", "check-make", "N=1k"),
                ("estimate.py", "plan", "--tiers", "2000"), ("pycalib.py", "run"),
                ("results.py", "machine", "/nonexistent"), ("hosts.py", "check", "/nonexistent"),
                ("remote.py", "cleanup", "/nonexistent")]


class Interrupted(unittest.TestCase):
    def test_ctrl_c_ends_them_by_sigint_without_a_traceback(self):
        for script, *args in ENTRY_POINTS:
            with self.subTest(script=script, args=args):
                path = os.path.join(LIB, script)
                p = subprocess.run([sys.executable, "-c", WRAPPER, path, *args],
                                   capture_output=True, text=True, timeout=60, cwd=LIB)
                self.assertEqual((p.returncode, p.stderr), (-signal.SIGINT, ""))


if __name__ == "__main__":
    unittest.main()
