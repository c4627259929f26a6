"""harness/lib/stormmon.py, the reconnect storm's recovery watch: the failure a
pass shows, the TcpExt counters it reads, and the summary of watches recorded
at 2k (tests/py/data/storm-*.jsonl; tests/storm.bats runs the scenario end to
end)."""
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(__file__)
import util  # noqa: E402  (harness/lib on sys.path)
import stormmon as st  # noqa: E402


def recorded(name):
    with open(os.path.join(HERE, "data", name)) as f:
        return [json.loads(line) for line in f]


def t_kill(rows):
    """The kill's time, from the first sample's seconds since it (or the end's
    window when there is none: a storm over within the first pass)."""
    s = next((r for r in rows if "tag" not in r), None)
    return s["t"] - s["el"] if s else None


class Judge(unittest.TestCase):
    PASS = {"open": 1500, "dead": 0, "server": True, "client": True, "el": 12.0}

    def test_a_pass_still_recovering_goes_on(self):
        self.assertIsNone(st.judge(self.PASS, 2000, 300))
        self.assertIsNone(st.judge(dict(self.PASS, el=300), 2000, 300))   # at the limit, not over it

    def test_failures(self):
        self.assertEqual(st.judge(dict(self.PASS, dead=1, parent=True), 2000, 300),
                         ("storm-server-died", "the restarted server died during the recovery (1 worker(s) dead)"))
        self.assertEqual(st.judge(dict(self.PASS, server=False, parent=False), 2000, 300),
                         ("storm-server-died",
                          "the restarted server died during the recovery (0 worker(s) dead, parent gone)"))
        self.assertEqual(st.judge(dict(self.PASS, client=False, client_log="c1m-client: connect: x"), 2000, 300),
                         ("client-stopped", "client exited during the storm: c1m-client: connect: x"))
        self.assertEqual(st.judge(dict(self.PASS, el=300.5), 2000, 300),
                         ("storm-timeout", "the server held 1500 of 2000 300s after the kill"))
        # a dead server is said before a timeout
        self.assertEqual(st.judge(dict(self.PASS, el=301, dead=2), 2000, 300)[0], "storm-server-died")

    def test_tcpext_counters(self):
        with tempfile.NamedTemporaryFile("w", suffix=".netstat", delete=False) as f:
            f.write("TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans Other\n"
                    "TcpExt: 0 7 9 636 5\nIpExt: InNoRoutes\nIpExt: 0\n")
        try:
            # a counter this kernel lacks is left out, never a made-up 0
            self.assertEqual(st.tcp_counters(f.name), {"syncookies_sent": 0, "listen_overflows": 7,
                                                       "listen_drops": 9, "syn_retrans": 636})
        finally:
            os.unlink(f.name)
        self.assertEqual(st.tcp_counters("/nonexistent/netstat"), {})
        with tempfile.NamedTemporaryFile("w", suffix=".netstat", delete=False) as f:
            f.write("TcpExt: SyncookiesSent ListenOverflows\nTcpExt: \u00b2 7\n")    # not a counter: left out
        try:
            self.assertEqual(st.tcp_counters(f.name), {"listen_overflows": 7})
        finally:
            os.unlink(f.name)


class Recorded(unittest.TestCase):
    def test_backoff_recovery(self):
        # asyncio-protocol, --reconnect backoff with 3 s delays: 8 passes
        rows = recorded("storm-asyncio-backoff.jsonl")
        tk = t_kill(rows)
        s = st.summarize(rows, tk)
        r = s["record"]
        self.assertEqual((s["end"], s["failed"]), ("recovered", ""))
        self.assertEqual(r["storm_open"], 2000)
        self.assertEqual(r["storm_recovery_s"], r["storm_window_s"])
        self.assertEqual(r["storm_window_s"], f"{rows[-1]['t'] - tk:.3f}")
        # the PSS peak over every pass and the end
        self.assertEqual(r["storm_server_pss_peak_kib"], max(x["pss"] for x in rows if "pss" in x))
        # the counters' growth over the storm
        self.assertEqual(r["storm_syn_retrans"], rows[-1]["counters"]["syn_retrans"] - rows[0]["counters"]["syn_retrans"])
        self.assertEqual(r["storm_listen_overflows"], 2)

    def test_recovered_within_the_first_pass(self):
        rows = recorded("storm-c-now.jsonl")
        s = st.summarize(rows, rows[-1]["t"] - 0.751)
        self.assertEqual((s["end"], s["record"]["storm_recovery_s"]), ("recovered", "0.751"))
        self.assertEqual(s["record"]["storm_syn_retrans"], 636)
        # growth since the line before the kill, not the namespace's total
        rows[0]["counters"]["syn_retrans"] = 100
        self.assertEqual(st.summarize(rows, rows[-1]["t"])["record"]["storm_syn_retrans"], 536)

    def test_a_timeout_has_a_window_and_no_recovery(self):
        rows = recorded("storm-asyncio-backoff.jsonl")
        end = dict(rows[-1], end="storm-timeout", why="the server held 1940 of 2000 10s after the kill", open=1940)
        s = st.summarize(rows[:-1] + [end], t_kill(rows))
        self.assertEqual((s["failed"], s["why"]), ("storm-timeout", end["why"]))
        self.assertNotIn("storm_recovery_s", s["record"])
        self.assertEqual(s["record"]["storm_open"], 1940)

    def test_a_watch_without_its_end_line_records_nothing_and_fails_the_storm(self):
        # the watch stopped or killed on its own (a run interrupted never reads
        # the summary: run_one.sh exits 130): the storm was not seen to recover,
        # so it is no success (failed "" let the run stand ok, without a recovery)
        rows = recorded("storm-asyncio-backoff.jsonl")[:-1]
        s = st.summarize(rows, t_kill(rows))
        self.assertEqual((s["record"], s["end"], s["failed"], s["t_done"]), ({}, None, "scenario-failed", None))
        self.assertEqual(s["why"], "the recovery watch ended without a verdict (stopped or killed)")


