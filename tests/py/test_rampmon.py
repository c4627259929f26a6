"""harness/lib/rampmon.py, the ramp's stop rules (Ramp: run_one.sh, so
anatomy-cpu too, and run_remote.py end a ramp by them), its watch against a
stand-in c1m-stat and stand-in server and client processes, and
lib/progress.py's line. No root, no socket: tests/trust.bats and
tests/harness.bats run real ramps."""
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import util  # noqa: F401  (harness/lib on sys.path)
import rampmon  # noqa: E402
from progress import Progress  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RAMPMON = os.path.join(HERE, "..", "..", "harness", "lib", "rampmon.py")


class Rules(unittest.TestCase):
    def ramp(self, **kw):
        return rampmon.Ramp(2000, 100.0, **dict(dict(timeout=600, stall=120, min_available=1024), **kw))

    def test_goes_on_while_nothing_ends_it(self):
        r = self.ramp()
        self.assertIsNone(r.step(101.0, 500))
        self.assertIsNone(r.step(101.0, None))          # counters unreadable this pass
        self.assertIsNone(r.step(700.0, 1999))          # at the timeout, not over it
        self.assertIsNone(r.step(101.0, 1500, usable_mib=1024))   # at the guard, not under it

    def test_each_rule(self):
        self.assertEqual(self.ramp().step(101.0, 2000), {"ramp_end": "reached"})
        self.assertEqual(self.ramp().step(101.0, 2500), {"ramp_end": "reached"})
        self.assertEqual(self.ramp().step(101.0, 10, dead=1), {"ramp_end": "worker-died"})
        self.assertEqual(self.ramp().step(101.0, 10, server=False), {"ramp_end": "server-exited"})
        self.assertEqual(self.ramp().step(101.0, 10, client=False), {"ramp_end": "client-exited"})
        self.assertEqual(self.ramp().step(101.0, 10, usable_mib=1023), {"ramp_end": "oom-guard"})
        self.assertEqual(self.ramp().step(700.5, 10), {"ramp_end": "timeout"})

    def test_order(self):
        # reached first: a ramp that got there is not failed by what happened after
        self.assertEqual(self.ramp().step(800.0, 2000, dead=1, server=False, client=False, usable_mib=0)["ramp_end"],
                         "reached")
        self.assertEqual(self.ramp().step(800.0, 10, dead=1, server=False)["ramp_end"], "worker-died")
        self.assertEqual(self.ramp().step(800.0, 10, server=False, client=False)["ramp_end"], "server-exited")
        self.assertEqual(self.ramp().step(800.0, 10, client=False, usable_mib=0)["ramp_end"], "client-exited")
        self.assertEqual(self.ramp().step(800.0, 10, usable_mib=0)["ramp_end"], "oom-guard")

    def test_stall_counts_from_the_last_new_high(self):
        r = self.ramp(timeout=10000, stall=120)
        self.assertIsNone(r.step(150.0, 800))
        self.assertIsNone(r.step(260.0, 700))           # lower: not progress, 110 s since the high
        self.assertIsNone(r.step(270.0, 800))           # equal: not progress either, 120 s
        end = r.step(270.5, 790)
        self.assertEqual(end, {"ramp_end": "ramp-stalled", "ramp_best": "800", "ramp_open": "790",
                               "ramp_elapsed_s": "170.500"})
        r = self.ramp(timeout=10000, stall=120)        # nothing readable since t0: stalled too
        self.assertEqual(r.step(220.5, None), {"ramp_end": "ramp-stalled", "ramp_best": "0", "ramp_open": "",
                                               "ramp_elapsed_s": "120.500"})

    def test_stall_zero_never_stalls(self):
        r = self.ramp(timeout=10 ** 6, stall=0)
        self.assertIsNone(r.step(10 ** 5, 5))

    def test_no_guard_without_a_reading(self):
        self.assertIsNone(self.ramp(min_available=10 ** 9).step(101.0, 5, usable_mib=None))

    def test_notes_are_the_judges(self):
        self.assertEqual(rampmon.note({"ramp_end": "timeout"}, 2000, 600, 120, 1024), "not all accepted after 600s")
        self.assertEqual(rampmon.note({"ramp_end": "worker-died"}, 2000, 600, 120, 1024),
                         "a server worker died during the ramp")
        self.assertIn("under 1024 MiB", rampmon.note({"ramp_end": "oom-guard"}, 2000, 600, 120, 1024))
        self.assertIn("at most 800 of 2000 open", rampmon.note(
            {"ramp_end": "ramp-stalled", "ramp_best": "800", "ramp_open": "790", "ramp_elapsed_s": "170.5"},
            2000, 600, 120, 1024))


