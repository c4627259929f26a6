"""pyext/tools/accept_cpu.py's command line: what it refuses (exit 2, said)
before anything is created, root or not."""
import os
import subprocess
import sys

import util
from util import ROOT

TOOL = os.path.join(ROOT, "pyext", "tools", "accept_cpu.py")


class Usage(util.TmpDir):
    def run_tool(self, *args):
        logs = os.path.join(self.dir, "logs")
        r = subprocess.run([sys.executable, TOOL, "--log-dir", logs] + list(args),
                           capture_output=True, text=True, timeout=60)
        return r, logs

    def test_a_contender_list_naming_none_is_a_usage_error(self):
        # "," or "": no contender; the summary's names[0] was an IndexError traceback
        for spec in (",", ""):
            r, logs = self.run_tool("--contenders", spec, "--rounds", "1")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--contenders: names no contender", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertFalse(os.path.exists(logs))

    def test_an_unknown_contender_is_a_usage_error(self):
        r, logs = self.run_tool("--contenders", "c,nosuch")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("unknown contender(s) nosuch", r.stderr)
        self.assertFalse(os.path.exists(logs))
