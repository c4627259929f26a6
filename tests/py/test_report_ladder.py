"""tests/py/test_report_ladder.py - the ladder of fixes (harness/lib/report_ladder.py):
its steps in order, the medians of the ok runs only, the savings against the
step before (or the nearest earlier one with an ok run), a step with no ok run
said so, and what plotdata and report write. The runs: 20 records of
results/reference-ladder-100k cut to the fields it reads (tests/py/data/
ladder-100k.jsonl; the ladder's six cells and two cells off the ladder).
Stdlib only; no gnuplot, no sockets.

    python3 -m unittest tests.py.test_report_ladder
"""
import csv
import json
import os
import subprocess
import sys
import unittest

from util import ROOT, TmpDir  # noqa: E402  (harness/lib on sys.path)

import report_ladder as rl  # noqa: E402
import runstore  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ladder-100k.jsonl")


def runs():
    with open(DATA) as f:
        return [json.loads(line) for line in f]


def by_fix(table):
    return {r["fix"]: r for r in table}


class Ladder(TmpDir):
    def test_steps_in_order_with_the_medians_of_the_ok_runs(self):
        t = rl.ladder_rows(runs())
        self.assertEqual([(r["tier"], r["step"], r["fix"], r["contender"], r["gc"]) for r in t], [
            ("100k", 1, "streams", "asyncio-streams", "default"),
            ("100k", 2, "protocol", "asyncio-protocol", "default"),
            ("100k", 3, "uvloop", "uvloop", "default"),
            ("100k", 4, "freeze", "uvloop", "freeze"),
            ("100k", 5, "gc-off", "uvloop", "off"),
            ("100k", 6, "pyext", "pyext", "freeze")])
        s = by_fix(t)
        # asyncio-streams: its one ok run (11.86 s over 100k); the two disturbed ones out
        self.assertEqual((s["streams"]["runs"], s["streams"]["ok"], s["streams"]["statuses"]),
                         (3, 1, "ok 1, disturbed 2"))
        self.assertEqual((s["streams"]["cpu_us"], s["streams"]["user_b"], s["streams"]["kernel_b"]),
                         (118.6, 5757, 7590))
        # asyncio-protocol: 52.3 and 65.5 us, 3306 and 3304 B
        self.assertEqual((s["protocol"]["cpu_us"], s["protocol"]["user_b"], s["protocol"]["kernel_b"]),
                         (58.9, 3305, 7590))
        self.assertEqual((s["freeze"]["cpu_us"], s["freeze"]["user_b"]), (12.7, 1315))
        # pyext: 6.4 and 7.2 us; kernel 7587 and 7590
        self.assertEqual((s["pyext"]["cpu_us"], s["pyext"]["user_b"], s["pyext"]["kernel_b"]),
                         (6.8, 108, 7588))

    def test_savings_against_the_step_before_or_the_nearest_with_an_ok_run(self):
        s = by_fix(rl.ladder_rows(runs()))
        self.assertEqual(s["streams"]["against"], "")
        self.assertNotIn("cpu_saved_us", s["streams"])
        self.assertEqual((s["protocol"]["against"], s["protocol"]["cpu_saved_us"],
                          s["protocol"]["user_saved_b"], s["protocol"]["kernel_saved_b"]),
                         ("streams", 59.7, 2452, 0))
        # uvloop gc=default has no ok run: freeze is compared with the Protocol step
        self.assertEqual((s["freeze"]["against"], s["freeze"]["cpu_saved_us"], s["freeze"]["user_saved_b"]),
                         ("protocol", 46.2, 1990))
        self.assertEqual((s["pyext"]["against"], s["pyext"]["cpu_saved_us"], s["pyext"]["user_saved_b"],
                          s["pyext"]["kernel_saved_b"]), ("freeze", 5.9, 1207, 2))

    def test_a_step_with_no_ok_run_says_so_and_has_no_figure(self):
        s = by_fix(rl.ladder_rows(runs()))
        for fix in ("uvloop", "gc-off"):
            r = s[fix]
            self.assertEqual((r["ok"], r["note"], r["against"]), (0, "no ok run (disturbed 3)", ""))
            for col in ("cpu_us", "user_b", "kernel_b"):
                self.assertIsNone(r[col], (fix, col))
        # with an ok run, the next step is compared with it again
        rows = runs()
        for r in rows:
            if r["contender"] == "uvloop" and r["py_gc"] == "default" and r["repeat"] == 1:
                r["status"] = "ok"
        s = by_fix(rl.ladder_rows(rows))
        self.assertEqual((s["uvloop"]["cpu_us"], s["uvloop"]["against"]), (11.7, "protocol"))
        self.assertEqual((s["freeze"]["against"], s["freeze"]["cpu_saved_us"]), ("uvloop", -1.0))

    def test_a_main_step_not_measured_is_said_a_side_step_left_out(self):
        rows = [r for r in runs() if r["py_gc"] != "off"
                and not (r["contender"] == "asyncio-protocol" and r["py_gc"] == "default")]
        s = by_fix(rl.ladder_rows(rows))
        self.assertNotIn("gc-off", s)
        self.assertEqual((s["protocol"]["note"], s["protocol"]["runs"]), ("not measured", 0))
        self.assertEqual(s["freeze"]["against"], "streams")
        # fewer than two steps: no ladder
        self.assertEqual(rl.ladder_rows([r for r in runs() if r["contender"] == "pyext"]), [])

    def test_a_suite_without_pythons_collector_untouched_is_no_ladder(self):
        # a plain suite (PY_GC unset: freeze) of uvloop and pyext holds two steps,
        # freeze and pyext; without a PY_GC=default step it is no ladder, and the
        # committed reference's report.md gets no ladder section
        plain = [r for r in runs() if r["py_gc"] == "freeze"]
        self.assertEqual({r["contender"] for r in plain}, {"uvloop", "pyext"})
        self.assertEqual(rl.ladder_rows(plain), [])
        ref = os.path.join(ROOT, "results", "reference")
        self.assertEqual(rl.report(ref, runstore.read_runs(ref), {}), "")

    def test_plotdata_writes_ladder_csv_and_the_plot_data_report_the_table(self):
        data = self.subdir("data")
        self.assertEqual(rl.plotdata(self.dir, runs(), data), ["ladder"])
        with open(os.path.join(self.dir, "ladder.csv"), newline="") as f:
            got = list(csv.DictReader(f))
        self.assertEqual(list(got[0]), rl.COLS)
        row = {r["fix"]: r for r in got}
        self.assertEqual((row["protocol"]["cpu_us"], row["protocol"]["cpu_saved_us"],
                          row["protocol"]["user_b"], row["protocol"]["statuses"]),
                         ("58.90", "59.70", "3305", "ok 2, disturbed 1"))
        self.assertEqual((row["uvloop"]["cpu_us"], row["uvloop"]["note"]), ("", "no ok run (disturbed 3)"))
        with open(os.path.join(data, "ladder.dat")) as f:
            lines = [ln for ln in f if not ln.startswith("#")]
        self.assertEqual(len(lines), 6)
        self.assertTrue(lines[2].startswith('"3 uvloop gc=default" "uvloop" NaN NaN NaN'), lines[2])
        self.assertIn('"58.9 µs (-59.7 µs vs 1)" "user 3305 B (-2452 B vs 1)"', lines[1])
        self.assertIn('"12.7 µs (-46.2 µs vs 2)"', lines[3])       # uvloop gc=default had no ok run
        md = rl.report(self.dir, runs(), {})
        self.assertIn("| 100k | 2 | streams -> Protocol (one class with __slots__) | asyncio-protocol gc=default "
                      "| ok 2, disturbed 1 | streams | 58.90 | 59.70 | 3305 | 2452 | 7590 | 0 |", md)
        self.assertIn("| no ok run (disturbed 3) |", md)
        # a directory without the ladder: nothing written
        other = self.subdir("other")
        self.assertEqual(rl.plotdata(other, [r for r in runs() if r["contender"] == "pyext"], data), [])
        self.assertFalse(os.path.exists(os.path.join(other, "ladder.csv")))
        self.assertEqual(rl.report(other, [], {}), "")

    def test_plotdata_replaces_a_fifo_or_symlink_in_ladder_csvs_place(self):
        # ladder.csv was opened for writing: make plot hung on a FIFO there, and
        # wrote the table through a symlink into its target
        data = self.subdir("data")
        path = os.path.join(self.dir, "ladder.csv")
        os.mkfifo(path)
        r = subprocess.run([sys.executable, "-c", "import sys, json; sys.path[:0] = sys.argv[1:3]; "
                            "import report_ladder as rl, test_report_ladder as t; "
                            "print(rl.plotdata(sys.argv[3], t.runs(), sys.argv[4]))",
                            os.path.join(ROOT, "harness", "lib"), os.path.dirname(os.path.abspath(__file__)),
                            self.dir, data], capture_output=True, text=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout), (0, "['ladder']\n"), r.stderr)
        self.assertTrue(os.path.isfile(path))
        os.remove(path)
        target = os.path.join(self.subdir("elsewhere"), "kept.txt")
        with open(target, "w") as f:
            f.write("kept\n")
        os.symlink(target, path)
        self.assertEqual(rl.plotdata(self.dir, runs(), data), ["ladder"])
        self.assertFalse(os.path.islink(path))
        with open(target) as f:
            self.assertEqual(f.read(), "kept\n")
        with open(path, newline="") as f:
            self.assertEqual(next(csv.reader(f)), rl.COLS)


if __name__ == "__main__":
    unittest.main()
