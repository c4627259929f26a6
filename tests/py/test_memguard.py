"""harness/lib/memguard.py, bench.sh's memory guard before a run: the cost
per connection learned from the suite's runs, and the verdict (tests/harness.bats
runs it through bench.sh with MEM_GUARD_MIB)."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import util  # noqa: F401  (harness/lib on sys.path)
import memguard as mg  # noqa: E402


def run(contender="c", tier=1000, status="ok", user=20, slab=9000, kern=7700, idle=400, acc=None):
    return {"contender": contender, "tier": tier, "status": status, "user_bytes_per_conn": user,
            "slab_bytes_per_conn": slab, "kernel_bytes_per_conn": kern, "server_rss_idle_kib": idle,
            "accepted": tier if acc is None else acc}


class Learned(unittest.TestCase):
    def test_the_cost_of_a_run(self):
        # user + max(slab, kernel) + idle RSS over the accepted connections (whole bytes)
        self.assertEqual(mg.learned([run()]), {"c": (1000, 20 + 9000 + 400 * 1024 // 1000)})
        self.assertEqual(mg.learned([run(kern=9500)])["c"], (1000, 20 + 9500 + 409))
        self.assertEqual(mg.learned([run(user=-50)])["c"], (1000, 9000 + 409))      # noise under 0: 0
        self.assertEqual(mg.learned([run(kern=None, idle=None)])["c"], (1000, 9020))

    def test_the_largest_tier_then_the_largest_figure(self):
        runs = [run(tier=2000, slab=9000), run(tier=1000, slab=20000), run(tier=2000, slab=9500),
                run(tier=2000, slab=9100)]
        self.assertEqual(mg.learned(runs)["c"], (2000, 20 + 9500 + 400 * 1024 // 2000))

    def test_what_counts_for_nothing(self):
        for r in (run(status="crashed"), run(status="ramp-stalled"), run(status="client-stopped"),
                  run(status="timeout"), run(status="failed"), run(acc=0), run(user=None),
                  run(slab="9000"), run(kern="x"), run(idle=1.5), run(user=True),
                  {"contender": "c", "tier": 1000, "status": "skipped-memory"}):
            self.assertEqual(mg.learned([r]), {}, r)
        # the memory guard's own stop measured what it held: it counts
        self.assertIn("c", mg.learned([run(status="oom-guard", acc=600)]))


class Verdict(unittest.TestCase):
    def test_need_and_message(self):
        # 1k at the floor's 8192 B: ceil(1000 x 8192 x 1.15 / MiB) = 9, + 1024 + 256
        ok, line = mg.verdict({}, "c", 1000, 1024, mem_guard_mib=1289)
        self.assertEqual((ok, line), (True, "needs ~1289 MiB (8192 B/conn, floor, nothing measured yet, "
                                            "+15% + 256 MiB + the 1024 MiB floor); usable 1289 MiB (MEM_GUARD_MIB)"))
        self.assertFalse(mg.verdict({}, "c", 1000, 1024, mem_guard_mib=1288)[0])
        ok, line = mg.verdict({"c": (1000, 20000)}, "c", 10 ** 6, 1024, usable_mib=30000)
        self.assertEqual(line, "needs ~23215 MiB (20000 B/conn, measured for c, +15% + 256 MiB + the 1024 MiB "
                               "floor); usable 30000 MiB (MemAvailable less the reclaimable slab)")
        self.assertTrue(ok)

    def test_bases(self):
        cost = {"c": (1000, 9000), "uvloop": (1000, 12000)}
        self.assertIn("12000 B/conn, largest measured for another contender",
                      mg.verdict(cost, "pyext", 1000, 1024, usable_mib=10 ** 6)[1])
        self.assertIn("8192 B/conn, floor, +15%", mg.verdict({"c": (1000, 500)}, "c", 1000, 1024, usable_mib=10 ** 6)[1])

    def test_unreadable_memory_gives_no_verdict(self):
        self.assertEqual(mg.verdict({}, "c", 10 ** 9, 1024, usable_mib=None),
                         (True, "usable memory unreadable: not estimated"))


class Command(unittest.TestCase):
    def check(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = mg.main(list(argv))
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue(), err.getvalue()

    def test_from_a_suite_directory(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out, _ = self.check("check", d, "c", "2000", "--min-available", "1024", "--mem-guard-mib", "1293")
            self.assertEqual(rc, 3)           # 2k at the floor: 1298 MiB
            self.assertIn("needs ~1298 MiB", out)
            with open(os.path.join(d, "runs.jsonl"), "w") as f:
                f.write(json.dumps(run(tier=1000, slab=100, kern=100, user=0, idle=0)) + "\n")
            rc, out, _ = self.check("check", d, "c", "1000", "--min-available", "1024", "--mem-guard-mib", "5000")
            self.assertEqual(rc, 0)
            with open(os.path.join(d, "runs.jsonl"), "w") as f:
                f.write("{not json\n")
            rc, _, err = self.check("check", d, "c", "1000", "--min-available", "1024")
            self.assertEqual(rc, 1)
            self.assertIn("runs.jsonl line 1", err)

    def test_usage(self):
        for argv in ([], ["peek"], ["check"], ["check", "d", "c", "0", "--min-available", "1"],
                     ["check", "d", "c", "10", "--min-available", "-1"],
                     ["check", "d", "c", "10", "--min-available", "1", "--mem-guard-mib", "x"]):
            self.assertEqual(self.check(*argv)[0], 2, argv)


if __name__ == "__main__":
    unittest.main()
