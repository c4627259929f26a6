"""tests/py/test_plots.py - the plots: the contender colour table of
harness/plots/common.gp against the registry (harness/lib/contenders.py), and
the data results.py plotdata writes for them (what the bars are called, CPU
per connection, the ratio to the floor, every run's ramp, the bytes'
intervals). Stdlib only; no gnuplot, no sockets.

    python3 -m unittest tests.py.test_plots
"""
import os
import re
import unittest

from util import ROOT  # noqa: E402,F401  (harness/lib on sys.path)
from test_results import TmpDir, run_main  # noqa: E402
import contenders  # noqa: E402



def registry():
    """The contenders of harness/lib/contenders.py, in its (ladder) order."""
    return list(contenders.LADDER)


def colour_table():
    """common.gp's ctab: [(name, colour, point type)]."""
    with open(os.path.join(ROOT, "harness", "plots", "common.gp")) as f:
        src = f.read()
    m = re.search(r"^ctab = ((?:'[^']*'\.\\\n\s*)*'[^']*')\n", src, re.M)
    if not m:
        return []
    w = "".join(re.findall(r"'([^']*)'", m.group(1))).split()
    return [tuple(w[i:i + 3]) for i in range(0, len(w), 3)]


class TestColourTable(unittest.TestCase):
    def test_every_contender_has_its_own_colour_and_point(self):
        names = registry()
        self.assertEqual(len(names), 10)
        table = colour_table()
        self.assertEqual([t[0] for t in table], names)
        for field in (1, 2):
            vals = [t[field] for t in table]
            self.assertEqual(len(set(vals)), len(vals), vals)
        for name, colour, point in table:
            self.assertRegex(colour, r"^#[0-9a-f]{6}$", name)
            self.assertNotEqual(colour, "#000000", name)   # black: an unknown name
            self.assertTrue(point.isdigit() and point != "6", name)  # 6: the disturbed marker


def dat(path):
    with open(path) as f:
        return [ln.split() for ln in f if not ln.startswith("#")]


