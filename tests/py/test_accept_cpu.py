"""pyext/tools/accept_cpu.py's command line: what it refuses (exit 2, said)
before anything is created, root or not."""
import os
import signal
import subprocess
import sys
import time

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


class Close(util.TmpDir):
    def test_a_second_stop_signal_during_close_still_stops_the_server(self):
        # The first ^C/SIGTERM ends a run through close(); a second one while
        # close() waited for the client raised KeyboardInterrupt out of that
        # wait: the server was never stopped (nor its namespace deleted). It is
        # held until close() is done, then raised.
        sys.path.insert(0, os.path.dirname(TOOL))
        import accept_cpu
        a = type("A", (), {"perf_record": None})()
        run = accept_cpu.Run(a, ("c", "c", "/nonexistent", []), 1)
        run.stats = os.path.join(self.dir, "stats")
        slow = "trap 'sleep 0.6; exit 0' TERM; while :; do sleep 0.05; done"
        run.client = subprocess.Popen(["sh", "-c", slow])
        run.server = subprocess.Popen(["sh", "-c", "while :; do sleep 0.05; done"])
        self.addCleanup(lambda: [p.kill() or p.wait() for p in (run.client, run.server) if p.poll() is None])
        time.sleep(0.2)     # (the traps set)
        old = signal.signal(signal.SIGTERM, signal.default_int_handler)
        self.addCleanup(signal.signal, signal.SIGTERM, old)
        # (from another process: a thread of this one would take the signal itself)
        kill = subprocess.Popen(["sh", "-c", "sleep 0.2; kill -TERM %d" % os.getpid()])
        self.addCleanup(kill.wait)
        with self.assertRaises(KeyboardInterrupt):
            run.close()
        self.assertIsNotNone(run.server.poll(), "close() left the server running")
        self.assertIsNotNone(run.client.poll())