class Line(unittest.TestCase):
    def test_line_mode_prints_a_new_format_and_then_every_10_s(self):
        out = io.StringIO()
        p = Progress("line", out)
        p.show("a %d", (1,))
        p.show("a %d", (2,))            # same format within 10 s: not printed
        p.show("b %d", (3,))            # a new phase: printed
        p.end()
        self.assertEqual(out.getvalue(), "a 1\nb 3\n")
        p.next = 0                      # 10 s later
        p.show("b %d", (4,))
        self.assertEqual(out.getvalue(), "a 1\nb 3\nb 4\n")

    def test_tty_mode_redraws_and_ends_with_one_newline(self):
        out = io.StringIO()
        p = Progress("tty", out)
        p.end()                         # nothing drawn: no newline
        p.show("a %d", (1,))
        p.show("a %d", (2,))
        p.end()
        p.end()
        self.assertEqual(out.getvalue(), "\ra 1\ra 2\n")

    def test_off_prints_nothing(self):
        out = io.StringIO()
        p = Progress("off", out)
        p.show("a %d", (1,))
        p.end()
        self.assertEqual(out.getvalue(), "")


# A stand-in c1m-stat: --wait succeeds once the file "reached" exists (else
# fails after 0.1 s, as a dead worker makes it fail at once); --total prints
# the total line from the file "total".
FAKE_STAT = """#!/bin/sh
d=$(dirname "$0")
case "$1" in
    --wait) [ -e "$d/reached" ] && exit 0; sleep 0.1; exit 1 ;;
    --total) cat "$d/total" 2>/dev/null && exit 0; exit 1 ;;
esac
exit 2
"""


