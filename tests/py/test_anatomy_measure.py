"""harness/lib/anatomy_measure.py: a CPU anatomy's measure-PHASE.json from
the run_one.sh --perf 1 run's record and observations (tests/anatomy_cpu.bats
runs the whole anatomy)."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import util  # noqa: F401  (harness/lib on sys.path)
import anatomy_measure as am  # noqa: E402

REC = {"contender": "c", "target": 4000, "accepted": 4000, "open_after_hold": 4000, "status": "ok", "note": "",
       "server_workers": 3, "gate": "off", "gate_wait_s": 0, "outside_cpu_pct": 1.5, "outside_ramp_pct": 1.2,
       "outside_hold_pct": 1.9, "init_cpu_pct": 0.4, "outside_top": "bash[7]=0.3"}
OBS = {"ramp_end": "reached", "t0": "100.000000", "t1": "100.250000", "cpu0": "10", "cpu1": "14", "clk_tck": "100",
       "ramp_ns0": "11:1000 12:5000 13:7000", "ramp_ns1": "11:2000 12:45000 13:47000 14:9",
       "perf_ramp": "ok", "perf_warning_ramp": "",
       "hold_b": "101.0", "hold_c": "102.5", "hold_cpu0": "20", "hold_cpu1": "21",
       "hold_ns0": "11:2000 12:50000 13:50000", "hold_ns1": "11:2100 12:60000",
       "perf_hold": "failed: perf did not acknowledge 'disable' within 30 s",
       "perf_warning_hold": "Processed 9 events and lost 2 chunks!"}


class Measure(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()

    def tearDown(self):
        for f in os.listdir(self.d):
            os.unlink(os.path.join(self.d, f))
        os.rmdir(self.d)

    def run_dir(self, rec=None, obs=None, *args):
        for name, obj in (("result.json", REC if rec is None else rec), ("observations.json", OBS if obs is None else obs)):
            with open(os.path.join(self.d, name), "w") as f:
                json.dump(obj, f)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = am.main([self.d, *args])
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue(), err.getvalue()

    def load(self, name):
        with open(os.path.join(self.d, name)) as f:
            return json.load(f)

    def test_ramp_and_hold_from_the_record(self):
        rc, out, err = self.run_dir()
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, "hold: perf did not acknowledge 'disable' within 30 s\n")
        r = self.load("measure-ramp.json")
        # the processes read at both ends (14 came later: left out)
        self.assertEqual(r["cpu_ns_by_pid"], "11:1000,12:40000,13:40000")
        self.assertEqual((r["cpu_ns"], r["cpu_ticks"], r["window_s"], r["conns"], r["reached"]), (81000, 4, 0.25, 4000, 1))
        self.assertEqual((r["perf"], r["perf_cause"], r["perf_warning"]), ("ok", None, None))
        self.assertEqual((r["gate"], r["gate_wait_s"], r["outside_phase_pct"], r["disturbed"], r["workers"]),
                         ("off", 0, 1.2, 0, 3))
        h = self.load("measure-hold.json")
        self.assertEqual((h["cpu_ns"], h["cpu_ticks"], h["window_s"], h["conns"]), (10100, 1, 1.5, 4000))
        self.assertEqual((h["perf"], h["perf_warning"]), ("failed", "Processed 9 events and lost 2 chunks!"))
        self.assertEqual(h["outside_phase_pct"], 1.9)

    def test_no_hold_no_hold_measure(self):
        obs = {k: v for k, v in OBS.items() if not k.startswith(("hold", "perf_hold", "perf_warning_hold"))}
        rc, _, _ = self.run_dir(None, obs)
        self.assertEqual(rc, 0)
        self.assertFalse(os.path.exists(os.path.join(self.d, "measure-hold.json")))

    def test_a_failed_run_is_kept_apart(self):
        rec = dict(REC, status="crashed", note="a server worker died during the ramp", accepted=1200)
        rc, _, err = self.run_dir(rec, dict(OBS, ramp_end="worker-died"))
        self.assertEqual(rc, 1)
        self.assertIn("c: crashed: a server worker died during the ramp", err)
        self.assertFalse(os.path.exists(os.path.join(self.d, "measure-ramp.json")))
        r = self.load("failed-measure-ramp.json")
        self.assertEqual((r["conns"], r["reached"], r["ramp_end"]), (1200, 0, "worker-died"))

    def test_disturbed_counts_and_says_so(self):
        rec = dict(REC, status="disturbed", disturb_cause="PID 1 14.9% during the ramp (limit 5%)")
        rc, _, _ = self.run_dir(rec)
        self.assertEqual(rc, 0)
        r = self.load("measure-ramp.json")
        self.assertEqual((r["disturbed"], r["disturb_cause"]), (1, "PID 1 14.9% during the ramp (limit 5%)"))

    def test_perf_unavailable_and_fold_failed(self):
        obs = dict(OBS, perf_ramp="unavailable: perf not found ('perf' on PATH)")
        rc, out, _ = self.run_dir(None, obs)
        self.assertEqual(self.load("measure-ramp.json")["perf"], "unavailable")
        self.assertEqual(self.load("measure-ramp.json")["perf_cause"], "perf not found ('perf' on PATH)")
        rc, out, _ = self.run_dir(None, None, "--fold-failed", "ramp=perf script failed (exit 1)")
        self.assertEqual(rc, 0)
        self.assertEqual((self.load("measure-ramp.json")["perf"], self.load("measure-ramp.json")["perf_cause"]),
                         ("failed", "perf script failed (exit 1)"))
        self.assertIn("ramp: perf script failed (exit 1)", out)

    def test_unreadable_record_and_usage(self):
        with open(os.path.join(self.d, "result.json"), "w") as f:
            f.write("[1, 2")
        with open(os.path.join(self.d, "observations.json"), "w") as f:
            f.write("{}")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(am.main([self.d]), 1)
        self.assertIn("the run's record cannot be read", err.getvalue())
        for argv in ([], ["--help"], [self.d, "--fold-failed"], [self.d, "--fold-failed", "warmup=x"],
                     [self.d, "--fold-failed", "ramp"], [self.d, "extra"]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                am.main(argv)
            self.assertEqual(e.exception.code, 2, argv)

    def test_readings_tolerate_junk(self):
        self.assertEqual(am.by_pid("11:5 x 12:y :3 13:4,14:2"), {"11": 5, "13": 4, "14": 2})
        self.assertEqual(am.by_pid("11:\u00b2 \u00b3:4 12:6"), {"12": 6})     # (int() raised ValueError)
        self.assertEqual(am.perf_state(None), ("unavailable", "not recorded"))

    def test_figures_past_a_floats_range_read_as_unknown(self):
        # observations.json with a tick count of 1e400 (JSON reads inf) or a
        # time of 400 digits: int()/float() raised OverflowError, a traceback
        # and no measure; now the figure is unknown (null)
        obs = dict(OBS, cpu1=1e400, t1=int("1" + "0" * 400), hold_b=float("nan"))
        rc, _, err = self.run_dir(None, obs)
        self.assertEqual(rc, 0, err)
        ramp, hold = self.load("measure-ramp.json"), self.load("measure-hold.json")
        self.assertEqual((ramp["cpu_ticks"], ramp["window_s"], hold["window_s"]), (None, None, None))
        self.assertEqual(ramp["cpu_ns"], 1000 + 40000 + 40000)
        self.assertEqual(am.perf_state("odd"), ("failed", ""))


if __name__ == "__main__":
    unittest.main()
