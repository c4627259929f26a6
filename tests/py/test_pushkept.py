"""harness/lib/pushkept.py: whether a server kept its push schedule, from
given ramp.csv samples (tests/push_stall.bats runs it end to end: a server
asked for more lines than it can send is push-behind)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from util import LIB  # noqa: E402  (harness/lib on sys.path)
import pushkept as pk  # noqa: E402


def rows(n_s, open_, rate, t0=1_000_000, slow=None, step_ms=100, stale=0, lag=0):
    """n_s seconds of 10 Hz samples (samples()' tuples): open_ connections,
    `pushed` growing at rate lines a second, no dead worker, the oldest
    worker's counters stale ms old and their open-weighted age lag ms;
    slow(t_ms) -> the slow counter (default 0)."""
    out = []
    for i in range(int(n_s * 1000 / step_ms) + 1):
        t = t0 + i * step_ms
        out.append((t, open_, slow(t) if slow else 0, round(rate * i * step_ms / 1000), 0, stale, lag))
    return out


class Kept(unittest.TestCase):
    def test_on_schedule(self):
        # 1,000 connections, a line each every 2 s: 500 a second due
        r = pk.kept(rows(10, 1000, 500), every=2)
        self.assertEqual(r["push_kept_verdict"], "ok")
        self.assertEqual(r["push_kept"], "1.000")
        self.assertEqual((r["push_kept_sent"], r["push_kept_due"]), (5000, 5000))
        self.assertEqual(r["push_kept_window_s"], "10.000")

    def test_behind(self):
        # asyncio-protocol at 1M in the stall run: 0.43 of its lines
        r = pk.kept(rows(10, 1000, 215), every=2)
        self.assertEqual(r["push_kept_verdict"], "behind")
        self.assertEqual(r["push_kept"], "0.430")

    def test_threshold(self):
        self.assertEqual(pk.kept(rows(10, 1000, 450), every=2)["push_kept_verdict"], "ok")
        self.assertEqual(pk.kept(rows(10, 1000, 449), every=2)["push_kept_verdict"], "behind")
        self.assertEqual(pk.kept(rows(10, 1000, 449), every=2, kept_min=0.8)["push_kept_verdict"], "ok")

    def test_stalled_owed_nothing_until_cut(self):
        # 1,000 open, 100 stalled from t0+5 s, all cut at t0+8 s (open falls
        # to 900 then); the server pushes to the 900 readers only
        t0 = 1_000_000
        stall, cut = t0 + 5000, t0 + 8000
        out = []
        pushed = 0.0
        for i in range(101):
            t = t0 + i * 100
            stalled_live = 100 if stall <= t < cut else 0
            op = 1000 if t < cut else 900
            slow = 100 if t >= cut else 0
            out.append((t, op, slow, round(pushed), 0, 50, 5))
            pushed += (op - stalled_live) / 2 * 0.1
        r = pk.kept(out, every=2, stalled=100, stall_ms=stall)
        self.assertEqual(r["push_kept"], "1.000")
        # without the stall the 100 would be owed their lines: 4,750 of 4,900
        self.assertEqual(pk.kept(out, every=2)["push_kept"], "0.969")

    def test_stall_between_samples(self):
        # samples a second apart, the stall half-way through one: its first
        # half is owed to all 1,000, its second half to the 900 readers
        t0 = 1_000_000
        out = [(t0, 1000, 0, 0, 0, 0, 0), (t0 + 1000, 1000, 0, 0, 0, 0, 0), (t0 + 2000, 1000, 0, 0, 0, 0, 0)]
        r = pk.kept(out, every=1, stalled=100, stall_ms=t0 + 1500)
        self.assertEqual(r["push_kept_due"], 1000 + 500 + 450)

    def test_partial_cuts(self):
        # 100 stalled at t0, 40 of them cut by t0+1 s: 940 readers after that
        t0 = 1_000_000
        out = [(t0, 1000, 7, 0, 0, 0, 0), (t0 + 1000, 960, 47, 0, 0, 0, 0), (t0 + 2000, 960, 47, 0, 0, 0, 0)]
        r = pk.kept(out, every=1, stalled=100, stall_ms=t0)
        self.assertEqual(r["push_kept_due"], 900 + 900)

    def test_rounded_before_compared(self):
        # 0.8996 is printed 0.900: the verdict must say the same
        r = pk.kept(rows(10, 1000, 449.8), every=2)
        self.assertEqual((r["push_kept"], r["push_kept_verdict"]), ("0.900", "ok"))

    def unmeasured(self, r, why):
        """No verdict, for why; no kept either, unless only its range is in doubt."""
        self.assertEqual(r["push_kept_verdict"], "unmeasured")
        if "either side" not in why:
            self.assertNotIn("push_kept", r)
        self.assertIn(why, r["push_kept_why"])

    def test_unmeasured(self):
        self.unmeasured(pk.kept([], every=2), "fewer than two samples")
        self.unmeasured(pk.kept(rows(0, 1000, 500), every=2), "fewer than two samples")
        self.unmeasured(pk.kept(rows(10, 0, 0), every=2), "nothing due")

    def test_dead_worker(self):
        # its counters leave the totals: the pushed count falls, never "behind"
        out = rows(10, 1000, 500)
        out[-1] = out[-1][:3] + (out[-1][3] - 4000, 1, 0, 0)
        self.unmeasured(pk.kept(out, every=2), "a worker died in the window (workers_dead 0 -> 1)")

    def test_count_fell(self):
        out = rows(10, 1000, 500)
        out[-1] = out[-1][:3] + (-10,) + out[-1][4:]
        self.unmeasured(pk.kept(out, every=2), "the pushed count fell")

    def test_old_edges_bound_the_verdict(self):
        # 10 s window, the counters 1 s old at both edges (by lag_ms): kept
        # is known within a tenth either way
        r = pk.kept(rows(10, 1000, 215, stale=3000, lag=1000), every=2)
        self.assertEqual((r["push_kept_verdict"], r["push_kept"]), ("behind", "0.430"))
        self.assertEqual((r["push_kept_lo"], r["push_kept_hi"]), ("0.387", "0.473"))
        self.assertEqual((r["push_kept_stale_ms"], r["push_kept_lag_ms"]), (3000, 1000))
        r = pk.kept(rows(10, 1000, 500, lag=1000), every=2)
        self.assertEqual((r["push_kept_verdict"], r["push_kept_lo"], r["push_kept_hi"]), ("ok", "0.900", "1.100"))
        # 0.92 could be 0.828 or 1.012: no verdict, the estimate still said
        r = pk.kept(rows(10, 1000, 460, lag=1000), every=2)
        self.unmeasured(r, "0.920, but 0.828-1.012 by the counters' age at the edges (1000 and 1000 ms): either side of 0.9")
        self.assertEqual(r["push_kept"], "0.920")
        # only the last edge late: sent can only read low
        out = rows(10, 1000, 440)
        out[-1] = out[-1][:6] + (1000,)
        r = pk.kept(out, every=2)
        self.assertEqual((r["push_kept_lo"], r["push_kept_hi"]), ("0.880", "0.968"))
        self.assertEqual(r["push_kept_verdict"], "unmeasured")
        # over a quarter of the window: the rate is not even enough to bound
        self.unmeasured(pk.kept(rows(10, 1000, 100, lag=2600), every=2),
                        "counters 2600 ms old (lag_ms) at an edge of a 10000 ms window: over a quarter")

    def test_one_starved_worker(self):
        # asyncio-streams at 1M: one worker of ~50 published 89 s ago in a
        # 600 s window, the others 50 ms ago: lag_ms ~1.8 s, kept within 0.01
        out = [(1_000_000 + i * 1000, 1_000_000, 0, i * 15_500, 0, 89_000, 1_830) for i in range(601)]
        r = pk.kept(out, every=30)
        self.assertEqual((r["push_kept_verdict"], r["push_kept"]), ("behind", "0.465"))
        self.assertEqual((r["push_kept_lo"], r["push_kept_hi"]), ("0.464", "0.466"))
        self.assertEqual((r["push_kept_stale_ms"], r["push_kept_lag_ms"]), (89_000, 1_830))

    def test_old_csv_judged_by_stale(self):
        # an edge row without lag_ms: its stale_ms, the worst worker's age
        out = rows(10, 1000, 440)
        out[0] = out[0][:5] + (3000, None)
        self.unmeasured(pk.kept(out, every=2), "counters 3000 ms old (stale_ms) at an edge")
        r = pk.kept([x[:6] + (None,) for x in rows(10, 1000, 215, stale=2000)], every=2)
        self.assertEqual((r["push_kept_verdict"], r["push_kept_lo"], r["push_kept_hi"]), ("behind", "0.344", "0.516"))
        self.assertNotIn("push_kept_lag_ms", r)
        # before stale_ms too: judged as fresh, nothing said of the age
        r = pk.kept([x[:5] + (None, None) for x in rows(10, 1000, 500)], every=2)
        self.assertEqual(r["push_kept_verdict"], "ok")
        self.assertEqual((r["push_kept_lo"], r["push_kept_hi"]), ("1.000", "1.000"))
        self.assertNotIn("push_kept_stale_ms", r)
        self.assertEqual(r["push_kept_min"], pk.KEPT_MIN)


class Samples(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_window_and_bad_rows(self):
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed\n"
                       "900,10,10,0,0,1,0,0,0\n"
                       "1000,10,10,0,0,1,0,0,5\n"
                       "1100,10,10,0,0,1,0,0,\n"        # cut short by the sampler's stop
                       "1200,10,10,0,0,1,0,1,9\n"
                       "1300,10,10,0,0,1,0,0,12\n")
        self.assertEqual(pk.samples(p, 1000, 1250), [(1000, 10, 0, 5, 0, None, None), (1200, 10, 0, 9, 1, None, None)])
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed,stale_ms\n"
                       "1000,10,10,0,0,1,0,0,5,12\n")
        self.assertEqual(pk.samples(p, 0, 2000), [(1000, 10, 0, 5, 0, 12, None)])
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed,stale_ms,lag_ms\n"
                       "1000,10,10,0,0,1,0,0,5,12,3\n")
        self.assertEqual(pk.samples(p, 0, 2000), [(1000, 10, 0, 5, 0, 12, 3)])
        # a last line without its newline: its last number may be cut (lag_ms 3 of 35?)
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed,stale_ms,lag_ms\n"
                       "1000,10,10,0,0,1,0,0,5,12,35\n"
                       "1100,10,10,0,0,1,0,0,6,12,3")
        self.assertEqual(pk.samples(p, 0, 2000), [(1000, 10, 0, 5, 0, 12, 35)])

    def test_a_row_that_is_not_text_is_skipped(self):
        # bytes that are not UTF-8 (a damaged ramp.csv): that row skipped like a
        # cut one, not UnicodeDecodeError's traceback
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed\n"
                       "1000,10,10,0,0,1,0,0,5\n")
        with open(p, "ab") as f:
            f.write(b"1100,10,10,0,0,1,0,0,\xff\n1200,10,10,0,0,1,0,0,9\n")
        self.assertEqual(pk.samples(p, 0, 2000), [(1000, 10, 0, 5, 0, None, None), (1200, 10, 0, 9, 0, None, None)])

    def test_a_field_over_the_csv_limit_is_an_error_naming_the_line(self):
        p = self.write("unix_ms,open,slow,pushed,workers_dead\n1000,10,0,5,0\n\"%s\n" % ("a" * 200000))
        with self.assertRaisesRegex(ValueError, "line 3: field larger than field limit"):
            pk.samples(p, 0, 2000)
        r = self.cli("summary", p, "--from", "0", "--to", "2000", "--every", "1")
        self.assertEqual(r.returncode, 0, r.stderr)          # as for a file it cannot read
        self.assertEqual(json.loads(r.stdout)["push_kept_verdict"], "unmeasured")
        self.assertIn("%s line 3: field larger" % p, r.stderr)

    def test_old_csv_without_pushed(self):
        # a ramp.csv from before the pushed column: no verdict, not a crash
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead\n"
                       "1000,10,10,0,0,1,0,0\n2000,10,10,0,0,1,0,0\n")
        self.assertEqual(pk.samples(p, 0, 5000), [])

    def cli(self, *args):
        return subprocess.run([sys.executable, os.path.join(LIB, "pushkept.py")] + list(args),
                              capture_output=True, text=True)

    def test_cli(self):
        p = self.write("unix_ms,open,slow,pushed,workers_dead,stale_ms\n1000,100,0,0,0,5\n3000,100,0,40,0,5\n")
        r = self.cli("summary", p, "--from", "0", "--to", "5000", "--every", "10")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["push_kept"], out["push_kept_verdict"], out["push_kept_min"]), ("2.000", "ok", 0.9))
        r = self.cli("summary", "/nonexistent/ramp.csv", "--from", "0", "--to", "1", "--every", "1")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(json.loads(r.stdout)["push_kept_verdict"], "unmeasured")
        self.assertIn("nonexistent", r.stderr)

    def test_cli_bad_arguments(self):
        p = self.write("unix_ms,open,slow,pushed\n")
        for bad in (["--every", "0"], ["--every", "-1"], ["--every", "x"], ["--every", "1", "--min", "2"],
                    ["--every", "nan"], ["--every", "inf"],     # a traceback, a verdict of nothing due
                    # the servers' --push-every bounds (1e-320: OverflowError's traceback)
                    ["--every", "1e-320"], ["--every", "0.0009"], ["--every", "86401"],
                    ["--every", "1", "--stalled", "-3"]):
            r = self.cli("summary", p, "--from", "0", "--to", "1", *bad)
            self.assertEqual(r.returncode, 2, (bad, r.stdout))
            self.assertNotIn("Traceback", r.stderr, bad)
        for edge in ("0.001", "86400"):
            r = self.cli("summary", p, "--from", "0", "--to", "1", "--every", edge)
            self.assertEqual(r.returncode, 0, (edge, r.stderr))
        r = self.cli("summary", p, "--from", "5", "--to", "1", "--every", "1")
        self.assertEqual(r.returncode, 2)


class Recorded(unittest.TestCase):
    """ramp.csv samples recorded at 2k (c, 256-byte lines, HOLD=2; the hold's
    rows and 0.3 s either side, tests/py/data/pushkept-*.csv): the figures
    and the verdict the run recorded, given its window back."""
    DATA = os.path.join(os.path.dirname(__file__), "data")

    def check(self, name, t_from, t_to, every, want):
        rows = pk.samples(os.path.join(self.DATA, name), t_from, t_to)
        self.assertEqual(pk.kept(rows, every), dict(want, push_kept_min=0.9))

    def test_on_schedule(self):
        # a line a second to each of 2,000 connections over the 2.1 s hold
        self.check("pushkept-c-ok.csv", 1796568877975, 1796568880087, 1, {
            "push_kept_verdict": "ok", "push_kept_sent": 4225, "push_kept_due": 4224,
            "push_kept_window_s": "2.112", "push_kept_stale_ms": 5, "push_kept_lag_ms": 5,
            "push_kept": "1.000", "push_kept_lo": "0.999", "push_kept_hi": "1.003"})

    def test_behind(self):
        # ten a second each on a loaded machine: 0.834 of the lines, the
        # counters' age (66 ms) leaving it under 0.9 at both ends
        self.check("pushkept-c-behind-0.1.csv", 1796568799996, 1796568803612, 0.1, {
            "push_kept_verdict": "behind", "push_kept_sent": 60325, "push_kept_due": 72320,
            "push_kept_window_s": "3.616", "push_kept_stale_ms": 122, "push_kept_lag_ms": 66,
            "push_kept": "0.834", "push_kept_lo": "0.828", "push_kept_hi": "0.849"})


if __name__ == "__main__":
    unittest.main()
