#!/usr/bin/env python3
"""estimate.py - how long a suite will take, calibrated on the committed runs.

A run takes its ramp (t_accept_s) plus HOLD plus an overhead: the quiet gate,
the server's start and idle baseline, the teardown of the connections and the
wait for their memory to settle. From every results/*/runs.csv of an idle
suite: the ramp's seconds per connection, per contender at the committed tier
nearest N (any contender's median where this one has none), and the overhead,
the gap between two consecutive runs' client starts less the first run's ramp
and hold, fitted as A + B x N (least squares over the per-tier medians).

  estimate.py plan --tiers N,N --contenders C,C [--runs-per-cell K] [--hold S]
      one line per contender and tier, "CONTENDER N SECONDS", then
      "total SECONDS" and "basis TEXT"

Exit: 0, 2 usage; a Ctrl-C ends it by SIGINT (130; lib/entry.py).
"""
import argparse
import glob
import math
import os
import statistics
import sys

import entry
import runstore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TIERS = (300000, 500000, 800000, 1000000)
DEFAULT_CONTENDERS = ("c", "pyext", "uvloop", "asyncio-protocol", "asyncio-streams")


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def calibrate(results=None):
    """{(contender, tier): [s/conn]}, (A, B), number of runs used."""
    rate, gaps = {}, {}
    used = 0
    for f in sorted(glob.glob(os.path.join(results or os.path.join(ROOT, "results"), "*", "runs.csv"))):
        d = os.path.dirname(f)
        if not os.path.isfile(os.path.join(d, "meta.json")):
            continue
        meta = runstore.read_meta(d)    # {} when unreadable: its scenario unknown, not idle
        if not meta or meta.get("settings", {}).get("scenario", "idle") != "idle":
            continue
        try:
            with open(f, newline="") as fh:
                rows = list(runstore.csv_rows(f, fh))
        except (OSError, ValueError):
            continue
        timed = []
        for r in rows:
            t, acc, n = _num(r.get("t_accept_s")), _num(r.get("accepted")), _num(r.get("tier"))
            if r.get("status") == "ok" and t and acc and n:
                rate.setdefault((r.get("contender"), int(n)), []).append(t / acc)
                used += 1
            if _num(r.get("client_start_unix_ms")) and t is not None and n:
                timed.append(r)
        timed.sort(key=lambda r: _num(r["client_start_unix_ms"]))
        for a, b in zip(timed, timed[1:]):
            gap = (_num(b["client_start_unix_ms"]) - _num(a["client_start_unix_ms"])) / 1000
            ov = gap - _num(a["t_accept_s"]) - (_num(a.get("hold_s")) or 0)
            if 0 < ov < 3600:
                gaps.setdefault(int(_num(a["tier"])), []).append(ov)
    pts = [(n, statistics.median(v)) for n, v in gaps.items()]
    a, b = 10.0, 0.0
    if len(pts) >= 2:
        mx = sum(n for n, _ in pts) / len(pts)
        my = sum(o for _, o in pts) / len(pts)
        sxx = sum((n - mx) ** 2 for n, _ in pts)
        b = max(0.0, sum((n - mx) * (o - my) for n, o in pts) / sxx) if sxx else 0.0
        a = max(0.0, my - b * mx)
    elif pts:
        a = pts[0][1]
    return {k: statistics.median(v) for k, v in rate.items()}, (a, b), used


def per_conn(rates, contender, n):
    """Seconds per connection of contender's ramp at the committed tier nearest n."""
    def nearest(keys):
        return min(keys, key=lambda k: abs(math.log(k[1] / n))) if keys else None
    k = nearest([k for k in rates if k[0] == contender])
    if k:
        return rates[k]
    k = nearest(list(rates))
    if not k:
        return None
    return statistics.median(v for kk, v in rates.items() if kk[1] == k[1])


def plan(tiers, contenders, runs_per_cell=1, hold=10, results=None):
    """([(contender, n, seconds)], total seconds, basis) or None without data."""
    rates, (a, b), used = calibrate(results)
    if not rates:
        return None
    cells = []
    for n in tiers:
        for c in contenders:
            cells.append((c, n, round(per_conn(rates, c, n) * n + hold + a + b * n)))
    total = sum(s for _, _, s in cells) * runs_per_cell
    basis = ("calibrated on %d committed ok runs in results/ (ramp s/conn per contender and tier; "
             "overhead per run %.0f s + %.0f s per 1M connections); scenario phases not included"
             % (used, a, b * 1e6))
    return cells, total, basis


def fmt(seconds):
    m = round(seconds / 60)
    return "~%d s" % seconds if seconds < 90 else ("~%d min" % m if m < 90 else "~%.1f h" % (seconds / 3600))


def default_duration():
    p = plan(DEFAULT_TIERS, DEFAULT_CONTENDERS)
    return (fmt(p[1]) + " (defaults)") if p else "unknown (no committed runs)"


def main(argv):
    ap = argparse.ArgumentParser(prog="estimate.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--tiers", required=True)
    p.add_argument("--contenders", required=True)
    p.add_argument("--runs-per-cell", type=int, default=1)
    p.add_argument("--hold", type=int, default=10)
    p.add_argument("--results", default=None)
    a = ap.parse_args(argv[1:])
    try:
        tiers = [int(t) for t in a.tiers.split(",") if t]
    except ValueError:
        ap.error("--tiers: whole numbers")
    if any(t < 1 for t in tiers):
        ap.error("--tiers: at least 1 connection each")
    if a.runs_per_cell < 1 or a.hold < 0:
        ap.error("--runs-per-cell: at least 1; --hold: at least 0")
    r = plan(tiers, [c for c in a.contenders.split(",") if c], a.runs_per_cell, a.hold, a.results)
    if r is None:
        print("basis no committed runs in results/ to calibrate on")
        return 0
    cells, total, basis = r
    for c, n, s in cells:
        print(c, n, s)
    print("total", total)
    print("human", fmt(total))
    print("basis", basis)
    return 0


if __name__ == "__main__":
    entry.run(main, sys.argv)
