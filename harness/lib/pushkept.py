"""pushkept.py - did the server keep its push schedule?

A server stamps each line when it hands it to the kernel, so a server that
falls behind its schedule shows fine delivery latencies while it sends a
fraction of what was asked: asyncio-protocol at 1M in a stall run pushed about
0.43 of its lines (results/reference-stall-1m-python, estimated afterwards
from the lines its client received), so its stalled peers filled at under half
the pace and none was cut in 25 minutes, with a p50 latency of 4.5 ms.

From ramp.csv (c1m-stat --csv --watch 100: unix_ms, open, slow, pushed, ...)
over a window [FROM, TO] (unix ms):
  sent = pushed at the window's last sample - pushed at its first;
  due  = the reading connections integrated over the samples' times / EVERY
         (each is owed one line per EVERY seconds, paced over the interval);
  kept = sent / due.
Reading connections: open, minus the stalled peers not cut yet once the
stall began (--stalled N --stall-ms MS; cut = the `slow` counter's growth
since then): py_server skips the peers whose backlog it is judging, by
design. The lines a stalled peer took before it was judged are in `sent`, so
with peers stalled kept may exceed 1 by up to stalled / readers.

Usage: pushkept.py summary RAMP_CSV --from MS --to MS --every S
           [--stalled N --stall-ms MS] [--min KEPT]
--every: the push interval, 0.001..86400 seconds as the servers' --push-every.
Prints a JSON object: push_kept (rounded to 3 places, then compared),
push_kept_lo and push_kept_hi (kept's range by the counters' age at the
edges, below), push_kept_sent, push_kept_due, push_kept_window_s,
push_kept_min (the threshold), push_kept_stale_ms (the larger of the two edge
samples' stale_ms: the oldest live worker's counters' age), push_kept_lag_ms
(the larger edge lag_ms: the counters' age weighted by each worker's
connections) and push_kept_verdict: ok (lo at least --min, default 0.9);
behind (hi under it); unmeasured, with push_kept_why (fewer than two samples
with a pushed count in the window, a worker died in it, the count fell, an
edge's counters older than a quarter of the window, lo and hi either side of
the threshold, or nothing due). Exit 0, or 2 on bad arguments.

The counters' age: a worker publishes its counters from its loop, so a count
read at an edge is short by the lines pushed since it last published; summed
over the workers, the push rate times lag_ms (each worker's rate goes with its
connections). A late last edge makes sent read low, a late first edge high:
lo = (sent - rate x first lag) / due, hi = (sent + rate x last lag) / due,
the rate taken as sent / window. One starved worker of fifty, whose stale_ms
is a minute, moves kept by about a fiftieth of what stale_ms would. An edge
row without lag_ms (a ramp.csv from before it) is taken at its stale_ms, the
bound for the worst worker.

What it cannot see: the lines a stalled peer took before it was judged count
as sent and are not due, so with peers stalled a server sending a share r of
everyone's lines reads up to r x open / readers (0.81 reads 0.90 at 10%
stalled); the C server goes on queueing lines for a held peer (py_server
skips them), so for c the stalled peers' lines count until they are cut.
"""
import argparse
import json
import sys

import c1m_root  # noqa: F401  (py_server.cli_rules)
import runstore
from py_server import cli_rules

KEPT_MIN = 0.9
# --every's bounds: the servers' --push-every (DEVELOPERS.md "Server push")
MIN_EVERY, MAX_EVERY = cli_rules.PUSH_EVERY_MIN, cli_rules.PUSH_EVERY_MAX


def samples(path, t_from, t_to):
    """[(unix_ms, open, slow, pushed, workers_dead, stale_ms, lag_ms)] of
    the rows in [t_from, t_to] that have the first five as numbers (a row cut
    short by the sampler's stop is skipped, and so is a last line without its
    newline: its last number may be cut); stale_ms and lag_ms None when the
    column is absent."""
    out = []
    with open(path, newline="", errors="replace") as f:     # a byte not text: its row skipped
        lines = f.read().splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()
    for row in runstore.csv_rows(path, lines):
        try:
            t = int(row["unix_ms"])
            s = (t, int(row["open"]), int(row["slow"]), int(row["pushed"]),
                 int(row["workers_dead"]))
        except (KeyError, TypeError, ValueError):
            continue
        if t_from <= t <= t_to:
            out.append(s + (optional_int(row, "stale_ms"), optional_int(row, "lag_ms")))
    out.sort()
    return out


def optional_int(row, key):
    """row[key] as an int; None when the column is absent or not a number."""
    try:
        return int(row[key])
    except (KeyError, TypeError, ValueError):
        return None


def edge_max(first, last, i):
    """The larger of the two edge samples' column i; None when neither has it."""
    return max([r[i] for r in (first, last) if r[i] is not None], default=None)


def edge_age(row):
    """(ms, column) of an edge sample's counters' age: lag_ms, or stale_ms in
    a row without it (the bound for the worst worker); (0, None) for a row
    with neither (a ramp.csv from before both: taken as fresh)."""
    if row[6] is not None:
        return row[6], "lag_ms"
    if row[5] is not None:
        return row[5], "stale_ms"
    return 0, None


