"""tests/py/test_report_storm.py - the storm report module
(harness/lib/report_storm.py): which runs the now-vs-backoff plot pairs.
Synthetic records and curves only: no sockets, no timing. Run by
tests/storm.bats.

    python3 -m unittest tests.py.test_report_storm
"""
import os
import unittest

from util import TmpDir  # noqa: E402  (harness/lib on sys.path)

import report_storm as rs  # noqa: E402


class PolicyPairs(TmpDir):
    def setUp(self):
        super().setUp()
        self.data = self.subdir("data")

    def run_of(self, variant, rate):
        rd = "runs/%s-%d" % (variant, rate)
        os.makedirs(os.path.join(self.dir, rd))
        with open(os.path.join(self.dir, rd, "storm.csv"), "w") as f:
            f.write("seconds,open,accepted,rate_per_s,workers_dead\n-1.0,2000,2000,0,0\n"
                    "0.5,100,100,200,0\n1.0,2000,2000,3800,0\n")
        cond = variant + ("/rate=%d" % rate if rate else "")
        return dict(contender="c", tier=2000, tier_label="2k", repeat=1, status="ok",
                    scenario="storm", profile="tuned", variant=variant, rate=rate,
                    condition=cond, run_dir=rd, storm_recovery_s=1.0)

    def vars_text(self):
        p = os.path.join(self.data, "storm_vars.gp")
        return open(p).read() if os.path.exists(p) else ""

    def test_same_rate_pairs(self):
        rows = [self.run_of("now", 100), self.run_of("backoff", 100)]
        out = rs.plotdata(self.dir, rows, self.data)
        self.assertIn(rs.POLICIES, out)
        self.assertIn("rate 100/s: now (solid) vs backoff (dashed)", self.vars_text())

    def test_different_rates_do_not_pair(self):
        # now at --rate 100 against backoff at --rate 200 is no comparison
        rows = [self.run_of("now", 100), self.run_of("backoff", 200)]
        out = rs.plotdata(self.dir, rows, self.data)
        self.assertIn(rs.CURVES, out)
        self.assertNotIn(rs.POLICIES, out)
        self.assertNotIn("vs backoff", self.vars_text())

    def test_each_rate_its_own_pair(self):
        rows = [self.run_of(v, r) for v in ("now", "backoff") for r in (0, 100)]
        rs.plotdata(self.dir, rows, self.data)
        text = self.vars_text()
        self.assertIn("sp_n = 2", text)
        self.assertIn("rate 100/s: now", text)


if __name__ == "__main__":
    unittest.main()
