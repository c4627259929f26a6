"""tests/py/test_compare.py - `make compare` across machines (harness/lib/compare.py):
the fingerprints' differences and the calibration's B/A printed first; ratios to
the baseline contender of the same invocation (paired by repeat) unless the
fingerprints are shown the same; MODE, DISTURBED, FORMAT; no shared cell is an
error; A picked among the committed references. Synthetic result directories;
stdlib only, no sockets, no timing.

    python3 -m unittest tests.py.test_compare
"""
import contextlib
import csv
import io
import json
import os
import unittest

from util import ROOT  # noqa: E402,F401  (harness/lib on sys.path)
from test_results import TmpDir  # noqa: E402

import compare  # noqa: E402
import runstore  # noqa: E402

FP = {"kernel_release": "6.18.44-fc-v1252", "kernel_build": "#1 SMP", "cmdline": "quiet",
      "vulnerabilities": {"meltdown": "Not affected"}, "cpu_model": "Xeon", "cpu_flags_sha256": "ab",
      "microcode": "0x1", "cpu_count": 2, "hypervisor": "yes (cpuinfo flag)", "clocksource": "tsc",
      "thp": "madvise"}
PTI = dict(FP, kernel_release="6.18.44-fc-v1272", cmdline="quiet pti=on",
           vulnerabilities={"meltdown": "Mitigation: PTI"})


