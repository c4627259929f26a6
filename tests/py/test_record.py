"""Unit tests of the harness's per-run record (harness/lib/record.py) and of the
disturbance summary (harness/lib/disturb.py), on files made up here: no
sockets, no root. Run: python3 -m unittest tests.py.test_record
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from util import LIB, TmpDir, serial_only  # noqa: E402
RECORD = os.path.join(LIB, "record.py")
DISTURB = os.path.join(LIB, "disturb.py")


def jsonl(path):
    with open(path) as f:
        return [json.loads(x) for x in f]


def run(*args, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


class RecordTest(TmpDir):
    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.dir, "result.json")

    def write(self, *pairs, client=None):
        args = [RECORD, "write", self.out]
        if client is not None:
            path = os.path.join(self.dir, "client.json")
            with open(path, "w") as f:
                f.write(client if isinstance(client, str) else json.dumps(client))
            args += ["--client", path]
        p = run(*args, *pairs)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.out) as f:
            return json.load(f)

    def test_typed_values_and_text_columns(self):
        r = self.write("status=ok", "accepted=2000", "target=2000", "t_accept_s=0.119",
                       "note=5", "server_cmd=c1m-server --port 9000", "hold_wall_s=")
        self.assertEqual(r["accepted"], 2000)
        self.assertEqual(r["t_accept_s"], 0.119)
        self.assertEqual(r["note"], "5")            # a text column stays text
        self.assertEqual(r["server_cmd"], "c1m-server --port 9000")
        self.assertIsNone(r["hold_wall_s"])
        self.assertEqual(r["status"], "ok")
        self.assertEqual(r["flags"], "")
        self.assertEqual(os.listdir(self.dir), ["result.json"])   # no temp file left

    def test_merged_observations(self):
        # a monitor's observations (lib/rampmon.py's ramp-end.json) judge the run;
        # a file nested past the JSON parser (or none) adds nothing, and the record is written
        path = os.path.join(self.dir, "ramp-end.json")
        with open(path, "w") as f:
            json.dump({"ramp_end": "timeout", "t1": "5.5", "x": [1], "bad key": "1"}, f)
        r = self.write("--obs", "ready=ok", "--merge-obs", path, "timeout_s=600")
        self.assertEqual((r["status"], r["note"]), ("timeout", "not all accepted after 600s"))
        with open(os.path.join(self.dir, "observations.json")) as f:
            self.assertEqual(json.load(f), {"ready": "ok", "ramp_end": "timeout", "t1": "5.5"})
        with open(path, "w") as f:
            f.write("[" * 100000)
        r = self.write("--obs", "ready=ok", "--merge-obs", path, "--merge-obs", path + ".none")
        self.assertEqual(r["status"], "failed")

    def test_client_summary_merged_and_flattened(self):
        client = {"established": 2000, "failed": 3, "failures": {"ECONNREFUSED": 3},
                  "workers": 3, "time_to_established_s": 0.105, "cpu_user_s": 0.1,
                  "cpu_sys_s": 0.25, "connect_latency_ms": {"p99": 45.5},
                  "heartbeat": {"pongs": 10216, "latency_ms": {"p99": 1.9}},
                  "open_at_end": 1999, "future_key": [1, 2]}
        r = self.write("status=ok", "hb_pongs=7", client=client)
        self.assertEqual(r["client"], client)                  # kept whole, unknown keys too
        self.assertEqual(r["client_established"], 2000)
        self.assertEqual(r["client_failed"], 3)
        self.assertEqual(r["client_failures"], "ECONNREFUSED:3")
        self.assertEqual(r["t_client_established_s"], 0.105)
        self.assertEqual(r["client_workers"], 3)
        self.assertEqual(r["client_cpu_run_s"], 0.35)
        self.assertEqual(r["connect_p99_ms"], 45.5)
        self.assertEqual(r["hb_p99_ms"], 1.9)
        self.assertEqual(r["client_open_at_end"], 1999)
        self.assertEqual(r["hb_pongs"], 7)                     # an explicit key=value wins

    def test_unreadable_client_json_is_flagged_not_fatal(self):
        r = self.write("status=ok", "accepted=10", client='{"established": 5,')
        self.assertNotIn("client", r)
        self.assertEqual(r["status"], "suspect")
        self.assertIn("client-json-unreadable", r["flags"])

    def test_a_cpu_count_that_is_no_ascii_number_is_this_machines(self):
        # "\u00b2".isdigit() is true and int() refuses it: a ValueError traceback, no result.json
        p = run(RECORD, "write", self.out, "--obs", "stat_cpus=\u00b2", "status=ok", "accepted=10")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(self.out))

    def test_client_json_nested_too_deep_to_clean_is_flagged_not_fatal(self):
        # 900 levels parse, but record.clean recursed past the limit: a traceback, no result.json
        r = self.write("status=ok", "accepted=10", client='{"a":' * 900 + "1" + "}" * 900)
        self.assertNotIn("client", r)
        self.assertIn("client-json-unreadable", r["flags"])

    def test_client_fields_of_the_wrong_type_count_as_missing(self):
        # each raised AttributeError or TypeError in client_columns: no result.json at all
        good = {"established": 2000, "failed": 0, "failures": {}, "cpu_user_s": 0.1, "cpu_sys_s": 0.25,
                "connect_latency_ms": {"p99": 45.5}, "heartbeat": {"pongs": 7, "latency_ms": {"p99": 1.9}}}
        for key, bad, col in (("failures", [1], "client_failures"), ("failures", "x", "client_failures"),
                              ("failures", {"ETIMEDOUT": "x"}, "connect_timeouts"),
                              ("heartbeat", [1], "hb_pongs"), ("heartbeat", {"latency_ms": "x"}, "hb_p99_ms"),
                              ("connect_latency_ms", [1], "connect_p99_ms"),
                              ("cpu_user_s", "x", None), ("established", [2000], "client_established"),
                              ("established", True, "client_established"), ("reconnect", [1], None)):
            client = dict(good, **{key: bad})
            r = self.write("status=ok", "accepted=2000", "target=2000", client=client)
            self.assertEqual(r["client"], client, key)
            if col:
                self.assertIsNone(r[col], (key, bad))
            self.assertEqual(r["client_cpu_run_s"], 0.25 if key == "cpu_user_s" else 0.35)
            self.assertEqual(r["client_established"], None if key == "established" else 2000)
            self.assertNotIn("client_reconnects", r)
            self.assertEqual((r["status"], r["flags"]), ("suspect", "client-json-bad-field"), (key, bad))

    def test_no_number_that_is_not_finite_reaches_the_record(self):
        # NaN, Infinity and 1e999 were written to result.json as non-standard JSON
        client = ('{"established": NaN, "failed": 1e999, "failures": {"ETIMEDOUT": -Infinity},'
                  ' "open_at_end": 1%s, "heartbeat": {"pongs": 3, "latency_ms": {"p99": Infinity}},'
                  ' "extra": [1, NaN]}' % ("0" * 400))
        r = self.write("status=ok", "accepted=20", "target=20", "t_accept_s=1.0e999", client=client)
        with open(self.out) as f:
            json.loads(f.read(), parse_constant=lambda c: self.fail("%s in result.json" % c))
        self.assertEqual(r["client"], {"established": None, "failed": None, "failures": {"ETIMEDOUT": None},
                                       "open_at_end": None, "heartbeat": {"pongs": 3, "latency_ms": {"p99": None}},
                                       "extra": [1, None]})
        for col in ("client_established", "client_failed", "client_failures", "connect_timeouts",
                    "client_open_at_end", "hb_p99_ms"):
            self.assertIsNone(r[col], col)
        self.assertEqual(r["hb_pongs"], 3)
        # too large for a float: no figure, flagged (text every reader would refuse the run over)
        self.assertIsNone(r["t_accept_s"])
        self.assertIn("not-finite:t_accept_s", r["flags"].split(";"))
        self.assertIn("client-json-bad-field", r["flags"].split(";"))
        self.assertEqual(r["status"], "suspect")

    def test_a_figure_that_is_no_finite_number_is_null_and_flagged(self):
        # `record.py write R t_accept_s=inf user_bytes_per_conn=-1e-05` wrote status ok and
        # no flag (inf and 1e-05 stayed text, which the judge does not read), and
        # results.py row then refused the run ("t_accept_s inf is not a figure"):
        # a harness error, the run dropped from runs.csv
        r = self.write("status=ok", "accepted=20", "target=20", "t_accept_s=inf", "server_cpu_connect_s=nan",
                       "user_bytes_per_conn=-1e-05", "kernel_bytes_per_conn=2e3")
        self.assertIsNone(r["t_accept_s"])
        self.assertIsNone(r["server_cpu_connect_s"])
        self.assertEqual(r["user_bytes_per_conn"], -1e-05)
        self.assertEqual(r["kernel_bytes_per_conn"], 2000.0)
        flags = r["flags"].split(";")
        for f in ("not-finite:t_accept_s", "not-finite:server_cpu_connect_s", "negative:user_bytes_per_conn"):
            self.assertIn(f, flags)
        self.assertEqual(r["status"], "suspect")
        sys.path.insert(0, LIB)
        import runstore
        runstore.check_run(dict(r, contender="c", tier=20), "result.json")   # a record every reader takes

    def test_sanity_bounds_turn_ok_into_suspect(self):
        ncpu = os.cpu_count()
        r = self.write("status=ok", "accepted=2001", "target=2000", "kernel_bytes_per_conn=-812",
                       "server_cpu_hold_pct=-0.5", f"machine_cpu_connect_pct={100 * ncpu + 1}",
                       "outside_hold_pct=100.5", "server_rss_kib=-1", "t_accept_s=-0.2")
        flags = r["flags"].split(";")
        for f in ("negative:kernel_bytes_per_conn", "negative:server_cpu_hold_pct",
                  "negative:server_rss_kib", "negative:t_accept_s",
                  "cpu-above-machine:machine_cpu_connect_pct",
                  "cpu-above-machine:outside_hold_pct", "accepted-above-target"):
            self.assertIn(f, flags)
        self.assertEqual(r["status"], "suspect")

    def test_bounds_keep_other_statuses_and_accept_edges(self):
        ncpu = os.cpu_count()
        r = self.write("status=server-died", "server_cpu_hold_pct=-0.5")
        self.assertEqual(r["status"], "server-died")
        self.assertEqual(r["flags"], "negative:server_cpu_hold_pct")
        r = self.write("status=ok", "accepted=2000", "target=2000", "kernel_bytes_per_conn=0",
                       f"machine_cpu_connect_pct={100 * ncpu}", "outside_cpu_pct=100",
                       "t_accept_s=0.0", "listen_drops=0")
        self.assertEqual((r["status"], r["flags"]), ("ok", ""))

    def test_get(self):
        self.write("status=ok", "accepted=2000", "note=line one", client={"heartbeat": {"pongs": 4}})
        p = run(RECORD, "get", self.out, "status", "missing", "accepted", "client.heartbeat.pongs",
                "client.heartbeat", "note")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n"),
                         ["ok", "", "2000", "4", '{"pongs": 4}', "line one", ""])

    def test_pairs(self):
        # a monitor's summary into R (scenarios/idle.sh scenario_record): key,
        # NUL, value, NUL; values as get prints them; nothing for a missing key
        with open(self.out, "w") as f:
            json.dump({"record": {"stall_end": "cut", "stall_cut": 201, "why": "a=b; c\nd", "none": None},
                       "end": "cut"}, f)
        p = run(RECORD, "pairs", self.out, "record")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\0"), ["stall_end", "cut", "stall_cut", "201", "why", "a=b; c d",
                                                "none", "", ""])
        self.assertEqual(run(RECORD, "pairs", self.out, "missing").stdout, "")
        self.assertEqual(run(RECORD, "pairs", self.out).returncode, 2)

    def test_usage_and_unreadable_file(self):
        self.assertEqual(run(RECORD).returncode, 2)
        self.assertEqual(run(RECORD, "bogus").returncode, 2)
        self.assertEqual(run(RECORD, "write", self.out, "notapair").returncode, 2)
        self.assertEqual(run(RECORD, "write", self.out, "--client").returncode, 2)
        # `write --help` is usage, not a failed record written to a file named --help
        p = run(RECORD, "write", "--help", cwd=self.dir)
        self.assertEqual(p.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "--help")))
        self.assertEqual(run(RECORD, "get", self.out).returncode, 2)
        p = run(RECORD, "get", os.path.join(self.dir, "nope.json"), "status")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read", p.stderr)
        fifo = os.path.join(self.dir, "fifo.json")       # held get in open() for ever
        os.mkfifo(fifo)
        p = run(RECORD, "get", fifo, "status")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a regular file", p.stderr)


def sample(t0, t1, total, outside=0, top=(), ksoftirqd=0, init=0, steal=0, softirq=0, **more):
    return {"t0": t0, "t1": t1, "total": total, "outside": outside, "top": [list(x) for x in top],
            "ksoftirqd": ksoftirqd, "init": init, "steal": steal, "softirq": softirq, "tree": 5,
            **more}


class DisturbSummaryTest(unittest.TestCase):
    def summary(self, samples, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for s in samples:
                f.write(json.dumps(s) + "\n")
            f.write('{"t0": 1, "t1"')     # a line cut by a kill is skipped
        try:
            p = run(DISTURB, "summary", f.name, *args)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_lines_that_are_no_sample_are_skipped(self):
        # JSON that is no sample (a list, an object without its window) or bytes
        # that are not text: skipped like a cut line (a traceback: KeyError,
        # TypeError, UnicodeDecodeError)
        quiet = [sample(100 + i, 101 + i, 200, 2, init=1) for i in range(4)]
        want = self.summary(quiet, "--ramp", "100", "104", "--limit", "5")
        for junk in ([1, 2], {"t0": 100}, {"t0": 100, "t1": "x", "total": 1, "top": []}, 7):
            self.assertEqual(self.summary([junk] + quiet, "--ramp", "100", "104", "--limit", "5"), want)
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as f:
            f.write(b"\xff\xfe\n" + b"".join(json.dumps(s).encode() + b"\n" for s in quiet))
            f.flush()
            p = run(DISTURB, "summary", f.name, "--ramp", "100", "104", "--limit", "5")
        self.assertEqual((p.returncode, json.loads(p.stdout or "null")), (0, want), p.stderr)

    def test_a_sample_with_a_field_that_is_no_figure_is_skipped(self):
        # TypeError's traceback ("y" a tick count, "x" a sum), or "inf" as a
        # percentage from 1e400 (exit 0)
        quiet = [sample(100 + i, 101 + i, 200, 2, init=1, top=[("x[5]", 2)]) for i in range(4)]
        want = self.summary(quiet, "--ramp", "100", "104", "--limit", "5")
        bad = [sample(100, 101, 200, top=[("x", "y")]), sample(100, 101, 200, top=[(["x"], 1)]),
               sample(100, 101, 200, outside=1e400), sample(100, 101, 1e400), dict(sample(100, 101, 200), t1=True)]
        bad += [sample(100, 101, 200, **{k: "x"}) for k in ("outside", "steal", "softirq", "init",
                                                             "ksoftirqd", "controller")]
        for junk in bad:
            self.assertEqual(self.summary([junk] + quiet, "--ramp", "100", "104", "--limit", "5"), want, junk)

    def test_windows_prorated_and_judged(self):
        # 2 CPUs at 100 Hz: 200 jiffies a second. Ramp 100-104 quiet (1% outside),
        # hold 110-114 with a burner using half the machine.
        quiet = [sample(100 + i, 101 + i, 200, 2, [("kworker/0:1[11]", 2)], init=1) for i in range(4)]
        busy = [sample(110 + i, 111 + i, 200, 100, [("sh[4242]", 98), ("process_api[1]", 2)],
                       ksoftirqd=6, init=2, steal=4, softirq=10) for i in range(4)]
        r = self.summary(quiet + busy, "--ramp", "100", "104", "--hold", "110", "114", "--limit", "5")
        self.assertEqual(r["outside_ramp_pct"], "1.0")
        self.assertEqual(r["outside_hold_pct"], "50.0")
        self.assertEqual(r["outside_cpu_pct"], "50.0")
        self.assertEqual(r["outside_top"], "sh[4242]=49.0")
        self.assertEqual(r["disturbed"], "1")
        self.assertIn("other than PID 1 49.0% during the hold", r["disturb_cause"])
        self.assertNotIn("during the ramp", r["disturb_cause"])
        self.assertIn("sh[4242]=49.0 process_api[1]=1.0", r["disturb_cause"])
        # over ramp and hold together (100-114: the gap 104-110 has no samples)
        self.assertEqual(r["ksoftirqd_pct"], "1.5")      # 24 of 1600 jiffies
        self.assertEqual(r["steal_pct"], "1.0")
        self.assertEqual(r["softirq_pct"], "2.5")
        self.assertEqual(r["init_cpu_pct"], str(round(100 * 12 / 1600, 1)))

        r = self.summary(quiet + busy, "--ramp", "100", "104", "--hold", "110", "114", "--limit", "50")
        self.assertEqual(r["disturbed"], "0")
        self.assertNotIn("disturb_cause", r)

    def test_pid1_judged_on_its_own_limit(self):
        # PID 1 (the fd scanner) at 16% of the machine, everything else at 1%:
        # under --init-limit 25 the run is not disturbed, and the figure is kept
        s = [sample(100 + i, 101 + i, 200, 34, [("process_api[1]", 32), ("kworker/0:1[11]", 2)],
                    init=32) for i in range(4)]
        r = self.summary(s, "--ramp", "100", "104", "--limit", "5", "--init-limit", "25")
        self.assertEqual(r["disturbed"], "0")
        self.assertEqual(r["init_cpu_pct"], "16.0")
        self.assertEqual(r["outside_cpu_pct"], "17.0")
        # without --init-limit, PID 1 is never a cause; the rest still is
        r = self.summary(s, "--ramp", "100", "104", "--limit", "0.5")
        self.assertEqual(r["disturbed"], "1")
        self.assertIn("other than PID 1 1.0% during the ramp", r["disturb_cause"])
        # PID 1 above its own limit: disturbed, named as the cause
        r = self.summary(s, "--ramp", "100", "104", "--limit", "5", "--init-limit", "10")
        self.assertEqual(r["disturbed"], "1")
        self.assertIn("PID 1 16.0% during the ramp (limit 10%)", r["disturb_cause"])
        self.assertNotIn("other than PID 1", r["disturb_cause"])

    def test_half_covered_interval_counts_half_and_short_window_widened(self):
        s = [sample(0, 2, 400, 200, [("burn[9]", 200)]), sample(2, 4, 400, 0)]
        # [1, 3]: half of each interval: 100 of 400 jiffies outside
        r = self.summary(s, "--ramp", "1", "3", "--limit", "5")
        self.assertEqual(r["outside_ramp_pct"], "25.0")
        # a 0.1 s ramp is judged over its first 2 s
        r = self.summary(s, "--ramp", "0", "0.1", "--limit", "5")
        self.assertEqual(r["outside_ramp_pct"], "50.0")
        self.assertNotIn("outside_hold_pct", r)

    def test_no_sample_in_window_is_unknown_not_zero(self):
        r = self.summary([sample(0, 1, 200, 100)], "--ramp", "50", "60", "--limit", "5")
        self.assertEqual(r, {"flags": "disturbance-unmeasured:ramp"})

    def test_window_the_samples_do_not_cover_is_flagged(self):
        # the sampler died half-way through the hold: the ramp is judged (quiet),
        # the hold is not proven quiet: flagged, not passed on its first half
        s = [sample(100 + i, 101 + i, 200, 0) for i in range(12)]
        r = self.summary(s, "--ramp", "100", "104", "--hold", "108", "116", "--limit", "5")
        self.assertEqual(r["flags"], "disturbance-unmeasured:hold")
        self.assertEqual(r["outside_ramp_pct"], "0.0")
        r = self.summary(s, "--ramp", "100", "104", "--hold", "106", "111.5", "--limit", "5")
        self.assertNotIn("flags", r)       # 5.5 of 5.5 s covered
        # a 1 s hold ending just before the last sample: covered, though its
        # 2 s widening (for judging) reaches past the sampler's end
        r = self.summary(s, "--ramp", "100", "100.1", "--hold", "110.5", "111.5", "--limit", "5")
        self.assertNotIn("flags", r)

    def test_scenario_phase_is_a_judged_window(self):
        # quiet ramp and hold; a burner during the scenario's phase (a storm's recovery)
        quiet = [sample(100 + i, 101 + i, 200, 2, [("kworker/0:1[11]", 2)]) for i in range(8)]
        busy = [sample(120 + i, 121 + i, 200, 60, [("sh[4242]", 60)]) for i in range(4)]
        r = self.summary(quiet + busy, "--ramp", "100", "104", "--hold", "104", "108",
                         "--phase", "scenario", "120", "124", "--limit", "5")
        self.assertEqual(r["outside_scenario_pct"], "30.0")
        self.assertEqual(r["outside_cpu_pct"], "30.0")
        self.assertEqual(r["outside_top"], "sh[4242]=30.0")
        self.assertEqual(r["disturbed"], "1")
        self.assertIn("other than PID 1 30.0% during the scenario", r["disturb_cause"])
        # the whole-run figures reach to the phase's end
        self.assertEqual(r["steal_pct"], "0.0")
        # without the phase, the same samples are quiet
        r = self.summary(quiet + busy, "--ramp", "100", "104", "--hold", "104", "108", "--limit", "5")
        self.assertEqual(r["disturbed"], "0")
        # a phase the sampler did not cover is flagged, never passed
        r = self.summary(quiet, "--ramp", "100", "104", "--phase", "scenario", "110", "130",
                         "--limit", "5")
        self.assertIn("disturbance-unmeasured:scenario", r["flags"])

    def test_the_controller_is_reported_apart_never_judged(self):
        # bench.sh (the controller) at a quarter of the machine, nothing else
        # outside: not disturbed; its share said apart. Samples written before
        # the controller was measured (no key) read as 0.
        ctl = [sample(100 + i, 101 + i, 200, 1, [("kworker/0:1[11]", 1)], controller=50)
               for i in range(4)]
        r = self.summary(ctl, "--ramp", "100", "104", "--limit", "5")
        self.assertEqual((r["disturbed"], r["outside_cpu_pct"], r["controller_cpu_pct"]),
                         ("0", "0.5", "25.0"))
        r = self.summary([sample(100, 104, 800, 4)], "--ramp", "100", "104", "--limit", "5")
        self.assertEqual(r["controller_cpu_pct"], "0.0")

    def test_usage(self):
        self.assertEqual(run(DISTURB, "summary", "/nonexistent", "--ramp", "1", "2",
                             "--phase", "hold", "1", "2").returncode, 2)
        self.assertEqual(run(DISTURB, "summary", "/nonexistent", "--ramp", "1", "2",
                             "--phase", "a b", "1", "2").returncode, 2)
        self.assertEqual(run(DISTURB).returncode, 2)
        self.assertEqual(run(DISTURB, "summary", "/nonexistent").returncode, 2)
        self.assertEqual(run(DISTURB, "summary", "/nonexistent", "--ramp", "1", "x").returncode, 2)
        # a window or limit that is no finite number: usage (nan judged a window measured and quiet)
        for bad in (["--ramp", "nan", "1"], ["--ramp", "0", "inf"], ["--ramp", "0", "1", "--limit", "nan"],
                    ["--ramp", "0", "1", "--phase", "x", "nan", "1"]):
            self.assertEqual(run(DISTURB, "summary", "/nonexistent", *bad).returncode, 2, bad)
        self.assertEqual(run(DISTURB, "summary", "/nonexistent", "--ramp", "1", "2").returncode, 1)
        self.assertEqual(run(DISTURB, "sample", "--root", "0", "--out", "/dev/null").returncode, 2)
        self.assertEqual(run(DISTURB, "sample", "--out").returncode, 2)
        self.assertEqual(run(DISTURB, "sample", "--root", "1", "--out", "/dev/null",
                             "--controller", "x").returncode, 2)


def load_disturb():
    import importlib.util
    spec = importlib.util.spec_from_file_location("disturb", DISTURB)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class AccountingTest(unittest.TestCase):
    """disturb.Accounting on made-up /proc snapshots: {pid: (ppid, comm, own
    ticks, reaped ticks, starttime, kernel thread)}. Root = 100 (run_one.sh)."""

    def setUp(self):
        self.d = load_disturb()
        self.base = {1: (0, "init", 1000, 5000, 1, False), 100: (1, "run_one.sh", 50, 10, 500, False),
                     300: (1, "make", 10, 0, 400, False), 9: (2, "ksoftirqd/0", 7, 0, 2, True)}

    def step(self, acc, procs):
        return acc.interval(procs, 10_000)    # nothing here started after boot tick 10000

    def test_short_lived_children_count_for_the_process_that_reaped_them(self):
        acc = self.d.Accounting(100)
        self.step(acc, self.base)
        # make's children lived and were reaped between the two snapshots:
        # 80 ticks in its cutime+cstime, none seen alive
        x = self.step(acc, {**self.base, 300: (1, "make", 12, 80, 400, False)})
        self.assertEqual(x["outside"], 82)
        self.assertEqual(x["busiest"], {"make[300]": 82})
        self.assertEqual(x["init"], 0)

    def test_a_child_seen_alive_is_not_counted_twice(self):
        acc = self.d.Accounting(100)
        self.step(acc, {**self.base, 600: (300, "cc1", 30, 0, 9000, False)})
        x = self.step(acc, {**self.base, 600: (300, "cc1", 50, 0, 9000, False)})
        self.assertEqual(x["busiest"], {"cc1[600]": 20})
        # cc1 exits after 55 ticks in all; make reaps it: only the unseen 5 are
        # new, named after make (the process that started and reaped it)
        x = self.step(acc, {**self.base, 300: (1, "make", 10, 55, 400, False)})
        self.assertEqual(x["outside"], 5)
        self.assertEqual(x["busiest"], {"make[300]": 5})

    def test_the_runs_processes_stay_the_runs_when_pid_1_reaps_them(self):
        acc = self.d.Accounting(100)
        srv = {200: (100, "c1m-server", 0, 0, 8000, False), 201: (200, "c1m-server", 100, 0, 8001, False)}
        self.step(acc, {**self.base, **srv})
        # the server's parent SIGKILLed: its worker is re-parented to PID 1 and
        # goes on closing its sockets
        x = self.step(acc, {**self.base, 201: (1, "c1m-server", 160, 0, 8001, False)})
        self.assertEqual(x["outside"], 0)
        self.assertEqual(x["tree"], 2)       # run_one.sh and the worker
        # it exits; PID 1 reaps it with 190 ticks: the 30 unseen are the run's too
        x = self.step(acc, {**self.base, 1: (0, "init", 1000, 5190, 1, False)})
        self.assertEqual((x["outside"], x["init"]), (0, 0))
        # a child the re-parented worker starts is the run's as well
        acc = self.d.Accounting(100)
        self.step(acc, {**self.base, **srv})
        self.step(acc, {**self.base, 201: (1, "c1m-server", 100, 0, 8001, False)})
        x = self.step(acc, {**self.base, 201: (1, "c1m-server", 100, 0, 8001, False),
                            202: (201, "sh", 40, 0, 20_000, False)})
        self.assertEqual(x["outside"], 0)

    def test_a_server_killed_with_its_workers_is_not_pid_1s_cpu(self):
        # the storm: SIGKILL of the server's parent and its workers at once;
        # the workers are re-parented to PID 1 and reaped unseen: PID 1's
        # cutime grows by their whole lives, which the run has counted
        acc = self.d.Accounting(100)
        srv = {200: (100, "c1m-server", 5, 0, 8000, False), 201: (200, "c1m-server", 400, 0, 8001, False),
               202: (200, "c1m-server", 300, 0, 8002, False)}
        self.step(acc, {**self.base, **srv})
        x = self.step(acc, {**self.base, 1: (0, "init", 1000, 5000 + 410 + 305, 1, False),
                            100: (1, "run_one.sh", 50, 10 + 5, 500, False)})
        self.assertEqual((x["outside"], x["init"]), (0, 0))
        # (their 10 and 5 ticks after the last snapshot are on their side: the run's)
        # a reaper whose growth no orphan fits is charged as before
        x = self.step(acc, {**self.base, 1: (0, "init", 1000, 5000 + 715 + 30, 1, False),
                            100: (1, "run_one.sh", 50, 15, 500, False)})
        self.assertEqual((x["outside"], x["init"]), (30, 30))

    def test_the_root_gone(self):
        acc = self.d.Accounting(100)
        self.step(acc, self.base)
        rest = {k: v for k, v in self.base.items() if k != 100}
        x = self.step(acc, {**rest, 300: (1, "make", 10, 8, 400, False)})  # no KeyError
        self.assertEqual((x["tree"], x["outside"]), (0, 8))

    def test_pid_1_ksoftirqd_and_pid_reuse(self):
        acc = self.d.Accounting(100)
        self.step(acc, {**self.base, 700: (300, "old", 500, 0, 3000, False)})
        # pid 700 again, another process (its starttime): no baseline, 0
        nxt = {**self.base, 1: (0, "init", 1040, 5000, 1, False), 9: (2, "ksoftirqd/0", 27, 0, 2, True),
               700: (300, "new", 9, 0, 3500, False)}
        x = self.step(acc, nxt)
        self.assertEqual((x["init"], x["ksoftirqd"]), (40, 20))
        self.assertEqual(x["busiest"], {"init[1]": 40})
        # ... unless it started during the interval: then all its ticks are new
        x = acc.interval({**nxt, 701: (300, "new2", 9, 0, 20_000, False)}, 10_000)
        self.assertEqual(x["busiest"], {"new2[701]": 9})


    def test_only_kernel_threads_are_ksoftirqd(self):
        # a process that named itself ksoftirqd/9 (/proc/self/comm) is outside
        acc = self.d.Accounting(100)
        self.step(acc, {**self.base, 800: (300, "ksoftirqd/9", 10, 0, 3000, False)})
        x = self.step(acc, {**self.base, 9: (2, "ksoftirqd/0", 17, 0, 2, True),
                            800: (300, "ksoftirqd/9", 90, 0, 3000, False)})
        self.assertEqual((x["ksoftirqd"], x["outside"]), (10, 80))
        self.assertEqual(x["busiest"], {"ksoftirqd/9[800]": 80})

    def test_the_controller_apart(self):
        # the controller (run_one.sh's parent, 50): its own ticks and the
        # children it reaped unseen are its own; a child seen alive (a burner
        # it started) is outside; its pid reused by another process is outside
        base = {**self.base, 50: (1, "bench.sh", 100, 0, 450, False),
                100: (50, "run_one.sh", 50, 10, 500, False)}
        acc = self.d.Accounting(100, 50)
        self.step(acc, {**base, 700: (50, "sh", 0, 0, 3000, False)})
        x = self.step(acc, {**base, 50: (1, "bench.sh", 130, 20, 450, False),
                            700: (50, "sh", 60, 0, 3000, False)})
        self.assertEqual((x["controller"], x["outside"]), (50, 60))
        self.assertEqual(x["busiest"], {"sh[700]": 60})
        x = self.step(acc, {**base, 50: (1, "bench.sh", 9, 0, 20_000, False)})
        self.assertEqual((x["controller"], x["outside"]), (0, 9))


# These two judge CPU (a burner's share of a CPU, the busiest processes named):
# on a loaded machine they can fail, so make check (unittest discover) skips
# them and tests/trust.bats, in make test's serial group, runs them (C1M_SERIAL=1).
SERIAL = serial_only("judges CPU: tests/trust.bats runs it alone (C1M_SERIAL=1)")


@SERIAL
class DisturbSamplerTest(unittest.TestCase):
    def test_short_lived_outside_processes_are_counted(self):
        """A burner made of processes that each live ~30 ms (a build, a shell
        loop): between two samples they are born, burn and are reaped. Their
        CPU is counted, for the process that runs them."""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "s.jsonl")
            code = ("import os, time\n"
                    "end = time.time() + 30\n"
                    "while time.time() < end:\n"
                    "    pid = os.fork()\n"
                    "    if pid == 0:\n"
                    "        t = time.process_time() + 0.03\n"
                    "        while time.process_time() < t: pass\n"
                    "        os._exit(0)\n"
                    "    os.waitpid(pid, 0)\n")
            burner = subprocess.Popen([sys.executable, "-c", code])
            idle = subprocess.Popen(["sleep", "30"])
            try:
                t0 = time.time()
                s = subprocess.Popen([sys.executable, DISTURB, "sample", "--root", str(idle.pid),
                                      "--out", out, "--interval", "0.5"])
                time.sleep(2.6)
                s.send_signal(signal.SIGTERM)
                self.assertEqual(s.wait(timeout=10), 0)
                span = time.time() - t0
            finally:
                for p in (burner, idle):
                    p.kill()
                    p.wait()
            lines = jsonl(out)
            hz = os.sysconf("SC_CLK_TCK")
            seen = sum(n for x in lines for name, n in x["top"] if name == f"python3[{burner.pid}]")
            # the burner keeps one CPU busy: well over half of it must be seen
            # (only the tail of one child at each end can be missed)
            self.assertGreater(seen, 0.5 * span * hz, lines)


@SERIAL
class DisturbSamplerRootTest(unittest.TestCase):
    def test_own_tree_inside_burner_outside(self):
        """The sampler's root tree is not outside; a busy process outside is named."""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "s.jsonl")
            burner = subprocess.Popen([sys.executable, "-c",
                                       "import time\nend = time.time() + 30\n"
                                       "while time.time() < end: pass"])
            try:
                # root = this test process: the burner is its child, so inside
                inside = subprocess.Popen([sys.executable, DISTURB, "sample", "--root", str(os.getpid()),
                                           "--out", out, "--interval", "0.5"])
                time.sleep(1.6)
                inside.send_signal(signal.SIGUSR1)    # an extra sample at once
                time.sleep(0.3)
                inside.send_signal(signal.SIGTERM)
                self.assertEqual(inside.wait(timeout=10), 0)
                lines = jsonl(out)
                self.assertGreaterEqual(len(lines), 4)
                names = [n for x in lines for n, _ in x["top"]]
                self.assertNotIn(f"python3[{burner.pid}]", names)
                # root = an idle child: the burner is outside now, and named
                idle = subprocess.Popen(["sleep", "30"])
                try:
                    os.unlink(out)
                    outside = subprocess.Popen([sys.executable, DISTURB, "sample", "--root", str(idle.pid),
                                                "--out", out, "--interval", "0.5"])
                    time.sleep(1.6)
                    outside.send_signal(signal.SIGTERM)
                    self.assertEqual(outside.wait(timeout=10), 0)
                finally:
                    idle.kill()
                    idle.wait()
                lines = jsonl(out)
                names = [n for x in lines for n, _ in x["top"]]
                self.assertIn(f"python3[{burner.pid}]", names)
                self.assertGreater(sum(x["outside"] for x in lines), 0)
            finally:
                burner.kill()
                burner.wait()

    def sample(self, root, out, *more):
        s = subprocess.Popen([sys.executable, DISTURB, "sample", "--root", str(root),
                              "--out", out, "--interval", "0.5", *more])
        time.sleep(1.6)
        s.send_signal(signal.SIGTERM)
        self.assertEqual(s.wait(timeout=10), 0)
        return jsonl(out)

    def test_a_burner_named_ksoftirqd_is_outside_and_the_controller_apart(self):
        """A process calling itself ksoftirqd/9 is no kernel thread: outside,
        named. The same burner as the controller: apart, not outside."""
        self.assertTrue(any(p[5] and p[1].startswith("ksoftirqd/")
                            for p in load_disturb().read_procs().values()))
        with tempfile.TemporaryDirectory() as d:
            burner = subprocess.Popen([sys.executable, "-c",
                                       "import time\nopen('/proc/self/comm', 'w').write('ksoftirqd/9')\n"
                                       "end = time.time() + 30\nwhile time.time() < end: pass"])
            idle = subprocess.Popen(["sleep", "30"])
            try:
                time.sleep(0.2)
                procs = load_disturb().read_procs()
                self.assertEqual(procs[burner.pid][1::4], ("ksoftirqd/9", False))
                lines = self.sample(idle.pid, os.path.join(d, "a.jsonl"))
                names = [n for x in lines for n, _ in x["top"]]
                self.assertIn(f"ksoftirqd/9[{burner.pid}]", names)
                lines = self.sample(idle.pid, os.path.join(d, "b.jsonl"), "--controller", str(burner.pid))
                self.assertNotIn(f"ksoftirqd/9[{burner.pid}]", [n for x in lines for n, _ in x["top"]])
                self.assertGreater(sum(x["controller"] for x in lines), 0)
            finally:
                for p in (burner, idle):
                    p.kill()
                    p.wait()


if __name__ == "__main__":
    unittest.main()
