"""harness/lib/pushkept.py: whether a server kept its push schedule, from
given ramp.csv samples (tests/push_stall.bats runs it end to end: a server
asked for more lines than it can send is push-behind)."""
import os
import subprocess
import sys
import tempfile
import unittest

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "harness", "lib")
sys.path.insert(0, LIB)
import pushkept as pk  # noqa: E402


def rows(n_s, open_, rate, t0=1_000_000, slow=None, step_ms=100):
    """n_s seconds of 10 Hz samples: open_ connections, `pushed` growing at
    rate lines a second; slow(t_ms) -> the slow counter (default 0)."""
    out = []
    for i in range(int(n_s * 1000 / step_ms) + 1):
        t = t0 + i * step_ms
        out.append((t, open_, slow(t) if slow else 0, round(rate * i * step_ms / 1000)))
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
            out.append((t, op, slow, round(pushed)))
            pushed += (op - stalled_live) / 2 * 0.1
        r = pk.kept(out, every=2, stalled=100, stall_ms=stall)
        self.assertEqual(r["push_kept"], "1.000")
        # without the stall the 100 would be owed their lines: 4,750 of 4,900
        self.assertEqual(pk.kept(out, every=2)["push_kept"], "0.969")

    def test_unmeasured(self):
        self.assertEqual(pk.kept([], every=2), {"push_kept_verdict": "unmeasured"})
        self.assertEqual(pk.kept(rows(0, 1000, 500), every=2)["push_kept_verdict"], "unmeasured")
        # no connection: nothing due
        self.assertEqual(pk.kept(rows(10, 0, 0), every=2)["push_kept_verdict"], "unmeasured")


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
                       "1200,10,10,0,0,1,0,0,9\n"
                       "1300,10,10,0,0,1,0,0,12\n")
        self.assertEqual(pk.samples(p, 1000, 1250), [(1000, 10, 0, 5), (1200, 10, 0, 9)])

    def test_old_csv_without_pushed(self):
        # a ramp.csv from before the pushed column: no verdict, not a crash
        p = self.write("unix_ms,open,accepted,closed,slow,listening,full,workers_dead\n"
                       "1000,10,10,0,0,1,0,0\n2000,10,10,0,0,1,0,0\n")
        self.assertEqual(pk.samples(p, 0, 5000), [])

    def cli(self, *args):
        return subprocess.run([sys.executable, os.path.join(LIB, "pushkept.py")] + list(args),
                              capture_output=True, text=True)

    def test_cli(self):
        p = self.write("unix_ms,open,slow,pushed\n1000,100,0,0\n3000,100,0,40\n")
        r = self.cli("summary", p, "--from", "0", "--to", "5000", "--every", "10")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("push_kept=2.000", r.stdout.split())
        self.assertIn("push_kept_verdict=ok", r.stdout.split())
        r = self.cli("summary", "/nonexistent/ramp.csv", "--from", "0", "--to", "1", "--every", "1")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "push_kept_verdict=unmeasured"))
        self.assertIn("nonexistent", r.stderr)

    def test_cli_bad_arguments(self):
        p = self.write("unix_ms,open,slow,pushed\n")
        for bad in (["--every", "0"], ["--every", "-1"], ["--every", "x"], ["--every", "1", "--min", "2"],
                    ["--every", "1", "--stalled", "-3"]):
            r = self.cli("summary", p, "--from", "0", "--to", "1", *bad)
            self.assertEqual(r.returncode, 2, (bad, r.stdout))
        r = self.cli("summary", p, "--from", "5", "--to", "1", "--every", "1")
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
