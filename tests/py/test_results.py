"""tests/py/test_results.py - the results bookkeeping (harness/lib/results.py,
runstore.py, cells.py, bootstrap.py, compare.py): run records in runs.jsonl,
runs.csv derived with nothing dropped, which runs count and how the dropped
ones are reported, the bootstrap intervals and `make compare`'s verdicts.
Stdlib only; no sockets, no timing.

    python3 -m unittest tests.py.test_results
"""
import contextlib
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import unittest

import util  # noqa: E402  (harness/lib on sys.path)
from util import ROOT  # noqa: E402,F401

import bootstrap  # noqa: E402
import cells  # noqa: E402
import compare  # noqa: E402
import results  # noqa: E402
import runstore  # noqa: E402


def run_main(*args):
    """results.py ARGS in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = results.main(["results.py"] + list(args))
    return rc, out.getvalue(), err.getvalue()


def read_csv(d):
    with open(os.path.join(d, "runs.csv"), newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


class TmpDir(util.TmpDir):
    """util.TmpDir, and runs recorded in it (test_compare, test_plots)."""
    def add(self, d, contender="c", tier=2000, repeat=1, status="ok", **kw):
        """One run recorded the way bench.sh does: a result.json, then `row`."""
        rec = dict(kw)
        rec.update(contender=contender, tier=tier, status=status)
        path = os.path.join(d, "result-%d.json" % len(os.listdir(d)))
        with open(path, "w") as f:
            json.dump(rec, f)
        rc, _, err = run_main("row", d, path, "repeat=%d" % repeat,
                              "tier_label=%s" % cells.label_of(tier))
        self.assertEqual(rc, 0, err)


class TestRecords(TmpDir):
    def test_unknown_keys_are_kept_in_jsonl_and_csv(self):
        d = self.subdir("run")
        rec = {"contender": "c", "tier": 2000, "status": "ok", "t_accept_s": 1.5,
               "zeta_extra": "z", "alpha_extra": 7, "client": {"established": 2000, "failures": {}}}
        path = os.path.join(self.dir, "result.json")
        with open(path, "w") as f:
            json.dump(rec, f)
        rc, _, err = run_main("row", d, path, "repeat=1", "tier_label=2k", "note=")
        self.assertEqual(rc, 0, err)
        [stored] = runstore.read_runs(d)
        self.assertEqual(stored["zeta_extra"], "z")
        self.assertEqual(stored["client"], {"established": 2000, "failures": {}})
        self.assertEqual(stored["repeat"], 1)           # typed override
        self.assertIsNone(stored["note"])
        header, rows = read_csv(d)
        self.assertEqual(header[:len(runstore.COLUMNS)], runstore.COLUMNS)
        self.assertEqual(header[len(runstore.COLUMNS):], ["alpha_extra", "client", "zeta_extra"])
        self.assertEqual(rows[0]["alpha_extra"], "7")
        self.assertEqual(json.loads(rows[0]["client"]), rec["client"])
        self.assertEqual(rows[0]["t_accept_s"], "1.5")
        self.assertEqual(rows[0]["note"], "")

    def test_overrides_win_and_a_run_without_record_gets_a_row(self):
        d = self.subdir("run")
        self.add(d, status="ok", note="from record")
        rc, _, err = run_main("row", d, "-", "contender=uvloop", "tier=2000",
                              "status=unavailable", "note=uvloop not importable")
        self.assertEqual(rc, 0, err)
        path = os.path.join(self.dir, "r.json")
        with open(path, "w") as f:
            json.dump({"contender": "c", "tier": 2000, "status": "ok"}, f)
        run_main("row", d, path, "status=interrupted")
        _, rows = read_csv(d)
        self.assertEqual([r["status"] for r in rows], ["ok", "unavailable", "interrupted"])
        self.assertEqual(rows[1]["note"], "uvloop not importable")
        self.assertEqual(rows[1]["contender"], "uvloop")

    def test_unreadable_record_still_gives_a_row_saying_why(self):
        d = self.subdir("run")
        path = os.path.join(self.dir, "half.json")
        with open(path, "w") as f:
            f.write('{"contender": "c", "tier"')
        rc, _, err = run_main("row", d, path, "contender=c", "tier=2000", "status=harness-error")
        self.assertEqual(rc, 0)
        self.assertIn("not valid JSON", err)
        [r] = runstore.read_runs(d)
        self.assertEqual(r["status"], "harness-error")
        self.assertIn("not valid JSON", r["note"])

    def test_malformed_pair_is_a_usage_error(self):
        d = self.subdir("run")
        for bad in ("novalue", "=x", "bad key=1"):
            rc, _, err = run_main("row", d, "-", bad)
            self.assertEqual(rc, 2, bad)
            self.assertIn("key=value", err)
        self.assertFalse(os.path.exists(os.path.join(d, "runs.jsonl")))
        self.assertEqual(run_main("row", d)[0], 2)
        self.assertEqual(run_main("bogus")[0], 2)
        # an override that is no finite number is refused, not a row with a null
        for bad in ("t_accept_s=inf", "server_cpu_connect_s=1.0e999", "user_bytes_per_conn=nan"):
            rc, _, err = run_main("row", d, "-", "contender=c", "tier=10", bad)
            self.assertEqual(rc, 2, bad)
            self.assertIn("is not a figure", err)
        self.assertFalse(os.path.exists(os.path.join(d, "runs.jsonl")))

    def test_a_row_its_readers_would_refuse_is_a_usage_error_and_nothing_written(self):
        # appended, it made every later summary, plot and compare of the directory fail
        d = self.subdir("run")
        nan = os.path.join(self.dir, "nan.json")
        with open(nan, "w") as f:
            f.write('{"contender": "c", "tier": 2000, "t_accept_s": NaN}')
        for args, said in ((("-", "contender=c", "tier=abc"), "tier 'abc' is not a number"),
                           (("-", "contender=c"), "no tier"),
                           (("-", "tier=2000"), "no contender"),
                           (("-", "contender=c", "tier=0", "--kind", "skipped-memory"), "tier 0 is not"),
                           ((nan,), "%s: t_accept_s nan is not a figure" % nan)):
            rc, out, err = run_main("row", d, *args)
            self.assertEqual((rc, out), (2, ""), (args, err))
            self.assertIn(said, err, args)
            self.assertFalse(os.path.exists(os.path.join(d, "runs.jsonl")), args)
            self.assertFalse(os.path.exists(os.path.join(d, "runs.csv")), args)

    def test_csv_is_derived_from_jsonl(self):
        d = self.subdir("run")
        recs = [{"contender": "c", "tier": 2000, "status": "ok", "t_accept_s": 1.25, "x_new": True},
                {"contender": "pyext", "tier": 2000, "status": "disturbed", "flags": None,
                 "disturb_cause": "outside 12% (burn)"}]
        with open(os.path.join(d, "runs.jsonl"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in recs))
        rc, _, err = run_main("csv", d)
        self.assertEqual(rc, 0, err)
        header, rows = read_csv(d)
        self.assertEqual(header, runstore.COLUMNS + ["x_new"])
        self.assertEqual(rows[0]["x_new"], "true")
        self.assertEqual(rows[1]["disturb_cause"], "outside 12% (burn)")
        self.assertEqual(rows[1]["flags"], "")
        # readers take the typed records from runs.jsonl when it is there ...
        self.assertEqual(runstore.read_runs(d)[0]["t_accept_s"], 1.25)
        # ... and runs.csv alone otherwise (the committed reference directories)
        os.remove(os.path.join(d, "runs.jsonl"))
        self.assertEqual(runstore.read_runs(d)[0]["t_accept_s"], "1.25")

    def test_corrupt_jsonl_line_is_an_error_naming_the_line(self):
        d = self.subdir("run")
        with open(os.path.join(d, "runs.jsonl"), "w") as f:
            f.write('{"contender": "c", "tier": 1, "status": "ok"}\n[1]\n')
        rc, _, err = run_main("summary", d)
        self.assertEqual(rc, 1)
        self.assertIn("line 2", err)

    def test_a_fifo_in_place_of_runs_or_meta_is_an_error_not_a_hang(self):
        # open() of a FIFO blocks until a writer comes: summary and compare hung for ever
        def results_py(*args):
            return subprocess.run([sys.executable, os.path.join(ROOT, "harness/lib/results.py")] + list(args),
                                  capture_output=True, text=True, timeout=30)
        d, e = self.subdir("run"), self.subdir("other")
        os.mkfifo(os.path.join(d, "runs.jsonl"))
        r = results_py("summary", d)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a regular file", r.stderr)
        os.unlink(os.path.join(d, "runs.jsonl"))
        self.add(d, "c", 2000, 1, "ok")
        self.add(e, "c", 2000, 1, "ok")
        os.mkfifo(os.path.join(d, "meta.json"))
        r = results_py("compare", e, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("A and B have no machine fingerprint", r.stdout)
        r = results_py("machine", d)                      # (machine hung in open())
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a regular file", r.stderr)
        # meta writes on beside FIFOs in place of its optional inputs
        for name in ("calibration.json", "hosts-meta.json"):
            os.mkfifo(os.path.join(e, name))
        # a run's sysctl.txt (and one a FIFO), so that the runs' profiles are
        # looked up in their result.json, a FIFO
        for rid in ("c-2k-1", "c-2k-2"):
            os.makedirs(os.path.join(e, "runs", rid))
        os.mkfifo(os.path.join(e, "runs", "c-2k-1", "result.json"))
        with open(os.path.join(e, "runs", "c-2k-1", "sysctl.txt"), "w") as f:
            f.write("net.core.somaxconn=4096\n")
        os.mkfifo(os.path.join(e, "runs", "c-2k-2", "sysctl.txt"))
        r = results_py("meta", e)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_report_md_replaces_a_fifo_or_symlink_in_its_place(self):
        # report opened report.md for writing: a FIFO there hung plot.sh for ever,
        # a symlink there was written through (its target replaced by the report)
        d = self.subdir("run")
        self.add(d, "c", 2000, 1, "ok")
        rep = os.path.join(d, "report.md")
        os.mkfifo(rep)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "harness/lib/results.py"), "report", d],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(rep))
        os.remove(rep)
        target = os.path.join(self.dir, "elsewhere.txt")
        with open(target, "w") as f:
            f.write("kept\n")
        os.symlink(target, rep)
        rc, _, err = run_main("report", d)
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.islink(rep))
        with open(target) as f:
            self.assertEqual(f.read(), "kept\n")
        with open(rep) as f:
            self.assertIn("# c1m benchmark: run", f.read())
        self.assertEqual([n for n in os.listdir(d) if n.startswith(".tmp-")], [])

    def test_runs_csv_is_replaced_never_written_through_a_planted_tmp(self):
        # runs.csv was written to runs.csv.tmp, then renamed: a symlink there was
        # written through (its target replaced by the table), a FIFO hung `row`
        d = self.subdir("run")
        target = os.path.join(self.dir, "elsewhere.txt")
        with open(target, "w") as f:
            f.write("kept\n")
        os.symlink(target, os.path.join(d, "runs.csv.tmp"))
        self.add(d, "c", 2000, 1, "ok")
        with open(target) as f:
            self.assertEqual(f.read(), "kept\n")
        self.assertEqual(read_csv(d)[1][0]["contender"], "c")

    def test_a_memory_figure_that_is_none_reads_as_unknown_in_the_report(self):
        d = self.subdir("run")
        self.add(d, "c", 2000, 1, "ok")
        for bad in ("x", [1], float("inf")):
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump({"mem_total_kib": bad}, f)
            rc, _, err = run_main("report", d)
            self.assertEqual(rc, 0, (bad, err))
            with open(os.path.join(d, "report.md")) as f:
                self.assertIn("| memory | ? |", f.read())

    def test_a_jsonl_line_nested_past_the_parser_is_an_error_naming_the_line(self):
        # json's RecursionError is no ValueError: summary, csv and compare died with a traceback
        d = self.subdir("run")
        with open(os.path.join(d, "runs.jsonl"), "w") as f:
            f.write('{"contender": "c", "tier": 1, "status": "ok"}\n' + "[" * 100000 + "\n")
        for cmd in ("summary", "csv"):
            rc, _, err = run_main(cmd, d)
            self.assertEqual(rc, 1, err)
            self.assertIn("line 2 is not valid JSON", err)

    def test_a_record_that_is_no_run_is_an_error_naming_the_file_and_line(self):
        # a foreign runs.jsonl (no contender or tier, a tier that is no count) or
        # bytes that are not text: exit 1 naming where, never KeyError's "'tier'"
        d = self.subdir("run")
        good = '{"contender": "c", "tier": 2000, "status": "ok"}\n'
        for bad, said in (('{"name": "x", "value": 3}', "line 2: no contender"),
                          ('{"contender": "c", "status": "ok"}', "line 2: no tier"),
                          ('{"contender": "c", "tier": "2k"}', "line 2: tier '2k' is not"),
                          ('{"contender": "c", "tier": 0}', "line 2: tier 0 is not"),
                          ('{"contender": "c", "tier": null}', "line 2: no tier"),
                          ('{"contender": 7, "tier": 2000}', "line 2: no contender"),
                          # JSON's Infinity, NaN, a 400-digit integer: no figure (they raised
                          # AttributeError in the bootstrap, OverflowError in the summary)
                          ('{"contender": "c", "tier": 2000, "t_accept_s": Infinity}',
                           "line 2: t_accept_s inf is not a figure"),
                          ('{"contender": "c", "tier": 2000, "t_accept_s": NaN}',
                           "line 2: t_accept_s nan is not a figure"),
                          ('{"contender": "c", "tier": 2000, "server_rss_kib": 1%s}' % ("0" * 400),
                           "line 2: server_rss_kib an integer of 1329 bits is not a figure"),
                          # a float past that bound (compare printed a 300-digit median and ratio)
                          ('{"contender": "c", "tier": 2000, "t_accept_s": 1e300}',
                           "line 2: t_accept_s 1e+300 is not a figure"),
                          ('{"contender": "c", "tier": 2000, "t_accept_s": -1e19}',
                           "line 2: t_accept_s -1e+19 is not a figure"),
                          # text the readers take as a number (cells.num: float()): compare
                          # died with AttributeError in the bootstrap, summary showed "inf"
                          ('{"contender": "c", "tier": 2000, "t_accept_s": "inf"}',
                           "line 2: t_accept_s inf is not a figure"),
                          ('{"contender": "c", "tier": 2000, "t_accept_s": "1e400"}',
                           "line 2: t_accept_s 1e400 is not a figure"),
                          ("\udcff", "not UTF-8 text")):
            with open(os.path.join(d, "runs.jsonl"), "w", errors="surrogateescape") as f:
                f.write(good + bad + "\n")
            for cmd in ("summary", "report", "csv", "compare"):
                args = (d, d) if cmd == "compare" else (d,)
                rc, out, err = run_main(cmd, *args)
                self.assertEqual((rc, out), (1, ""), (bad, cmd, err))
                self.assertIn(os.path.join(d, "runs.jsonl"), err, (bad, cmd))
                self.assertIn(said, err, (bad, cmd))
        # runs.csv alone (older directories): the row named
        os.remove(os.path.join(d, "runs.jsonl"))
        with open(os.path.join(d, "runs.csv"), "w") as f:
            f.write("contender,tier,status\nc,2000,ok\nc,,ok\n")
        rc, _, err = run_main("summary", d)
        self.assertEqual(rc, 1)
        self.assertIn("runs.csv row 2: no tier", err)
        # its text alike: "inf", "Infinity", "nan", "1e400" (capacity: "N = 0 connections
        # fit"; "-inf": "N = 2,213,580,401"); a text column's "inf" is text
        for bad in ("inf", "Infinity", "nan", "1e400", "-inf", "1e300"):
            with open(os.path.join(d, "runs.csv"), "w") as f:
                f.write("contender,tier,status,note,kernel_bytes_per_conn\n"
                        "c,2000,ok,,7556\nc,2000,ok,,%s\n" % bad)
            for cmd in ("summary", "compare"):
                args = (d, d) if cmd == "compare" else (d,)
                rc, out, err = run_main(cmd, *args)
                self.assertEqual((rc, out), (1, ""), (bad, cmd, err))
                self.assertIn("runs.csv row 2: kernel_bytes_per_conn %s is not a figure" % bad, err)
        with open(os.path.join(d, "runs.csv"), "w") as f:
            f.write("contender,tier,status,note,kernel_bytes_per_conn\nc,2000,ok,inf,7556\n")
        rc, out, err = run_main("summary", d)
        self.assertEqual(rc, 0, err)

    def test_a_negative_figure_no_run_records_is_an_error_naming_the_line(self):
        # kernel_bytes_per_conn -8000 in an ok run: the summary showed it and
        # capacity counted it 0 ("N = 11,396,226 connections fit"); accepted -5:
        # "-76644200 processes"
        d = self.subdir("run")
        jl, csvp = os.path.join(d, "runs.jsonl"), os.path.join(d, "runs.csv")
        good = '{"contender": "c", "tier": 2000, "status": "ok", "kernel_bytes_per_conn": 7556}\n'
        for bad, said in (('{"contender": "c", "tier": 2000, "status": "ok", "kernel_bytes_per_conn": -8000}',
                           "line 2: kernel_bytes_per_conn -8000 is negative"),
                          ('{"contender": "c", "tier": 2000, "status": "ok", "t_accept_s": -0.5}',
                           "line 2: t_accept_s -0.5 is negative"),
                          ('{"contender": "c", "tier": 2000, "status": "suspect", "flags": "", '
                           '"server_pss_idle_kib": -1}', "line 2: server_pss_idle_kib -1 is negative"),
                          ('{"contender": "c", "tier": 2000, "status": "ok", "accepted": -5}',
                           "line 2: accepted -5 is negative"),
                          ('{"contender": "c", "tier": 2000, "status": "suspect", "flags": "x", '
                           '"accepted": -5}', "line 2: accepted -5 is negative")):
            with open(jl, "w") as f:
                f.write(good + bad + "\n")
            for cmd in ("summary", "report", "compare"):
                args = (d, d) if cmd == "compare" else (d,)
                rc, out, err = run_main(cmd, *args)
                self.assertEqual((rc, out), (1, ""), (bad, cmd, err))
                self.assertIn(jl + " " + said, err, (bad, cmd))
        # runs.csv's text alike
        os.remove(jl)
        with open(csvp, "w") as f:
            f.write("contender,tier,status,kernel_bytes_per_conn\nc,2000,ok,-8000\n")
        rc, _, err = run_main("summary", d)
        self.assertEqual(rc, 1, err)
        self.assertIn("runs.csv row 1: kernel_bytes_per_conn -8000 is negative", err)
        # what the harness writes stays readable: a negative figure lib/judge.py
        # flagged (the run suspect), a negative count of no figure
        os.remove(csvp)
        with open(jl, "w") as f:
            f.write(good + '{"contender": "c", "tier": 2000, "status": "suspect", '
                    '"flags": "negative:user_bytes_per_conn", "user_bytes_per_conn": -3, '
                    '"server_workers": -1, "server_exit": -9}\n')
        rc, out, err = run_main("summary", d)
        self.assertEqual(rc, 0, err)
        self.assertIn("suspect 1/2", out)

    def test_a_runs_csv_field_over_the_csv_limit_is_an_error_naming_the_file_and_line(self):
        # an open quote then 200,000 characters: csv.Error's traceback in every reader
        d = self.subdir("run")
        path = os.path.join(d, "runs.csv")
        with open(path, "w") as f:
            f.write("contender,tier,status\nc,2000,ok\n\"%s\n" % ("a" * 200000))
        said = "%s line 3: field larger than field limit" % path
        for cmd in ("summary", "report", "compare"):
            args = (d, d) if cmd == "compare" else (d,)
            rc, out, err = run_main(cmd, *args)
            self.assertEqual((rc, out), (1, ""), (cmd, err))
            self.assertIn(said, err, cmd)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(compare.main([d, d]), 1)       # compare.py run on its own
        self.assertIn(said, err.getvalue())


    def test_a_runs_csv_cut_short_is_an_error_not_a_figure(self):
        # a copy that stopped mid-row: its cut number read as a figure ("2.661" as
        # "2.6", the columns after it "-"), exit 0
        d = self.subdir("run")
        path = os.path.join(d, "runs.csv")
        head = "contender,tier,status,t_accept_s,user_bytes_per_conn\nc,2000,ok,2.661,19\n"
        for text, said in ((head + "c,2000,ok,2.6", "runs.csv is cut short: its last line has no newline"),
                           (head + "c,2000,ok,2.6\n", "runs.csv row 2: 4 fields, its header 5"),
                           (head + "c,2000,ok,2.6,19,7\n", "runs.csv row 2: 6 fields, its header 5")):
            with open(path, "w") as f:
                f.write(text)
            for cmd in ("summary", "report", "compare"):
                args = (d, d) if cmd == "compare" else (d,)
                rc, out, err = run_main(cmd, *args)
                self.assertEqual((rc, out), (1, ""), (text, cmd, err))
                self.assertIn(said, err, (text, cmd))
        with open(path, "w") as f:
            f.write(head + "c,2000,ok,2.7,19\n")
        rc, out, err = run_main("summary", d)
        self.assertEqual(rc, 0, err)
        self.assertIn("2.68 (2.66-2.70)", out)


class TestRampCurve(TmpDir):
    """results.py row writes the run's ramp curve, OUT/ramp/ID.csv, from its
    counter samples (runs/ID/ramp.csv), as bench.sh's awk did."""
    SAMPLES = ("unix_ms,open,accepted,closed\n"
               "999700,0,0,0\n"          # 0.3 s before the client's start: left out
               "999850,1,2,0\n"          # 0.15 s before: shown at 0
               "oops,5,5,0\n"            # no time: left out
               "1000123,10,12,0\n"
               "1001500,x,40\n"          # a field that is no number reads 0
               "1002499,50,50,0\n"       # within 1 s after the ramp's end (1.5 s)
               "1002600,50,50,0\n"       # past it: the end of the curve
               "1003000,50,50,0\n")

    def record(self, **kw):
        d = self.subdir("run")
        os.makedirs(os.path.join(d, "runs", "c-2k-1"))
        with open(os.path.join(d, "runs", "c-2k-1", "ramp.csv"), "w") as f:
            f.write(self.SAMPLES)
        rec = {"contender": "c", "tier": 2000, "status": "ok"}
        rec.update(kw)
        path = os.path.join(self.dir, "result.json")
        with open(path, "w") as f:
            json.dump(rec, f)
        rc, _, err = run_main("row", d, path, "run_dir=runs/c-2k-1")
        self.assertEqual(rc, 0, err)
        [stored] = runstore.read_runs(d)
        return d, stored

    def test_seconds_since_the_client_start_until_a_second_after_the_ramp(self):
        d, stored = self.record(client_start_unix_ms=1000000, t_accept_s=1.5)
        self.assertEqual(stored["ramp_file"], "ramp/c-2k-1.csv")
        with open(os.path.join(d, "ramp", "c-2k-1.csv")) as f:
            self.assertEqual(f.read(), "seconds,accepted,open\n0.00,2,1\n0.12,12,10\n"
                                       "1.50,40,0\n2.50,50,50\n")

    def test_without_a_ramp_end_every_sample_after_the_start(self):
        d, _ = self.record(client_start_unix_ms=1000000)
        with open(os.path.join(d, "ramp", "c-2k-1.csv")) as f:
            self.assertEqual(f.read().splitlines()[-2:], ["2.60,50,50", "3.00,50,50"])

    def test_a_row_of_a_kind_with_a_record_has_its_curve_one_without_none(self):
        # bench.sh: driver-failed with the run's result.json (a curve, as the
        # awk wrote from the record it had loaded); a row with no record (-) none
        d, _ = self.record(client_start_unix_ms=1000000, t_accept_s=1.5)
        path = os.path.join(self.dir, "result.json")
        rc, out, err = run_main("row", d, path, "--kind", "driver-failed", "run_dir=runs/c-2k-1")
        self.assertEqual(rc, 0, err)
        rc, out, err = run_main("row", d, "-", "contender=c", "tier=2000", "status=interrupted",
                                "run_dir=runs/c-2k-1")
        self.assertEqual(rc, 0, err)
        self.assertEqual([r["ramp_file"] for r in runstore.read_runs(d)],
                         ["ramp/c-2k-1.csv", "ramp/c-2k-1.csv", ""])

    def test_a_client_start_past_a_floats_range_is_refused_not_a_traceback(self):
        # a 400-digit integer (JSON reads it): float() raised OverflowError out
        # of cells.num, a traceback; now no curve, and the readers' check refuses it
        d = self.subdir("run")
        os.makedirs(os.path.join(d, "runs", "c-2k-1"))
        with open(os.path.join(d, "runs", "c-2k-1", "ramp.csv"), "w") as f:
            f.write(self.SAMPLES)
        path = os.path.join(self.dir, "result.json")
        with open(path, "w") as f:
            f.write('{"contender": "c", "tier": 2000, "client_start_unix_ms": 1%s}' % ("0" * 400))
        rc, _, err = run_main("row", d, path, "run_dir=runs/c-2k-1")
        self.assertEqual(rc, 2, err)
        self.assertIn("client_start_unix_ms an integer of", err)
        self.assertFalse(os.path.exists(os.path.join(d, "runs.jsonl")))

    def test_no_client_start_no_curve(self):
        d, stored = self.record(t_accept_s=1.5)
        self.assertEqual(stored["ramp_file"], "")
        self.assertFalse(os.path.exists(os.path.join(d, "ramp")))


