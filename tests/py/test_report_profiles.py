"""tests/py/test_report_profiles.py - the kernel-profile report
(harness/lib/report_profiles.py), the condition grouping it stands on
(cells.py, results.py summary/meta, compare.py) and the accept-queue summary
(harness/lib/acceptq.py). Synthetic records only: no sockets, no timing.

    python3 -m unittest tests.py.test_report_profiles
"""
import contextlib
import io
import json
import os
import shutil
import socket
import struct
import tempfile
import unittest

from util import TmpDir  # noqa: E402  (harness/lib on sys.path)

import acceptq  # noqa: E402
import cells  # noqa: E402
import compare  # noqa: E402
import report_profiles as rp  # noqa: E402
import results  # noqa: E402
import runstore  # noqa: E402


def run_main(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = results.main(["results.py"] + list(args))
    return rc, out.getvalue(), err.getvalue()


def condition(profile="tuned", variant="", rate=0):
    parts = [p for p in (profile if profile != "tuned" else "", variant,
                         "rate=%d" % rate if rate else "") if p]
    return "/".join(parts)


class Dir(TmpDir):
    def add(self, contender="c", tier=2000, profile="tuned", rate=0, repeat=1, status="ok", **kw):
        rec = dict(contender=contender, tier=tier, tier_label=cells.label_of(tier), repeat=repeat,
                   status=status, scenario="idle", profile=profile, variant=None, rate=rate,
                   condition=condition(profile, "", rate))
        rec.setdefault("run_dir", "runs/%s-%s%s-%d" % (
            contender, cells.label_of(tier), "-" + rec["condition"].replace("/", "-")
            if rec["condition"] else "", repeat))
        rec.update(kw)
        rc, _, err = run_main("row", self.dir, "-", *("%s=%s" % (k, "" if v is None else v)
                                                        for k, v in rec.items()))
        self.assertEqual(rc, 0, err)
        return rec

    def rows(self):
        return runstore.read_runs(self.dir)


class TestConditions(Dir):
    def test_profile_of_reads_the_condition(self):
        self.assertEqual(cells.profile_of({"condition": ""}), "tuned")
        self.assertEqual(cells.profile_of({}), "tuned")           # records from before profiles
        self.assertEqual(cells.profile_of({"condition": "stock"}), "stock")
        self.assertEqual(cells.profile_of({"condition": "stock/now", "variant": "now"}), "stock")
        self.assertEqual(cells.profile_of({"condition": "rate=100"}), "tuned")
        self.assertEqual(cells.profile_of({"condition": "tuned-net.core.somaxconn/rate=5"}),
                         "tuned-net.core.somaxconn")
        self.assertEqual(cells.rate_of({"rate": 300}), 300)
        self.assertEqual(cells.rate_of({"rate": ""}), 0)

    def test_conditions_are_cells_of_their_own(self):
        for rep in (1, 2):
            self.add(profile="stock", repeat=rep, t_accept_s=3.0 + rep)
            self.add(repeat=rep, t_accept_s=1.0 + rep / 10)
        cl = cells.cells(self.rows())
        self.assertEqual([(c.contender, c.condition, len(c.runs)) for c in cl],
                         [("c", "stock", 2), ("c", "", 2)])
        self.assertEqual(cl[0].name, "c 2k stock")
        self.assertEqual(cl[1].name, "c 2k")
        self.assertAlmostEqual(cl[0].stat("t_accept_s")[0], 4.5)

    def test_summary_shows_a_condition_column_only_when_one_is_set(self):
        self.add(t_accept_s=1.0)
        _, out, _ = run_main("summary", self.dir)
        self.assertNotIn("condition", out.splitlines()[0])
        self.add(profile="stock", t_accept_s=2.0)
        _, out, _ = run_main("summary", self.dir)
        self.assertIn("condition", out.splitlines()[0])
        self.assertRegex(out, r"(?m)^c +2k +stock +ok +2\.00")

    def test_compare_keeps_conditions_apart(self):
        for rep in (1, 2, 3):
            self.add(profile="stock", repeat=rep, t_accept_s=5.0)
            self.add(repeat=rep, t_accept_s=1.0)
        rows = self.rows()
        both, only = compare.compare_rows(rows, rows, "t_accept_s", "slower", "faster")
        self.assertEqual([(b["contender"], b["tier"], compare.fmt(b["ratio"])) for b in both],
                         [("c", "2k stock", "1.00"), ("c", "2k", "1.00")])
        self.assertEqual(only, [])

    def test_meta_labels_a_run_without_a_record_from_its_result_json_or_skips_it(self):
        def run(name, somax, result=None):
            d = os.path.join(self.dir, "runs", name)
            os.makedirs(d)
            with open(os.path.join(d, "sysctl.txt"), "w") as f:
                f.write("net.core.somaxconn=%s\n" % somax)
            if result is not None:
                with open(os.path.join(d, "result.json"), "w") as f:
                    json.dump(result, f)
        for cond, somax in (("", "65535"), ("stock", "4096")):
            rec = self.add(profile=cond or "tuned", t_accept_s=1.0)
            run(os.path.basename(rec["run_dir"]), somax)
        run("c-2k-stock-2", "4096", {"condition": "stock", "status": "interrupted"})
        run("c-2k-stock-3", "4096")                 # interrupted before any record: no label
        rc, _, err = run_main("meta", self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        with open(os.path.join(self.dir, "meta.json")) as f:
            m = json.load(f)
        self.assertIs(m["sysctl_profile_identical"], True)
        self.assertEqual(m["sysctl_profile_differs_in"], {})
        self.assertEqual(m["sysctl_profile_runs"], 3)
        self.assertEqual(m["sysctl_profile"]["net.core.somaxconn"], "65535")

    def test_compare_never_pairs_two_scenarios(self):
        # SCENARIO=push has condition "" like idle: the scenario keys the cell
        other = tempfile.mkdtemp(prefix="c1m-test-profiles-")
        self.addCleanup(shutil.rmtree, other, True)
        for rep in (1, 2, 3):
            self.add(repeat=rep, t_accept_s=1.0)
        idle = self.rows()
        self.dir, first = other, self.dir
        for rep in (1, 2, 3):
            self.add(repeat=rep, scenario="push", t_accept_s=9.0)
        push = self.rows()
        self.dir = first
        self.assertEqual(push[0]["condition"], idle[0]["condition"])
        both, only = compare.compare_rows(idle, push, "t_accept_s", "slower", "faster")
        self.assertEqual(both, [])
        self.assertEqual(only, [("c", "2k", "A"), ("c", "2k scenario=push", "B")])
        out = compare.render_text(compare.result("A", "B", idle, push))
        self.assertIn("scenarios: A idle, B push: runs of different scenarios are never paired", out)
        self.assertNotIn("9.00", out)
        both, _ = compare.compare_rows(push, push, "t_accept_s", "slower", "faster")
        self.assertEqual([(b["contender"], b["tier"], compare.fmt(b["ratio"])) for b in both],
                         [("c", "2k scenario=push", "1.00")])

    def test_meta_groups_the_sysctls_by_profile(self):
        for cond, somax in (("", "65535"), ("stock", "4096")):
            rec = self.add(profile=cond or "tuned", t_accept_s=1.0)
            d = os.path.join(self.dir, rec["run_dir"])
            os.makedirs(d)
            with open(os.path.join(d, "sysctl.txt"), "w") as f:
                f.write("net.core.somaxconn=%s\nnet.ipv4.tcp_syncookies=1\n" % somax)
        rc, _, err = run_main("meta", self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")                    # two profiles are not a difference
        with open(os.path.join(self.dir, "meta.json")) as f:
            m = json.load(f)
        self.assertEqual(m["sysctl_profile"]["net.core.somaxconn"], "65535")    # tuned's
        self.assertEqual(m["sysctl_profiles"]["stock"]["net.core.somaxconn"], "4096")
        self.assertIs(m["sysctl_profile_identical"], True)
        self.assertEqual(m["sysctl_profile_runs"], 2)


class TestReport(Dir):
    def suite(self):
        """c and asyncio-protocol at 2k under stock and tuned, two runs each;
        asyncio-protocol's stock runs dropped and did not finish."""
        for rep in (1, 2):
            self.add(profile="stock", repeat=rep, t_accept_s=1.2, listen_drops=0, syn_retrans=0,
                     acceptq_max=40, acceptq_backlog=4096, client_failed=0)
            self.add(repeat=rep, t_accept_s=1.0, listen_drops=0, syn_retrans=0, acceptq_max=40,
                     acceptq_backlog=65535, client_failed=0)
            self.add(contender="asyncio-protocol", profile="stock", repeat=rep, status="client-stopped",
                     t_accept_s=30.0 + rep, listen_drops=1000 * rep, reqq_full_drop=0, syn_retrans=900,
                     acceptq_max=4096, acceptq_backlog=4096, client_failed=5, connect_timeouts=5)
            self.add(contender="asyncio-protocol", repeat=rep, t_accept_s=3.0, listen_drops=0,
                     syn_retrans=0, acceptq_max=9000, acceptq_backlog=65535, client_failed=0)

    def test_before_after_table_in_the_seeds_form(self):
        self.suite()
        meta = {"sysctl_profiles": {"tuned": {"net.core.somaxconn": "65535", "x": "1"},
                                    "stock": {"net.core.somaxconn": "4096", "x": "1"}}}
        text = rp.report(self.dir, self.rows(), meta)
        self.assertIn("## What tuning buys: stock vs tuned kernel profile", text)
        self.assertIn("| `net.core.somaxconn` | 4096 | 65535 |", text)
        self.assertNotIn("| `x` |", text)                       # the same in both: not listed
        self.assertIn("| metric | better | stock | tuned | tuned/stock |", text)
        self.assertIn("### c at 2k", text)
        self.assertIn("| time to connect, s | lower | 1.20 | 1.00 | 0.83 |", text)
        # the stock runs that did not finish still measured the drops: marked
        self.assertIn("| time to connect, s | lower | 31.50%s | 3.00 | 0.10 |" % rp.DOUBLE_DAGGER, text)
        self.assertIn("| dropped at the listener (ListenDrops) | lower | 1500%s | 0 | 0.00 |" % rp.DOUBLE_DAGGER,
                      text)
        self.assertIn("| failed connects | lower | 0 | 0 | = |", text)
        self.assertIn("no run held all N under this profile", text)

    def test_nothing_for_a_run_of_one_profile_and_one_rate(self):
        self.add(t_accept_s=1.0)
        self.assertEqual(rp.report(self.dir, self.rows(), {}), "")
        self.assertEqual(rp.plotdata(self.dir, self.rows(), self.dir), [])

    def test_ablation_one_row_per_key_against_tuned(self):
        self.add(t_accept_s=1.0, listen_drops=10)
        self.add(profile="tuned-net.core.somaxconn", t_accept_s=2.5, listen_drops=110)
        self.add(profile="tuned-net.ipv4.tcp_fin_timeout", t_accept_s=1.0, listen_drops=10)
        self.add(profile="stock", t_accept_s=3.0, listen_drops=500)
        meta = {"sysctl_profiles": {"tuned": {"net.core.somaxconn": "65535",
                                              "net.ipv4.tcp_fin_timeout": "15"},
                                    "tuned-net.core.somaxconn": {"net.core.somaxconn": "4096"},
                                    "tuned-net.ipv4.tcp_fin_timeout": {"net.ipv4.tcp_fin_timeout": "60"}}}
        text = rp.report(self.dir, self.rows(), meta)
        self.assertIn("## One setting at a time", text)
        self.assertIn("| `net.core.somaxconn` | 65535 | 4096 | 2.50 | 2.50 | 110 |", text)
        self.assertIn("| `net.ipv4.tcp_fin_timeout` | 15 | 60 | 1.00 | 1.00 | 10 |", text)
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        plots = rp.plotdata(self.dir, self.rows(), data)
        self.assertEqual(plots, ["profile_t_connect", "profile_drops", "profile_ablation"])
        with open(os.path.join(data, "profile-ablation.dat")) as f:
            lines = [x for x in f.read().splitlines() if not x.startswith("#")]
        self.assertEqual(lines, ["somaxconn 2.5 100", "tcp_fin_timeout 1 0"])
        with open(os.path.join(data, "profile-vars.gp")) as f:
            gp = f.read()
        self.assertIn("prof_log = 1", gp)
        # on the log axis only ListenDrops has a bar: the other columns are not drawn
        self.assertIn("prof_cols = '2'", gp)

    def test_a_storm_timeout_run_still_measured_the_ramp(self):
        self.add(t_accept_s=3.0, listen_drops=0)
        self.add(profile="stock", status="storm-timeout", t_accept_s=61.0, listen_drops=7157)
        text = rp.report(self.dir, self.rows(), {})
        self.assertIn("| time to connect, s | lower | 61.00\u2021 | 3.00 | 0.05 |", text)
        self.assertIn("| dropped at the listener (ListenDrops) | lower | 7157\u2021 | 0 | 0.00 |", text)

    def test_rates_say_where_drops_start(self):
        for rate, d in ((1000, 0), (5000, 0), (20000, 70), (0, 300)):
            self.add(rate=rate, t_accept_s=1.0, listen_drops=d)
            self.add(contender="asyncio-protocol", rate=rate, t_accept_s=2.0,
                     listen_drops=0 if rate == 1000 else 40)
        text = rp.report(self.dir, self.rows(), {})
        self.assertIn("## Where drops start, per client connect rate", text)
        self.assertIn("- c at 2k, tuned: drops from 20000/s", text)
        self.assertIn("- asyncio-protocol at 2k, tuned: drops from 5000/s", text)
        # unlimited sorts after every finite rate
        i = [text.index("| c | 2k | tuned | %s |" % r) for r in ("1000/s", "20000/s", "unlimited")]
        self.assertEqual(i, sorted(i))
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        self.assertIn("profile_rates", rp.plotdata(self.dir, self.rows(), data))
        with open(os.path.join(data, "profile-rate-c.dat")) as f:
            self.assertEqual([x for x in f.read().splitlines() if not x.startswith("#")],
                             ["0 1000 NaN", "1 5000 NaN", "2 20000 70", "3 unlimited 300"])

    def test_a_contender_without_a_median_in_any_profile_has_no_bar(self):
        # every pyext run crashed: no figure to draw; a histogram column without
        # one valid point stopped gnuplot ("No valid points") and bench.sh exited 1
        for prof in ("tuned", "stock"):
            self.add(profile=prof, t_accept_s=1.0)
            self.add(contender="pyext", profile=prof, status="crashed")
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        self.assertIn("profile_t_connect", rp.plotdata(self.dir, self.rows(), data))
        with open(os.path.join(data, "profile-vars.gp")) as f:
            self.assertIn("prof_contenders = 'c'", f.read())
        with open(os.path.join(data, "profile-t_connect.dat")) as f:
            self.assertEqual([x for x in f.read().splitlines() if not x.startswith("#")],
                             ["tuned 1", "stock 1"])

    def test_no_drop_anywhere_is_a_linear_plot_not_an_empty_log_one(self):
        self.add(t_accept_s=1.0, listen_drops=0, reqq_full_drop=0, syn_retrans=0, client_failed=0,
                 connect_timeouts=0)
        self.add(profile="stock", t_accept_s=1.1, listen_drops=0, reqq_full_drop=0, syn_retrans=0,
                 client_failed=0, connect_timeouts=0)
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        rp.plotdata(self.dir, self.rows(), data)
        with open(os.path.join(data, "profile-vars.gp")) as f:
            self.assertIn("prof_log = 0", f.read())
        with open(os.path.join(data, "profile-drops.dat")) as f:
            self.assertIn("c~stock 0 0 0 0 0", f.read())


class TestAcceptQueueSummary(unittest.TestCase):
    def write(self, text):
        fd, path = tempfile.mkstemp(prefix="c1m-acceptq-")
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def test_high_water_marks(self):
        p = self.write("unix_ms,listener,port,queued,backlog\n"
                       "1000,11,9000,3,128\n1000,12,9000,5,128\n"
                       "1100,11,9000,7,128\n1100,12,9000,0,128\n"
                       "1200,11,9000,128,128\n1200,12,9000,1,128\n"     # at the limit: not full yet
                       "1300,11,9000,129,128\n1300,12,9000,2,128\n"     # over it: full (the kernel's test)
                       "1400,11,90")                  # cut short by a kill
        self.assertEqual(acceptq.summarize(p), {
            "acceptq_max": 129, "acceptq_sum_max": 131, "acceptq_backlog": 128,
            "acceptq_full": 1, "acceptq_samples": 4, "acceptq_listeners": 2,
            "acceptq_max_per_listener": "129;5"})

    def test_a_queue_at_its_limit_is_not_full(self):
        # sk_acceptq_is_full: ack_backlog > max_ack_backlog (a backlog of 0 still takes one)
        p = self.write("unix_ms,listener,port,queued,backlog\n"
                       "1000,11,9000,128,128\n1100,11,9000,1,0\n")
        s = acceptq.summarize(p)
        self.assertEqual((s["acceptq_full"], s["acceptq_max_per_listener"]), (1, "128"))

    # netlink frames as the kernel sends them (sock_diag dump of listeners)
    @staticmethod
    def frame(mtype, seq, body):
        length = acceptq.NLMSG_HDR.size + len(body)
        return (acceptq.NLMSG_HDR.pack(length, mtype, 2, seq, 0) + body
                + bytes(-length % 4))               # padded to 4 bytes

    def diag(self, seq, inode, port, queued, backlog):
        body = acceptq.DIAG_MSG.pack(socket.AF_INET, acceptq.TCP_LISTEN, 0, 0, socket.htons(port), 0,
                                     bytes(16), bytes(16), 0, 0, 0, 0, queued, backlog, 0, inode)
        return self.frame(acceptq.SOCK_DIAG_BY_FAMILY, seq, body)

    def test_parse_two_listeners_in_one_buffer(self):
        out = []
        buf = self.diag(7, 101, 9000, 3, 128) + self.diag(7, 102, 9001, 0, 4096)
        self.assertFalse(acceptq.parse(buf, 7, out))
        self.assertEqual(out, [(101, 9000, 3, 128), (102, 9001, 0, 4096)])

    def test_parse_skips_other_sequences_and_short_messages(self):
        out = []
        buf = (self.diag(6, 100, 9000, 9, 9) + self.frame(acceptq.SOCK_DIAG_BY_FAMILY, 7, b"x")
               + self.diag(7, 101, 9000, 1, 128) + self.frame(acceptq.NLMSG_DONE, 8, bytes(4)))
        self.assertFalse(acceptq.parse(buf, 7, out))       # the DONE of another dump
        self.assertEqual(out, [(101, 9000, 1, 128)])

    def test_parse_done_ends_the_dump(self):
        out = []
        buf = (self.diag(7, 101, 9000, 1, 128) + self.frame(acceptq.NLMSG_DONE, 7, bytes(4))
               + self.diag(7, 102, 9000, 1, 128))
        self.assertTrue(acceptq.parse(buf, 7, out))
        self.assertEqual(out, [(101, 9000, 1, 128)])

    def test_parse_error_raises(self):
        buf = self.frame(acceptq.NLMSG_ERROR, 7, struct.pack("=i", -13) + bytes(16))
        with self.assertRaises(OSError) as e:
            acceptq.parse(buf, 7, [])
        self.assertEqual(e.exception.errno, 13)
        self.assertEqual(acceptq.parse(buf, 8, []), False)    # another dump's error: not ours
        with self.assertRaises(OSError):                       # a length below the header
            acceptq.parse(acceptq.NLMSG_HDR.pack(8, 20, 0, 7, 0), 7, [])

    def test_request_asks_for_a_dump_of_tcp_listeners(self):
        r = acceptq.request(socket.AF_INET6, 42)
        length, mtype, flags, seq, pid = acceptq.NLMSG_HDR.unpack_from(r)
        self.assertEqual((length, mtype, seq, pid), (len(r), acceptq.SOCK_DIAG_BY_FAMILY, 42, 0))
        self.assertEqual(flags, acceptq.NLM_F_REQUEST | acceptq.NLM_F_DUMP)
        family, proto, ext, states = struct.unpack_from("=BBBxI", r, acceptq.NLMSG_HDR.size)
        self.assertEqual((family, proto, ext, states), (socket.AF_INET6, socket.IPPROTO_TCP, 0,
                                                        1 << acceptq.TCP_LISTEN))
        self.assertEqual(len(r), acceptq.NLMSG_HDR.size + 8 + 48)   # inet_diag_req_v2

    def test_a_line_that_is_not_text_is_skipped(self):
        # bytes that are not UTF-8 (a damaged file): that line skipped like a cut
        # one, not UnicodeDecodeError's traceback
        p = self.write("unix_ms,listener,port,queued,backlog\n1000,11,9000,3,128\n")
        with open(p, "ab") as f:
            f.write(b"1100,11,9000,\xff\xfe,128\n1200,11,9000,5,128\n")
        self.assertEqual((acceptq.summarize(p)["acceptq_max"], acceptq.summarize(p)["acceptq_samples"]), (5, 2))

    def test_a_field_over_the_csv_limit_is_an_error_naming_the_file(self):
        p = self.write("unix_ms,listener,port,queued,backlog\n1000,11,9000,3,128\n\"%s\n" % ("a" * 200000))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(acceptq.main(["acceptq.py", "summary", p]), 1)
        self.assertIn("%s line 3: field larger than field limit" % p, err.getvalue())

    def test_no_sample_is_no_figure(self):
        self.assertEqual(acceptq.summarize(self.write("unix_ms,listener,port,queued,backlog\n")), {})

    def test_usage(self):
        for argv in (["acceptq.py"], ["acceptq.py", "nope"], ["acceptq.py", "sample"],
                     ["acceptq.py", "sample", "--out", "x", "--interval", "0"],
                     ["acceptq.py", "sample", "--out", "x", "--interval", "abc"],
                     ["acceptq.py", "summary"]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                acceptq.main(argv)
            self.assertEqual(e.exception.code, 2, argv)


if __name__ == "__main__":
    unittest.main()
