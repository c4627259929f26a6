"""tests/py/test_report_push.py - the push and stall report module
(harness/lib/report_push.py) and the push columns record.py derives from the
client's JSON. Synthetic records only: no sockets, no timing. Run by
tests/push_stall.bats.

    python3 -m unittest tests.py.test_report_push
"""
import json
import os
import shutil
import tempfile
import unittest

from util import TmpDir  # noqa: E402  (harness/lib on sys.path)

import record  # noqa: E402
import report_push as rp  # noqa: E402


def run(contender, tier, scenario, condition="", status="ok", repeat=1, **kw):
    r = dict(contender=contender, tier=tier, tier_label="%dk" % (tier // 1000), repeat=repeat,
             status=status, scenario=scenario, profile="tuned", variant=condition or None,
             rate=0, condition=condition)
    r.update(kw)
    return r


def push_run(contender, tier, repeat=1, status="ok", broadcast=0.5, p99=2.0):
    return run(contender, tier, "push", status=status, repeat=repeat, push_p50_ms=0.5,
               push_p99_ms=p99, push_max_ms=30.0, push_received=3 * tier, push_pushed=3 * tier,
               push_missing=0, push_bad=0, push_bytes=3 * tier * 1024, broadcast_s=broadcast,
               broadcast_server_s=0.1, broadcast_reached=tier)


def stall_run(contender, tier, condition, status="ok", kernel=150000, user=2000, avail=1234567):
    return run(contender, tier, "stall", condition, status=status, stalled=tier // 10,
               stall_end="oom-guard" if status == "oom-guard" else "cut", stall_phase_s=30,
               stall_tcp_mem_bytes_per_stalled=kernel, stall_user_bytes_per_stalled=user,
               stall_avail_drop_bytes_per_stalled=avail,
               stall_sendq_bytes_per_stalled=8192, stall_wmem_bytes_per_stalled=9000,
               stall_cut=tier // 10, stall_cut_first_s=20.5, stall_cut_last_s=29.0,
               stall_tcp_mem_peak_kib=40000, stall_ss_s=0.2,
               note="stall: MemAvailable under 1024 MiB: unbounded" if status == "oom-guard" else "")


class PlotData(TmpDir):
    def test_no_push_or_stall_runs_draw_nothing(self):
        rows = [run("c", 2000, "idle")]
        self.assertEqual(rp.plotdata(self.dir, rows, self.dir), [])
        self.assertEqual(rp.report(self.dir, rows, {}), "")

    def test_push_series_per_contender_and_tier(self):
        rows = [push_run("c", 2000, 1, broadcast=0.2), push_run("c", 2000, 2, broadcast=0.4),
                push_run("c", 5000, broadcast=0.9),
                push_run("asyncio-protocol", 2000, broadcast=1.5),
                push_run("asyncio-protocol", 5000, status="disturbed", broadcast=9.0),
                push_run("asyncio-protocol", 5000, repeat=2, status="crashed", broadcast=99.0)]
        plots = rp.plotdata(self.dir, rows, self.dir)
        self.assertEqual(plots, [rp.BROADCAST, rp.LATENCY])
        with open(os.path.join(self.dir, "push_broadcast-c.dat")) as f:
            lines = [ln.split() for ln in f if not ln.startswith("#")]
        # median (0.3) and min-max of the two ok runs at 2k; one run at 5k
        self.assertEqual(lines[0], ["2000", "0.300000", "0.200000", "0.400000", "2k"])
        self.assertEqual(lines[1][:2], ["5000", "0.900000"])
        with open(os.path.join(self.dir, "push_broadcast-asyncio-protocol.dat")) as f:
            lines = [ln.split() for ln in f if not ln.startswith("#")]
        # 5k: no ok run, only a disturbed one (used, as the tier plots do); the crash is not
        self.assertEqual([ln[1] for ln in lines], ["1.500000", "9.000000"])
        with open(os.path.join(self.dir, "push_vars.gp")) as f:
            v = f.read()
        self.assertIn("bc_series = 'c asyncio-protocol'", v)

    def test_stall_bars_at_the_largest_tier_with_oom_guard_marked(self):
        rows = [stall_run("c", 2000, "stall=0.1"), stall_run("c", 5000, "stall=0.1", kernel=100000),
                stall_run("c", 5000, "stall=0.1-sndbuf0", kernel=1600000),
                stall_run("asyncio-protocol", 5000, "stall=0.1-sndbuf0", status="oom-guard",
                          kernel=2000000, user=900000),
                stall_run("asyncio-protocol", 5000, "stall=0.1", status="crashed")]
        self.assertEqual(rp.plotdata(self.dir, rows, self.dir), [rp.STALL_MEM])
        with open(os.path.join(self.dir, "stall_memory.dat")) as f:
            bars = [ln for ln in f if not ln.startswith("#")]
        # the third figure: lost (1,234,567) beyond kernel + user, never below 0
        self.assertEqual(bars, ['"c stall=0.1" 100000 2000 1132567\n',
                                '"c stall=0.1-sndbuf0" 1600000 2000 0\n',
                                '"asyncio-protocol stall=0.1-sndbuf0 (oom-guard)" 2000000 900000 0\n'])


    def test_stall_bars_leave_out_a_profile_every_bar_shares(self):
        rows = [stall_run("c", 2000, "file=peer32k/stall=0.1"), stall_run("pyext", 2000, "file=peer32k/stall=0.01")]
        rp.plotdata(self.dir, rows, self.dir)
        with open(os.path.join(self.dir, "stall_memory.dat")) as f:
            labels = [ln.split('"')[1] for ln in f if not ln.startswith("#")]
        self.assertEqual(labels, ["c stall=0.1", "pyext stall=0.01"])
        # two profiles: each bar keeps its own
        rows.append(stall_run("c", 2000, "file=peer4k/stall=0.1"))
        rp.plotdata(self.dir, rows, self.dir)
        with open(os.path.join(self.dir, "stall_memory.dat")) as f:
            labels = [ln.split('"')[1] for ln in f if not ln.startswith("#")]
        self.assertIn("c file=peer4k/stall=0.1", labels)
        self.assertIn("c file=peer32k/stall=0.1", labels)


class Report(unittest.TestCase):
    def test_sections_tables_and_findings(self):
        rows = [push_run("c", 2000), stall_run("c", 2000, "stall=0.1"),
                stall_run("uvloop", 2000, "stall=0.1", status="oom-guard", user=700000)]
        meta = {"settings": {"push_bytes": "512", "push_every": "10", "stall_push_every": "0.5"}}
        text = rp.report("/nonexistent", rows, meta)
        self.assertIn("## Server push", text)
        self.assertIn("a line of 512 bytes to every connection every 10 s", text)
        self.assertIn("## Stalled readers", text)
        self.assertIn("every 0.5 s", text)
        line = [ln for ln in text.splitlines() if ln.startswith("| 2k | stall=0.1 | uvloop")][0]
        self.assertIn("700000" + rp.DOUBLE_DAGGER, line)
        # what the machine lost, beside what the sockets were charged
        line = [ln for ln in text.splitlines() if ln.startswith("| 2k | stall=0.1 | c")][0]
        self.assertIn("| 150000 | 2000 | 1234567 | 8192 | 9000 |", line)
        self.assertIn("MemAvailable: what the machine lost", text)
        self.assertIn("Runs the memory guard stopped", text)
        self.assertIn("uvloop 2k stall=0.1: stall: MemAvailable", text)
        line = [ln for ln in text.splitlines() if ln.startswith("| 2k | - | c | ok |")][0]
        self.assertIn("| 6000 | 6000 | 0 | 0 |", line)

    def test_broadcast_alone_is_said_so(self):
        meta = {"settings": {"push_bytes": "1024", "push_every": "0"}}
        text = rp.report("/nonexistent", [push_run("c", 2000)], meta)
        self.assertIn("pushed nothing through the ramp and the hold (`PUSH_EVERY=0`)", text)
        self.assertNotIn("every 0 s", text)


class RecordColumns(unittest.TestCase):
    def test_push_columns_only_for_clients_that_received_pushes(self):
        idle = {"established": 10, "push_received": 0, "push_bad": 0,
                "push_latency_us": {"p50": None, "p99": None, "max": None}}
        self.assertNotIn("push_received", record.client_columns(idle))
        j = {"established": 10, "push_received": 30, "push_missing": 1, "push_bytes": 30 * 256,
             "push_bad": 0, "push_latency_us": {"p50": 1500, "p90": 2000, "p99": 2500,
                                                "p999": 2600, "max": 9000}}
        c = record.client_columns(j)
        self.assertEqual((c["push_received"], c["push_missing"], c["push_bytes"], c["push_bad"]),
                         (30, 1, 7680, 0))
        self.assertEqual((c["push_p50_ms"], c["push_p99_ms"], c["push_max_ms"]), (1.5, 2.5, 9.0))
        self.assertEqual(c["client_established"], 10)

    def test_written_record_has_them(self):
        d = tempfile.mkdtemp(prefix="c1m-test-push-rec-")
        self.addCleanup(shutil.rmtree, d, True)
        cj = os.path.join(d, "client.json")
        with open(cj, "w") as f:
            json.dump({"established": 5, "push_received": 5, "push_bytes": 5 * 64, "push_bad": 0,
                       "push_missing": 0, "push_latency_us": {"p50": 10, "p99": 20, "max": 30}}, f)
        out = os.path.join(d, "result.json")
        self.assertEqual(record.main(["write", out, "--client", cj, "status=ok"]), 0)
        with open(out) as f:
            rec = json.load(f)
        self.assertEqual((rec["push_received"], rec["push_p99_ms"], rec["status"]), (5, 0.02, "ok"))


if __name__ == "__main__":
    unittest.main()