class TestMeta(TmpDir):
    def test_meta_reads_the_runs_sysctl_profiles_and_worker_counts(self):
        d = self.subdir("run")
        for rid in ("c-2k-1", "pyext-2k-1"):
            os.makedirs(os.path.join(d, "runs", rid))
            with open(os.path.join(d, "runs", rid, "sysctl.txt"), "w") as f:
                f.write("net.core.somaxconn=65535\nnet.ipv4.ip_local_port_range=10000 65535\n")
        self.add(d, "c", 2000, 1, "ok", server_workers=3, client_workers=2)
        rc, _, err = run_main("meta", d, "command=make bench", "tiers=2k")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["sysctl_profile"]["net.ipv4.ip_local_port_range"], "10000 65535")
        self.assertIs(meta["sysctl_profile_identical"], True)
        self.assertEqual(meta["sysctl_profile_runs"], 2)
        self.assertEqual(meta["settings"]["tiers"], "2k")
        self.assertEqual(meta["worker_counts"], [{"contender": "c", "tier": 2000, "repeat": 1,
                                                  "server_workers": 3, "client_workers": 2}])


    def test_meta_json_has_the_mode_the_umask_gives_not_0600(self):
        # write_json's temporary file kept mkstemp's 0600: root's make bench wrote
        # meta.json that a user's make compare and capacity could not read, and
        # read as absent ("machine reserve 0", no fingerprint): other figures
        d = self.subdir("run")
        self.add(d, "c", 2000, 1, "ok")
        old = os.umask(0o022)
        try:
            for mask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
                os.umask(mask)
                rc, _, err = run_main("meta", d, "command=make bench")
                self.assertEqual(rc, 0, err)
                self.assertEqual(os.stat(os.path.join(d, "meta.json")).st_mode & 0o777, mode, oct(mask))
                self.assertEqual(os.umask(mask), mask)      # (left as it was)
        finally:
            os.umask(old)


