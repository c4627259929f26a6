"""harness/lib/pushmon.py, the push scenario's broadcast watch and the
server's settled push count, against a stand-in c1m-stat and a client log
written as the test goes. No root, no socket: tests/push_server.bats runs real
broadcasts."""
import argparse
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import util  # noqa: F401  (harness/lib on sys.path)
import pushmon  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PUSHMON = os.path.join(HERE, "..", "..", "harness", "lib", "pushmon.py")

# A stand-in c1m-stat: --get pushed prints the file "pushed" (fails without it).
FAKE_STAT = """#!/bin/sh
d=$(dirname "$0")
[ "$1" = --get ] && [ "$2" = pushed ] && cat "$d/pushed" 2>/dev/null && exit 0
exit 1
"""
LINE = "c1m-client: push window reached all %d reading connections, last at %d us\n"


class Verdict(unittest.TestCase):
    def test_reached_within_the_wait(self):
        rec, failed, why = pushmon.verdict((1000, 5_250_000), 3_000_000, 300)
        self.assertEqual((rec, failed, why), ({"broadcast_reached": 1000, "broadcast_s": "2.250000"}, "", ""))

    def test_reached_after_the_wait_is_a_timeout_with_its_figure(self):
        rec, failed, why = pushmon.verdict((1000, 9_000_001), 3_000_000, 6)
        self.assertEqual(rec["broadcast_s"], "6.000001")
        self.assertEqual((failed, why), ("broadcast-timeout", "the broadcast took 6.000001 s, over PUSH_WAIT=6s"))

    def test_not_reached(self):
        self.assertEqual(pushmon.verdict(None, 1, 5), ({"broadcast_reached": ""}, "broadcast-timeout",
                                                       "the broadcast had not reached every connection after 5s"))

    def test_the_log_is_read_as_it_grows_whole_lines_only(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "client.log")
        log = pushmon.LogLines(path)
        self.assertEqual(log.new(), [])                      # no file yet
        with open(path, "ab") as f:
            f.write(b"c1m-client: push window reached all 7 reading conn")
        self.assertEqual(log.new(), [])
        self.assertIsNone(pushmon.reached_line([b"c1m-client: push window reached all 7 reading conn"]))
        with open(path, "ab") as f:
            f.write(b"ections, last at 42 us\nnext")
        lines = log.new()
        self.assertEqual(pushmon.reached_line(lines), (7, 42))
        self.assertEqual(log.new(), [])


