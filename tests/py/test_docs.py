"""tests/py/test_docs.py - the docs' figures against the data (harness/lib/docs.py,
units.py; make docs, make docs-check): a figure edited by hand fails, a
changed runs.csv fails, an unmarked figure in a checked section fails, a cited
results/ path that does not exist fails; and the repository's own README.md,
docs/ and results/README.md agree with the committed results.
Stdlib only; no sockets, no timing.

    python3 -m unittest tests.py.test_docs
"""
import contextlib
import csv
import io
import os
import subprocess
import unittest

from util import ROOT, TmpDir  # noqa: E402  (harness/lib on sys.path)

import docs  # noqa: E402
import units  # noqa: E402

COLS = ["contender", "tier", "repeat", "status", "t_accept_s", "user_bytes_per_conn",
        "server_rss_kib", "sockstat_tcp_mem_kib"]
RUNS = [
    ["c", 1000000, 1, "ok", 28.0, 19, 32000, 2352600],
    ["c", 1000000, 2, "ok", 30.0, 19, 32400, 2352600],
    ["c", 1000000, 3, "ok", 29.0, 20, 32200, 2352600],
    ["py", 1000000, 1, "ok", 160.0, 5500, 6025000, 2352600],
    ["py", 1000000, 2, "ok", 161.0, 5496, 6030000, 2352600],
    ["py", 1000000, 3, "disturbed", 300.0, 9000, 9000000, 2352600],
    ["py", 1000000, 4, "ok", 165.0, 5490, 6020000, 2352600],
]
DOC = """# demo
<!--checked-->
py takes <!--fig demo t_accept_s median contender=py tier=1m fmt=s1-->X<!--/fig--> to connect,
<!--fig demo user_bytes_per_conn ratio contender=py tier=1m over=c fmt=x-->X<!--/fig--> c's userspace,
holding <!--fig demo server_rss_kib median contender=py tier=1m fmt=kib-->X<!--/fig--> and
<!--fig demo sockstat_tcp_mem_kib median contender=c tier=1m fmt=kib-->X<!--/fig--> of TCP memory
on <!--hand the machine's /proc/meminfo-->24 GiB<!--/hand--> (`results/demo/runs.csv`).
<!--table demo summary cols=contender,tier,t_accept_s-->
<!--/table-->
<!--/checked-->
"""


def quiet(f, *a):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return f(*a)