class TestDroppedRuns(TmpDir):
    def mixed(self):
        d = self.subdir("run")
        for rep, t in enumerate((1.0, 1.2, 1.1), 1):
            self.add(d, "c", 2000, rep, "ok", t_accept_s=t, server_cpu_connect_s=t / 2)
        self.add(d, "c", 2000, 4, "disturbed", t_accept_s=9.0, disturb_cause="outside 30%: burn",
                 health="target=2000 server=2000 sockets=2000 client=2000")  # healthy: not a cause
        self.add(d, "c", 2000, 5, "server-died", t_accept_s=0.9, health="worker 2 died")
        self.add(d, "pyext", 2000, 1, "disturbed", t_accept_s=3.0, disturb_cause="steal 8%")
        self.add(d, "pyext", 2000, 2, "disturbed", t_accept_s=5.0, disturb_cause="ksoftirqd 9%")
        self.add(d, "uvloop", 2000, 1, "inconsistent", t_accept_s=2.0,
                 health="counters 2000, sockstat 1990, client 2000")
        return d

    def test_cells_use_ok_runs_and_count_the_dropped(self):
        rows = runstore.read_runs(self.mixed())
        c, py, uv = cells.cells(rows)
        self.assertEqual(c.counts, {"ok": 3, "disturbed": 1, "server-died": 1})
        self.assertEqual(c.status_text(), "ok 3/5, disturbed 1/5, server-died 1/5")
        self.assertEqual(c.stat("t_accept_s")[0], 1.1)         # the 9.0 and 0.9 runs dropped
        self.assertFalse(c.all_disturbed)
        self.assertTrue(py.all_disturbed)
        self.assertEqual(py.stat("t_accept_s")[0], 4.0)        # disturbed median, marked
        self.assertIsNone(uv.stat("t_accept_s"))               # nothing usable
        lines = cells.dropped_text([c, py, uv])
        self.assertEqual(lines[0], "c 2k: 2 of 5 dropped (disturbed 1, server-died 1): "
                                   "outside 30%: burn; worker 2 died")
        self.assertEqual(lines[1], "pyext 2k: 2 of 2 dropped (disturbed 2) " + cells.DAGGER +
                         ": steal 8%; ksoftirqd 9%")
        self.assertEqual(lines[2], "uvloop 2k: 1 of 1 dropped (inconsistent 1): "
                                   "counters 2000, sockstat 1990, client 2000")

    def test_a_flagged_disturbed_run_never_stands_in(self):
        d = self.subdir("run")
        self.add(d, "pyext", 2000, 1, "disturbed", t_accept_s=3.0, disturb_cause="steal 8%")
        self.add(d, "pyext", 2000, 2, "disturbed", t_accept_s=50.0, disturb_cause="burn",
                 flags="negative:user_bytes_per_conn")
        self.add(d, "c", 2000, 1, "disturbed", t_accept_s=9.0, disturb_cause="burn",
                 flags="disturbance-unmeasured:hold")
        c, py = sorted(cells.cells(runstore.read_runs(d)), key=lambda x: x.contender)
        self.assertEqual(py.stat("t_accept_s")[0], 3.0)        # the flagged run left out
        self.assertTrue(py.all_disturbed)
        self.assertFalse(c.all_disturbed)                       # its only run is flagged
        self.assertIsNone(c.stat("t_accept_s"))

    def test_summary_marks_disturbed_medians_and_says_what_was_dropped(self):
        rc, out, _ = run_main("summary", self.mixed())
        self.assertEqual(rc, 0)
        self.assertIn("4.00 (3.00-5.00)" + cells.DAGGER, out)
        self.assertIn(cells.DAGGER + " all runs disturbed", out)
        self.assertIn("runs dropped from the figures:\n  c 2k: 2 of 5 dropped", out)
        self.assertIn("1.10 [1.00-1.20]", out)                  # 3 ok runs: an interval

    def test_report_lists_every_non_ok_run_with_its_cause(self):
        d = self.mixed()
        self.assertEqual(run_main("report", d)[0], 0)
        with open(os.path.join(d, "report.md")) as f:
            md = f.read()
        section = md.split("## Runs dropped from the figures (5 of 8)")[1].split("## Runs\n")[0]
        for cause in ("outside 30%: burn", "worker 2 died", "steal 8%", "ksoftirqd 9%",
                      "counters 2000, sockstat 1990, client 2000"):
            self.assertIn(cause, section)
        self.assertEqual(section.count("| c | 2k |"), 2)
        self.assertIn(cells.DAGGER + " all runs disturbed", md)
        self.assertNotIn("target=2000 server=2000", section)

    def test_cause_follows_the_status(self):
        r = {"status": "suspect", "flags": "negative:user_bytes_per_conn", "health": "fine",
             "note": "server exited 1"}
        self.assertEqual(cells.cause_of(r), "negative:user_bytes_per_conn; server exited 1")
        self.assertEqual(cells.cause_of({"status": "timeout", "note": "ramp > 900 s",
                                         "health": "x"}), "ramp > 900 s")
        self.assertEqual(cells.cause_of({"status": "crashed", "health": "worker 3 died"}),
                         "worker 3 died")
        self.assertEqual(cells.cause_of({"status": "ok"}), "")
        # a disturbed run with flags never stands in: the flags say why
        self.assertEqual(cells.cause_of({"status": "disturbed", "disturb_cause": "PID 1 9%",
                                         "flags": "unmeasured:slab"}),
                         "PID 1 9%; flags unmeasured:slab")

    def test_plot_data_keeps_disturbed_only_tiers_apart(self):
        d = self.mixed()
        data = os.path.join(d, "plots", "data")
        rc, out, _ = run_main("plotdata", d, data)
        self.assertEqual(rc, 0)
        self.assertIn("tiers", out)
        self.assertTrue(os.path.exists(os.path.join(data, "tiers-c.dat")))
        self.assertFalse(os.path.exists(os.path.join(data, "tiers-pyext.dat")))
        self.assertTrue(os.path.exists(os.path.join(data, "tiers-pyext-disturbed.dat")))
        with open(os.path.join(data, "vars.gp")) as f:
            v = f.read()
        self.assertIn("contenders = 'c'", v)
        self.assertIn("disturbed = 'pyext'", v)
        self.assertIn("5 of 8 runs dropped (disturbed 3, inconsistent 1, server-died 1)", v)
        self.assertIn("median of 2-3 runs, bars: min-max of the runs", v)
        # bytes: c at its largest ok tier; pyext (never ok) from its disturbed runs, marked
        with open(os.path.join(data, "bytes.dat")) as f:
            bars = [ln.split()[0] for ln in f if not ln.startswith("#")]
        self.assertEqual(bars, ["c", "pyext" + cells.DAGGER])


    def test_plot_data_leaves_unmeasured_figures_out(self):
        # a cell whose runs have a time but no RSS or CPU figure: NaN (gnuplot
        # skips the point), not a 0 drawn as if measured
        d = self.subdir("unmeasured")
        self.add(d, t_accept_s=1.5, server_rss_kib=2048, server_cpu_connect_s=0.5)
        self.add(d, tier=4000, t_accept_s=3.0)
        data = os.path.join(d, "plots", "data")
        rc, _, err = run_main("plotdata", d, data)
        self.assertEqual(rc, 0, err)
        with open(os.path.join(data, "tiers-c.dat")) as f:
            lines = [ln.split() for ln in f if not ln.startswith("#")]
        # RSS in MiB, CPU in microseconds per connection (0.5 s over 2000)
        self.assertEqual(lines[0][4:10], ["2.000"] * 3 + ["250.000"] * 3)
        self.assertEqual(lines[1][:2], ["4000", "3.0000"])
        self.assertEqual(lines[1][4:10], ["NaN"] * 6)


