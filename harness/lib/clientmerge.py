"""clientmerge.py - several c1m-client JSON summaries (one per client host of a
remote run, harness/run_remote.py) as one, in the client's own format, plus a
per-host table.

    clientmerge.py OUT.json HOST=CLIENT.json [HOST=CLIENT.json ...]

Counts are summed; times since each client's start (they start behind one
barrier) take the latest, first-of times the earliest; the latency figures
come from the clients' histograms merged bucket by bucket ("histograms" in
each summary, client/histogram.h), so the merged percentiles are those one
client holding every connection would have printed: the same buckets and the
same rank rule as c1m_hist_percentile. The merged summary adds "hosts": per
host its share, what it established and failed, its time to all established,
its connect rate and its CPU.
Exit: 0, 1 an unreadable summary, 2 usage.
"""
import json
import sys

import runstore

# client/histogram.h
SUB_BITS = 5
SUB = 1 << SUB_BITS


def bucket_top(i):
    """The largest value of bucket i (c1m_hist_bucket_top)."""
    if i < 2 * SUB:
        return i
    shift = i // SUB - 1
    mant = i - shift * SUB
    return ((mant + 1) << shift) - 1


def percentile(h, p):
    """c1m_hist_percentile over a merged histogram {count, max, buckets}."""
    count = h["count"]
    if count == 0:
        return 0
    if p >= 100.0:
        return h["max"]
    rank = max(1, int(p / 100.0 * count + 0.999999))
    seen = 0
    for i, n in h["buckets"]:
        seen += n
        if seen >= rank:
            return min(bucket_top(i), h["max"])
    return h["max"]


def merge_hist(hs):
    buckets = {}
    out = {"count": 0, "sum": 0, "max": 0}
    for h in hs:
        out["count"] += h["count"]
        out["sum"] += h["sum"]
        out["max"] = max(out["max"], h["max"])
        for i, n in h["buckets"]:
            buckets[i] = buckets.get(i, 0) + n
    out["buckets"] = [[i, buckets[i]] for i in sorted(buckets)]
    return out


def latency_ms(h):
    """The client's "..._latency_ms" object (ms, 3 decimals) of a histogram in us."""
    if not h["count"]:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    return {k: round(percentile(h, p) / 1000.0, 3) for k, p in (("p50", 50), ("p90", 90), ("p99", 99))} \
        | {"max": round(h["max"] / 1000.0, 3)}


def push_latency_us(h):
    if not h["count"]:
        return {"p50": None, "p90": None, "p99": None, "p999": None, "max": None}
    return {"p50": percentile(h, 50), "p90": percentile(h, 90), "p99": percentile(h, 99),
            "p999": percentile(h, 99.9), "max": h["max"]}


def _sum(vals):
    return sum(v for v in vals if isinstance(v, (int, float)))


def _ext(vals, f):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return f(vals) if vals else None


def _sum_maps(maps):
    out = {}
    for m in maps:
        for k, v in (m or {}).items():
            out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


SUMS = ("target", "established", "failed", "workers", "closed_by_peer", "open_at_end",
        "push_received", "push_missing", "push_bytes", "push_bad", "stalled", "reconnects",
        "reconnect_attempts", "reconnect_failures", "reconnect_waiting")


def merge(named):
    """named: [(host, summary dict)] -> the merged summary."""
    js = [j for _, j in named]
    for host, j in named:
        if not isinstance(j.get("histograms"), dict):
            raise ValueError("%s: no histograms in its summary (a c1m-client too old to merge)" % host)
    hist = {k: merge_hist([j["histograms"][k] for j in js])
            for k in ("connect_us", "pong_us", "push_latency_us", "backoff_us")}
    m = {k: _sum(j.get(k) for j in js) for k in SUMS}
    m["failures"] = _sum_maps(j.get("failures") for j in js)
    m["reconnect_failures_by_errno"] = _sum_maps(j.get("reconnect_failures_by_errno") for j in js)
    m["time_to_established_s"] = _ext([j.get("time_to_established_s") for j in js], max)
    m["elapsed_s"] = _ext([j.get("elapsed_s") for j in js], max)
    m["connect_latency_ms"] = latency_ms(hist["connect_us"])
    hb = [j.get("heartbeat") or {} for j in js]
    m["heartbeat"] = {"sent": _sum(h.get("sent") for h in hb), "pongs": _sum(h.get("pongs") for h in hb),
                      "lost": _sum(h.get("lost") for h in hb), "latency_ms": latency_ms(hist["pong_us"])}
    m["push_latency_us"] = push_latency_us(hist["push_latency_us"])
    m["push_first_send_us"] = _ext([j.get("push_first_send_us") for j in js], min)
    m["push_last_rx_us"] = _ext([j.get("push_last_rx_us") for j in js], max)
    w = [j.get("push_window") or {} for j in js]
    m["push_window"] = {"start_us": _ext([x.get("start_us") for x in w], min),
                        "reached": _sum(x.get("reached") for x in w),
                        "first_send_us": _ext([x.get("first_send_us") for x in w], min),
                        "first_rx_us": _ext([x.get("first_rx_us") for x in w], min),
                        "last_rx_us": _ext([x.get("last_rx_us") for x in w], max)}
    m["stall_at_us"] = _ext([j.get("stall_at_us") for j in js], max)
    for k in ("reconnect", "backoff_base_ms", "backoff_cap_ms"):
        vals = {json.dumps(j.get(k)) for j in js}
        m[k] = js[0].get(k) if len(vals) == 1 else "mixed"
    m["first_close_s"] = _ext([j.get("first_close_s") for j in js], min)
    m["last_reconnect_s"] = _ext([j.get("last_reconnect_s") for j in js], max)
    m["backoff_delay_ms"] = latency_ms(hist["backoff_us"])
    m["cpu_user_s"] = round(_sum(j.get("cpu_user_s") for j in js), 3)
    m["cpu_sys_s"] = round(_sum(j.get("cpu_sys_s") for j in js), 3)
    m["stopped_reason"] = next((j["stopped_reason"] for j in js if j.get("stopped_reason")), None)
    m["histograms"] = hist
    m["hosts"] = [host_row(h, j) for h, j in named]
    return m


def host_row(host, j):
    t = j.get("time_to_established_s")
    est = j.get("established") or 0
    return {"host": host, "target": j.get("target"), "established": est, "failed": j.get("failed"),
            "failures": j.get("failures") or {}, "open_at_end": j.get("open_at_end"),
            "time_to_established_s": t,
            "connect_rate_per_s": round(est / t, 1) if t else None,
            "cpu_user_s": j.get("cpu_user_s"), "cpu_sys_s": j.get("cpu_sys_s"),
            "workers": j.get("workers")}


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        print("usage: clientmerge.py OUT.json HOST=CLIENT.json [HOST=CLIENT.json ...]", file=sys.stderr)
        return 2
    named = []
    for a in argv[1:]:
        host, _, path = a.partition("=")
        try:
            with open(path) as f:
                j = json.load(f)
            if not isinstance(j, dict):
                raise ValueError("not a JSON object (a c1m-client --json summary)")
        except (OSError, ValueError) as e:
            print("clientmerge.py: %s: %s" % (path, e), file=sys.stderr)
            return 1
        named.append((host, j))
    try:
        runstore.write_json(argv[0], merge(named), indent=1)
    except (ValueError, KeyError, TypeError) as e:
        print("clientmerge.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