class DocsTest(TmpDir):
    def setUp(self):
        super().setUp()
        self.root = self.dir
        self.run_dir = os.path.join(self.root, "results", "demo")
        os.makedirs(self.run_dir)
        self.write_runs(RUNS)
        os.makedirs(os.path.join(self.root, "docs"))
        self.readme = os.path.join(self.root, "README.md")
        self.write(DOC)
        self.assertEqual(docs.render(self.root), [])

    def write_runs(self, runs):
        with open(os.path.join(self.run_dir, "runs.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(COLS)
            w.writerows(runs)

    def write(self, text):
        with open(self.readme, "w") as f:
            f.write(text)

    def read(self):
        with open(self.readme) as f:
            return f.read()

    def test_render_uses_the_ok_runs_and_binary_units(self):
        text = self.read()
        self.assertIn("-->161.0 s<!--", text)             # median of 160, 161, 165: the disturbed run out
        self.assertIn("-->289x<!--", text)                # 5496 / 19
        self.assertIn("-->5.75 GiB<!--", text)            # 6025000 KiB
        self.assertIn("-->2.24 GiB<!--", text)            # 2352600 KiB, not "2.3 GiB"
        self.assertIn("| py | 1m | 161.00 [160.00-165.00] |", text)   # report.md's own table code
        self.assertEqual(docs.check(self.root), [])

    def test_a_figure_edited_by_hand_fails_naming_file_and_line(self):
        self.write(self.read().replace("-->161.0 s<!--", "-->181.0 s<!--"))
        problems = docs.check(self.root)
        self.assertTrue(problems)
        self.assertTrue(problems[0].startswith("README.md:3: differs from the data"), problems)
        self.assertIn("161.0 s", problems[0])

    def test_a_changed_runs_csv_fails(self):
        runs = [list(r) for r in RUNS]
        runs[4][4] = 170.0                                # py's median moves to 165
        self.write_runs(runs)
        problems = docs.check(self.root)
        self.assertTrue(any(p.startswith("README.md:3:") and "165.0 s" in p for p in problems),
                        problems)
        self.assertEqual(docs.render(self.root), [])
        self.assertEqual(docs.check(self.root), [])

    def test_an_unmarked_figure_in_a_checked_section_fails(self):
        self.write(self.read().replace("holding", "1.5 MiB per stalled peer, holding"))
        problems = docs.check(self.root)
        self.assertEqual(len(problems), 1, problems)
        self.assertRegex(problems[0], r"^README.md:5: unmarked figure '1.5 MiB'")
        # outside a checked section the same line is not judged
        self.write("plain prose: 1.5 MiB\n" + self.read())
        self.assertFalse(any("'1.5 MiB'" in p and ":1:" in p for p in docs.check(self.root)))

    def test_a_cited_path_that_does_not_exist_fails(self):
        self.write(self.read() + "\nsee results/demo-gone/report.md and `results/demo/`\n")
        problems = docs.check(self.root)
        self.assertEqual(problems, ["README.md:16: cites results/demo-gone/report.md, which does not exist"])

    def test_references_outside_the_repository_fail(self):
        self.write(self.read() + "as shared/seeds/002 says (issue 12)\n")
        self.assertEqual(len(docs.check(self.root)), 1)

    def test_references_outside_the_repository_in_a_notes_md_fail(self):
        with open(os.path.join(self.run_dir, "NOTES.md"), "w") as f:
            f.write("# demo\n\nThe planner's check (issue 10 \u00a73),\nas shared/MACHINE.md says.\n")
        docs.render(self.root)                              # the catalogue reads NOTES.md's heading
        self.assertEqual(docs.check(self.root),
                         ["results/demo/NOTES.md:3: refers to 'issue 10', which is not in the repository",
                          "results/demo/NOTES.md:4: refers to 'shared/MACHINE', which is not in the repository"])

    def test_a_bad_marker_is_an_error(self):
        self.write(self.read() + "<!--fig demo t_accept_s median contender=nope tier=1m-->1<!--/fig-->\n")
        problems = docs.check(self.root)
        self.assertTrue(any("README.md:15: results/demo: no cell" in p for p in problems), problems)

    def test_a_malformed_marker_option_or_runs_file_is_an_error_not_a_crash(self):
        # word=, scale=, invert= that are no number, and a runs.csv that is no run
        # record: docs-check names FILE:LINE (they raised ValueError/IndexError)
        base = "<!--fig demo t_accept_s median contender=py tier=1m %s-->1<!--/fig-->\n"
        for opt, said in (("word=abc", "word="), ("word=-5", "word="), ("scale=abc", "scale="),
                          ("scale=nan", "scale="), ("invert=yes", "invert=")):
            self.write(self.read().split("<!--/checked-->")[0] + "<!--/checked-->\n" + base % opt)
            problems = docs.check(self.root)
            self.assertTrue(any(p.startswith("README.md:15: ") and said in p for p in problems),
                            (opt, problems))
        with open(os.path.join(self.run_dir, "runs.csv"), "a") as f:
            f.write("py,,9,ok,1,1,1,1\n")
        problems = docs.check(self.root)
        self.assertTrue(any(p.startswith("README.md:3: ") and "row 8: no tier" in p for p in problems),
                        problems)

    def test_the_catalogue_lists_every_directory_and_goes_stale(self):
        with open(os.path.join(self.root, "results", "README.md")) as f:
            cat = f.read()
        self.assertIn("| [demo](demo/) |", cat)
        self.assertIn("ok 6, disturbed 1".replace("ok 6, disturbed 1", "disturbed 1, ok 6"), cat)
        self.assertIn("[README.md](../README.md)", cat)
        os.makedirs(os.path.join(self.root, "results", "demo2"))
        self.assertTrue(any(p.startswith("results/README.md") for p in docs.check(self.root)))

    def test_the_catalogue_lists_the_headline_first_then_by_name(self):
        for d in ("a-first", "reference", "zz-last"):
            os.makedirs(os.path.join(self.root, "results", d))
        docs.render(self.root)
        with open(os.path.join(self.root, "results", "README.md")) as f:
            rows = [line.split("](")[0][3:] for line in f if line.startswith("| [")]
        self.assertEqual(rows, ["reference", "a-first", "demo", "zz-last"])

    def test_the_catalogue_in_a_git_checkout_lists_only_committed_directories(self):
        git = lambda *a: subprocess.run(["git", "-C", self.root, *a], check=True,
                                        capture_output=True)
        with open(os.path.join(self.run_dir, "NOTES.md"), "w") as f:
            f.write("# The demo's question\n")       # a committed directory asks its own (questions_lint)
        docs.render(self.root)
        git("init", "-q")
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t")
        os.makedirs(os.path.join(self.root, "results", "20261206T120000Z"))
        self.assertEqual(docs.check(self.root), [])   # a user's fresh run is not "stale"
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t", "--allow-empty")
        with open(os.path.join(self.root, "results", "20261206T120000Z", "meta.json"), "w") as f:
            f.write("{}")
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t2")
        self.assertTrue(any(p.startswith("results/README.md") for p in docs.check(self.root)))

    def test_a_cells_table_renders_chosen_columns_and_goes_stale(self):
        self.write(self.read() + '<!--table demo cells "who=contender" "t=t_accept_s:ci:f1" '
                   '"user vs c=user_bytes_per_conn:ratio/c:x"-->\n<!--/table-->\n')
        self.assertEqual(docs.render(self.root), [])
        self.assertIn("| py | 161.0 [160.0-165.0] | 289x |", self.read())
        runs = [list(r) for r in RUNS]
        runs[3][5] = runs[4][5] = 1900          # py's userspace median: 1900 B, 100x c's
        self.write_runs(runs)
        self.assertTrue(any("README.md:" in p and "differs from the data" in p
                            for p in docs.check(self.root)))

    def test_runs_all_and_pairs(self):
        self.write(self.read() + "<!--fig demo t_accept_s max contender=py tier=1m fmt=s1-->X<!--/fig-->"
                   " <!--fig demo t_accept_s max contender=py tier=1m runs=all fmt=s1-->X<!--/fig-->"
                   " <!--fig demo t_accept_s pairs contender=py tier=1m over=c fmt=x2-->X<!--/fig-->\n")
        self.assertEqual(docs.render(self.root), [])
        text = self.read()
        self.assertIn("-->165.0 s<!--", text)            # the ok runs' max
        self.assertIn("-->300.0 s<!--", text)            # every run's, the disturbed one too
        self.assertIn("-->5.71x, 5.37x<!--", text)       # py/c repeat by repeat, ok pairs only

    def test_a_csv_value_is_its_number_or_else_its_text(self):
        with open(os.path.join(self.run_dir, "ladder.csv"), "w") as f:
            f.write("tier,fix,cpu_us,statuses\n100k,streams,85.25,\"ok 2, disturbed 1\"\n100k,pyext,,\n")
        self.write(self.read() + "<!--fig demo/ladder.csv cpu_us value tier=100k fix=streams fmt=us1-->X<!--/fig-->"
                   " <!--fig demo/ladder.csv statuses value tier=100k fix=streams-->X<!--/fig-->\n")
        self.assertEqual(docs.render(self.root), [])
        self.assertIn("-->85.2 µs<!--/fig--> <!--fig demo/ladder.csv statuses value tier=100k fix=streams-->"
                      "ok 2, disturbed 1<!--", self.read())
        # an empty cell is no figure: an error, never a 0
        self.write(self.read() + "<!--fig demo/ladder.csv cpu_us value tier=100k fix=pyext-->X<!--/fig-->\n")
        problems = docs.render(self.root)
        self.assertTrue(problems and "no number in cpu_us" in problems[0], problems)
        # arithmetic on a text cell is a problem named, not a traceback
        for opt in ("scale=2", "invert=1"):
            self.write("<!--fig demo/ladder.csv statuses value tier=100k fix=streams %s-->X<!--/fig-->\n" % opt)
            problems = docs.render(self.root)
            self.assertTrue(problems and "no number" in problems[0], problems)

    def test_units(self):
        self.assertEqual(units.fmt_value(492, "kib"), "492 KiB")
        self.assertEqual(units.fmt_value(1536, "kib"), "1.50 MiB")
        self.assertEqual(units.fmt_value(19, "bytes"), "19 B")
        self.assertEqual(units.fmt_value(0.813, "frac"), "81.3%")
        self.assertEqual(units.fmt_value(16.66, "x"), "16.7x")
        self.assertEqual(units.fmt_value(1.058, "x2"), "1.06x")
        self.assertEqual(units.fmt_value(2352600, "int"), "2,352,600")
        self.assertRaises(ValueError, units.fmt_value, 1, "furlongs")

    def test_a_committed_report_the_generator_would_write_otherwise_fails(self):
        # results/reference*/report.md is held to results.py report (58 of the
        # committed ones had been written by older versions: other columns,
        # pointers to README sections since moved)
        import results
        d = os.path.join(self.root, "results", "reference-x")
        os.rename(self.run_dir, d)
        with open(os.path.join(d, "runs.jsonl"), "w") as f:
            f.write('{"contender": "c", "tier": 1000, "repeat": 1, "status": "ok", "t_accept_s": 1.0}\n')
        quiet(results.cmd_report, d)
        self.assertEqual(docs.reports_lint(self.root), [])
        with open(os.path.join(d, "report.md"), "a") as f:
            f.write("see README.md \"Capacity planning\"\n")
        problems = docs.reports_lint(self.root)
        self.assertEqual(len(problems), 1, problems)
        self.assertRegex(problems[0], r"^results/reference-x/report.md:\d+: not what results.py report "
                                      r"writes .*run make plot RUN=results/reference-x$")
        self.assertIn(problems[0], docs.check(self.root))

    def test_every_committed_directory_asks_its_own_question(self):
        # the catalogue's question column: a committed directory without a first
        # heading in its NOTES.md, or with a sibling's, fails
        def note(d, text):
            os.makedirs(os.path.join(self.root, "results", d), exist_ok=True)
            with open(os.path.join(self.root, "results", d, "NOTES.md"), "w") as f:
                f.write(text)
        note("demo", "# c against py at 1M\n\ntext\n")
        note("other", "(run as OUT=x)\n\n# Notes on this run\n")
        note("twin", "# C against py at 1M\n")
        self.assertEqual(docs.questions_lint(self.root), [])          # no git checkout: nothing committed
        git = ["git", "-C", self.root, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(git + ["init", "-q"], check=True)
        subprocess.run(git + ["add", "results"], check=True)
        problems = docs.questions_lint(self.root)
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(problems[0].startswith("results/other/NOTES.md:1: no heading"), problems)
        self.assertTrue(problems[1].startswith("results/twin/NOTES.md:1: the same question as results/demo"),
                        problems)
        note("other", "# What the other one asks\n")
        note("twin", "# c against py at 1M, again on another instance\n")
        self.assertEqual(docs.questions_lint(self.root), [])

    def test_usage(self):
        self.assertEqual(quiet(docs.main, ["docs.py"]), 2)

    def test_the_repository_docs_agree_with_the_committed_results(self):
        self.assertEqual(docs.check(ROOT), [])


if __name__ == "__main__":
    unittest.main()
