"""harness/lib/pycalib.py: the interpreter's calibration figure (bench.sh adds
it to c1m-calib's JSON, meta.json `calibration`)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from util import LIB  # noqa: E402  (harness/lib on sys.path)
import pycalib  # noqa: E402

SCRIPT = os.path.join(LIB, "pycalib.py")


def run(*args, stdin=""):
    return subprocess.run([sys.executable, SCRIPT, *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


class TestPycalib(unittest.TestCase):
    def test_measure_gives_an_ordered_positive_range(self):
        r = pycalib.measure(rounds=3, iterations=2000)
        p = r["python_ns"]
        self.assertTrue(0 < p["min"] <= p["median"] <= p["max"], r)
        self.assertEqual((r["python_rounds"], r["python_iterations"]), (3, 2000))
        self.assertTrue(r["python_implementation"].startswith(("CPython", "PyPy")), r)

    def test_add_to_keeps_the_other_keys(self):
        p = run("run", "--rounds", "1", "--iterations", "1000", "--add-to", "-",
                stdin='{"accept_cpu_us": {"median": 5.0}, "conns": 10000}')
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual((out["accept_cpu_us"], out["conns"]), ({"median": 5.0}, 10000))
        self.assertIn("python_ns", out)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.fifo = os.path.join(self.tmp.name, "calibration.json")
        os.mkfifo(self.fifo)

    def test_bad_input_is_said_with_its_exit_status(self):
        for args, stdin, rc, what in (([], "", 2, "usage: pycalib.py run"),
                                      (["bogus"], "", 2, "usage: pycalib.py run"),
                                      (["run", "--rounds", "0"], "", 2, "--rounds: 1..50"),
                                      (["run", "--iterations", "x"], "", 2, "a whole number"),
                                      (["run", "--add-to", "-"], "[1]", 1, "not a JSON object"),
                                      (["run", "--add-to", "-"], "{", 1, "pycalib.py: -:"),
                                      (["run", "--add-to", "/nonexistent/x"], "", 1, "/nonexistent/x"),
                                      # JSON nested past the parser: RecursionError's traceback
                                      (["run", "--add-to", "-"], "[" * 100000, 1, "pycalib.py: -: not JSON"),
                                      # a FIFO held open() for ever; a directory
                                      (["run", "--add-to", self.fifo], "", 1, "%s: not a regular file" % self.fifo),
                                      (["run", "--add-to", "/"], "", 1, "pycalib.py: /: Is a directory")):
            p = run(*args, stdin=stdin)
            self.assertEqual(p.returncode, rc, (args, p.stderr))
            self.assertIn(what, p.stderr, args)
            self.assertNotIn("Traceback", p.stderr, args)


if __name__ == "__main__":
    unittest.main()