class Watch(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.stat = os.path.join(self.d, "c1m-stat")
        with open(self.stat, "w") as f:
            f.write(FAKE_STAT)
        os.chmod(self.stat, 0o755)
        self.total(5, 0)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", self.d])

    def total(self, opened, dead):
        with open(os.path.join(self.d, "total"), "w") as f:
            f.write(f"total kind=test workers=2 listening=2 full=0 failed=0 workers_dead={dead} open={opened} "
                    "accepted=5 closed=0\n")

    def sleeper(self):
        p = subprocess.Popen(["sleep", "60"])
        self.procs.append(p)
        return p

    def watch(self, *extra, server=None, client=None):
        server = server or self.sleeper()
        client = client or self.sleeper()
        out = os.path.join(self.d, "ramp-end.json")
        argv = [sys.executable, RAMPMON, "watch", "--out", out, "--stats", os.path.join(self.d, "stats"),
                "--c1m-stat", self.stat, "--conns", "2000", "--t0", "%.6f" % time.time(),
                "--server", str(server.pid), "--client", str(client.pid), "--label", "x", "--progress", "off",
                *extra]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        so, se = p.communicate(timeout=30)
        end = None
        if os.path.exists(out):
            with open(out) as f:
                end = json.load(f)
        return p.returncode, end, se

    def watch_go(self, go, out, server, *extra):
        """A watch started before the client (--go GO), once it says it waits
        (GO.ready: its stop signals are handled from then on)."""
        p = subprocess.Popen([sys.executable, RAMPMON, "watch", "--out", out, "--stats", "s", "--c1m-stat", self.stat,
                              "--conns", "5", "--server", str(server.pid), "--go", go, "--progress", "off", *extra],
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        for _ in range(3000):
            if os.path.exists(go + ".ready"):
                break
            time.sleep(0.01)
        return p

    def test_reached(self):
        open(os.path.join(self.d, "reached"), "w").close()
        rc, end, err = self.watch()
        self.assertEqual((rc, end["ramp_end"], err), (0, "reached", ""))
        self.assertAlmostEqual(float(end["t1"]), time.time(), delta=20)

    def test_go_file_starts_the_watch(self):
        # started before the client: it waits for "T0 PID\n" (a line not yet
        # ended, or not two numbers, is not yet one)
        open(os.path.join(self.d, "reached"), "w").close()
        go = os.path.join(self.d, "go")
        server, client = self.sleeper(), self.sleeper()
        out = os.path.join(self.d, "ramp-end.json")
        p = self.watch_go(go, out, server)
        self.assertTrue(os.path.exists(go + ".ready"))     # it says it waits
        for partial in ("", "1796000000.5", "1796000000.5 x\n", "1796000000.5 %d" % client.pid):
            with open(go, "w") as f:
                f.write(partial)
            time.sleep(0.3)
            self.assertIsNone(p.poll(), partial)
            self.assertFalse(os.path.exists(out))
        with open(go, "w") as f:
            f.write("1796000000.5 %d\n" % client.pid)
        p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0)
        with open(out) as f:
            self.assertEqual(json.load(f)["ramp_end"], "reached")

    def test_a_hostile_go_file(self):
        # a FIFO there (open() would block, deaf to signals), a line of inf, a
        # file too long: not a start; the watch still ends on its stop signal
        server = self.sleeper()
        for kind in ("fifo", "inf", "long"):
            go = os.path.join(self.d, "go-" + kind)
            if kind == "fifo":
                os.mkfifo(go)
            else:
                with open(go, "w") as f:
                    f.write("inf %d\n" % server.pid if kind == "inf" else "1" * 5000 + " 5\n")
            p = self.watch_go(go, os.path.join(self.d, "o.json"), server, "--timeout", "1")
            time.sleep(0.3)
            self.assertIsNone(p.poll(), kind)
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=10)
            self.assertEqual(p.returncode, 130, kind)

    def test_no_reader_of_its_stderr(self):
        # its progress line and its note go nowhere: its verdict is still written
        client = subprocess.Popen(["true"])
        self.procs.append(client)
        client.wait()
        server = self.sleeper()
        out = os.path.join(self.d, "ramp-end.json")
        r, w = os.pipe()
        os.close(r)
        p = subprocess.Popen([sys.executable, RAMPMON, "watch", "--out", out, "--stats", "s", "--c1m-stat", self.stat,
                              "--conns", "2000", "--t0", "%.6f" % time.time(), "--server", str(server.pid),
                              "--client", str(client.pid), "--progress", "line"], stderr=w)
        os.close(w)
        self.procs.append(p)
        p.wait(timeout=30)
        self.assertEqual(p.returncode, 3)
        with open(out) as f:
            self.assertEqual(json.load(f)["ramp_end"], "client-exited")

    def test_no_stderr_at_all(self):
        # started with fd 2 closed (sys.stderr None): Progress wrote to None, an
        # AttributeError, and no verdict file
        client = subprocess.Popen(["true"])
        self.procs.append(client)
        client.wait()
        server = self.sleeper()
        out = os.path.join(self.d, "ramp-end.json")
        p = subprocess.Popen([sys.executable, RAMPMON, "watch", "--out", out, "--stats", "s", "--c1m-stat", self.stat,
                              "--conns", "2000", "--t0", "%.6f" % time.time(), "--server", str(server.pid),
                              "--client", str(client.pid), "--progress", "line"], preexec_fn=lambda: os.close(2))
        self.procs.append(p)
        p.wait(timeout=30)
        self.assertEqual(p.returncode, 3)
        with open(out) as f:
            self.assertEqual(json.load(f)["ramp_end"], "client-exited")

    def test_client_exited_keeps_its_log(self):
        client = subprocess.Popen(["true"])
        self.procs.append(client)
        client.wait()
        log = os.path.join(self.d, "client.log")
        with open(log, "w") as f:
            f.write("starting\nc1m-client: connect: Connection refused\nbye=now\n")
        rc, end, err = self.watch("--client-log", log, client=client)
        self.assertEqual(rc, 3)
        self.assertEqual(end["ramp_end"], "client-exited")
        self.assertEqual(end["client_log"], "c1m-client: connect: Connection refused bye now")
        self.assertIn("x: client exited: c1m-client", err)

    def test_a_dead_worker_ends_it_at_once(self):
        self.total(5, 1)
        rc, end, err = self.watch("--timeout", "20")
        self.assertEqual((rc, end["ramp_end"]), (3, "worker-died"))
        self.assertIn("a server worker died during the ramp", err)

    def test_timeout_and_stall(self):
        rc, end, _ = self.watch("--timeout", "1", "--ramp-stall", "0")
        self.assertEqual((rc, end["ramp_end"]), (3, "timeout"))
        rc, end, _ = self.watch("--timeout", "60", "--ramp-stall", "1")
        self.assertEqual((rc, end["ramp_end"], end["ramp_best"]), (3, "ramp-stalled", "5"))

    def test_memory_guard(self):
        rc, end, _ = self.watch("--min-available", str(10 ** 11))
        self.assertEqual((rc, end["ramp_end"]), (3, "oom-guard"))

    def test_stopped_writes_nothing(self):
        out = os.path.join(self.d, "ramp-end.json")
        p = self.watch_go(os.path.join(self.d, "go"), out, self.sleeper())
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=10)
        self.assertEqual(p.returncode, 130)
        self.assertFalse(os.path.exists(out))
        root = subprocess.Popen(["true"])
        root.wait()
        rc, end, _ = self.watch("--root", str(root.pid))
        self.assertEqual((rc, end), (130, None))

    def test_unwritable_out(self):
        open(os.path.join(self.d, "reached"), "w").close()
        server, client = self.sleeper(), self.sleeper()
        r = subprocess.run([sys.executable, RAMPMON, "watch", "--out", os.path.join(self.d, "no", "such.json"),
                            "--stats", "s", "--c1m-stat", self.stat, "--conns", "5", "--t0", "1",
                            "--server", str(server.pid), "--client", str(client.pid)],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("No such file or directory", r.stderr)

    def test_usage(self):
        for argv in ([], ["peek"], ["watch"], ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c",
                                                "--conns", "0", "--t0", "1", "--server", "1", "--client", "1"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "5", "--t0", "nan",
                      "--server", "1", "--client", "1"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "5", "--t0", "1",
                      "--server", "1", "--client", "1", "--ramp-stall", "-1"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "5", "--t0", "1",
                      "--server", "1", "--client", "1", "--progress", "fancy"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "5", "--t0", "1",
                      "--server", "1"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "5", "--t0", "1",
                      "--server", "1", "--client", "1", "--go", "g"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "5", "--server", "1",
                      "--go", ""],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", "9" * 400, "--t0", "1",
                      "--server", "1", "--client", "1"],
                     ["watch", "--out", "x", "--stats", "s", "--c1m-stat", "c", "--conns", str((1 << 40) + 1),
                      "--t0", "1", "--server", "1", "--client", "1"]):
            r = subprocess.run([sys.executable, RAMPMON, *argv], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, argv)
            self.assertNotIn("Traceback", r.stderr)
            self.assertIn("rampmon.py", r.stderr)


if __name__ == "__main__":
    unittest.main()