class TestCompareMachines(TmpDir):
    def make(self, name, times, fp=None, accept_us=None, tier=100000, status=None):
        """A results directory: TIMES {contender: [t_accept_s by repeat]}, CPU a third of it."""
        d = self.subdir(name)
        for c, ts in times.items():
            for rep, t in enumerate(ts, 1):
                st = (status or {}).get((c, rep), "ok")
                self.add(d, c, tier, rep, st, t_accept_s=t, server_cpu_connect_s=t / 3,
                         user_bytes_per_conn=100)
        meta = {}
        if fp:
            meta["fingerprint"] = fp
        if accept_us:
            meta["calibration"] = {"accept_cpu_us": {"median": accept_us},
                                   "syscall_ns": {"median": 100.0}}
        runstore.write_json(os.path.join(d, "meta.json"), meta)
        return d

    def compare(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = compare.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def line(self, out, metric, contender):
        block = out.split("\n" + metric + " ")[1].split("\n\n")[0]
        return [ln for ln in block.splitlines() if ln.startswith(contender + " ")][0]

    def pair(self, fa=FP, fb=PTI, cal_b=9.0):
        """B's machine 1.5x slower for every contender: c 2x the floor on both."""
        a = self.make("a", {"floor": [1.0, 1.01, 0.99], "c": [2.0, 2.02, 1.98]}, fa, 6.0)
        b = self.make("b", {"floor": [1.5, 1.515, 1.485], "c": [3.0, 3.03, 2.97]}, fb, cal_b)
        return a, b

    def test_different_fingerprints_switch_to_ratios_and_say_so(self):
        a, b = self.pair()
        rc, out, err = self.compare(a, b)
        self.assertEqual(rc, 0, err)
        self.assertIn("machines differ in:", out)
        self.assertIn("  vulnerabilities/meltdown: A Not affected; B Mitigation: PTI", out)
        self.assertIn("  cmdline: A quiet; B quiet pti=on", out)
        self.assertIn("floor CPU per accept B/A 1.50 (A 6.00, B 9.00 us)", out)
        self.assertIn("compared: time and CPU as each run's ratio to the baseline contender", out)
        self.assertIn("because the machines' fingerprints differ", out)
        self.assertIn("t_accept_s (time to connect, s; ratio to floor)", out)
        c = self.line(out, "t_accept_s", "c")
        self.assertRegex(c, r"^c +100k +2\.00 \(3\) +2\.00 \(3\) +1\.00 .*not significant$")
        self.assertTrue(self.line(out, "server_cpu_connect_s", "c").endswith("not significant"))
        # the baseline is not compared with itself; bytes stay absolute
        self.assertNotIn("\nfloor ", out.split("t_accept_s")[1].split("\n\n")[0])
        self.assertRegex(self.line(out, "user_bytes_per_conn", "floor"), r"100 \(3\) +100 \(3\) +1\.00")

    def test_the_python_calibration_is_compared_when_either_side_has_it(self):
        a, b = self.pair()
        rc, out, _ = self.compare(a, b)
        self.assertNotIn("Python loop", out)     # neither measured it: not a line of dashes
        for d, ns in ((a, 900.0), (b, 1350.0)):
            meta = runstore.read_meta(d)
            meta["calibration"]["python_ns"] = {"median": ns, "min": ns, "max": ns}
            runstore.write_json(os.path.join(d, "meta.json"), meta)
        rc, out, _ = self.compare(a, b)
        self.assertIn("Python loop B/A 1.50 (A 900, B 1350 ns)", out)
        rc, out, _ = self.compare("--format", "json", a, b)
        self.assertAlmostEqual(json.loads(out)["calibration"]["python_ns"]["b_over_a"], 1.5)

    def test_same_fingerprint_compares_absolute(self):
        a, b = self.pair(FP, FP, cal_b=6.6)      # the calibration within 15%
        rc, out, _ = self.compare(a, b)
        self.assertEqual(rc, 0)
        self.assertIn("machines differ in: nothing recorded", out)
        self.assertIn("compared: absolute figures, because the machines' fingerprints are the same", out)
        self.assertTrue(self.line(out, "t_accept_s", "c").endswith("slower (significant)"))
        self.assertRegex(self.line(out, "t_accept_s", "floor"), r" 1\.50 ")

    def test_same_fingerprint_but_the_calibration_moved_switches_to_ratios(self):
        a, b = self.pair(FP, FP, cal_b=9.0)
        rc, out, _ = self.compare(a, b)
        self.assertEqual(rc, 0)
        self.assertIn("machines differ in:\n  calibration/accept_cpu_us: A 6.00; B 9.00", out)
        self.assertIn("because the machines' fingerprints are the same, but the calibration's floor CPU per "
                      "accept moved by 1.50x (more than 15%)", out)
        self.assertTrue(self.line(out, "t_accept_s", "c").endswith("not significant"))
        rc, out, _ = self.compare("--mode", "absolute", a, b)
        self.assertIn("MODE=absolute (auto would have compared ratio: the machines' fingerprints are the same, "
                      "but the calibration", out)

    def test_a_missing_fingerprint_cannot_be_shown_the_same(self):
        a, b = self.pair(None, FP)
        rc, out, _ = self.compare(a, b)
        self.assertIn("because A has no machine fingerprint", out)
        self.assertIn("ratio to floor", out)
        self.assertIn("floor CPU per accept B/A 1.50", out)

    def test_mode_forces_either(self):
        a, b = self.pair()
        rc, out, _ = self.compare("--mode", "absolute", a, b)
        self.assertIn("compared: absolute figures, because MODE=absolute (auto would have compared "
                      "ratio: the machines' fingerprints differ)", out)
        self.assertTrue(self.line(out, "t_accept_s", "c").endswith("slower (significant)"))
        a2, b2 = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        rc, out, _ = self.compare("--mode=ratio", a2, b2)
        self.assertIn("ratio to floor", out)
        self.assertEqual(self.compare("--mode", "relative", a, b)[0], 2)
        self.assertEqual(self.compare("--format", "xml", a, b)[0], 2)
        self.assertEqual(self.compare("--bogus", a, b)[0], 2)

    def test_c_is_the_baseline_without_a_floor_and_runs_pair_by_repeat(self):
        a = self.make("a", {"c": [1.0, 2.0, 4.0], "pyext": [2.0, 4.0, 8.0]}, FP)
        # B's c runs recorded out of repeat order: repeat 3, 1, 2
        b = self.subdir("b")
        for rep, t in ((3, 4.0), (1, 1.0), (2, 2.0)):
            self.add(b, "c", 100000, rep, "ok", t_accept_s=t)
        for rep, t in ((1, 2.2), (2, 4.4), (3, 8.8)):
            self.add(b, "pyext", 100000, rep, "ok", t_accept_s=t)
        rc, out, _ = self.compare(a, b)
        self.assertIn("t_accept_s (time to connect, s; ratio to c)", out)
        # paired by repeat: 2.2/1, 4.4/2, 8.8/4 = 2.2 each (by order: 0.55, 4.4, 4.4)
        self.assertRegex(self.line(out, "t_accept_s", "pyext"), r"^pyext +100k +2\.00 \(3\) +2\.20 \(3\) +1\.10 ")

    def test_no_shared_contender_and_tier_exits_1(self):
        a = self.make("a", {"c": [1.0, 1.0, 1.0]}, FP, tier=300000)
        b = self.make("b", {"c": [1.0, 1.0, 1.0], "pyext": [1.0]}, FP, tier=10000)
        rc, out, err = self.compare(a, b)
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn("no contender and tier in both: A %s has 300k; B %s has 10k" % (a, b), err)

    def test_disturbed_runs_only_with_the_option_and_marked(self):
        st = {("c", 3): "disturbed"}
        a = self.make("a", {"floor": [1.0, 1.0, 1.0], "c": [2.0, 2.0, 2.0]}, FP)
        b = self.make("b", {"floor": [1.0, 1.0, 1.0], "c": [2.0, 2.0, 2.1]}, FP, status=st)
        rc, out, _ = self.compare(a, b)
        self.assertTrue(self.line(out, "t_accept_s", "c").endswith("not enough runs"))
        self.assertIn("Only ok runs count", out)
        rc, out, _ = self.compare("--disturbed", a, b)
        c = self.line(out, "t_accept_s", "c")
        self.assertRegex(c, r"2\.00 \(3\) +2\.00 \(3\)\u2020 ")
        self.assertFalse(c.endswith("not enough runs"), c)
        self.assertIn("Disturbed runs counted: \u2020 marks a figure that includes one", out)

    def test_formats(self):
        a, b = self.pair()
        rc, out, _ = self.compare("--format", "json", a, b)
        res = json.loads(out)
        self.assertEqual(res["mode"], "ratio")
        self.assertIn(["vulnerabilities/meltdown", "Not affected", "Mitigation: PTI"],
                      res["machine_differences"])
        self.assertAlmostEqual(res["calibration"]["accept_cpu_us"]["b_over_a"], 1.5)
        t = [m for m in res["metrics"] if m["metric"] == "t_accept_s"][0]["rows"]
        self.assertEqual([(r["contender"], r["basis"]) for r in t], [("c", "ratio to floor")])
        rc, out, _ = self.compare("--format", "csv", a, b)
        rows = list(csv.DictReader(io.StringIO(out)))
        self.assertEqual(list(rows[0]), compare.CSV_COLS)
        c = [r for r in rows if r["metric"] == "t_accept_s"][0]
        self.assertEqual((c["contender"], c["basis"], c["verdict"]), ("c", "ratio to floor", "not significant"))
        rc, out, _ = self.compare("--format", "md", a, b)
        self.assertIn("## t_accept_s (time to connect, s)", out)
        self.assertIn("| contender | tier | A ratio to baseline (n) |", out)
        self.assertRegex(out, r"\n\| c \| 100k \| 2\.00 \(3\) \| 2\.00 \(3\) \| 1\.00 \|")

    def test_md_escapes_a_name_as_report_md_does(self):
        # a contender or condition named with | or a newline broke the Markdown
        # table (render_md joined the cells bare; report.md's md_table escapes them)
        a = self.make("a", {"floor": [1.0, 1.01, 0.99], "c|x\ny": [2.0, 2.02, 1.98]}, FP, 6.0)
        rc, out, err = self.compare("--format", "md", a, a)
        self.assertEqual(rc, 0, err)
        self.assertIn("\n| c\\|x y | 100k | 2.00 (3) | 2.00 (3) | 1.00 |", out)
        self.assertNotIn("\ny |", out)

    def test_reference_picks_the_committed_directory_sharing_most_cells(self):
        res = self.subdir("results")
        for name, times in (("reference-x", {"c": [1.0]}),
                            ("reference-y", {"c": [1.0], "pyext": [1.0]}),
                            ("other", {"c": [1.0], "pyext": [1.0], "floor": [1.0]})):
            os.rename(self.make(name, times), os.path.join(res, name))
        b = self.make("b", {"c": [1.0], "pyext": [1.0], "floor": [1.0]})
        self.assertEqual(compare.pick_reference(runstore.read_runs(b), res),
                         os.path.join(res, "reference-y"))
        self.assertIsNone(compare.pick_reference(runstore.read_runs(
            self.make("z", {"gevent": [1.0]})), res))
        # a committed directory as B is not its own A (it shared every cell with itself)
        y = os.path.join(res, "reference-y")
        self.assertEqual(compare.pick_reference(runstore.read_runs(y), res, y + "/"),
                         os.path.join(res, "reference-x"))
        rc, out, err = self.compare("--reference", b)
        self.assertEqual(rc, 0, err)
        self.assertIn("A: the committed reference sharing the most cells with B", err)

    def test_report_shows_time_and_cpu_over_the_floor_beside_the_absolute(self):
        import results
        d = self.make("r", {"floor": [1.0, 2.0, 4.0], "c": [2.0, 4.0, 8.0], "pyext": [3.0, 6.0, 12.0]},
                      PTI, 9.0)
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(results.main(["results.py", "report", d]), 0)
        with open(os.path.join(d, "report.md")) as f:
            rep = f.read()
        self.assertIn("| t_accept s | t_accept / floor |", rep)
        self.assertIn("| CPU connect s | CPU connect / floor |", rep)
        self.assertRegex(rep, r"\n\| pyext \| 100k \| ok 3/3 \| 6\.00 [^|]*\| 3\.00 [^|]*\|.*\| 2\.00 [^|]*\| 3\.00 [^|]*\|")
        self.assertIn("| instance | kernel 6.18.44-fc-v1272 (#1 SMP), CPU Xeon x2, meltdown: Mitigation: PTI |", rep)
        self.assertIn("| calibration (c1m-calib) | floor accept 9.00 us CPU", rep)
        # without a floor: no ratio columns
        d = self.make("nofloor", {"c": [2.0, 4.0, 8.0]}, PTI)
        with contextlib.redirect_stdout(io.StringIO()):
            results.main(["results.py", "report", d])
        with open(os.path.join(d, "report.md")) as f:
            self.assertNotIn("/ floor", f.read())

    def test_a_foreign_meta_json_is_no_metadata_not_a_crash(self):
        # meta.json that is JSON but not c1m's: a list, or fields of the wrong shape.
        # compare, report and machine used to raise AttributeError (a traceback).
        from test_results import run_main
        a = self.make("a", {"floor": [1.0, 1.0, 1.0], "c": [2.0, 2.0, 2.0]})
        b = self.make("b", {"floor": [1.0, 1.0, 1.0], "c": [2.0, 2.0, 2.0]})
        with open(os.path.join(a, "meta.json"), "w") as f:
            f.write("[1, 2]\n")
        with open(os.path.join(b, "meta.json"), "w") as f:
            json.dump({"fingerprint": "x", "calibration": {"accept_cpu_us": 7, "syscall_ns": []},
                       "settings": [1]}, f)
        rc, out, err = run_main("compare", a, b)
        self.assertEqual(rc, 0, err)
        self.assertIn("A and B have no machine fingerprint", out)
        for d in (a, b):
            for cmd in ("report", "machine"):
                rc, _, err = run_main(cmd, d)
                self.assertEqual(rc, 0, err)
        rc, out, _ = run_main("machine", b)
        self.assertIn("calibration: none", out)

    def test_kernel_profiles_that_are_no_objects_are_left_out_of_the_report(self):
        # report (bench.sh's last step) died with AttributeError on .items()
        from test_results import run_main
        a = self.make("a", {"floor": [1.0, 1.0, 1.0], "c": [2.0, 2.0, 2.0]})
        for bad in ({"sysctl_profiles": "x"}, {"sysctl_profiles": {"tuned": True}},
                    {"sysctl_profiles": {}, "sysctl_profile": [1]}):
            runstore.write_json(os.path.join(a, "meta.json"), bad)
            rc, _, err = run_main("report", a)
            self.assertEqual(rc, 0, err)
            with open(os.path.join(a, "report.md")) as f:
                self.assertNotIn("## Kernel profile", f.read())

    def test_a_calibration_or_meta_json_that_is_no_figure_is_missing_not_a_crash(self):
        # a median that is text or a list, python_ns no object, meta.json nested past the
        # parser: compare exited 1 on a TypeError, or with a RecursionError traceback
        a, b = self.pair()
        for cal in ({"accept_cpu_us": {"median": "x"}, "python_ns": {"median": [1]}},
                    {"python_ns": 5, "syscall_ns": {"median": float("inf")}}):
            runstore.write_json(os.path.join(b, "meta.json"), {"fingerprint": FP, "calibration": cal})
            rc, out, err = self.compare(a, b)
            self.assertEqual(rc, 0, err)
            self.assertIn("floor CPU per accept B/A - (A 6.00, B - us)", out)
        with open(os.path.join(b, "meta.json"), "w") as f:
            f.write("[" * 100000)
        rc, out, err = self.compare(a, b)
        self.assertEqual(rc, 0, err)
        self.assertIn("B has no machine fingerprint", out)


if __name__ == "__main__":
    unittest.main()
