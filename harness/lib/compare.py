"""compare.py - `make compare A=results/X B=results/Y`
(`results.py compare A_DIR B_DIR`): for every contender, tier and condition
(cells.py; the tier column names a non-default condition after the tier) and
scenario (runs of different scenarios never pair) present in both results directories, the ratio of medians B/A of each metric with a
percentile-bootstrap 95% interval of that ratio, and a verdict in the manner
of pyperf's compare_to (bootstrap.verdict): "slower (significant)" /
"faster (significant)" when the interval excludes 1.0 and the medians differ
by more than the runs' own spread, else "not significant"; "not enough runs"
with fewer than 3 ok runs on a side. Only `ok` runs count.
Exit: 0 printed, 1 a directory has no readable runs, 2 usage.
"""
import os
import statistics
import sys

import bootstrap
import cells as cellmod
from runstore import read_runs

# metric, what it is, the words for B above / below A
METRICS = [
    ("t_accept_s", "time to connect, s", "slower", "faster"),
    ("server_cpu_connect_s", "server CPU during the connect phase, s", "more CPU", "less CPU"),
    ("server_cpu_hold_pct", "server CPU during the hold, %", "more CPU", "less CPU"),
    ("user_bytes_per_conn", "server userspace bytes per connection", "bigger", "smaller"),
    ("kernel_bytes_per_conn", "kernel bytes per connection (2 sockets)", "bigger", "smaller"),
]

USAGE = "usage: make compare A=results/X B=results/Y   (results.py compare A_DIR B_DIR)"


def values(cell, col):
    if cell is None:
        return []
    return [v for v in (cellmod.num(r.get(col)) for r in cell.ok) if v is not None]


def fmt(v):
    if v is None:
        return "-"
    return "%.2f" % v if abs(v) < 10 else "%.1f" % v if abs(v) < 100 else "%.0f" % v


def scenario_of(r):
    """A run's scenario (runs.csv `scenario`; older records without it: idle).
    Part of a cell's key here: the condition does not name the scenario (push
    and idle both have condition ""), and runs of two scenarios never pair."""
    return str(r.get("scenario") or "idle")


def scenarios_of(rows):
    seen = []
    for r in rows:
        if scenario_of(r) not in seen:
            seen.append(scenario_of(r))
    return seen


def keyed_cells(rows):
    """{(contender, tier, condition, scenario): Cell}, one scenario at a time."""
    out = {}
    for scen in scenarios_of(rows):
        for c in cellmod.cells([r for r in rows if scenario_of(r) == scen]):
            out[(c.contender, c.tier, c.condition, scen)] = c
    return out


def compare_rows(a_rows, b_rows, col, up, down):
    """[(contender, tier label, A text, B text, ratio text, interval text,
    verdict)] for every contender x tier in both; [(contender, tier label,
    side)] for those in one only."""
    a, b = keyed_cells(a_rows), keyed_cells(b_rows)
    order = cellmod.contenders_of(a_rows + b_rows)
    conds = cellmod.conditions_of(a_rows + b_rows)
    scens = scenarios_of(a_rows + b_rows)
    keys = sorted(set(a) | set(b),
                  key=lambda k: (scens.index(k[3]), order.index(k[0]), k[1], conds.index(k[2])))
    both, only = [], []
    for k in keys:
        scen = "" if k[3] == "idle" else "scenario=" + k[3]
        tier = " ".join(x for x in (cellmod.label_of(k[1]), k[2], scen) if x)
        if k not in a or k not in b:
            only.append((k[0], tier, "A" if k in a else "B"))
            continue
        va, vb = values(a[k], col), values(b[k], col)
        ratio, lo, hi, verdict = bootstrap.verdict(va, vb, up, down)
        med = lambda v: "%s (%d)" % (fmt(statistics.median(v)) if v else "-", len(v))  # noqa: E731
        both.append((k[0], tier, med(va), med(vb),
                     "-" if ratio is None else "%.2f" % ratio,
                     "-" if ratio is None else "[%.2f, %.2f]" % (lo, hi), verdict))
    return both, only


def table(headers, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out = ["  ".join("%-*s" % (w, h) for h, w in zip(headers, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join("%-*s" % (w, v) for v, w in zip(r, widths)).rstrip() for r in rows]
    return out


def report(a_dir, b_dir, a_rows, b_rows):
    out = ["A: %s (%d runs)" % (a_dir, len(a_rows)), "B: %s (%d runs)" % (b_dir, len(b_rows)),
           "B/A: ratio of the medians of the ok runs, bootstrap 95%% interval (%d resamples, "
           "each side resampled). significant: the interval excludes 1.00 and the medians "
           "differ by more than the runs' standard deviation; at least %d ok runs a side."
           % (bootstrap.RESAMPLES, bootstrap.MIN_RUNS)]
    sa, sb = scenarios_of(a_rows), scenarios_of(b_rows)
    if sa != sb:
        out.append("scenarios: A %s, B %s: runs of different scenarios are never paired "
                   "(the tier column names a scenario other than idle)" % (", ".join(sa), ", ".join(sb)))
    headers = ["contender", "tier", "A median (n)", "B median (n)", "B/A", "95% interval",
               "verdict"]
    only = []
    for col, what, up, down in METRICS:
        both, only = compare_rows(a_rows, b_rows, col, up, down)
        out += ["", "%s (%s)" % (col, what)]
        out += table(headers, both) if both else ["  no contender and tier in both"]
    if only:
        out += [""] + ["only in %s: %s %s" % (side, c, t) for c, t, side in only]
    return "\n".join(out)


def main(args):
    if len(args) != 2 or any(a in ("-h", "--help") for a in args):
        print(USAGE, file=sys.stderr)
        return 2
    for d in args:
        if not os.path.isdir(d):
            print("compare: %r is not a directory\n%s" % (d, USAGE), file=sys.stderr)
            return 2
    rows = []
    for d in args:
        try:
            rs = read_runs(d)
        except OSError:
            print("compare: %s has no runs.jsonl or runs.csv" % d, file=sys.stderr)
            return 1
        if not rs:
            print("compare: %s holds no runs" % d, file=sys.stderr)
            return 1
        rows.append(rs)
    print(report(args[0], args[1], rows[0], rows[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