class TestPlotData(TmpDir):
    def plotdata(self, d):
        data = os.path.join(d, "plots", "data")
        rc, out, err = run_main("plotdata", d, data)
        self.assertEqual(rc, 0, err)
        with open(os.path.join(data, "vars.gp")) as f:
            return data, out.split(), f.read()

    def test_the_bars_are_named_by_what_they_are(self):
        # 3 runs: the bootstrap 95% interval of their median is their min-max
        d = self.subdir("three")
        for rep, t in enumerate((1.0, 1.4, 1.1), 1):
            self.add(d, "c", 2000, rep, t_accept_s=t, server_cpu_connect_s=t / 2)
        _, _, v = self.plotdata(d)
        self.assertIn("bars = 'median of 3 runs, bars: min-max of the runs (= their bootstrap", v)
        # 9 runs with outliers: a bootstrap interval narrower than the min-max
        d = self.subdir("nine")
        for rep, t in enumerate((1.0, 1.1, 1.2, 1.2, 1.3, 1.3, 1.4, 1.5, 9.0), 1):
            self.add(d, "c", 2000, rep, t_accept_s=t, server_cpu_connect_s=t / 2)
        _, _, v = self.plotdata(d)
        self.assertIn("bars = 'median of 9 runs, bars: bootstrap 95% interval of the median'", v)

    def run_with_floor(self):
        d = self.subdir("run")
        for tier in (2000, 4000):
            for rep in (1, 2, 3):
                self.add(d, "floor", tier, rep, t_accept_s=1.0 + rep / 100,
                         server_cpu_connect_s=tier / 1e6, accepted=tier)
                self.add(d, "c", tier, rep, t_accept_s=2.0 + rep / 100,
                         server_cpu_connect_s=3 * tier / 1e6, accepted=tier,
                         user_bytes_per_conn=18 + rep, kernel_bytes_per_conn=7900 + rep)
        return d

    def test_cpu_per_connection_and_the_ratio_to_the_floor(self):
        data, have, v = self.plotdata(self.run_with_floor())
        self.assertIn("ratio", have)
        c = dat(os.path.join(data, "tiers-c.dat"))
        self.assertEqual([x[0] for x in c], ["2000", "4000"])
        self.assertEqual(c[0][7:10], ["3.000"] * 3)              # microseconds per connection
        self.assertEqual(c[1][10], "4k")
        self.assertAlmostEqual(float(c[0][11]), 2.02 / 1.02, places=3)  # time / the floor's
        self.assertAlmostEqual(float(c[0][14]), 3.0, places=3)         # CPU / the floor's
        f = dat(os.path.join(data, "tiers-floor.dat"))
        self.assertEqual(f[0][11:17], ["1.0000"] * 6)            # the floor: 1 by definition
        self.assertIn("""tier_tics = '("2k" 2000, "4k" 4000)'""", v)   # every tier a tic
        self.assertIn("ntiers = 2", v)
        self.assertFalse(os.path.exists(os.path.join(data, "single.dat")))
        # bytes: the medians, then each part's and the total's interval
        b = {x[0]: x for x in dat(os.path.join(data, "bytes.dat"))}
        self.assertEqual(b["c"][1:11], ["20", "7902", "19", "21", "7901", "7903",
                                        "7922", "7920", "7924", "c"])

    def test_no_floor_no_ratio_plot_and_one_tier_is_bars(self):
        d = self.subdir("run")
        for rep in (1, 2, 3):
            self.add(d, "c", 2000, rep, t_accept_s=2.0, server_cpu_connect_s=0.1)
            self.add(d, "pyext", 2000, rep, t_accept_s=2.5, server_cpu_connect_s=0.1)
            self.add(d, "threads", 2000, rep, "ramp-stalled", t_accept_s=900)
        data, have, v = self.plotdata(d)
        self.assertNotIn("ratio", have)
        self.assertIn("ntiers = 1", v)
        self.assertIn("single_series = 'c pyext threads'", v)
        rows = dat(os.path.join(data, "single.dat"))
        self.assertEqual([x[0] for x in rows], ["c", "pyext", "threads"])
        # a contender without a usable run keeps its row, and says why it has no bar
        self.assertEqual(rows[2][2:5], ["NaN"] * 3)
        self.assertEqual(" ".join(rows[2][19:]), '"no ok run (3 ramp-stalled)"')

    def test_the_floor_alone_has_no_ratio_plot(self):
        # CONTENDERS=floor: its ratio to itself says nothing, and gnuplot 5.4
        # segfaulted drawing that lone bar (bench.sh exited 1 on it)
        d = self.subdir("run")
        self.add(d, "floor", 1000, 1, t_accept_s=0.04, server_cpu_connect_s=0.01, accepted=1000)
        _, have, v = self.plotdata(d)
        self.assertNotIn("ratio", have)
        self.assertIn("tiers", have)

    def test_every_run_of_the_ramp_and_its_statuses_in_the_key(self):
        d = self.subdir("run")
        for rep, (t, st) in enumerate(((3.0, "ok"), (2.0, "ok"), (4.5, "disturbed"), (4.0, "ok")), 1):
            ramp = "ramp/c-%d.csv" % rep
            os.makedirs(os.path.join(d, "ramp"), exist_ok=True)
            with open(os.path.join(d, ramp), "w") as f:
                f.write("seconds,accepted\n0,0\n%s,2000\n" % t)
            self.add(d, "c", 2000, rep, st, t_accept_s=t, ramp_file=ramp)
        data, have, v = self.plotdata(d)
        self.assertIn("ramp", have)
        self.assertIn("ramp_title_1 = 'c (1 disturbed)'", v)
        self.assertNotIn("c:disturbed", v)
        # bold: the median ok run by time (repeat 1, 3.0 s); faint: the three others
        self.assertEqual(dat(os.path.join(data, "ramp-c.dat"))[-1], ["3.0", "2000"])
        self.assertIn("ramp_faint_1 = 'ramp-c-r2.dat ramp-c-r3.dat ramp-c-r4.dat'", v)
        for rep in (2, 3, 4):
            self.assertTrue(os.path.exists(os.path.join(data, "ramp-c-r%d.dat" % rep)))


if __name__ == "__main__":
    unittest.main()
