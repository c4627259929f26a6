"""tests/py/util.py - the one preamble of the Python suites (tests/py, tests/py_netns):
the repository's root, harness/lib, a fresh directory per test, the serial-only skip.

    from util import ROOT, LIB, TmpDir, serial_only   # a suite in tests/py
    from tests.py.util import ROOT                    # a suite in tests/py_netns

Importing it puts the repository root (py_server) and harness/lib (the harness's
modules: results, record, ...) on sys.path, once each. `import util` works however
a tests/py suite is run: `unittest discover -s tests/py`, `python3 -m unittest
tests.py.test_X` (tests/py/__init__.py puts this directory on sys.path) or
`python3 tests/py/test_X.py`.
"""
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(ROOT, "harness", "lib")
for _d in (ROOT, LIB):
    if _d not in sys.path:
        sys.path.insert(0, _d)


class TmpDir(unittest.TestCase):
    """self.dir: a fresh directory for each test (named PREFIX...), removed after it."""
    prefix = "c1m-test-"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def subdir(self, name):
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        return d


def serial_only(why):
    """Skip a test or class unless C1M_SERIAL=1: it judges CPU or time, so make check
    (unittest discover) skips it, named so, and a test of a serial bats file runs it
    with C1M_SERIAL=1 (tests/README.md "Adding a test")."""
    return unittest.skipUnless(os.environ.get("C1M_SERIAL") == "1", why)
