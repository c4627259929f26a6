"""harness/lib/clientmerge.py: several clients' summaries as one (remote runs).
The bats suite (tests/remote.bats) also checks it against real c1m-client
summaries: one summary merged alone gives back the client's own percentiles."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import util  # noqa: E402,F401  (harness/lib on sys.path)
import clientmerge as cm  # noqa: E402


def hist(values):
    """A histogram of small values (each below 64 is its own bucket)."""
    b = {}
    for v in values:
        assert v < 64
        b[v] = b.get(v, 0) + 1
    return {"count": len(values), "sum": sum(values), "max": max(values, default=0),
            "buckets": [[i, b[i]] for i in sorted(b)]}


def summary(target, est, connect, pongs=(), **kw):
    empty = hist([])
    j = {"target": target, "established": est, "failed": target - est, "failures": {},
         "workers": 2, "time_to_established_s": kw.get("t", 1.0), "elapsed_s": 5.0,
         "heartbeat": {"sent": len(pongs), "pongs": len(pongs), "lost": 0},
         "closed_by_peer": 0, "open_at_end": est, "push_received": 0, "push_missing": 0,
         "push_bytes": 0, "push_bad": 0, "push_first_send_us": None, "push_last_rx_us": None,
         "push_window": {"start_us": None, "reached": 0, "first_send_us": None,
                         "first_rx_us": None, "last_rx_us": None},
         "stalled": 0, "stall_at_us": None, "reconnect": "off", "backoff_base_ms": 100,
         "backoff_cap_ms": 10000, "reconnects": 0, "reconnect_attempts": 0,
         "reconnect_failures": 0, "reconnect_failures_by_errno": {}, "reconnect_waiting": 0,
         "first_close_s": None, "last_reconnect_s": None, "cpu_user_s": 0.5, "cpu_sys_s": 1.25,
         "stopped_reason": None,
         "histograms": {"connect_us": hist(connect), "pong_us": hist(list(pongs)),
                        "push_latency_us": empty, "backoff_us": empty}}
    j.update(kw.get("extra", {}))
    return j


class TestBuckets(unittest.TestCase):
    def test_bucket_tops(self):
        # below 64 every value is its own bucket; above, 32 buckets per power of two
        self.assertEqual([cm.bucket_top(i) for i in (0, 1, 31, 63)], [0, 1, 31, 63])
        self.assertEqual(cm.bucket_top(64), 65)      # [64, 65]
        self.assertEqual(cm.bucket_top(65), 67)
        self.assertEqual(cm.bucket_top(96), 131)     # [128, 131]

    def test_percentile_rank_rule(self):
        h = hist([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        self.assertEqual([cm.percentile(h, p) for p in (0, 50, 90, 99, 100)], [1, 5, 9, 10, 10])
        self.assertEqual(cm.percentile(hist([]), 50), 0)


def bucket_of(v):
    """client/histogram.c's bucket_of, for building fixtures of any value."""
    if v < cm.SUB:
        return v
    msb = v.bit_length() - 1
    shift = msb - cm.SUB_BITS
    return shift * cm.SUB + (v >> shift)


def hist_any(values):
    b = {}
    for v in values:
        b[bucket_of(v)] = b.get(bucket_of(v), 0) + 1
    return {"count": len(values), "sum": sum(values), "max": max(values),
            "buckets": [[i, b[i]] for i in sorted(b)]}


class TestWideValues(unittest.TestCase):
    def test_bucket_of_and_top_agree(self):
        for v in (64, 65, 100, 1000, 12345, 999999, 2 ** 39 + 7):
            i = bucket_of(v)
            self.assertLessEqual(v, cm.bucket_top(i))
            self.assertGreater(v, cm.bucket_top(i - 1))

    def test_merged_percentiles_are_those_of_all_values_together(self):
        import random
        rnd = random.Random(7)
        a = [rnd.randint(50, 200000) for _ in range(3000)]
        b = [rnd.randint(10, 5000000) for _ in range(1000)]
        m = cm.merge_hist([hist_any(a), hist_any(b)])
        allv = sorted(a + b)
        for p in (50, 90, 99, 99.9):
            rank = max(1, int(p / 100.0 * len(allv) + 0.999999))
            want = min(cm.bucket_top(bucket_of(allv[rank - 1])), max(allv))
            self.assertEqual(cm.percentile(m, p), want, p)
        self.assertEqual(cm.percentile(m, 100), max(allv))