def readers(op, slow, stalled, slow0):
    """The reading connections among op open: the stalled peers not cut
    yet (slow0: the slow count at the stall; None: no stall yet)."""
    if slow0 is None:
        return max(0, op)
    return max(0, op - max(0, stalled - max(0, slow - slow0)))


def kept(rows, every, stalled=0, stall_ms=None, kept_min=KEPT_MIN):
    """The verdict over rows (samples()): a dict of the push_kept_* keys;
    push_kept_why says why there is no verdict."""
    res = {"push_kept_verdict": "unmeasured"}
    if len(rows) < 2 or every <= 0:
        res["push_kept_why"] = "fewer than two samples with a pushed count in the window"
        return res
    first, last = rows[0], rows[-1]
    window_ms = last[0] - first[0]
    slow0 = None
    if stalled and stall_ms is not None:
        before = [r for r in rows if r[0] <= stall_ms]
        slow0 = before[-1][2] if before else first[2]
    due = 0.0
    for (t, op, slow, *_), (t2, *_) in zip(rows, rows[1:]):
        if slow0 is not None and t < stall_ms < t2:
            # the interval the stall falls in: readers all before it
            due += readers(op, slow, 0, None) * (stall_ms - t) / 1000.0 / every
            due += readers(op, slow, stalled, slow0) * (t2 - stall_ms) / 1000.0 / every
            continue
        live = slow0 if slow0 is not None and t >= stall_ms else None
        due += readers(op, slow, stalled, live) * (t2 - t) / 1000.0 / every
    sent = last[3] - first[3]
    stale, lag = edge_max(first, last, 5), edge_max(first, last, 6)
    (age0, col0), (age1, col1) = edge_age(first), edge_age(last)
    res.update(push_kept_sent=sent, push_kept_due=round(due),
               push_kept_window_s="%.3f" % (window_ms / 1000.0), push_kept_min=kept_min)
    if stale is not None:
        res["push_kept_stale_ms"] = stale
    if lag is not None:
        res["push_kept_lag_ms"] = lag
    if last[4] != first[4]:
        # a dead worker's counters leave every total: sent would be short
        res["push_kept_why"] = "a worker died in the window (workers_dead %d -> %d)" % (first[4], last[4])
    elif sent < 0:
        res["push_kept_why"] = "the pushed count fell over the window (%d)" % sent
    elif max(age0, age1) * 4 > window_ms:
        # the bounds below take the rate as even over the window: not when
        # an edge's count is that old
        age, col = max((age0, col0), (age1, col1))
        res["push_kept_why"] = "counters %d ms old (%s) at an edge of a %d ms window: over a quarter of it" % (
            age, col, window_ms)
    elif due < 1:
        res["push_kept_why"] = "nothing due (no reading connection)"
    else:
        # Each edge's count is short by what the workers pushed since they
        # last published, the rate times that edge's age: a late last edge
        # makes sent read low, a late first one high. The verdict must hold
        # at both ends of that range.
        rate = sent / window_ms if window_ms > 0 else 0.0
        k = round(sent / due, 3)
        lo = round((sent - rate * age0) / due, 3)
        hi = round((sent + rate * age1) / due, 3)
        res["push_kept"] = "%.3f" % k
        res.update(push_kept_lo="%.3f" % lo, push_kept_hi="%.3f" % hi)
        if hi < kept_min:
            res["push_kept_verdict"] = "behind"
        elif lo >= kept_min:
            res["push_kept_verdict"] = "ok"
        else:
            res["push_kept_why"] = ("%.3f, but %.3f-%.3f by the counters' age at the edges (%d and %d ms): "
                                    "either side of %s" % (k, lo, hi, age0, age1, kept_min))
    return res


def main(argv):
    p = argparse.ArgumentParser(prog="pushkept.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("ramp_csv")
    s.add_argument("--from", dest="t_from", type=int, required=True)
    s.add_argument("--to", dest="t_to", type=int, required=True)
    s.add_argument("--every", type=float, required=True)
    s.add_argument("--stalled", type=int, default=0)
    s.add_argument("--stall-ms", type=int, default=None)
    s.add_argument("--min", dest="kept_min", type=float, default=KEPT_MIN)
    a = p.parse_args(argv)
    if (not MIN_EVERY <= a.every <= MAX_EVERY or a.t_to < a.t_from or a.stalled < 0
            or not 0 < a.kept_min <= 1):
        p.error("expects --every %g..%g (seconds), --to >= --from, --stalled >= 0, 0 < --min <= 1"
                % (MIN_EVERY, MAX_EVERY))
    try:
        rows = samples(a.ramp_csv, a.t_from, a.t_to)
    except (OSError, ValueError) as e:
        print("pushkept.py: %s" % e, file=sys.stderr)
        rows = []
    print(json.dumps(kept(rows, a.every, a.stalled, a.stall_ms, a.kept_min)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
