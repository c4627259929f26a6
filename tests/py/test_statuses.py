"""Every status a run's record can hold has one home, harness/lib/judge.py
STATUSES, and is set there alone: no harness script writes a status of its
own (bench.sh names the rows it writes itself by a kind, judge.ROW_KINDS; a
scenario its failure, judge.SCENARIO_STATUSES); results.py row refuses any
other; harness/README.md says what each means; the report code's lists of
statuses are drawn from it. Pure: reads the sources, no process."""
import glob
import os
import re
import unittest

from util import LIB, ROOT, TmpDir  # noqa: E402  (harness/lib on sys.path)
from test_results import run_main  # noqa: E402

import cells  # noqa: E402
import demo  # noqa: E402
import judge  # noqa: E402
import report_profiles  # noqa: E402
import runstore  # noqa: E402

HARNESS = os.path.join(ROOT, "harness")
# A status written as a literal: bash `status=word`, `R[status]=word`; Python
# `x["status"] = "word"` (or `x["status"], x["note"] = "word", ...`), `"status": "word"`,
# `status="word"`.
BASH_SET = re.compile(r"""(?:^|[\s(;])(?:\w*\[status\]|status)=["']?[a-z]""")
PY_SET = re.compile(r"""\[["']status["']\](?:\s*,\s*[\w.\[\]"']+)*\s*=\s*["']|["']status["']\s*:\s*["']"""
                    r"""|\bstatus\s*=\s*["'][a-z]""")
# (none: anatomy-cpu, once apart with its own ok/failed, runs run_one.sh)
NOT_A_RECORD = set()


def sources():
    """(path relative to harness/, text) of every harness script but judge.py."""
    for path in sorted(glob.glob(os.path.join(HARNESS, "**", "*"), recursive=True)):
        rel = os.path.relpath(path, HARNESS)
        if not os.path.isfile(path) or rel.endswith((".md", ".gp", ".conf", ".pyc")) \
                or os.path.basename(rel) in NOT_A_RECORD or path == os.path.join(LIB, "judge.py"):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                yield rel, f.read()
        except UnicodeDecodeError:
            continue


class OneHome(unittest.TestCase):
    def test_no_status_is_set_outside_judge(self):
        found = []
        for rel, text in sources():
            pat = PY_SET if rel.endswith(".py") or "python" in text.split("\n", 1)[0] else BASH_SET
            for n, line in enumerate(text.splitlines(), 1):
                if pat.search(line.split("#")[0] if pat is BASH_SET else line):
                    found.append("%s:%d: %s" % (rel, n, line.strip()))
        self.assertEqual(found, [], "a status set outside lib/judge.py")

    def test_the_rows_bench_writes_are_kinds_judge_knows(self):
        with open(os.path.join(HARNESS, "bench.sh")) as f:
            kinds = re.findall(r"--kind ([a-z-]+)", f.read())
        self.assertEqual(sorted(set(kinds)), sorted(judge.ROW_KINDS))
        self.assertEqual(judge.row_status("skipped-memory", None), "skipped-memory")
        self.assertEqual(judge.row_status("driver-failed", "ok"), "harness-error")
        self.assertEqual(judge.row_status("driver-failed", None), "harness-error")
        self.assertEqual(judge.row_status("driver-failed", "interrupted"), "interrupted")
        self.assertEqual(judge.row_status("interrupted", "ok"), "interrupted")
        with self.assertRaises(ValueError):
            judge.row_status("bogus", None)

    def test_a_scenario_names_a_status_judge_knows(self):
        named = []
        for path in glob.glob(os.path.join(HARNESS, "lib", "scenarios", "*.sh")):
            with open(path) as f:
                text = f.read()
            # the status is the word after the reason, on its line: after the
            # line's last quote (a reason may hold "$(... "x" ...)")
            for line in text.splitlines():
                if 'scenario_fail "' in line:
                    m = re.match(r'[ \t]+([a-z][a-z-]*)', line[line.rindex('"') + 1:])
                    named += [m.group(1)] if m else []
            named += re.findall(r"obs scenario_status ([a-z][a-z-]*)", text)
        self.assertTrue(named)
        # the ones a reason with a command substitution in it used to hide
        self.assertIn("server-died", named)
        self.assertIn("oom-guard", named)
        self.assertEqual([s for s in named if s not in judge.SCENARIO_STATUSES], [])

    def test_every_status_judge_gives_is_listed(self):
        given = set(judge.READY_FAILED.values()) | set(judge.RAMP_END.values()) \
            | set(judge.HOLD_END.values()) | set(judge.SCENARIO_STATUSES) | set(judge.ROW_KINDS.values())
        self.assertEqual(sorted(given - set(judge.STATUSES)), [])
        self.assertEqual(len(set(judge.STATUSES)), len(judge.STATUSES))

    def test_the_readme_says_what_each_means(self):
        with open(os.path.join(HARNESS, "README.md")) as f:
            text = f.read()
        self.assertEqual([s for s in judge.STATUSES if "`%s`" % s not in text], [])
        table = text.split("### Statuses", 1)[1].split("\n\n", 2)[1]
        listed = re.findall(r"^\| `([a-z-]+)` \|", table, re.M)
        self.assertGreater(len(listed), 15)
        self.assertEqual([s for s in listed if s not in judge.STATUSES], [])

    def test_the_report_code_knows_each(self):
        for name, subset in (("cells.CAUSE_FIELD", cells.CAUSE_FIELD), ("demo.DRAWN", demo.DRAWN),
                             ("report_profiles.MEASURED", report_profiles.MEASURED)):
            self.assertEqual([s for s in subset if s not in judge.STATUSES], [], name)