class TestBootstrap(unittest.TestCase):
    SAMPLES = [[1.0, 1.2, 1.1], [5, 1, 4, 2, 3, 9, 7], [0.3, 0.31, 0.29, 0.5, 0.28],
               [10.0, 10.0, 10.5, 11.0]]

    def test_deterministic(self):
        for s in self.SAMPLES:
            self.assertEqual(bootstrap.median_ci(s), bootstrap.median_ci(list(s)))
        self.assertEqual(bootstrap.ratio_ci([1, 2, 3], [2, 3, 5]),
                         bootstrap.ratio_ci([1, 2, 3], [2, 3, 5]))

    def test_interval_contains_the_median_within_the_data(self):
        for s in self.SAMPLES:
            med, lo, hi = bootstrap.median_ci(s)
            self.assertEqual(med, statistics.median(s))
            self.assertTrue(min(s) <= lo <= med <= hi <= max(s), (s, lo, med, hi))

    def test_three_runs_give_their_range_and_more_runs_narrow_it(self):
        self.assertEqual(bootstrap.median_ci([1.0, 1.2, 1.1]), (1.1, 1.0, 1.2))
        wide = [1.0, 5.0] + [3.0] * 30
        med, lo, hi = bootstrap.median_ci(wide)
        self.assertEqual((med, lo, hi), (3.0, 3.0, 3.0))

    def test_degenerate_data(self):
        self.assertEqual(bootstrap.median_ci([7, 7, 7]), (7, 7, 7))
        self.assertEqual(bootstrap.median_ci([2.5]), (2.5, 2.5, 2.5))
        self.assertRaises(ValueError, bootstrap.median_ci, [])
        self.assertIsNone(bootstrap.spread([None, None]))
        self.assertEqual(bootstrap.spread([3.0, 1.0]), (2.0, 1.0, 3.0, "minmax"))
        self.assertEqual(bootstrap.spread([3.0, 1.0, None, 2.0])[3], "ci")
        self.assertEqual(bootstrap.ratio_ci([2, 2, 2], [3, 3, 3]), (1.5, 1.5, 1.5))
        self.assertRaises(ValueError, bootstrap.ratio_ci, [0, 1, 2], [1, 2, 3])

    def test_verdicts(self):
        self.assertEqual(bootstrap.verdict([1.0, 1.01, 0.99], [2.0, 2.02, 1.98])[3],
                         "slower (significant)")
        self.assertEqual(bootstrap.verdict([2.0, 2.02, 1.98], [1.0, 1.01, 0.99])[3],
                         "faster (significant)")
        self.assertEqual(bootstrap.verdict([1.0, 1.2, 0.9], [1.05, 0.95, 1.15])[3], "not significant")
        self.assertEqual(bootstrap.verdict([1.0, 1.1], [2.0, 2.1, 2.2])[3], "not enough runs")
        # the interval excludes 1.0 but the shift is inside one side's spread
        a, b = [1.0] * 7, [1.1] * 5 + [0.1, 3.0]
        ratio, lo, hi, v = bootstrap.verdict(a, b)
        self.assertGreater(lo, 1.0)
        self.assertEqual(v, "not significant")


