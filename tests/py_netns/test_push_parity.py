"""Push parity: the same server push on every contender (c1m-server and the
Python ones: asyncio-protocol, asyncio-streams, uvloop-protocol,
uvloop-streams, pyext), each with --workers 1 on 127.0.0.1, read by
tests/tools/push_reader.py (message format and size, sequence numbers from 1
without gaps, timestamps not after their receipt), with the `pushed` counter
against what arrived, the slow cutoff on a peer that stops reading, pongs
and pushes on one connection, SIGUSR1 broadcasts, bursts, and the flags' bad
values. The message, the schedule and the pushed ledger without a server:
tests/py/test_push.py.

Loops are selected as in test_protocol_parity (C1M_TEST_LOOP=c,asyncio,...).
Ports 9260-9299.

    /usr/bin/python3 -m unittest tests.py_netns.test_push_parity -v
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from tests.py.util import ROOT as REPO  # noqa: E402  (the root and harness/lib on sys.path)
HERE = os.path.dirname(os.path.abspath(__file__))
for _d in (HERE, os.path.join(REPO, "tests", "tools")):
    if _d not in sys.path:
        sys.path.insert(0, _d)

import test_protocol_parity as base  # noqa: E402
from push_reader import PushReader  # noqa: E402
from py_server import stats as pstats  # noqa: E402

HOST = base.HOST
PACED = ("--push", "512", "--push-every", "0.05")


class PushParity:
    """Mixed into one TestCase per contender (loop, api, port)."""
    loop = api = None
    port = 0

    @classmethod
    def setUpClass(cls):
        base.skip_or_fail(cls, cls.loop)
        cls.tmp = tempfile.TemporaryDirectory(prefix="c1m-push-parity-")
        cls.stats_path = os.path.join(cls.tmp.name, "paced.stats")
        cls.proc = base.start_server(cls.loop, cls.api, cls.port, cls.stats_path, *PACED)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "proc", None) is not None:
            base.stop_server(cls.proc)
        if getattr(cls, "tmp", None) is not None:
            cls.tmp.cleanup()

    # -- helpers --
    def reader(self, size=512, port=None, interval=0.0):
        r = PushReader(HOST, port or self.port, size, interval)
        self.addCleanup(r.close)
        return r

    def total(self, path=None):
        return pstats.read_file(path or self.stats_path)["total"]

    def wait_total(self, pred, what, path=None, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = self.total(path)
            if pred(t):
                return t
            time.sleep(0.02)
        self.fail("counters never showed %s: %s" % (what, self.total(path)))

    def assert_clean(self, s, size=512):
        self.assertEqual((s["bad"], s["gaps"], s["not_from_1"], s["future_usec"],
                          s["usec_before_start"]), (0, 0, 0, 0, 0), s)
        # every byte read is in a whole message, a pong, or one message's start per connection
        self.assertEqual(s["raw_bytes"], size * s["received"] + 5 * s["pongs"] + s["tail_bytes"], s)
        self.assertLess(s["tail_bytes"], size * max(1, s["connections"]), s)

    def peer(self, port, rcvbuf):
        """A raw connection to port with a small receive buffer (one that reads
        nothing unless the test does), closed after the test."""
        s = socket.socket(socket.AF_INET)
        self.addCleanup(s.close)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(10)
        s.connect((HOST, port))
        return s

    @staticmethod
    def read_to_end(s, timeout=5):
        """What is left to read on s: until EOF, a reset or timeout s of quiet."""
        s.setblocking(True)
        s.settimeout(timeout)
        got = b""
        try:
            while len(got) < 1 << 24:
                d = s.recv(65536)
                if not d:
                    break
                got += d
        except (ConnectionResetError, socket.timeout):
            pass
        return got

    def server(self, port, name, *args):
        path = os.path.join(self.tmp.name, name + ".stats")
        proc = base.start_server(self.loop, self.api, port, path, *args)
        self.addCleanup(base.stop_server, proc)
        return proc, path

    # -- cases --
    def test_a_format_sequence_timestamps(self):
        r = self.reader()
        r.connect(30)
        ok = r.run(lambda: r.min_each() >= 10, 30)
        s = r.summary()
        self.assertTrue(ok, s)
        self.assert_clean(s)

    def test_b_pongs_and_pushes_share_a_connection(self):
        r = self.reader()
        r.connect(5)
        self.assertTrue(r.run(lambda: r.min_each() >= 20, 30, ping_every=0.01), r.summary())
        self.assertTrue(r.run(r.pongs_done, 10), r.summary())
        s = r.summary()
        self.assert_clean(s)
        self.assertGreater(s["pings"], 0)
        self.assertEqual(s["pongs"], s["pings"])

    def test_c_slow_peer_is_cut_and_the_others_keep_receiving(self):
        slow0 = self.total()["slow"]
        r = self.reader()
        r.connect(20)
        r.stall(1)
        # the readers keep reading while the stalled one is waited for
        self.assertTrue(r.run(lambda: self.total()["slow"] >= slow0 + 1, 20),
                        "no slow cut: %s" % self.total())
        after = [c.count for c in r.conns]
        # the readers go on after the cut: 20 more messages each
        self.assertTrue(r.run(lambda: all(c.count >= a + 20 for c, a in zip(r.conns, after)),
                              30), r.summary())
        s = r.summary()
        self.assert_clean(s)
        self.assertEqual(r.stalled_closed(), 1)
        self.assertEqual(self.total()["slow"], slow0 + 1)

    def test_d_sigusr1_broadcast(self):
        proc, path = self.server(self.port + 10, "usr1", "--push", "64")
        wpid = pstats.read_file(path)["workers"][0]["pid"]
        r = self.reader(64, self.port + 10)
        r.connect(20)
        self.wait_total(lambda t: t["open"] == 20, "20 open", path)
        os.kill(proc.pid, signal.SIGUSR1)     # the parent ignores it
        time.sleep(0.3)
        self.assertIsNone(proc.poll(), "SIGUSR1 ended the server's parent")
        self.assertEqual(self.total(path)["pushed"], 0)
        for k in (1, 2):
            os.kill(wpid, signal.SIGUSR1)
            self.assertTrue(r.run(lambda: r.min_each() >= k, 10), r.summary())
        self.assertFalse(r.run(lambda: r.received > 40, 0.3), "more than one message per signal")
        s = r.summary()
        self.assert_clean(s, 64)
        self.assertEqual((s["received"], s["min_each"], s["max_each"]), (40, 2, 2), s)
        self.wait_total(lambda t: t["pushed"] == 40, "pushed=40", path)

    def test_e_burst(self):
        _, path = self.server(self.port + 20, "burst", "--push", "64", "--push-every", "0.25",
                              "--push-burst")
        r = self.reader(64, self.port + 20, interval=0.25)
        r.connect(20)
        self.assertTrue(r.run(lambda: r.min_each() >= 3, 30), r.summary())
        s = r.summary()
        self.assert_clean(s, 64)
        # one worker, one phase: 1-2 of 10 bins (paced sending fills them all)
        self.assertLessEqual(s["bins_used"], 3, s)

    def test_f_bad_flags_exit_2_naming_the_flag(self):
        cases = [(("--push", "31"), "--push"), (("--push", "1026"), "--push"),
                 (("--push", "x"), "--push"), (("--push", "64", "--push-every", "0"), "--push-every"),
                 (("--push", "64", "--push-every", "-1"), "--push-every"),
                 (("--push", "64", "--push-every", "nan"), "--push-every"),
                 (("--push", "64", "--push-every", "inf"), "--push-every"),
                 (("--push-every", "1"), "--push-every"), (("--push-burst",), "--push-burst"),
                 (("--push", "64", "--push-burst"), "--push-burst")]
        if self.loop not in ("c", "asyncio") or self.api != "protocol":
            cases = cases[::4]  # the Python contenders share cli.py: a sample each
        for args, flag in cases:
            cmd = base.server_command(self.loop, self.api, self.port + 30,
                                      os.path.join(self.tmp.name, "bad.stats"), *args)
            r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(flag, r.stderr, args)

    def test_g_cut_pinger_counts_only_what_was_kept(self):
        """A peer that pings and never reads is cut as slow; what the server
        counts (pongs, pushed) is at least what the peer got, and above it by
        no more than the kernel buffers hold (the dropped backlog, over
        --max-pending, is counted in neither)."""
        port = self.port + 30
        _, path = self.server(port, "pinger", "--push", "64", "--push-every", "0.01",
                              "--max-pending", "65536")
        s = self.peer(port, 4096)
        s.setblocking(False)
        burst = b"ping\n" * 4000
        sent = 0
        deadline = time.monotonic() + 30
        while self.total(path)["slow"] == 0 and time.monotonic() < deadline:
            try:
                sent += s.send(burst)
            except BlockingIOError:
                time.sleep(0.01)
            except ConnectionError:
                break
        t = self.wait_total(lambda t: t["slow"] == 1 and t["open"] == 0, "the pinger cut", path)
        got = self.read_to_end(s)
        got = got[:got.rfind(b"\n") + 1]
        pongs = got.count(b"pong\n")
        pushes = got.count(b"push ")
        self.assertEqual(len(got), 5 * pongs + 64 * pushes)
        self.assertGreater(sent // 5, 65536 // 5, "the backlog never passed --max-pending")
        slack = 65536   # kernel buffers: the server's send queue and the peer's receive queue
        self.assertGreaterEqual(t["pongs"], pongs, t)
        self.assertLessEqual(t["pongs"] - pongs, slack // 5, (t, pongs))
        self.assertGreaterEqual(t["pushed"], pushes, (t, pushes))
        self.assertLessEqual(t["pushed"] - pushes, slack // 64, (t, pushes))

    def test_h_partial_push_before_pongs(self):
        """The socket fills (a small receive buffer read in bursts) while the
        peer pings: a push partly sent is finished before any pong, so every
        line arrives whole, and every ping is answered."""
        port = self.port + 30
        self.server(port, "fill", "--push", "1025", "--push-every", "0.001",
                    "--max-pending", "262144")
        r = self.reader(1025, port)
        r.chunk = 2048
        r.connect(1, rcvbuf=2048)
        c = r.conns[0]
        deadline = time.monotonic() + 1.5   # ~25 fill-and-drain rounds
        while time.monotonic() < deadline and not c.eof:
            try:
                c.s.send(b"ping\n")
                c.pings += 1
            except BlockingIOError:
                pass
            end = time.monotonic() + 0.04     # read for 40 ms, then let it fill for 20
            while time.monotonic() < end and not c.eof:
                r.read_burst(c, 65536)
                r.sel.select(0.002)
            time.sleep(0.02)
        self.assertTrue(r.run(r.pongs_done, 10), r.summary())
        s = r.summary()
        self.assertEqual(s["eof"], 0, s)     # not cut as slow
        self.assert_clean(s, 1025)
        self.assertGreater(s["received"], 10, s)
        self.assertEqual(s["pongs"], s["pings"], s)

    def test_i_paced_spreads_over_the_interval(self):
        port = self.port + 30
        self.server(port, "spread", "--push", "64", "--push-every", "0.25")
        r = self.reader(64, port, interval=0.25)
        r.connect(20)
        self.assertTrue(r.run(lambda: r.min_each() >= 3, 30), r.summary())
        s = r.summary()
        self.assert_clean(s, 64)
        # paced: the sends fall all over the interval (a burst fills one or two of 10 bins)
        self.assertGreaterEqual(s["bins_used"], 7, s)

    def test_j_max_pending_below_push_is_a_usage_error(self):
        cmd = base.server_command(self.loop, self.api, self.port + 30,
                                  os.path.join(self.tmp.name, "bad.stats"),
                                  "--push", "1025", "--max-pending", "1000")
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--max-pending", r.stderr)

    def test_k_push_flow_ignore_buffers_without_limit(self):
        """--push-flow ignore, the naive idiom: a peer that stops reading is
        never cut, and the server holds its pushes (far over --max-pending
        and what the kernel's queues take); c1m-server has no such idiom and
        refuses the flag (exit 2 naming it)."""
        port = self.port + 30
        args = ("--push", "512", "--push-every", "0.005", "--push-flow", "ignore")
        if self.loop == "c":
            cmd = base.server_command(self.loop, self.api, port,
                                      os.path.join(self.tmp.name, "flow.stats"), *args)
            r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--push-flow", r.stderr)
            return
        _, path = self.server(port, "flow", *args)
        r = PushReader(HOST, port, 512)
        self.addCleanup(r.close)
        r.connect(2)
        r.stall(1)      # a 1 KiB receive buffer; the server's --sndbuf 4096
        # the stalled peer's kernel queues hold at most ~64 KiB (both ends);
        # the rest is in the server's transport, past --max-pending (4096)
        bound = 4096 + 65536 + 65536

        def held_now():
            return (self.total(path)["pushed"] - r.received) * 512

        # smallest: until the server holds the bound and 128 more pushes (the
        # readers' lag), ~2 s at 200 pushes a second (was a fixed 6 s); the
        # bounded idiom cuts the peer within about a second of its queues
        # filling (test_c), long before: slow stays 0
        self.assertTrue(r.run(lambda: held_now() > bound + 128 * 512, 20), (self.total(path), r.summary()))
        r.run(lambda: r.min_each() >= 20, 10)
        t = self.total(path)
        self.assertEqual(t["slow"], 0, t)
        held = (t["pushed"] - r.summary()["received"]) * 512
        self.assertGreater(held, bound, (t, r.summary()))
        self.assertEqual(r.stalled_closed(quiet_s=0.5, limit_s=2.0), 0)

    def test_l_max_pending_over_the_transport_mark_still_cuts(self):
        """--max-pending 200000, over the transports' 64 KiB high-water mark:
        a peer that never reads is cut as slow all the same (the transport
        paused writing, and the pushes with it, before the backlog passed the
        bound: the peer was held for ever, pushes silently stopped)."""
        port = self.port + 30
        _, path = self.server(port, "high", "--push", "1024", "--push-every", "0.001",
                              "--max-pending", "200000")
        self.peer(port, 1024)
        t = self.wait_total(lambda t: t["slow"] == 1 and t["open"] == 0, "the peer cut", path, timeout=20)
        self.assertGreater(t["pushed"], 0, t)

    def test_m_a_peer_that_does_not_read_at_the_stop(self):
        """SIGTERM with a peer that reads nothing (not cut: --max-pending over
        its backlog): after the stop's grace the server aborts it, and the
        final record counts it closed and only the pushes that reached the
        peer (streams: its close went uncounted and the dropped backlog stayed
        in pushed; asyncio-protocol: the loop stopped before the close)."""
        port = self.port + 30
        proc, path = self.server(port, "stop", "--push", "1024", "--push-every", "0.005",
                                 "--max-pending", "2000000")
        s = self.peer(port, 1024)
        # 2 s: 400 pushes, a backlog past the kernel's buffers (some 64 KiB) that
        # stays in a Python server (c1m-server keeps a count and sends no more)
        self.wait_total(lambda t: t["pushed"] > 0, "a push", path)
        time.sleep(2)
        rc, err = base.stop_server(proc, timeout=20)
        self.assertEqual(rc, 0, err)
        t = self.total(path)
        got = self.read_to_end(s)
        pushes = got.count(b"push ")
        self.assertEqual((t["open"], t["closed"], t["slow"]), (0, 1, 0), t)
        self.assertGreater(pushes, 0)
        # what the peer got, and no more than one message its reset cut short
        self.assertIn(t["pushed"] - got[:got.rfind(b"\n") + 1].count(b"push "), (0, 1), (t, pushes))

    def test_z_pushed_equals_received_at_stop(self):
        before = self.wait_total(lambda t: t["open"] == 0, "no connection open")["pushed"]
        r = self.reader()
        r.connect(20)
        self.assertTrue(r.run(lambda: r.min_each() >= 5, 30), r.summary())
        self.proc.send_signal(signal.SIGTERM)     # the server closes all: read to EOF
        self.assertTrue(r.run(r.all_eof, 20), r.summary())
        rc, err = base.stop_server(self.proc)
        self.__class__.proc = None
        self.assertEqual(rc, 0, err)
        s = r.summary()
        self.assert_clean(s)
        self.assertEqual(self.total()["pushed"] - before, s["received"], s)


CONTENDERS = [  # loop, api, port (SIGUSR1 server: port + 10, burst: + 20, bad flags: + 30)
    ("c", "protocol", 9260),
    ("asyncio", "protocol", 9261),
    ("asyncio", "streams", 9262),
    ("uvloop", "protocol", 9263),
    ("uvloop", "streams", 9264),
    ("c1m", "protocol", 9265),
]
for _loop, _api, _port in CONTENDERS:
    _name = "Push_c" if _loop == "c" else "Push_%s_%s" % (_loop, _api)
    globals()[_name] = type(_name, (PushParity, unittest.TestCase),
                            {"loop": _loop, "api": _api, "port": _port})
del _loop, _api, _port, _name


if __name__ == "__main__":
    unittest.main()