class RemoteObservations(unittest.TestCase):
    def test_every_observation_run_remote_records_is_one_judge_reads(self):
        # a misspelt key (O["h_establised"]) would make every remote run
        # inconsistent while test_judge.py's hand-made observations pass
        with open(os.path.join(HARNESS, "run_remote.py")) as f:
            src = f.read()
        keys = set(re.findall(r"""\bO\[["'](\w+)["']\]\s*=""", src))
        for args in re.findall(r"\bO\.update\(([^()]*)\)", src):
            keys.update(re.findall(r"(\w+)=", args))
        body = src[src.index("def wait_hold"):]
        body = body[:body.index("\n    def ", 1)]
        keys.update(re.findall(r"""["'](\w+)["']\s*:""", body))
        self.assertGreaterEqual(len(keys), 15, keys)
        with open(os.path.join(LIB, "judge.py")) as f:
            read = set(re.findall(r"""["'](\w+)["']""", f.read()))
        self.assertEqual(sorted(keys - read), [])


class Rows(TmpDir):
    def test_results_row_takes_each_status_and_refuses_another(self):
        d = self.subdir("run")
        for s in judge.STATUSES:
            rc, out, err = run_main("row", d, "-", "contender=c", "tier=2000", "status=" + s)
            self.assertEqual((rc, out), (0, ""), err)
        self.assertEqual([r["status"] for r in runstore.read_runs(d)], list(judge.STATUSES))
        rc, _, err = run_main("row", d, "-", "contender=c", "tier=2000", "status=fine")
        self.assertEqual(rc, 2)
        self.assertIn("unknown status 'fine'", err)
        self.assertEqual(len(runstore.read_runs(d)), len(judge.STATUSES))

    def test_a_row_of_a_kind(self):
        d = self.subdir("run")
        rec = os.path.join(self.dir, "result.json")
        runstore.write_json(rec, {"contender": "c", "tier": 2000, "status": "interrupted", "accepted": 5})
        rc, out, err = run_main("row", d, rec, "--kind", "driver-failed", "repeat=1", "note=run_one.sh exited 130")
        self.assertEqual((rc, out), (0, "interrupted\n"), err)
        rc, out, err = run_main("row", d, "-", "contender=c", "tier=5000", "--kind", "skipped-memory", "note=x")
        self.assertEqual((rc, out), (0, "skipped-memory\n"), err)
        self.assertEqual([(r["status"], r["note"]) for r in runstore.read_runs(d)],
                         [("interrupted", "run_one.sh exited 130"), ("skipped-memory", "x")])
        for bad in (("--kind",), ("--kind", "fine")):
            self.assertEqual(run_main("row", d, "-", "contender=c", *bad)[0], 2, bad)


if __name__ == "__main__":
    unittest.main()