class TestCompare(TmpDir):
    def make(self, name, times):
        d = self.subdir(name)
        for c, ts in times.items():
            for rep, t in enumerate(ts, 1):
                self.add(d, c, 100000, rep, "ok", t_accept_s=t, server_cpu_connect_s=t / 3,
                         user_bytes_per_conn=100)
        return d

    def compare(self, a, b):
        """Absolute figures (these directories have no fingerprint: auto would
        compare ratios to a baseline, tests/py/test_compare.py)."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = compare.main(["--mode", "absolute", a, b])
        return rc, out.getvalue(), err.getvalue()

    def line(self, out, metric, contender):
        block = out.split("\n" + metric + " ")[1].split("\n\n")[0]
        return [ln for ln in block.splitlines() if ln.startswith(contender + " ")][0]

    def test_verdicts_on_synthetic_directories(self):
        a = self.make("a", {"c": [1.0, 1.02, 0.98], "pyext": [1.0, 1.2, 0.9], "uvloop": [1.0, 1.1]})
        b = self.make("b", {"c": [2.0, 2.04, 1.96], "pyext": [1.05, 0.95, 1.15],
                            "uvloop": [1.0, 1.1, 1.2], "asyncio-protocol": [3, 3, 3]})
        rc, out, err = self.compare(a, b)
        self.assertEqual(rc, 0, err)
        c = self.line(out, "t_accept_s", "c")
        self.assertIn(" 2.00 ", c)
        self.assertTrue(c.endswith("slower (significant)"), c)
        self.assertTrue(self.line(out, "server_cpu_connect_s", "c").endswith("more CPU (significant)"))
        self.assertTrue(self.line(out, "t_accept_s", "pyext").endswith("not significant"))
        self.assertTrue(self.line(out, "t_accept_s", "uvloop").endswith("not enough runs"))
        u = self.line(out, "user_bytes_per_conn", "c")
        self.assertIn(" 1.00 ", u)
        self.assertTrue(u.endswith("not significant"), u)
        self.assertIn("only in B: asyncio-protocol 100k", out)
        # B against A is the mirror image
        rc, out, _ = self.compare(b, a)
        self.assertTrue(self.line(out, "t_accept_s", "c").endswith("faster (significant)"))

    def test_dropped_runs_do_not_count(self):
        a = self.make("a", {"c": [1.0, 1.02, 0.98]})
        b = self.make("b", {"c": [1.0, 1.02]})
        self.add(b, "c", 100000, 3, "disturbed", t_accept_s=5.0)
        rc, out, _ = self.compare(a, b)
        self.assertTrue(self.line(out, "t_accept_s", "c").endswith("not enough runs"))

    def test_usage_and_missing_directories(self):
        self.assertEqual(self.compare(self.dir, "")[0], 2)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(compare.main([self.dir]), 2)
        self.assertIn("usage", err.getvalue())
        self.assertEqual(self.compare(self.dir, os.path.join(self.dir, "nope"))[0], 2)
        empty = self.subdir("empty")
        rc, _, err = self.compare(empty, empty)
        self.assertEqual(rc, 1)
        self.assertIn("no runs.jsonl or runs.csv", err)
        # runs there but unreadable (a directory in runs.jsonl's place; for a user
        # other than root: a file root wrote 0600): said so, not "no runs"
        os.mkdir(os.path.join(empty, "runs.jsonl"))
        rc, _, err = self.compare(empty, empty)
        self.assertEqual(rc, 1)
        self.assertIn("compare: cannot read the runs of %s: Is a directory: %s"
                      % (empty, os.path.join(empty, "runs.jsonl")), err)

    def test_committed_reference_against_itself(self):
        ref = os.path.join(ROOT, "results", "reference-100k")
        rc, out, err = self.compare(ref, ref)
        self.assertEqual(rc, 0, err)
        line = self.line(out, "t_accept_s", "asyncio-streams")
        self.assertIn(" 1.00 ", line)
        self.assertTrue(line.endswith("not significant"))
        self.assertNotIn("(significant)", out)


if __name__ == "__main__":
    unittest.main()