class Watch(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.d)
        self.stat = os.path.join(self.d, "c1m-stat")
        with open(self.stat, "w") as f:
            f.write(FAKE_STAT)
        os.chmod(self.stat, 0o755)
        self.log = os.path.join(self.d, "client.log")
        open(self.log, "w").close()
        self.pushed(100)

    def pushed(self, n):
        with open(os.path.join(self.d, "pushed"), "w") as f:
            f.write("%d\n" % n)

    def start(self, *extra, wait=30, t_sig=None):
        self.t_sig = t_sig or time.time_ns() // 1000
        p = subprocess.Popen([sys.executable, PUSHMON, "broadcast", "--stats", "s", "--c1m-stat", self.stat,
                              "--client-log", self.log, "--conns", "50", "--wait", str(wait),
                              "--t-sig-us", str(self.t_sig)] + list(extra),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        return p

    def result(self, p, timeout=10):
        out, err = p.communicate(timeout=timeout)
        self.assertEqual(p.returncode, 0, err)
        return json.loads(out)

    def test_the_server_side_then_the_client_line(self):
        p = self.start("--pushed0", "100")
        time.sleep(0.3)
        self.pushed(150)                      # every connection's line handed over
        time.sleep(0.3)
        with open(self.log, "a") as f:
            f.write("c1m-client: something else\n" + LINE % (50, self.t_sig + 1_500_000))
        j = self.result(p)
        self.assertEqual((j["failed"], j["why"]), ("", ""))
        self.assertEqual((j["record"]["broadcast_reached"], j["record"]["broadcast_s"]), (50, "1.500000"))
        self.assertGreaterEqual(float(j["record"]["broadcast_server_s"]), 0.3)
        self.assertLess(float(j["record"]["broadcast_server_s"]), 5)

    def test_a_fifo_for_the_client_log_is_no_line_not_a_hang(self):
        # open() of a FIFO waited for a writer, SIGTERM only noted by the
        # handler: the watch outlived its PUSH_WAIT and its stop (push.sh
        # killed it 5 s later); now the log has no line: broadcast-timeout
        os.unlink(self.log)
        os.mkfifo(self.log)
        p = self.start("--pushed0", "100", wait=1)
        j = self.result(p)
        self.assertEqual(j["failed"], "broadcast-timeout")
        p = self.start("--pushed0", "100")
        time.sleep(0.5)
        p.terminate()
        p.communicate(timeout=5)
        self.assertEqual(p.returncode, 130)

    def test_started_before_the_signal_it_waits_for_its_go_file(self):
        go = os.path.join(self.d, "go")
        p = subprocess.Popen([sys.executable, PUSHMON, "broadcast", "--stats", "s", "--c1m-stat", self.stat,
                              "--client-log", self.log, "--conns", "50", "--wait", "30", "--go", go],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        for _ in range(500):
            if os.path.exists(go + ".ready"):
                break
            time.sleep(0.01)
        self.assertTrue(os.path.exists(go + ".ready"))
        with open(go, "w") as f:
            f.write("12 ")                       # not a whole line yet: still waiting
        time.sleep(0.1)
        self.assertIsNone(p.poll())
        self.pushed(150)
        t_sig = time.time_ns() // 1000
        with open(go, "w") as f:
            f.write("%d 100\n" % t_sig)
        time.sleep(0.3)
        with open(self.log, "a") as f:
            f.write(LINE % (50, t_sig + 250_000))
        j = self.result(p)
        self.assertEqual(j["record"]["broadcast_s"], "0.250000")
        self.assertLess(float(j["record"]["broadcast_server_s"]), 0.2)   # at its first look

    def test_go_lines(self):
        self.assertEqual(pushmon.read_go(["17", "5"]), (17, 5))
        self.assertEqual(pushmon.read_go(["17"]), (17, None))
        for bad in ([], ["0"], ["x"], ["1", "-2"], ["1", "2", "3"], ["1" * 20], ["1.5"]):
            self.assertIsNone(pushmon.read_go(bad), bad)

    def test_a_client_line_first_ends_the_server_watch(self):
        with open(self.log, "a") as f:
            f.write(LINE % (50, 0))
        j = self.result(self.start("--pushed0", "100", t_sig=1))
        self.assertEqual(j["record"], {"broadcast_reached": 50, "broadcast_s": "-0.000001",
                                       "broadcast_server_s": ""})

    def test_both_sides_done_by_one_look_keeps_the_server_figure(self):
        self.pushed(150)
        with open(self.log, "a") as f:
            f.write(LINE % (50, time.time_ns() // 1000))
        j = self.result(self.start("--pushed0", "100"))
        self.assertNotEqual(j["record"]["broadcast_server_s"], "")
        self.assertEqual(j["record"]["broadcast_reached"], 50)

    def test_its_root_gone_it_ends_printing_nothing(self):
        root = subprocess.Popen(["sleep", "30"])
        self.addCleanup(lambda: root.poll() is None and (root.kill(), root.wait()))
        p = self.start("--root", str(root.pid))
        time.sleep(0.3)
        self.assertIsNone(p.poll())
        root.kill()
        root.wait()
        t = time.monotonic()
        out, _ = p.communicate(timeout=10)
        self.assertEqual((p.returncode, out), (130, ""))
        self.assertLess(time.monotonic() - t, 2)

    def test_no_client_line_within_the_wait_is_a_timeout(self):
        t = time.monotonic()
        j = self.result(self.start(wait=1), timeout=15)
        self.assertLess(time.monotonic() - t, 5)
        self.assertEqual(j, {"record": {"broadcast_reached": "", "broadcast_server_s": ""},
                             "failed": "broadcast-timeout",
                             "why": "the broadcast had not reached every connection after 1s"})

    def test_a_stop_signal_ends_it_printing_nothing(self):
        p = self.start()
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=10)
        self.assertEqual((p.returncode, out), (130, ""))

    def test_settled(self):
        r = subprocess.run([sys.executable, PUSHMON, "settled", "--stats", "s", "--c1m-stat", self.stat],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual((r.returncode, r.stdout), (0, "100\n"))

    def test_settled_unreadable_is_an_empty_line_after_5_s_of_looks(self):
        looks, out = [], io.StringIO()
        with mock.patch.object(pushmon, "stat_get", lambda *a: looks.append(1)), \
                mock.patch.object(pushmon.time, "sleep", lambda s: None), \
                contextlib.redirect_stdout(out):
            rc = pushmon.cmd_settled(argparse.Namespace(c1m_stat="c", stats="s"), [])
        self.assertEqual((rc, out.getvalue(), len(looks)), (0, "\n", 50))

    def test_bad_arguments_exit_2(self):
        base = ["broadcast", "--stats", "s", "--c1m-stat", "c", "--client-log", "l"]
        for argv in ([], ["peek"], base, base + ["--conns", "5", "--wait", "0", "--t-sig-us", "1"],
                     base + ["--conns", "x", "--wait", "5", "--t-sig-us", "1"],
                     base + ["--conns", "5", "--wait", "5", "--t-sig-us", "nan"],
                     base + ["--conns", "5", "--wait", "5", "--t-sig-us", "1", "--pushed0", "-1"],
                     base + ["--conns", "5", "--wait", "5"],
                     base + ["--conns", "5", "--wait", "5", "--go", "g", "--t-sig-us", "1"],
                     base + ["--conns", "5", "--wait", "5", "--go", "g", "--pushed0", "1"],
                     base + ["--conns", "5", "--wait", "5", "--go", ""],
                     ["settled", "--stats", "s"]):
            r = subprocess.run([sys.executable, PUSHMON] + argv, capture_output=True, text=True, timeout=10)
            self.assertEqual(r.returncode, 2, argv)
            self.assertNotIn("Traceback", r.stderr, argv)


if __name__ == "__main__":
    unittest.main()