class TestMerge(unittest.TestCase):
    def test_counts_sum_latencies_from_merged_buckets(self):
        a = summary(100, 100, [10] * 99 + [50], pongs=[3] * 10, t=2.0,
                    extra={"failures": {"ECONNREFUSED": 1}})
        b = summary(300, 290, [20] * 290, t=4.0, extra={"failures": {"ECONNREFUSED": 2, "ETIMEDOUT": 8}})
        m = cm.merge([("h1", a), ("h2", b)])
        self.assertEqual((m["target"], m["established"], m["failed"], m["open_at_end"], m["workers"]),
                         (400, 390, 10, 390, 4))
        self.assertEqual(m["failures"], {"ECONNREFUSED": 3, "ETIMEDOUT": 8})
        self.assertEqual(m["time_to_established_s"], 4.0)
        # 390 values: 99 x 10, 1 x 50, 290 x 20 -> p50 is 20 us, max 50 us
        self.assertEqual(m["connect_latency_ms"], {"p50": 0.02, "p90": 0.02, "p99": 0.02, "max": 0.05})
        self.assertEqual(m["histograms"]["connect_us"]["count"], 390)
        self.assertEqual(m["heartbeat"]["pongs"], 10)
        self.assertEqual(m["heartbeat"]["latency_ms"]["p99"], 0.003)
        self.assertEqual((m["cpu_user_s"], m["cpu_sys_s"]), (1.0, 2.5))
        hosts = {r["host"]: r for r in m["hosts"]}
        self.assertEqual(hosts["h1"]["connect_rate_per_s"], 50.0)
        self.assertEqual(hosts["h2"]["established"], 290)

    def test_one_summary_alone_keeps_its_percentiles(self):
        a = summary(50, 50, list(range(1, 51)))
        a["connect_latency_ms"] = {"p50": 0.025, "p90": 0.045, "p99": 0.05, "max": 0.05}
        m = cm.merge([("only", a)])
        self.assertEqual(m["connect_latency_ms"], a["connect_latency_ms"])

    def test_mixed_policies_and_missing_histograms(self):
        a, b = summary(1, 1, [1]), summary(1, 1, [1], extra={"reconnect": "now"})
        self.assertEqual(cm.merge([("a", a), ("b", b)])["reconnect"], "mixed")
        del b["histograms"]
        with self.assertRaisesRegex(ValueError, "b: no histograms"):
            cm.merge([("a", a), ("b", b)])

    def test_command_line(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "a.json")
            with open(p, "w") as f:
                json.dump(summary(2, 2, [1, 2]), f)
            out = os.path.join(d, "m.json")
            self.assertEqual(cm.main([out, "x=" + p, "y=" + p]), 0)
            with open(out) as f:
                self.assertEqual(json.load(f)["established"], 4)
            self.assertEqual(cm.main([out]), 2)
            self.assertEqual(cm.main([out, "x=" + os.path.join(d, "missing.json")]), 1)
            # a host's summary that is JSON but no object (run_remote.py calls main in
            # process: AttributeError ended the run with a traceback), or not text
            bad = os.path.join(d, "bad.json")
            for text in (b"[1, 2]", b"null", b"7", b"\xff\xfe"):
                with open(bad, "wb") as f:
                    f.write(text)
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    self.assertEqual(cm.main([out, "x=" + p, "y=" + bad]), 1, text)
                self.assertIn("clientmerge.py: %s: " % bad, err.getvalue())


if __name__ == "__main__":
    unittest.main()
