"""tests/py/test_capacity.py - the capacity planner (harness/lib/capacity.py, capacity_model.py):
seed 002's formula against values computed by hand from a small fixture
results directory, which runs count, where the stall term comes from, the
MemAvailable guard prediction and its check, and bad input.
Stdlib only; no sockets, no timing.

    python3 -m unittest tests.py.test_capacity
"""
import contextlib
import io
import json
import os
import unittest

from util import TmpDir  # noqa: E402,F401  (harness/lib on sys.path)

import capacity  # noqa: E402
import capacity_model  # noqa: E402
import capacity_guard  # noqa: E402
import runstore  # noqa: E402

GIB, MIB = 1 << 30, 1 << 20


def run_main(*args):
    """capacity ARGS in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = capacity.main(list(args))
        except SystemExit as e:      # --help
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class Fixture(TmpDir):
    """A results directory holding:
    c at 2k: three ok runs (kernel 8000/8200/8400 -> median 8200, user 100/300/200
      -> median 200, idle RssAnon 3072 KiB over 2 workers + the parent), one
      disturbed run with absurd figures (must not count);
    c at 1k: one ok run with other figures (a smaller tier: must not be used);
    pyext at 2k: only a crashed run (no ok run).
    meta.json: MemTotal 1 GiB, MemAvailable at start 896 MiB (reserve 128 MiB)."""

    def setUp(self):
        super().setUp()
        self.run = os.path.join(self.dir, "run")
        os.makedirs(self.run)
        for rep, (k, u) in enumerate(((8000, 100), (8200, 300), (8400, 200)), 1):
            self.add(tier=2000, repeat=rep, kernel_bytes_per_conn=k, user_bytes_per_conn=u)
        self.add(tier=2000, repeat=4, status="disturbed", kernel_bytes_per_conn=99999,
                 user_bytes_per_conn=99999)
        self.add(tier=1000, repeat=1, kernel_bytes_per_conn=20000, user_bytes_per_conn=5000,
                 server_workers=1, accepted=1000)
        self.add(contender="pyext", tier=2000, repeat=1, status="crashed", accepted=12)
        self.meta({"mem_total_kib": 1048576, "mem_available_at_start_kib": 917504,
                   "sysctl_profile": {"net.ipv4.tcp_wmem": "4096 16384 4194304",
                                      "net.ipv4.tcp_rmem": "4096 131072 6291456"}})

    def add(self, d=None, contender="c", tier=2000, repeat=1, status="ok", **kw):
        rec = {"contender": contender, "tier": tier, "repeat": repeat, "status": status,
               "accepted": tier, "server_workers": 2, "server_rss_idle_kib": 3072,
               "slab_bytes_per_conn": 10000,
               "server_cmd": "/x/c1m-server --host 0.0.0.0 --port 9000 --quiet"}
        rec.update(kw)
        runstore.append_record(d or self.run, rec)

    def meta(self, m, d=None):
        with open(os.path.join(d or self.run, "meta.json"), "w") as f:
            json.dump(m, f)

    def plan(self, stall=0.0, **kw):
        bases, notes = capacity_model.bases_of(self.run, ["c"])
        return capacity_model.Plan(bases[0], stall, capacity_model.Opts(**kw))


class TestFormula(Fixture):
    def test_basis_is_the_largest_tier_medians_of_ok_runs(self):
        bases, notes = capacity_model.bases_of(self.run)
        self.assertEqual([b.name for b in bases], ["c"])
        b = bases[0]
        self.assertEqual((b.tier, b.n_used, b.n_runs), (2000, 3, 4))
        self.assertEqual(b.get("kernel_bytes_per_conn"), 8200)   # not 99999, not 20000
        self.assertEqual(b.get("user_bytes_per_conn"), 200)
        self.assertEqual(notes, ["pyext: no ok or disturbed run: not planned"])

    def test_terms_by_hand(self):
        p = self.plan()
        self.assertEqual(p.kernel_b, 4100)          # 8200 covers both loopback ends: one socket
        self.assertEqual(p.app_b, 200)
        self.assertEqual(p.idle_b, 1048576)         # 3072 KiB / (2 workers + parent)
        self.assertEqual(p.cpw, 1000)               # 2000 connections / 2 workers
        self.assertEqual(p.reserve_b, 128 * MIB)    # (1048576 - 917504) KiB
        self.assertEqual(p.model.processes(1000), 2)
        self.assertEqual(p.model.processes(1001), 3)
        # 10,000 connections: 10,000 x 4300 + (1 + 10) x 1 MiB + 128 MiB
        self.assertEqual(p.model.total_b(10000), 43000000 + 11 * MIB + 128 * MIB)

    def test_connections_that_fit_by_hand(self):
        # 1 GiB: N x 4300 + (1 + ceil(N/1000)) MiB <= 1 GiB - 128 MiB = 939,524,096.
        # N = 175,331: 753,923,300 + 177 MiB (185,597,952) = 939,521,252 fits;
        # N = 175,332 adds 4,300: 939,525,552 does not.
        m = self.plan().model
        self.assertEqual(m.fit(GIB), 175331)
        self.assertLessEqual(m.total_b(175331), GIB)
        self.assertGreater(m.total_b(175332), GIB)

    def test_stall_term_by_hand(self):
        # 10% stalled at 10,000 B each: 1,000 B more per connection, 5,300 in all.
        # N = 148,000: 784,400,000 + (1 + 148) MiB (156,237,824) = 940,637,824 is over
        # 939,524,096 by 1,113,728 = 210.1 x 5,300: N = 148,000 - 211 = 147,789
        # (still 149 processes): 783,281,700 + 156,237,824 = 939,519,524 fits;
        # 147,790 adds 5,300: 939,524,824 does not.
        m = self.plan(0.1, stall_backlog=10000).model
        self.assertEqual(m.per_conn_b, 5300)
        self.assertEqual(m.fit(GIB), 147789)

    def test_memory_for_n_connections_by_hand(self):
        # --conns 10k: 10,000 x 4300 + (1 + 10) x 1 MiB + 128 MiB = 43,000,000 + 139 MiB
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(capacity.main([self.run, "--conns", "10k"]), 0)
        text = out.getvalue()
        self.assertIn("the memory 10,000 connections need", text)
        row = [l for l in text.splitlines() if l.startswith("c ")][0].split()
        self.assertEqual(row[1:4], ["0%", "4300", "B"])
        self.assertEqual(row[4], "11")     # processes
        self.assertEqual(" ".join(row[-2:]), capacity_model.fmt_mem(43000000 + 139 * MIB))
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(capacity.main([self.run, "--conns", "10k", "--mem", "1G"]), 2)
            self.assertEqual(capacity.main([self.run, "--conns", "-5"]), 2)

    def test_nothing_fits_below_the_fixed_cost(self):
        m = self.plan().model
        self.assertEqual(m.fit(100 * MIB), 0)      # the 128 MiB reserve alone is more

    def test_sockets_2_and_slab(self):
        self.assertEqual(self.plan(sockets=2).kernel_b, 8200)
        self.assertEqual(self.plan(kernel="slab").kernel_b, 5000)   # 10000 / 2

    def test_reserve_flag_and_missing_meta(self):
        self.assertEqual(self.plan(reserve=0).reserve_b, 0)
        os.remove(os.path.join(self.run, "meta.json"))
        p = self.plan()
        self.assertEqual(p.reserve_b, 0)
        self.assertIn("pass --reserve", p.reserve_txt)

    def test_pss_idle_preferred_when_recorded(self):
        d = os.path.join(self.dir, "pss")
        os.makedirs(d)
        self.add(d, server_pss_idle_kib=1536, kernel_bytes_per_conn=8000, user_bytes_per_conn=0)
        b = capacity_model.bases_of(d)[0][0]
        self.assertEqual(capacity_model.idle_per_process(b)[0], 512 * 1024)   # 1536 KiB / 3

    def test_all_disturbed_contender_uses_its_disturbed_runs_marked(self):
        # cells.py's rule: no ok run anywhere -> the disturbed runs, with the dagger
        for rep, k in ((1, 7000), (2, 7400)):
            self.add(contender="uvloop", tier=2000, repeat=rep, status="disturbed",
                     kernel_bytes_per_conn=k, user_bytes_per_conn=1000)
        self.add(contender="uvloop", tier=1000, repeat=1, status="ok",
                 kernel_bytes_per_conn=9000, user_bytes_per_conn=3000)
        b = capacity_model.bases_of(self.run, ["uvloop"])[0][0]
        self.assertEqual(b.tier, 1000)              # an ok tier wins over a larger disturbed one
        rc, out, err = run_main(self.run, "--mem", "1G")
        self.assertIn("uvloop (figures: 1k, median of 1 ok run)", out)
        d = os.path.join(self.dir, "dist")
        os.makedirs(d)
        for rep, k in ((1, 7000), (2, 7400)):
            self.add(d, contender="uvloop", tier=2000, repeat=rep, status="disturbed",
                     kernel_bytes_per_conn=k, user_bytes_per_conn=1000)
        b = capacity_model.bases_of(d, ["uvloop"])[0][0]
        self.assertEqual((b.tier, b.n_used, b.get("kernel_bytes_per_conn")), (2000, 2, 7200))
        rc, out, err = run_main(d)
        self.assertEqual(rc, 0, err)
        self.assertIn("uvloop: 2k, median of 2 disturbed runs \u2020", out)
        self.assertIn("\u2020 no ok run: the median of the disturbed runs", out)

    def test_negative_user_counts_as_zero(self):
        d = os.path.join(self.dir, "neg")
        os.makedirs(d)
        # (flagged as lib/judge.py flags it: the readers refuse one unflagged)
        self.add(d, kernel_bytes_per_conn=8000, user_bytes_per_conn=-40,
                 flags="negative:user_bytes_per_conn")
        b = capacity_model.bases_of(d)[0][0]
        self.assertEqual(capacity_model.app_per_conn(b)[0], 0)


class TestStallBacklog(Fixture):
    def basis(self, d=None):
        return capacity_model.bases_of(d or self.run, ["c"])[0][0]

    def stall_dir(self, name, **cols):
        """A results directory of one c run (8,000 B kernel, 10 B app per
        connection) with the given stall columns."""
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        self.add(d, kernel_bytes_per_conn=8000, user_bytes_per_conn=10, **cols)
        return d

    def test_no_measurement_uses_the_configured_bound(self):
        b, txt = capacity_model.stall_backlog(self.basis(), 1)
        self.assertEqual(b, 2 * 4096 + 4096)
        self.assertIn("no stall measurement", txt)
        self.assertIn("not a measurement", txt)
        # both ends on this machine: plus the client's receive queue (tcp_rmem max)
        self.assertEqual(capacity_model.stall_backlog(self.basis(), 2)[0], 12288 + 6291456)

    def test_bound_with_sndbuf_0_is_tcp_wmem_max(self):
        d = self.stall_dir("snd0", server_cmd="/x/c1m-server --sndbuf 0 --max-pending=65536")
        self.meta({"sysctl_profile": {"net.ipv4.tcp_wmem": "4096 16384 4194304"}}, d)
        self.assertEqual(capacity_model.stall_backlog(self.basis(d), 1)[0], 4194304 + 65536)
        # unknown tcp_wmem: no figure is made up
        self.meta({}, d)
        with self.assertRaises(capacity_model.NoData):
            capacity_model.stall_backlog(self.basis(d), 1)

    def test_measured_columns_win(self):
        d = self.stall_dir("stall", stall_sendq_bytes_per_stalled=50000,
                           stall_tcp_mem_bytes_per_stalled=90000, stall_user_bytes_per_stalled=2000)
        b, txt = capacity_model.stall_backlog(self.basis(d), 1)
        self.assertEqual(b, 52000)
        self.assertIn("measured", txt)
        self.assertEqual(capacity_model.stall_backlog(self.basis(d), 2)[0], 92000)
        self.assertEqual(capacity_model.stall_backlog(self.basis(d), 1, given=7)[0], 7)
        # the send queues' memory (ss skmem w) wins over their Send-Q bytes
        d2 = self.stall_dir("stall2", stall_sndbuf=0, stall_sendq_bytes_per_stalled=50000,
                            stall_wmem_bytes_per_stalled=60000, stall_user_bytes_per_stalled=2000)
        b, txt = capacity_model.stall_backlog(self.basis(d2), 1)
        self.assertEqual(b, 62000)
        self.assertIn("stall_wmem_bytes_per_stalled 60000", txt)
        self.assertIn("an undercount", txt)

    def test_memavailable_lost_wins_over_the_charge(self):
        # 10,000 B charged per stalled peer (both ends), 2,000 of it the server's
        # sockets, 1,000 B of server userspace; the machine lost 81,000 B each:
        # the page fragments the held lines keep in memory
        d = self.stall_dir("stall-avail", stall_tcp_mem_bytes_per_stalled=10000,
                           stall_wmem_bytes_per_stalled=2000, stall_sendq_bytes_per_stalled=1500,
                           stall_user_bytes_per_stalled=1000, stall_avail_drop_bytes_per_stalled=81000)
        b, txt = capacity_model.stall_backlog(self.basis(d), 2)
        self.assertEqual(b, 81000)
        self.assertIn("MemAvailable lost", txt)
        # remote peers: the server's share, (81,000 - 1,000) x 2,000 / 10,000 + 1,000
        b, txt = capacity_model.stall_backlog(self.basis(d), 1)
        self.assertEqual(b, 17000)
        self.assertIn("estimated", txt)
        # no ss figures (the server's share unknown): all of it, said to be an upper value
        d2 = self.stall_dir("stall-avail-noss", stall_tcp_mem_bytes_per_stalled=10000,
                            stall_user_bytes_per_stalled=1000, stall_avail_drop_bytes_per_stalled=81000)
        b, txt = capacity_model.stall_backlog(self.basis(d2), 1)
        self.assertEqual(b, 81000)
        self.assertIn("the server's share is unknown", txt)
        self.assertIn("an upper value", txt)

    def test_stall_sndbuf_0_column_gives_the_autotuned_bound(self):
        d = self.stall_dir("stall0", stall_sndbuf=0, condition="stall=0-sndbuf0")
        self.meta({"sysctl_profile": {"net.ipv4.tcp_wmem": "4096 16384 4194304"}}, d)
        b = capacity_model.bases_of(d, ["c"])[0][0]
        self.assertEqual(capacity_model.stall_backlog(b, 1)[0], 4194304 + 4096)


class TestTcpMem(Fixture):
    """Whether a plan passes the tcp_mem the kernel sizes for its memory."""

    def test_default_is_the_kernels_formula(self):
        # tcp_init_mem: limit = pages / 16, low = limit / 4 x 3, high = low x 2
        self.assertEqual(capacity_model.tcp_mem_default(16 * 1000 * 4096),
                         (750 * 4096, 1000 * 4096, 1500 * 4096))
        # this machine kind: 24 GiB -> 393,216 pages of pressure (the kernel's
        # own 383,885 counts only the free pages at boot)
        self.assertEqual(capacity_model.tcp_mem_default(24 * GIB)[1], 393216 * 4096)
        self.assertEqual(capacity_model.tcp_mem_default(4096), (96 * 4096, 128 * 4096, 192 * 4096))

    def test_counted_per_connection(self):
        d = os.path.join(self.dir, "tcpmem")
        os.makedirs(d)
        # 2,000 connections, 4,000 KiB counted with all open: 2,048 B each, both ends
        self.add(d, kernel_bytes_per_conn=8000, user_bytes_per_conn=10, sockstat_tcp_mem_kib=4000,
                 stall_tcp_mem_bytes_per_stalled=50000, stall_wmem_bytes_per_stalled=10000)
        b = capacity_model.bases_of(d, ["c"])[0][0]
        self.assertEqual(capacity_model.tcp_mem_counted(b, 2, 0.0)[0], 2048)
        self.assertEqual(capacity_model.tcp_mem_counted(b, 1, 0.0)[0], 1024)
        # 10% stalled: both ends 50,000 each; a server with remote peers its part, 10,000
        self.assertEqual(capacity_model.tcp_mem_counted(b, 2, 0.1)[0], 2048 + 5000)
        per, txt = capacity_model.tcp_mem_counted(b, 1, 0.1)
        self.assertEqual(per, 1024 + 1000)
        self.assertIn("the server's part 0.200", txt)
        # a stall run's own figure (with the pushes flowing) wins over the ramp's
        d2 = os.path.join(self.dir, "tcpmem-stall")
        os.makedirs(d2)
        self.add(d2, kernel_bytes_per_conn=8000, sockstat_tcp_mem_kib=4000, stall_tcp_mem0_kib=8000)
        b2 = capacity_model.bases_of(d2, ["c"])[0][0]
        per, txt = capacity_model.tcp_mem_counted(b2, 2, 0.0)
        self.assertEqual(per, 4096)
        self.assertIn("stall_tcp_mem0_kib", txt)
        # a run without the column: not checked, and said
        per, txt = capacity_model.tcp_mem_counted(self.plan().basis, 1, 0.0)
        self.assertIsNone(per)
        self.assertIn("no sockstat_tcp_mem_kib", txt)

    def test_formula_says_over_or_under(self):
        d = os.path.join(self.dir, "tcpmem-formula")
        os.makedirs(d)
        self.add(d, kernel_bytes_per_conn=8000, user_bytes_per_conn=10, sockstat_tcp_mem_kib=400000)
        self.meta({"mem_total_kib": 1048576, "mem_available_at_start_kib": 917504}, d)
        # 200 KiB counted per connection, both ends: 100 KiB for a server with
        # remote peers. 1 GiB: pressure 16,384 pages (64 MiB): over from 656 connections
        rc, out, err = run_main(d, "--mem", "1G")
        self.assertEqual(rc, 0, err)
        line = [l for l in out.splitlines() if "tcp_mem:" in l][0]
        self.assertIn("102400 B per connection", line)
        self.assertIn("OVER the 64.0 MiB pressure threshold the kernel sizes for 1 GiB", line)
        self.assertIn("hard limit", line)
        self.assertIn("TCP_MEM", line)
        # the machine's memory counted small enough: under it
        d2 = os.path.join(self.dir, "tcpmem-under")
        os.makedirs(d2)
        self.add(d2, kernel_bytes_per_conn=8000, user_bytes_per_conn=10, sockstat_tcp_mem_kib=2)
        self.meta({"mem_total_kib": 1048576, "mem_available_at_start_kib": 917504}, d2)
        rc, out, err = run_main(d2, "--mem", "1G")
        self.assertIn("under the pressure threshold the kernel sizes for 1 GiB (64.0 MiB)", out)
        # no column: the line says it was not checked
        rc, out, err = run_main(self.run, "--mem", "1G")
        self.assertIn("tcp_mem: not checked", out)


class TestGuard(Fixture):
    def fake_meminfo(self, avail_kib, reclaimable_kib=None):
        p = os.path.join(self.dir, "meminfo")
        with open(p, "w") as f:
            f.write("MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   %d kB\n" % avail_kib)
            if reclaimable_kib is not None:
                f.write("Slab:  %d kB\nSReclaimable:   %d kB\n" % (2 * reclaimable_kib, reclaimable_kib))
        return p

    def test_usable_memory(self):
        # the guard's figure: MemAvailable less SReclaimable, at least 0
        self.assertEqual(capacity_guard.mem_usable_kib(self.fake_meminfo(2000 * 1024, 100 * 1024)), 1900 * 1024)
        # the kernel's OOM kill at 1M (results/reference-stall-1m-10pct): nothing usable
        self.assertEqual(capacity_guard.mem_usable_kib(self.fake_meminfo(2059264, 2115076)), 0)
        # an old kernel without SReclaimable: MemAvailable
        self.assertEqual(capacity_guard.mem_usable_kib(self.fake_meminfo(4096)), 4096)
        p = os.path.join(self.dir, "nomem")
        with open(p, "w") as f:
            f.write("MemFree: 1 kB\n")
        with self.assertRaises(capacity_model.NoData):
            capacity_guard.mem_usable_kib(p)

    def test_guard_trip_by_hand(self):
        # this machine: both ends, the whole Slab delta (10000, not the socket
        # caches' 8200: the guard counts every reclaimable slab) + 200 app = 10200 B,
        # idle 1 MiB x (1 + ceil(N/1000)) processes, no reserve (usable memory has it).
        b = capacity_model.bases_of(self.run, ["c"])[0][0]
        m, words = capacity_guard.guard_model(b, 0.0, capacity_model.Opts())
        self.assertEqual(m.per_conn_b, 10200)
        # usable 2,000 MiB, floor 1,000 MiB: 1,048,576,000 B to spend.
        # N = 93,035: 948,957,000 + 95 MiB (99,614,720) = 1,048,571,720 fits;
        # 93,036 adds 10,200 (1,048,581,920) and does not.
        self.assertEqual(capacity_guard.guard_trip(m, 2000 * 1024, 1000), 93035)
        self.assertEqual(capacity_guard.guard_trip(m, 900 * 1024, 1000), 0)

    def test_predict_then_check(self):
        val = os.path.join(self.dir, "val")
        rc_out = io.StringIO()
        with contextlib.redirect_stdout(rc_out):
            n = capacity_guard.cmd_predict(self.run, "c", 0.0, capacity_model.Opts(), target=None, floor=1000,
                                     out_dir=val, meminfo=self.fake_meminfo(2100 * 1024, 100 * 1024))
        self.assertEqual(n, 93035)      # usable: 2,100 MiB available less 100 reclaimable
        self.assertIn("usable memory now 2000 MiB (MemAvailable less SReclaimable)", rc_out.getvalue())
        self.assertIn("MIN_AVAILABLE_MIB=1000", rc_out.getvalue())
        self.assertIn("TIERS=140k CONTENDERS=c", rc_out.getvalue())   # 1.5 x, rounded up
        self.assertTrue(os.path.exists(os.path.join(val, capacity_guard.PREDICTION_FILE)))
        # no guard-stopped run yet: no data
        rc, out, err = run_main("--check", val)
        self.assertEqual(rc, 1)
        # the bench started with the same usable memory (and more MemAvailable,
        # which the check does not use); the guard stopped c at 88,000
        self.meta({"mem_available_at_start_kib": 2500 * 1024, "mem_usable_at_start_kib": 2000 * 1024,
                   "settings": {"min_available_mib": "1000"}}, val)
        self.add(val, tier=140000, status="oom-guard", accepted=88000, min_available_mib=1000)
        rc, out, err = run_main("--check", val)
        self.assertEqual(rc, 0, err)
        self.assertIn("measured 88,000 connections", out)
        self.assertIn("predicted at --predict-guard, usable memory 2000 MiB: 93,035; "
                      "measured/predicted 0.946 (-5.4%): within 10%", out)
        self.assertIn("re-predicted from usable memory 2000 MiB when the bench started (meta.json): "
                      "93,035;", out)
        # a run the guard stopped at 80,000 is outside 10% and says so
        self.add(val, tier=140000, repeat=2, status="timeout", accepted=80000, min_available_mib=1000,
                 client={"stopped_reason": "min-available"})
        rc, out, err = run_main("--check", val)
        self.assertIn("measured 80,000 connections", out)
        self.assertIn("NOT within 10%", out)
        # a server still accepting when the guard stopped the client: not comparable
        self.add(val, tier=140000, repeat=3, status="oom-guard", accepted=2000, client_established=57000,
                 min_available_mib=1000)
        rc, out, err = run_main("--check", val)
        self.assertIn("NOT COMPARABLE: the client held 57,000 connections but the server had accepted 2,000", out)

    def test_a_damaged_prediction_is_no_prediction_not_a_crash(self):
        # a hand-edited or damaged capacity-prediction.json: --check died with
        # ValueError, TypeError, ZeroDivisionError or RecursionError tracebacks
        val = os.path.join(self.dir, "val")
        with contextlib.redirect_stdout(io.StringIO()):
            capacity_guard.cmd_predict(self.run, "c", 0.0, capacity_model.Opts(), target=None, floor=1000,
                                       out_dir=val, meminfo=self.fake_meminfo(2100 * 1024, 100 * 1024))
        self.add(val, tier=140000, status="oom-guard", accepted=88000, min_available_mib=1000)
        path = os.path.join(val, capacity_guard.PREDICTION_FILE)
        with open(path) as f:
            good = json.load(f)
        for edit, said in ((lambda p: p.update(stall="abc"), "stall: 'abc'"),
                           (lambda p: p.update(stall=[1]), "stall: [1]"),
                           (lambda p: p.update(mem_usable_kib=float("nan")), "usable memory: nan"),
                           (lambda p: p.update(basis_tier="x"), "basis_tier: 'x'"),
                           (lambda p: p.update(min_available_mib="x"), "min_available_mib: 'x'"),
                           (lambda p: p["model"].update(conns_per_worker=0), "conns_per_worker: 0"),
                           (lambda p: p.update(stall=1.5), "stall: 1.5")):
            pred = json.loads(json.dumps(good))
            edit(pred)
            with open(path, "w") as f:
                json.dump(pred, f)
            rc, out, err = run_main("--check", val)
            self.assertEqual(rc, 1, err)
            self.assertIn("no usable prediction (%s)" % said, err)
        with open(path, "w") as f:
            f.write("[" * 100000)
        rc, out, err = run_main("--check", val)
        self.assertEqual(rc, 1, err)
        self.assertIn("no usable prediction (nested past the JSON parser)", err)
        # every connection stalled (STALL=1, which the planner and bench take) is a prediction
        pred = json.loads(json.dumps(good))
        pred["stall"] = pred["model"]["stall"] = 1.0
        with open(path, "w") as f:
            json.dump(pred, f)
        rc, out, err = run_main("--check", val)
        self.assertNotIn("no usable prediction", err)

    def test_a_prediction_from_before_the_usable_guard_is_checked_from_memavailable(self):
        # results/reference-capacity-* were predicted when the guard read MemAvailable:
        # no mem_usable_kib in the file; checked against MemAvailable, also at the start
        val = os.path.join(self.dir, "oldval")
        with contextlib.redirect_stdout(io.StringIO()):
            capacity_guard.cmd_predict(self.run, "c", 0.0, capacity_model.Opts(), floor=1000, out_dir=val,
                                       meminfo=self.fake_meminfo(2000 * 1024, 0))
        path = os.path.join(val, capacity_guard.PREDICTION_FILE)
        with open(path) as f:
            pred = json.load(f)
        pred["mem_available_kib"] = pred.pop("mem_usable_kib")
        with open(path, "w") as f:
            json.dump(pred, f)
        self.meta({"mem_available_at_start_kib": 2000 * 1024, "mem_usable_at_start_kib": 1500 * 1024}, val)
        self.add(val, tier=140000, status="oom-guard", accepted=104000, min_available_mib=1000)
        rc, out, err = run_main("--check", val)
        self.assertEqual(rc, 0, err)
        self.assertIn("predicted at --predict-guard, MemAvailable 2000 MiB: 93,035;", out)
        self.assertIn("re-predicted from MemAvailable 2000 MiB when the bench started (meta.json): 93,035;", out)

    def test_stall_prediction_is_checked_by_a_bracket(self):
        # a stall reference: 1,000,000 B of TCP buffers per stalled connection (both ends)
        ref = os.path.join(self.dir, "stallref")
        os.makedirs(ref)
        self.add(ref, kernel_bytes_per_conn=7000, slab_bytes_per_conn=8000, user_bytes_per_conn=10, stall_sndbuf=0,
                 stall_tcp_mem_bytes_per_stalled=1000000, stall_user_bytes_per_stalled=0,
                 stall_push_bytes_cfg=1024, stall_push_every_s=0.05, condition="stall=0.1-sndbuf0")
        # 8000 (the Slab delta) + 10 + 0.1 x 1,000,000 = 108,010 B per connection, 1 MiB per process.
        # Budget 1000 MiB = 1,048,576,000: N = 9,601 takes 1,037,004,010 + 11 MiB
        # (11,534,336) = 1,048,538,346; 9,602 adds 108,010 and does not fit.
        val = os.path.join(self.dir, "stallval")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            n = capacity_guard.cmd_predict(ref, "c", 0.1, capacity_model.Opts(), floor=1000, out_dir=val,
                                           meminfo=self.fake_meminfo(2000 * 1024, 0))
        self.assertEqual(n, 9601)
        # 0.9 x and 1.1 x, two significant digits, outward
        # the reference's push: bench.sh's default (1 line a second) would not fill the queues
        self.assertIn("SCENARIO=stall STALL=0.1 STALL_SNDBUF=0 STALL_PUSH_BYTES=1024 STALL_PUSH_EVERY=0.05 "
                      "TIERS=8600,10600 CONTENDERS=c", out.getvalue())
        # a run below that was still filling when its phase ended held nothing yet
        self.add(val, tier=8600, repeat=2, status="ok", stall_fraction=0.1, stall_end="wait")
        self.add(val, tier=10600, repeat=2, status="ok", stall_fraction=0.1, stall_end="wait")
        rc, text, err = run_main("--check", val)
        self.assertEqual(rc, 0, err)
        self.assertIn("c 8600 (0.90 x predicted): did not fill (stall_end wait): proves nothing", text)
        self.assertIn("verdict: undecided", text)
        self.add(val, tier=8600, status="ok", stall_fraction=0.1, stall_end="steady")
        rc, text, err = run_main("--check", val)
        self.assertEqual(rc, 0, err)
        self.assertIn("verdict: undecided", text)
        self.add(val, tier=10600, status="oom-guard", stall_fraction=0.1, stall_end="oom-guard")
        rc, text, err = run_main("--check", val)
        self.assertIn("(usable memory 2000 MiB, MIN_AVAILABLE_MIB 1000)", text)
        self.assertIn("c 8600 (0.90 x predicted): held", text)
        self.assertIn("c 10600 (1.10 x predicted): stopped by the guard", text)
        self.assertIn("verdict: within 10%", text)
        # a run above the bracket that held contradicts the prediction
        self.add(val, tier=12000, repeat=2, status="ok", stall_fraction=0.1, stall_end="steady")
        rc, text, err = run_main("--check", val)
        self.assertIn("verdict: NOT within 10% (12k contradict the prediction)", text)

    def test_target_conns_picks_the_floor(self):
        with contextlib.redirect_stdout(io.StringIO()):
            n = capacity_guard.cmd_predict(self.run, "c", 0.0, capacity_model.Opts(), target=100000,
                                     meminfo=self.fake_meminfo(4000 * 1024, 50 * 1024))
        self.assertGreaterEqual(n, 100000)
        self.assertLess(n, 100000 * 1.01)


class TestCommandLine(Fixture):
    def test_table_and_formula(self):
        rc, out, err = run_main(self.run)
        self.assertEqual(rc, 0, err)
        # 8 GiB - 128 MiB = 8,455,716,864 B: N = 1,580,667 takes 6,796,868,100 + 1582 MiB
        # (1,658,847,232) = 8,455,715,332; one more connection (4,300) does not fit.
        self.assertRegex(out, r"\nc +0% +1,580,667 +")
        self.assertIn("pyext: no ok or disturbed run: not planned", out)
        self.assertIn("c: 2k, median of 3 ok runs", out)
        rc, out, err = run_main(self.run, "--mem", "1G")
        self.assertEqual(rc, 0, err)
        self.assertIn("N = 175,331 connections fit", out)
        self.assertIn("N x (4100 kernel + 200 app) B", out)
        rc, out, err = run_main(self.run, "--mem", "1GiB", "--stall", "10%", "--stall-backlog", "10000")
        self.assertIn("N = 147,789 connections fit (14,779 of them stalled)", out)

    def test_bad_input_is_usage(self):
        for args, word in (
                (["--mem", "64"], "--mem"), (["--mem", "0G"], "--mem"), (["--mem", "-1G"], "--mem"),
                (["--mem", "x"], "--mem"), (["--mem", "nanG"], "--mem"),
                (["--stall", "1.5"], "--stall"), (["--stall", "-0.1"], "--stall"),
                (["--stall", "nan"], "--stall"), (["--stall", "abc"], "--stall"),
                (["--stall", "101%"], "--stall"),
                (["--sockets", "3"], "--sockets"), (["--kernel", "x"], "--kernel"),
                (["--tier", "0"], "--tier"), (["--worker-conns", "x"], "--worker-conns"),
                (["--stall-backlog", "-5"], "--stall-backlog"), (["--contenders", ","], "--contenders"),
                (["--min-available", "5"], "--min-available"), (["c"], "CONTENDER"),
                (["--predict-guard"], "--predict-guard"), (["c", "--predict-guard", "--check"], "one mode"),
                (["--predict-guard", "c", "--mem", "8G"], "--mem"),
                (["--nope"], "--nope")):
            rc, out, err = run_main(self.run, *args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn(word, err, args)
        rc, out, err = run_main()
        self.assertEqual(rc, 2)

    def test_no_data_is_1(self):
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        bad = os.path.join(self.dir, "bad")     # runs there but unreadable: said, not "no runs"
        os.makedirs(os.path.join(bad, "runs.jsonl"))
        huge = os.path.join(self.dir, "huge")   # a field over the csv module's limit
        os.makedirs(huge)
        with open(os.path.join(huge, "runs.csv"), "w") as f:
            f.write("contender,tier,status\nc,2000,ok\n\"%s\n" % ("a" * 200000))
        for args, word in (([empty], "no runs.jsonl or runs.csv"),
                           ([huge, "--mem", "8G"], "huge/runs.csv line 3: field larger than field limit"),
                           ([bad], "cannot read the runs of %s: Is a directory: %s"
                            % (bad, os.path.join(bad, "runs.jsonl"))),
                           ([self.run, "--contenders", "pyext"], "pyext: no ok or disturbed run"),
                           ([self.run, "--contenders", "uvloop"], "uvloop: no runs"),
                           ([self.run, "--tier", "5k"], "no contender with an ok or disturbed run"),
                           ([self.run, "--condition", "stock"], "no runs in condition"),
                           (["--predict-guard", self.run, "pyext"], "pyext: no ok or disturbed run"),
                           (["--check", self.run], "no usable prediction")):
            rc, out, err = run_main(*args)
            self.assertEqual(rc, 1, (args, err))
            self.assertIn(word, err, args)
        # a RUN that is no directory is a usage error, as make plot and compare say it
        rc, out, err = run_main(os.path.join(self.dir, "nope"))
        self.assertEqual(rc, 2, err)
        self.assertIn("nope is not a directory", err)

    def test_conditions_are_planned_apart(self):
        self.add(tier=2000, repeat=1, condition="stock", kernel_bytes_per_conn=9000, user_bytes_per_conn=0)
        rc, out, err = run_main(self.run, "--mem", "1G")
        self.assertEqual(rc, 0, err)
        self.assertIn("c (figures: 2k, median of 3 ok runs)", out)
        self.assertIn("c [stock] (figures: 2k, median of 1 ok run)", out)
        self.assertIn("N x (4500 kernel + 0 app) B", out)
        rc, out, err = run_main(self.run, "--mem", "1G", "--condition", "stock")
        self.assertNotIn("c (figures", out)

    def test_report_section(self):
        sec = capacity_model.report_section(self.run)
        self.assertIn("| contender | stalled | 8 GiB | 24 GiB | 64 GiB | 256 GiB |", sec)
        self.assertIn("| c | 10% |", sec)
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        self.assertIn("Not computed:", capacity_model.report_section(empty))
        # the same text however the directory was named (report.md's drift check)
        cwd = os.getcwd()
        try:
            os.chdir(self.dir)
            texts = {capacity_model.report_section(p) for p in ("empty", "empty/", empty, "./empty")}
        finally:
            os.chdir(cwd)
        self.assertEqual(len(texts), 1, texts)
        self.assertNotIn(self.dir, texts.pop())
        # a short name is no pattern to replace inside the rest of the text
        os.makedirs(os.path.join(self.dir, "e"))
        try:
            os.chdir(self.dir)
            self.assertIn("Not computed: this directory holds no runs.jsonl",
                          capacity_model.report_section("e/"))
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    unittest.main()
