"""py_server's command line, worker supervision and counters file (asyncio
loop; the loop-specific semantics are in test_protocol_parity.py).

    /usr/bin/python3 -m unittest discover -s tests/py_netns -v
"""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from tests.py.util import ROOT as REPO  # noqa: E402  (the root and harness/lib on sys.path)

from py_server import cli  # noqa: E402
from py_server import stats as pstats  # noqa: E402

PYTHON = os.environ.get("C1M_PYTHON") or (
    "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
HOST = "127.0.0.1"
# the C reader of the same file: $C1M_STAT (tests/python.bats sets it), else build/
C1M_STAT = os.environ.get("C1M_STAT") or os.path.join(REPO, "build", "c1m-stat")


def run_cli(args, env=None, timeout=20):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([PYTHON, "-m", "py_server"] + args, cwd=REPO, env=e,
                          capture_output=True, text=True, timeout=timeout)


class Server:
    """A py_server process with its counters file, ended by pid."""

    def __init__(self, tmp, port, *args, loop="asyncio", api="protocol", name="s"):
        self.stats = os.path.join(tmp, name + ".stats")
        self.port = port
        cmd = [PYTHON, "-m", "py_server", "--loop", loop, "--api", api, "--host", HOST,
               "--port", str(port), "--stats", self.stats] + list(args)
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def snap(self):
        return pstats.read_file(self.stats)

    def wait(self, pred, what, timeout=10):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and what != "exit":
                raise AssertionError("server exited %s: %s" % (self.proc.returncode,
                                                               self.proc.stderr.read()))
            try:
                last = self.snap()
                if last["parent_pid"] == self.proc.pid and pred(last):
                    return last
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        raise AssertionError("never %s: %s" % (what, last))

    def ready(self):
        return self.wait(lambda s: s["total"]["ready"], "ready")

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, err


class UsageTest(unittest.TestCase):
    def assertUsage(self, args, flag):
        r = run_cli(args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(flag, r.stderr)
        self.assertIn("usage:", r.stderr)

    def test_bad_values_name_the_flag(self):
        base = ["--loop", "asyncio", "--api", "protocol"]
        self.assertUsage(base + ["--port", "70000"], "--port")
        self.assertUsage(base + ["--port", "x"], "--port")
        self.assertUsage(base + ["--backlog", "0"], "--backlog")
        self.assertUsage(base + ["--workers", "0"], "--workers")
        self.assertUsage(base + ["--workers", "many"], "--workers")
        self.assertUsage(base + ["--max-conns", "-5"], "--max-conns")
        self.assertUsage(base + ["--max-conns", "2g"], "--max-conns")
        self.assertUsage(base + ["--worker-conns", "0"], "--worker-conns")
        self.assertUsage(base + ["--worker-conns", "1000000"], "--worker-conns")
        self.assertUsage(base + ["--sndbuf", "-1"], "--sndbuf")
        self.assertUsage(base + ["--rcvbuf", "1e3"], "--rcvbuf")
        self.assertUsage(base + ["--max-pending", "0"], "--max-pending")
        self.assertUsage(base + ["--stats", ""], "--stats")
        self.assertUsage(base + ["--host", ""], "--host")
        self.assertUsage(base + ["--port", "0", "--workers", "2"], "--port")
        # port 0 would move at the listener's re-open (192.0.2.1 is not local:
        # a wrongly accepted port 0 fails to listen, exit 1, instead of running)
        self.assertUsage(base + ["--host", "192.0.2.1", "--port", "0", "--workers", "1"], "--port")
        # --workers auto is bounded like --workers: 100m connections would
        # fork 5,000+ processes (192.0.2.1: never a running server)
        self.assertUsage(base + ["--host", "192.0.2.1", "--max-conns", "100m"], "--max-conns")
        self.assertUsage(base + ["--bogus"], "--bogus")
        self.assertUsage(["--loop", "tornado", "--api", "protocol"], "--loop")
        self.assertUsage(["--loop", "asyncio", "--api", "rest"], "--api")
        self.assertUsage(["--loop", "c1m", "--api", "streams"], "--api")
        self.assertUsage(["--api", "protocol"], "--loop")

    def test_numbers_are_ascii_digits_only(self):
        # int() and str.isdigit() take other scripts' digits; c1m-server does not
        base = ["--loop", "asyncio", "--api", "protocol"]
        for flag, value in (("--workers", "\u0663"),            # Arabic-Indic 3
                            ("--port", "\uff19\uff10\uff10\uff10"),  # fullwidth 9000
                            ("--max-conns", "\u0967k"),         # Devanagari 1, k
                            ("--port", " 9000"), ("--port", "9000 "), ("--port", "+9000"),
                            ("--backlog", "1_000"), ("--sndbuf", "0x10")):
            with self.subTest(flag=flag, value=value):
                self.assertUsage(base + [flag, value], flag)
        c = cli.parse(base + ["--port", "9000", "--max-conns", "2K", "--workers", "3"])
        self.assertEqual((c.port, c.max_conns, c.workers), (9000, 2000, 3))

    def test_host_of_64_bytes_is_a_usage_error(self):
        # c1m-server's listener keeps the host in 64 bytes: reject at parse
        # time (exit 2) instead of every worker failing later
        base = ["--loop", "asyncio", "--api", "protocol"]
        self.assertUsage(base + ["--host", "a" * 64], "--host")
        self.assertUsage(base + ["--host", "\u00e9" * 32], "--host")  # 64 bytes in UTF-8
        self.assertEqual(cli.parse(base + ["--host", "a" * 63]).host, "a" * 63)

    def test_sizing(self):
        nofile = cli.nofile_limit()
        c = cli.parse(["--loop", "asyncio", "--api", "protocol"])
        self.assertEqual(c.worker_conns, nofile - cli.FD_RESERVE)
        self.assertEqual(c.kind, "asyncio-protocol")
        # unique per process (netns-independent), removed at exit: see DefaultStatsPathTest
        self.assertEqual(c.stats, "/dev/shm/c1m-asyncio-protocol-9000-%d.stats" % os.getpid())
        self.assertTrue(c.stats_default)
        self.assertEqual((c.host, c.port, c.backlog, c.sndbuf, c.rcvbuf, c.max_pending),
                         ("0.0.0.0", 9000, 65535, 4096, 4096, 4096))
        c = cli.parse(["--loop", "uvloop", "--api", "streams", "--max-conns", "2000",
                       "--worker-conns", "700"])
        self.assertEqual(c.workers, 4)  # ceil(2000 / int(700 * 0.95)), as c1m-server
        self.assertEqual(c.kind, "uvloop-streams")
        c = cli.parse(["--loop", "c1m", "--api", "protocol", "--max-conns", "1m",
                       "--worker-conns", "10k", "--workers", "3", "--port", "9999"])
        self.assertEqual((c.max_conns, c.worker_conns, c.workers, c.kind),
                         (1000000, 10000, 3, "pyext"))
        self.assertEqual(c.stats, "/dev/shm/c1m-pyext-9999-%d.stats" % os.getpid())
        c = cli.parse(["--loop", "asyncio", "--api", "protocol", "--stats", "/tmp/x.stats"])
        self.assertEqual((c.stats, c.stats_default), ("/tmp/x.stats", False))

    def test_help(self):
        r = run_cli(["--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--worker-conns", r.stdout)


class GcTest(unittest.TestCase):
    """--gc freeze|default|off (the ladder of fixes' garbage-collector steps,
    bench PY_GC): parsed, refused when unknown, applied where it says."""

    def test_values_and_a_bad_one(self):
        base = ["--loop", "asyncio", "--api", "protocol"]
        self.assertEqual(cli.parse(base).gc, "freeze")
        for v in ("default", "freeze", "off"):
            self.assertEqual(cli.parse(base + ["--gc", v]).gc, v)
        r = run_cli(base + ["--gc", "later"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--gc", r.stderr)
        self.assertIn("--gc", run_cli(["--help"]).stdout)

    def test_applied_in_the_parent_and_the_workers(self):
        # in a fresh interpreter: (enabled, frozen objects) after the parent's
        # and a worker's step
        code = ("import gc, sys\nfrom py_server import workers\n"
                "workers.apply_gc(sys.argv[1], 'parent'); p = (gc.isenabled(), gc.get_freeze_count() > 0)\n"
                "workers.apply_gc(sys.argv[1], 'worker'); w = (gc.isenabled(), gc.get_freeze_count() > 0)\n"
                "print(p, w)")
        want = {"default": "(True, False) (True, False)",
                "freeze": "(True, True) (True, True)",
                "off": "(True, True) (False, True)"}
        for mode, out in want.items():
            r = subprocess.run([PYTHON, "-c", code, mode], cwd=REPO, capture_output=True, text=True, timeout=20)
            self.assertEqual(r.stdout.strip(), out, (mode, r.stderr))


class SlotsTest(unittest.TestCase):
    """--slots on|off (the ladder of fixes' __slots__ step): parsed, refused
    when unknown or without a Protocol class of ours, and off serves with the
    same class minus its __slots__ (an instance __dict__ per connection)."""

    def test_values_and_refusals(self):
        base = ["--loop", "asyncio", "--api", "protocol"]
        self.assertEqual(cli.parse(base).slots, "on")
        self.assertEqual(cli.parse(base + ["--slots", "off"]).slots, "off")
        for args, word in ((base + ["--slots", "maybe"], "--slots"),
                           (["--loop", "asyncio", "--api", "streams", "--slots", "off"], "--api protocol"),
                           (base + ["--slots", "off", "--push", "64"], "--push")):
            r = run_cli(args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("--slots", r.stderr)
            self.assertIn(word, r.stderr)
        self.assertIn("--slots", run_cli(["--help"]).stdout)
        r = subprocess.run([PYTHON, "-m", "py_server.anatomy", "--help"], cwd=REPO,
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--slots", r.stdout)

    def test_off_is_the_same_class_with_an_instance_dict(self):
        from py_server import loops
        from py_server.protocol import LineProtocol, LineProtocolNoSlots
        on, off = LineProtocol(), LineProtocolNoSlots()
        self.assertFalse(hasattr(on, "__dict__"))
        on.t = off.t = None
        off.n = 0
        self.assertEqual(vars(off), {"t": None, "n": 0})
        for name in ("connection_made", "data_received", "connection_lost", "configure"):
            self.assertIs(getattr(LineProtocolNoSlots, name).__func__ if name == "configure"
                          else getattr(LineProtocolNoSlots, name),
                          getattr(LineProtocol, name).__func__ if name == "configure"
                          else getattr(LineProtocol, name))
        self.assertIn(LineProtocolNoSlots, loops.PROTOCOLS)   # shutdown finds them
        base = ["--loop", "asyncio", "--api", "protocol", "--workers", "1", "--port", "9233"]
        for slots, cls in (("on", LineProtocol), ("off", LineProtocolNoSlots)):
            b = loops.make_backend(cli.parse(base + ["--slots", slots]), loops.Counters())
            self.addCleanup(b.loop.close)
            self.assertIs(b.protocol, cls)


class UnavailableTest(unittest.TestCase):
    """A loop that cannot be imported: exit 3 with a clear message, never a
    silent fallback. Simulated with a module that fails to import."""

    def fake_module_dir(self, name):
        d = tempfile.TemporaryDirectory(prefix="c1m-fake-")
        self.addCleanup(d.cleanup)
        with open(os.path.join(d.name, name + ".py"), "w") as f:
            f.write("raise ImportError('simulated: no %s here')\n" % name)
        return d.name

    def test_uvloop_unavailable(self):
        d = self.fake_module_dir("uvloop")
        r = run_cli(["--loop", "uvloop", "--api", "protocol", "--port", "9231", "--stats",
                     os.path.join(d, "x.stats")], env={"PYTHONPATH": d})
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("uvloop unavailable:", r.stderr)
        self.assertIn("simulated", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "x.stats")))

    def test_c1m_unavailable(self):
        d = self.fake_module_dir("c1m")
        r = run_cli(["--loop", "c1m", "--api", "protocol", "--port", "9231", "--stats",
                     os.path.join(d, "x.stats")], env={"PYTHONPATH": d})
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("c1m extension unavailable:", r.stderr)
        self.assertIn("make pyext", r.stderr)


class AnatomyInterruptTest(unittest.TestCase):
    """py_server.anatomy stopped by SIGINT or SIGTERM before it measured: exit
    130 saying so, its client gone (it exited 1, "the connections did not all
    arrive"'s status, without a word). The client stands-in signals its parent,
    the anatomy, once started: no timing."""

    def test_a_stop_signal_before_the_measurement_is_130(self):
        with tempfile.TemporaryDirectory(prefix="c1m-anat-") as d:
            client = os.path.join(d, "client")
            with open(client, "w") as f:
                f.write('#!/bin/sh\necho $$ > "%s/client.pid"\nkill -"$SIG" "$PPID"\nexec sleep 60\n' % d)
            os.chmod(client, 0o755)
            for sig in ("INT", "TERM"):
                r = subprocess.run([PYTHON, "-m", "py_server.anatomy", "--loop", "asyncio", "--port", "9241",
                                    "--conns", "10", "--client", client], cwd=REPO, capture_output=True,
                                   text=True, timeout=60, env=dict(os.environ, SIG=sig))
                self.assertEqual(r.returncode, 130, (sig, r.stderr))
                self.assertIn("anatomy: interrupted: nothing measured", r.stderr)
                with open(os.path.join(d, "client.pid")) as f:
                    pid = int(f.read())
                with self.assertRaises(ProcessLookupError):
                    os.kill(pid, 0)


class StatsFileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="c1m-stats-")
        self.addCleanup(self.tmp.cleanup)
        self.path = os.path.join(self.tmp.name, "f.stats")

    def test_layout(self):
        sf = pstats.StatsFile.create(self.path, 3, 123456, "asyncio-protocol")
        c = type("C", (), dict(open=1, accepted=2, closed=3, slow=4, lines=5, pongs=6,
                               oversized=7, accept_errors=8))()
        sf.publish(1, 4242, pstats.FULL, c, now_ns=99)
        sf.close()
        raw = open(self.path, "rb").read()
        self.assertEqual(len(raw), 64 + 3 * 128)
        self.assertEqual(raw[:8], b"C1MSTAT1")
        self.assertEqual(int.from_bytes(raw[8:12], "little"), 1)
        self.assertEqual(int.from_bytes(raw[12:16], "little"), 3)
        self.assertEqual(int.from_bytes(raw[16:24], "little"), 123456)
        self.assertEqual(int.from_bytes(raw[24:32], "little"), os.getpid())
        self.assertEqual(raw[32:64], b"asyncio-protocol".ljust(32, b"\0"))
        rec = [int.from_bytes(raw[64 + 128 + 8 * k:64 + 128 + 8 * k + 8], "little")
               for k in range(16)]
        self.assertEqual(rec, [2, 4242, 2, 1, 2, 3, 4, 5, 6, 7, 8, 99, 0, 0, 0, 0])
        self.assertEqual(raw[64:64 + 128], bytes(128))
        st = pstats.StatsFile.open(self.path)
        self.assertEqual(st.read(1)["pongs"], 6)
        st.close()
        self.assertFalse([f for f in os.listdir(self.tmp.name) if f.endswith(".tmp")])

    def test_set_state_keeps_counters(self):
        sf = pstats.StatsFile.create(self.path, 1, 0, "x")
        c = type("C", (), dict(open=5, accepted=5, closed=0, slow=0, lines=0, pongs=0,
                               oversized=0, accept_errors=0))()
        sf.publish(0, 7, pstats.LISTENING, c)
        sf.set_state(0, pstats.FAILED, 8)
        r = sf.read(0)
        self.assertEqual((r["pid"], r["state"], r["open"], r["seq"] % 2), (8, 5, 5, 0))
        sf.close()

    def test_out_of_range_values_are_clamped_and_a_torn_record_recovers(self):
        sf = pstats.StatsFile.create(self.path, 1, 0, "x")
        c = type("C", (), dict(open=-3, accepted=1 << 70, closed=0, slow=0, lines=9, pongs=0,
                               oversized=0, accept_errors=0, pushed=11))()
        sf.publish(0, 7, pstats.LISTENING, c, now_ns=5)
        r = sf.read(0)
        self.assertEqual((r["open"], r["accepted"], r["lines"], r["pushed"], r["updated_ns"]),
                         (0, (1 << 64) - 1, 9, 11, 5))
        self.assertEqual(r["seq"], 2)
        # a writer that died mid-update left an odd seq: the next one makes it odd, then even
        pstats._SEQ.pack_into(sf.mm, 64, 7)
        sf._seq.clear()
        c.open = 4
        sf.publish(0, 7, pstats.LISTENING, c)
        r = sf.read(0)
        self.assertEqual((r["seq"], r["open"]), (10, 4))
        sf.close()

    def test_a_record_is_written_odd_seq_then_body_then_even_seq(self):
        # Readers trust a record whose seq is even and did not move. Each store
        # must leave that true only for a whole record: pack_into zero-fills
        # its target first (seq 0, even, over a zeroed body for a moment), so
        # publish() writes bytes packed beforehand, in three stores we can see.
        sf = pstats.StatsFile.create(self.path, 2, 0, "x")
        writes = []

        class Recording(bytearray):
            def __setitem__(self, k, v):
                writes.append((k.start, k.stop, bytes(v)))
                super().__setitem__(k, v)

        mm, sf.mm = sf.mm, Recording(sf.mm[:])
        c = type("C", (), dict(open=3, accepted=3, closed=0, slow=0, lines=0, pongs=0,
                               oversized=0, accept_errors=0, pushed=0))()
        sf.publish(1, 4242, pstats.LISTENING, c, now_ns=5)
        off = 64 + 128
        self.assertEqual([(a, b) for a, b, _ in writes],
                         [(off, off + 8), (off + 8, off + 104), (off, off + 8)])
        self.assertEqual(int.from_bytes(writes[0][2], "little"), 1)     # odd: being written
        self.assertEqual(writes[1][2][:16], (4242).to_bytes(8, "little") +
                         pstats.LISTENING.to_bytes(8, "little"))
        self.assertEqual(int.from_bytes(writes[2][2], "little"), 2)     # even: whole
        sf.mm = mm
        sf.close()

    def test_raw_open_rejects_other_files(self):
        with open(self.path, "wb") as f:
            f.write(b"x" * 100)
        with self.assertRaisesRegex(ValueError, "not a c1m counters file"):
            pstats.StatsFile.open(self.path)
        fifo = os.path.join(self.tmp.name, "fifo")
        os.mkfifo(fifo)
        with self.assertRaisesRegex(ValueError, "not a regular file"):  # and no hang
            pstats.StatsFile.open(fifo)

    def test_one_reader(self):
        # the format is read by c1m-stat only: no second CLI in Python
        r = subprocess.run([PYTHON, "-m", "py_server.stats", self.path], cwd=REPO,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("c1m-stat", r.stderr)
        self.assertFalse(hasattr(pstats, "main") or hasattr(pstats, "format_text"))

    def test_create_never_follows_a_planted_symlink(self):
        # /dev/shm is world-writable and the server may run as root: a link
        # planted at the old predictable temporary name (PATH.PID.tmp) or at
        # PATH itself must not let create() write through it.
        victim = os.path.join(self.tmp.name, "victim")
        with open(victim, "wb") as f:
            f.write(b"precious")
        os.symlink(victim, "%s.%d.tmp" % (self.path, os.getpid()))
        os.symlink(victim, self.path)
        sf = pstats.StatsFile.create(self.path, 2, 0, "x")
        sf.close()
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"precious")
        self.assertFalse(os.path.islink(self.path))
        self.assertEqual(os.path.getsize(self.path), 64 + 2 * 128)
        self.assertEqual(oct(os.stat(self.path).st_mode & 0o777), oct(0o644))
        left = sorted(f for f in os.listdir(self.tmp.name) if f.startswith("f.stats."))
        self.assertEqual(left, ["f.stats.%d.tmp" % os.getpid()])  # only the planted link

    def test_create_refuses_a_device_fifo_or_directory(self):
        # rename() would replace them: a root server given --stats /dev/null
        # must not turn the device node into a regular file
        if os.geteuid() != 0:
            self.skipTest("mknod needs root")
        node = os.path.join(self.tmp.name, "null")
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        fifo = os.path.join(self.tmp.name, "fifo")
        os.mkfifo(fifo)
        for path, test in ((node, stat.S_ISCHR), (fifo, stat.S_ISFIFO), (self.tmp.name, stat.S_ISDIR)):
            with self.assertRaises(OSError):
                pstats.StatsFile.create(path, 1, 0, "x").close()
            self.assertTrue(test(os.lstat(path).st_mode), path)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["fifo", "null"])   # no temporaries


class SupervisionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="c1m-sup-")
        self.addCleanup(self.tmp.cleanup)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.stop()
            # a worker the parent could not reap: end it by pid (if still ours)
            try:
                pids = [w["pid"] for w in s.snap()["workers"]]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        if b"py_server" in f.read():
                            os.kill(pid, signal.SIGKILL)
                except (OSError, ValueError):
                    pass

    def server(self, port, *args, **kw):
        s = Server(self.tmp.name, port, *args, **kw)
        self.servers.append(s)
        return s

    def test_three_workers_totals_and_reader_output(self):
        s = self.server(9232, "--workers", "3", "--max-conns", "300")
        snap = s.ready()
        self.assertEqual(len(snap["workers"]), 3)
        self.assertEqual(snap["target"], 300)
        socks = []
        try:
            for _ in range(150):
                c = socket.create_connection((HOST, 9232), timeout=5)
                socks.append(c)
            for c in socks:
                c.sendall(b"ping\n")
            for c in socks:
                c.settimeout(5)
                self.assertEqual(c.recv(5), b"pong\n")
            snap = s.wait(lambda x: x["total"]["pongs"] == 150 and x["total"]["open"] == 150,
                          "150 open")
            pids = {w["pid"] for w in snap["workers"]}
            self.assertEqual(len(pids), 3)
            self.assertNotIn(s.proc.pid, pids)
            self.assertEqual(sum(w["open"] for w in snap["workers"]), 150)
            if os.access(C1M_STAT, os.X_OK):  # the one reader of the file: c1m-stat
                r = subprocess.run([C1M_STAT, s.stats], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = r.stdout.strip().splitlines()
                self.assertEqual(len(lines), 4)
                self.assertTrue(lines[0].startswith("worker=0 pid="))
                self.assertRegex(lines[-1], r"^total kind=asyncio-protocol workers=3 listening=3 "
                                            r"full=0 failed=0 workers_dead=0 open=150 "
                                            r"accepted=150 closed=0 slow=0 lines=150 pongs=150 "
                                            r"oversized=0 accept_errors=0 pushed=0$")
                j = json.loads(subprocess.run([C1M_STAT, "--json", s.stats],
                                              capture_output=True, text=True).stdout)
                self.assertEqual(j["total"]["open"], 150)
                self.assertEqual(j["kind"], "asyncio-protocol")
                self.assertEqual([w["pid"] for w in j["workers"]],
                                 [w["pid"] for w in snap["workers"]])
                g = subprocess.run([C1M_STAT, "--get", "open", s.stats],
                                   capture_output=True, text=True).stdout.strip()
                self.assertEqual(g, "150")
        finally:
            for c in socks:
                c.close()
        s.wait(lambda x: x["total"]["open"] == 0, "all closed")
        rc, err = s.stop()
        self.assertEqual(rc, 0, err)
        self.assertIn("all workers exited cleanly", err)
        self.assertEqual([w["state"] for w in s.snap()["workers"]], [pstats.EXITED] * 3)

    def test_start_message(self):
        s = self.server(9233, "--workers", "2", "--worker-conns", "500")
        s.ready()
        rc, err = s.stop(signal.SIGINT)
        self.assertEqual(rc, 0, err)
        first = err.splitlines()[0]
        self.assertIn("asyncio-protocol", first)
        self.assertIn("2 workers x 500", first)
        self.assertIn("%s:9233" % HOST, first)
        self.assertIn(s.stats, first)

    def test_worker_death_stops_everything(self):
        s = self.server(9234, "--workers", "3")
        snap = s.ready()
        victim = snap["workers"][1]["pid"]
        os.kill(victim, signal.SIGKILL)
        rc, err = s.stop(sig=0, timeout=15)  # signal 0: just wait
        self.assertEqual(rc, 1, err)
        self.assertIn("worker 1 (pid %d) killed by signal 9" % victim, err)
        states = [w["state"] for w in s.snap()["workers"]]
        self.assertEqual(states, [pstats.EXITED, pstats.FAILED, pstats.EXITED])

    def test_parent_killed_workers_follow(self):
        s = self.server(9238, "--workers", "2")
        snap = s.ready()
        s.proc.kill()  # SIGKILL: no forwarding; PR_SET_PDEATHSIG must end them
        s.proc.wait()
        deadline = time.monotonic() + 10
        alive = [w["pid"] for w in snap["workers"]]
        while alive and time.monotonic() < deadline:
            alive = [p for p in alive if os.path.exists("/proc/%d" % p) and
                     open("/proc/%d/stat" % p).read().split(") ")[1][0] != "Z"]
            time.sleep(0.05)
        self.assertEqual(alive, [], "workers outlived their parent")
        self.assertEqual([w["state"] for w in s.snap()["workers"]], [pstats.EXITED] * 2)

    def test_port_in_use(self):
        blocker = socket.socket()
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind((HOST, 9235))
        blocker.listen(1)
        try:
            r = run_cli(["--loop", "asyncio", "--api", "protocol", "--host", HOST, "--port", "9235",
                         "--stats", os.path.join(self.tmp.name, "b.stats")])
        finally:
            blocker.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot listen on %s:9235" % HOST, r.stderr)

    def test_stats_path_unwritable(self):
        r = run_cli(["--loop", "asyncio", "--api", "protocol", "--host", HOST, "--port", "9236",
                     "--stats", os.path.join(self.tmp.name, "no", "such", "dir.stats")])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("--stats", r.stderr)

    def test_wait_ready_reader(self):
        if not os.access(C1M_STAT, os.X_OK):
            self.skipTest("no c1m-stat at %s" % C1M_STAT)
        s = self.server(9237, "--workers", "2")
        r = subprocess.run([C1M_STAT, "--wait-ready", "--timeout", "10", s.stats],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        c = socket.create_connection((HOST, 9237), timeout=5)
        c.sendall(b"ping\n")
        c.recv(5)
        r = subprocess.run([C1M_STAT, "--wait", "pongs=1", "--timeout", "5", s.stats],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        c.close()
        rc, err = s.stop()
        self.assertEqual(rc, 0, err)

    def test_port_in_use_message(self):
        # the same words as c1m-server's (tests/cli.bats)
        blocker = socket.socket()
        blocker.bind((HOST, 9239))
        blocker.listen(1)
        try:
            r = run_cli(["--loop", "asyncio", "--api", "protocol", "--host", HOST, "--port", "9239",
                         "--stats", os.path.join(self.tmp.name, "b.stats")])
        finally:
            blocker.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot listen on %s:9239: address in use" % HOST, r.stderr)

    def test_resolver_error_is_the_resolvers(self):
        r = run_cli(["--loop", "asyncio", "--api", "protocol", "--host", "no-such-host.invalid",
                     "--port", "9240", "--stats", os.path.join(self.tmp.name, "r.stats")])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot listen on no-such-host.invalid:9240", r.stderr)
        self.assertNotIn("Cannot assign requested address", r.stderr)


class DefaultStatsPathTest(unittest.TestCase):
    """Without --stats the file is the process's own (pid in the name: two
    servers on one port in two network namespaces no longer share it) and it
    is removed when the server exits."""

    def test_default_file_is_per_process_and_removed(self):
        port = 9241
        proc = subprocess.Popen([PYTHON, "-m", "py_server", "--loop", "asyncio", "--api",
                                 "protocol", "--host", HOST, "--port", str(port), "--workers", "2"],
                                cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        path = "/dev/shm/c1m-asyncio-protocol-%d-%d.stats" % (port, proc.pid)
        try:
            deadline = time.monotonic() + 15
            ready = False
            while time.monotonic() < deadline and proc.poll() is None and not ready:
                try:
                    ready = pstats.read_file(path)["total"]["ready"] == 1
                except (OSError, ValueError):
                    pass
                time.sleep(0.05)
            self.assertTrue(ready, "no ready counters file at %s" % path)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
        self.assertEqual(proc.returncode, 0, err)
        self.assertFalse(os.path.exists(path), "default counters file left behind")


if __name__ == "__main__":
    unittest.main()