class Damaged(unittest.TestCase):
    def test_lines_that_are_no_sample_are_skipped_not_a_crash(self):
        # monlib.load, both monitors' reader: a line cut by a full disk, one that
        # is JSON but no object (AttributeError's traceback), bytes that are not
        # text: the other lines still count, as disturb.py's reader does
        import monlib
        import stallmon
        rows = recorded("storm-asyncio-backoff.jsonl")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "storm.jsonl")
            with open(path, "wb") as f:
                for r in rows[:-1]:
                    f.write(json.dumps(r).encode() + b"\n")
                f.write(b'[1, 2]\n3\n"x"\n\xff\xfe{\n{"t": 1.5, "op\n')
                f.write(json.dumps(rows[-1]).encode() + b"\n")
            self.assertEqual(monlib.load(path), rows)
            self.assertEqual(st.summarize(monlib.load(path), t_kill(rows))["end"], "recovered")
            stallmon.summarize(monlib.load(path))
        # an end line without its time or verdict, a sample without its PSS: the
        # summary still answers (a traceback left storm.json empty: no failure,
        # so the storm counted as recovered)
        rows = recorded("storm-asyncio-backoff.jsonl")
        s = st.summarize(rows[:-1] + [{"el": 1.0}, {"tag": "end", "end": "recovered"}], t_kill(rows))
        self.assertEqual((s["end"], s["failed"]), (None, "scenario-failed"))
        s = st.summarize(rows[:-1] + [{"el": 1.0}, rows[-1]], t_kill(rows))
        self.assertEqual((s["end"], s["failed"]), ("recovered", ""))
        s = st.summarize(rows[:-1] + [dict(rows[-1], why=None, counters=[1])], t_kill(rows))
        self.assertEqual((s["end"], s["why"]), ("recovered", ""))

    def test_a_fifo_in_place_of_the_file_is_unreadable_not_a_hang(self):
        # monlib.load: open() of a FIFO waited for a writer for ever (stormmon
        # and stallmon summary hung); now exit 1, said
        import subprocess
        import sys
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "storm.jsonl")
            os.mkfifo(path)
            for tool, args in (("stormmon.py", ["--t-kill", "1"]), ("stallmon.py", [])):
                r = subprocess.run([sys.executable, os.path.join(util.LIB, tool), "summary", path] + args,
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("not a regular file", r.stderr)

    def test_a_field_that_is_no_figure_is_unknown_and_arguments_finite(self):
        # a PSS of "3" (TypeError in max()), an end time of NaN: skipped like a
        # missing field or end line; --t-kill nan gave a window of "nan"
        import contextlib
        import io
        s = st.summarize([{"tag": "end", "end": "recovered", "t": 5, "pss": 3, "open": "x"}, {"pss": "3"},
                          {"pss": float("inf")}, {"pss": 4}], 1)
        self.assertEqual(s["record"], {"storm_open": None, "storm_window_s": "4.000",
                                       "storm_server_pss_peak_kib": 4, "storm_recovery_s": "4.000"})
        s = st.summarize([{"tag": "end", "end": "recovered", "t": float("nan")}], 1)
        self.assertEqual((s["end"], s["failed"]), (None, "scenario-failed"))
        rows = recorded("storm-asyncio-backoff.jsonl")
        damaged = [dict(r, counters={"syn_retrans": "7"}) if r.get("tag") == "before" else r for r in rows]
        self.assertNotIn("storm_syn_retrans", st.summarize(damaged, t_kill(rows))["record"])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "storm.jsonl")
            with open(path, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows))
            for bad in ("nan", "inf", "-inf", "x"):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                    st.main(["summary", path, "--t-kill", bad])
                self.assertEqual(e.exception.code, 2, bad)
                self.assertIn("--t-kill", err.getvalue())
            # --conns that c1m-stat --wait refuses at once (the watch polled it without pause)
            for bad in ("-5", "0", str((1 << 40) + 1)):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                    st.main(["sample", "--out", path + ".x", "--stats", "s", "--c1m-stat", "c", "--conns", bad,
                             "--t-kill", "1", "--timeout", "5", "--server", "1", "--client", "1"])
                self.assertEqual(e.exception.code, 2, bad)
                self.assertIn("--conns", err.getvalue())


if __name__ == "__main__":
    unittest.main()
