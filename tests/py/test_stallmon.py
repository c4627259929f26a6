"""harness/lib/stallmon.py, the stall scenario's monitor: its rules (the
seconds that end the phase steady, the window's tolerance, the window, the
memory guard) and the phase's end and summary replayed on samples recorded
at 2k (tests/py/data/stall-*.jsonl: 201 of 2,000 connections stalled;
tests/push_stall.bats runs the scenario end to end)."""
import copy
import json
import os
import unittest

HERE = os.path.dirname(__file__)
import util  # noqa: E402,F401  (harness/lib on sys.path)
import stallmon as sm  # noqa: E402


def recorded(name):
    with open(os.path.join(HERE, "data", name)) as f:
        return [json.loads(line) for line in f]


def replay(rows):
    """The phase's end (end, why) on the recorded samples, as the sampler
    decided it live; None when the samples end first."""
    p = next(r for r in rows if r.get("tag") == "phase")
    phase = sm.Phase(p)
    for s in (r for r in rows if "tag" not in r):
        r = phase.step(s)
        if r:
            return r
    return None


class Rules(unittest.TestCase):
    def test_steady_waits_for_the_intervals_a_filling_peer_shows_in(self):
        # (2 pages + 4 KiB of --max-pending) / (0.9 x 1 KiB) = 13.3: 14 intervals
        self.assertEqual(sm.steady_s(10, 1, 1024, 4096), 14)
        self.assertEqual(sm.steady_s(10, 30, 1024, 4096), 420)   # c at 1M: ended steady after 58 s
        self.assertEqual(sm.steady_s(10, 0.1, 1024, 4096), 10)
        self.assertEqual(sm.steady_s(10, 3.5, 1024, 4096), 49)   # whole seconds, rounded up
        self.assertEqual(sm.steady_s(500, 30, 1024, 4096), 500)
        self.assertEqual(sm.steady_s(10, 1, 32, 4096), 427)      # small lines: more of them hide

    def test_knobs_that_are_no_positive_number_are_usage(self):
        # steady-s --push-bytes 0 (ZeroDivisionError), --push-every nan or inf
        # (ValueError, OverflowError): tracebacks; now exit 2 naming the knob
        import contextlib
        import io
        for bad in (["--push-bytes", "0"], ["--push-every", "nan"], ["--push-every", "inf"],
                    ["--push-every", "0"], ["--page", "-1"], ["--steady", "-1"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                sm.main(["steady-s"] + bad)
            self.assertEqual(e.exception.code, 2, bad)
            self.assertIn(bad[0], err.getvalue())

    def test_tolerance_is_a_tenth_of_the_stalled_peers_rate(self):
        # 10,000 x 1 KiB per 20 s over 10 s = 1,250 pages: a tenth + 2
        self.assertEqual(sm.still_pages(10000, 10, 20, 1024, 4096), 127)
        # 201 x 1 KiB per 0.1 s over 5 s = 2,512 pages: a tenth + 2
        self.assertEqual(sm.still_pages(201, 5, 0.1, 1024, 4096), 253)


def steps(w, mems, slow=0, rss=None):
    """1 where a sample opens a window, 0 where it is still (one a second)."""
    return "".join("0" if w.still(t, m, slow, rss) else "1" for t, m in enumerate(mems))


class Window(unittest.TestCase):
    def test_still_against_the_first_sample_not_the_last(self):
        self.assertEqual(steps(sm.Window(1000), [800000, 800000, 800100, 799900]), "1000")
        # each step within 1000 of the last: not still over the window
        self.assertEqual(steps(sm.Window(1000), [800000, 800600, 801200, 801800]), "1010")

    def test_a_cut_opens_a_new_window(self):
        w = sm.Window(1000)
        w.still(0, 800000, 0)
        self.assertFalse(w.still(1, 800000, 1))

    def test_rss(self):
        # within tol pages (4000 KiB) + 2 MiB of the first sample is still;
        # a server buffering without limit is not
        def rsteps(rss):
            w = sm.Window(1000, 4096)
            return "".join("0" if w.still(t, 800000, 0, r) else "1" for t, r in enumerate(rss))
        self.assertEqual(rsteps([100000, 103000, 106000, 94000]), "1000")
        self.assertEqual(rsteps([100000, 103000, 106049, 110000]), "1010")   # a new window at 106,049
        self.assertEqual(rsteps([None, None]), "10")   # no RssAnon at either end: TCP alone
        # an RSS read that failed at one end of the window: no verdict spans it
        self.assertEqual(rsteps([None, 5000]), "11")
        self.assertEqual(rsteps([5000, None]), "11")

    def test_pyext_at_1m_filling_is_never_still(self):
        # pyext at 1M, 10,000 stalled, a line every 20 s: what ended the phase
        # "steady" after 53 s with nothing cut (1% of the previous sample)
        w = sm.Window(sm.still_pages(10000, 10, 20, 1024, 4096))
        mems = [780575, 776479, 789791, 777247, 772127, 763935, 767263, 772895, 789279,
                797215, 804639, 811551, 811039]
        self.assertEqual(steps(w, mems), "1" * 13)


class Guard(unittest.TestCase):
    def test_guard(self):
        self.assertIsNone(sm.guard(5000, None, 1024, 1))   # the first sample: nothing to compare with
        self.assertEqual(sm.guard(1000, None, 1024, 1), "usable memory 1000 MiB (MemAvailable less "
                         "the reclaimable slab), under the 1024 MiB floor")
        self.assertIsNone(sm.guard(3000, 4000, 1024, 1))   # fell 1000, 1976 left: the next at 2000
        self.assertEqual(sm.guard(1500, 3000, 1024, 35), "usable memory 1500 MiB (MemAvailable less "
                         "the reclaimable slab), which fell 1500 MiB over the last 35 s: the next "
                         "sample would have been under the 1024 MiB floor")
        self.assertIsNone(sm.guard(1024, 1024, 1024, 1))   # at the floor, still: not under it
        self.assertIsNone(sm.guard(None, 4000, 1024, 1))   # unreadable: no verdict


class AfterThePhase(unittest.TestCase):
    """What the scenario records after the phase: the guard's note, the cut
    times from ramp.csv and the ss sums (scenarios/stall.sh computed them in
    bash and awk; the expected texts are theirs)."""

    def test_guard_note(self):
        rows = recorded("stall-c-filling-wait.jsonl")
        rows[-1] = dict(rows[-1], end="oom-guard", why="usable memory 900 MiB")
        s = sm.summarize(rows)
        r = s["record"]
        # bash: $(( (rss_peak - rss0) / 1024 )), $(( (mem_peak - mem0) * page / 1048576 )) ...
        self.assertEqual(s["guard_note"],
                         "stopped after %ss with 201 stalled at usable memory 900 MiB; the server's "
                         "RssAnon grew 0 MiB (0 B per stalled connection), TCP buffers %d MiB (%d B), "
                         "MemAvailable down %d MiB (%d B)"
                         % (r["stall_phase_s"], (s["mem_peak"] - 876) * 4096 // 1048576,
                            r["stall_tcp_mem_bytes_per_stalled"], (23826468 - s["avail_low"]) // 1024,
                            r["stall_avail_drop_bytes_per_stalled"]))
        self.assertNotIn("guard_note", sm.summarize(recorded("stall-c-filling-wait.jsonl")))
        # unknown figures: 0 MiB and "?" bytes, as the bash defaults were
        rows = [dict(r, avail_kib="x") if r.get("tag") != "phase" else r for r in rows]
        note = sm.summarize(rows)["guard_note"]
        self.assertIn("MemAvailable down 0 MiB (? B)", note)
        # a shrinking figure truncates toward zero, as bash's division did
        self.assertEqual(sm._tdiv(-1500, 1024), -1)
        self.assertEqual(sm._tdiv(1500, 1024), 1)

    def test_cut_times(self):
        rows = [{"unix_ms": str(1000000 + 100 * i), "slow": str(v)}
                for i, v in enumerate([0, 0, 3, 3, 9, 12, 12, 11, 12])]
        # the stall at 1,000,150.5 ms: first slow close above 2 at 1,000,200 ms,
        # the top (12) first reached at 1,000,500 ms
        self.assertEqual(sm.cut_times(rows, 2, 1000150500),
                         {"stall_cut_first_s": "0.050", "stall_cut_last_s": "0.350"})
        # nothing cut: the columns, empty (the record's null; stall.sh flags their absence)
        nothing = {"stall_cut_first_s": None, "stall_cut_last_s": None}
        self.assertEqual(sm.cut_times(rows, 12, 1000150500), nothing)    # nothing above slow0
        self.assertEqual(sm.cut_times(rows, 0, 2000000000), nothing)    # nothing after the stall
        damaged = [{"unix_ms": "x", "slow": "50"}, {"unix_ms": "1000300", "slow": "nan"}] + rows
        self.assertEqual(sm.cut_times(damaged, 2, 1000150500), sm.cut_times(rows, 2, 1000150500))

    def test_ss_sum(self):
        lines = ["ESTAB 0      4096   127.0.0.1:9000 127.0.0.1:40000",
                 "\t skmem:(r0,rb131072,t0,tb87040,f0,w8192,o0,bl0,d0)",
                 "FIN-WAIT-1 0 1000 127.0.0.1:9000 127.0.0.1:40001",
                 "\t skmem:(r0,rb131072,t0,tb87040,f0,w2048,o0,bl0,d0)",
                 "0 500 127.0.0.1:9000 127.0.0.1:40002",        # a single-state listing: no state
                 "\u0661 5 127.0.0.1:9000 127.0.0.1:40003", ""]
        self.assertEqual(sm.ss_sum(lines, 2), {"stall_ss_sockets": 3, "stall_sendq_bytes_per_stalled": 2798,
                                               "stall_wmem_bytes_per_stalled": 5120})
        self.assertEqual(sm.ss_sum(lines, 0), {"stall_ss_sockets": 3})
        self.assertEqual(sm.ss_sum([], 5), {"stall_ss_sockets": 0, "stall_sendq_bytes_per_stalled": 0,
                                            "stall_wmem_bytes_per_stalled": 0})

    def test_commands(self):
        import subprocess
        import sys
        import tempfile
        prog = os.path.join(os.path.dirname(sm.__file__), "stallmon.py")

        def run(*args, stdin=b""):
            return subprocess.run([sys.executable, prog, *args], input=stdin, capture_output=True)
        with tempfile.TemporaryDirectory() as d:
            ramp = os.path.join(d, "ramp.csv")
            with open(ramp, "w") as f:
                f.write("unix_ms,open,accepted,closed,slow\n1000200,9,9,0,3\n1000500,9,9,0,12\n")
            p = run("cut-times", ramp, "--slow0", "2", "--at-us", "1000150500")
            self.assertEqual((p.returncode, json.loads(p.stdout)),
                             (0, {"record": {"stall_cut_first_s": "0.050", "stall_cut_last_s": "0.350"}}))
            for bad in (["--slow0", "nan", "--at-us", "1"], ["--slow0", "1", "--at-us", "0"], ["--slow0", "1"]):
                p = run("cut-times", ramp, *bad)
                self.assertEqual((p.returncode, p.stdout), (2, b""), bad)
            p = run("cut-times", d, "--slow0", "1", "--at-us", "1")
            self.assertEqual((p.returncode, p.stdout), (1, b""))
            self.assertIn(b"Is a directory", p.stderr)
            os.mkfifo(os.path.join(d, "fifo"))
            p = run("cut-times", os.path.join(d, "fifo"), "--slow0", "1", "--at-us", "1")
            self.assertEqual(p.returncode, 1)
        p = run("ss-sum", "--stalled", "2", stdin=b"ESTAB 0 10 a b\n\xff\xfe 1 2\n")
        self.assertEqual((p.returncode, json.loads(p.stdout)["record"]["stall_ss_sockets"]), (0, 2))
        for bad in ("-1", "x", "1.5"):
            self.assertEqual(run("ss-sum", "--stalled", bad).returncode, 2, bad)


class Recorded(unittest.TestCase):
    def test_c_cuts_every_stalled_peer(self):
        rows = recorded("stall-c-cut.jsonl")
        self.assertEqual(replay(rows), ("cut", None))
        s = sm.summarize(rows)
        r = s["record"]
        self.assertEqual((s["end"], r["stall_end"], r["stall_cut"]), ("cut", "cut", 201))
        # (peak 1,241 - before 217 pages) x 4096 / 201 stalled
        self.assertEqual(r["stall_tcp_mem_bytes_per_stalled"], (1241 - 217) * 4096 // 201)
        self.assertEqual(r["stall_tcp_mem0_kib"], 217 * 4)
        self.assertEqual(r["stall_avail_drop_bytes_per_stalled"],
                         (r["stall_avail0_kib"] - r["stall_avail_min_kib"]) * 1024 // 201)
        self.assertEqual(r["stall_phase_s"], f"{s['t_end'] - rows[1]['t0']:.3f}")

    def test_naive_idiom_grows_until_the_wait(self):
        # asyncio-protocol --push-flow ignore: the kernel's queues full, its
        # RssAnon growing 65 -> 108 MB: never steady, nothing cut
        rows = recorded("stall-asyncio-ignore-wait.jsonl")
        self.assertEqual(replay(rows), ("wait", None))
        r = sm.summarize(rows)["record"]
        self.assertEqual((r["stall_end"], r["stall_cut"]), ("wait", 0))
        self.assertEqual(r["stall_user_bytes_per_stalled"], (108116 - 65592) * 1024 // 201)
        # its TCP memory alone would have ended it steady from the 4th sample on
        flat = [dict(s, mem=6860) if "tag" not in s else s for s in rows]
        self.assertEqual(replay([dict(s, rss=None) if "tag" not in s else s for s in flat]), ("steady", None))

    def test_filling_c_is_not_steady_and_a_flat_one_is(self):
        rows = recorded("stall-c-filling-wait.jsonl")
        self.assertEqual(replay(rows), ("wait", None))
        # the same samples with TCP memory flat from the 5th on: steady 14 s later
        flat = copy.deepcopy(rows)
        samples = [s for s in flat if "tag" not in s]
        for s in samples[4:]:
            s["mem"] = samples[4]["mem"]
        self.assertEqual(replay(flat), ("steady", None))
        end = next(i for i, s in enumerate(samples) if int(s["t"]) - int(samples[4]["t"]) >= 14)
        self.assertGreater(end, 4 + 12)

    def test_guard_and_death_end_the_phase(self):
        rows = recorded("stall-c-filling-wait.jsonl")
        p = next(r for r in rows if r.get("tag") == "phase")
        low = copy.deepcopy(rows)
        [s for s in low if "tag" not in s][3]["usable_kib"] = (p["floor"] - 1) * 1024
        end, why = replay(low)
        self.assertEqual(end, "oom-guard")
        self.assertIn(f"under the {p['floor']} MiB floor", why)
        dead = copy.deepcopy(rows)
        [s for s in dead if "tag" not in s][2]["alive"] = False
        self.assertEqual(replay(dead), ("server-died", None))

    def test_no_stall_records_the_before_sample_only(self):
        rows = recorded("stall-c-cut.jsonl")[:1]
        s = sm.summarize(rows)
        self.assertEqual(s["record"], {"stall_tcp_mem0_kib": 217 * 4})
        self.assertIsNone(s["end"])

    def test_a_damaged_sample_or_phase_line_is_unknown_not_a_crash(self):
        rows = recorded("stall-c-cut.jsonl")
        whole = sm.summarize(copy.deepcopy(rows))["record"]
        # a sample line without its fields (a cut write): the other samples decide
        s = sm.summarize(rows[:3] + [{"t": rows[2].get("t")}] + rows[3:])
        self.assertEqual(s["end"], "cut")
        self.assertEqual(s["record"]["stall_tcp_mem_bytes_per_stalled"],
                         whole["stall_tcp_mem_bytes_per_stalled"])
        # a phase line without its start or count: as if no stall had started
        bad = [dict(r, t0=None) if r.get("tag") == "phase" else r for r in rows]
        self.assertIsNone(sm.summarize(bad)["end"])

    def test_a_field_that_is_no_figure_is_unknown_not_a_crash(self):
        # each was a TypeError: the field is unknown, as if the line lacked it
        rows = recorded("stall-c-cut.jsonl")
        whole = sm.summarize(copy.deepcopy(rows))

        def damaged(tag, key, value="x", which=None):
            out = copy.deepcopy(rows)
            hit = [r for r in out if r.get("tag", "sample") == tag]
            for r in hit if which is None else [hit[which]]:
                r[key] = value
            return sm.summarize(out)

        for key in ("mem", "slow", "usable_kib", "rss", "avail_kib", "orph", "t"):
            s = damaged("sample", key, which=-1)
            self.assertEqual(s["end"], "cut", key)
        self.assertIsNone(damaged("sample", "usable_kib", which=-1)["usable"])
        self.assertNotIn("stall_cut", damaged("sample", "slow", which=-1)["record"])
        self.assertEqual(damaged("sample", "mem", float("nan"))["mem_peak"], 217)     # before's only
        for key in ("avail_kib", "mem", "rss"):
            s = damaged("before", key)
            self.assertEqual(s["end"], "cut", key)
            self.assertIsNone(s[{"avail_kib": "avail0", "mem": "mem0", "rss": "rss0"}[key]], key)
        self.assertEqual(damaged("phase", "page")["page"], 4096)                  # before's
        self.assertNotIn("stall_cut", damaged("phase", "slow0")["record"])
        s = damaged("end", "t")                                                    # no end line
        self.assertEqual((s["end"], s["guard_why"]), ("wait", None))
        self.assertEqual(damaged("end", "t", float("inf"))["end"], "wait")
        self.assertEqual(damaged("phase", "stalled", True)["end"], None)          # no phase
        self.assertEqual(whole["record"], damaged("end", "why", 7)["record"])

    def test_sample_arguments_are_finite(self):
        import contextlib
        import io
        for bad in (["--t0", "nan"], ["--t0", "inf"], ["--interval", "nan"], ["--interval", "0"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                sm.main(["sample", "--out", "/nonexistent/x"] + bad)
            self.assertEqual(e.exception.code, 2, bad)
            self.assertIn("argument %s: expects" % bad[0], err.getvalue())
        # the knobs' arithmetic stays finite (--push-every 1e308 was an OverflowError)
        for bad in (["--push-every", "1e308"], ["--page", "9" * 20], ["--push-bytes", "9" * 20]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
                sm.main(["steady-s"] + bad)
            self.assertEqual(e.exception.code, 2, bad)
            self.assertIn("argument %s: at most" % bad[0], err.getvalue())


if __name__ == "__main__":
    unittest.main()
