"""report_ladder.py - the ladder of fixes a Python developer would try, and
what each step saves: asyncio streams with CPython's collector untouched
(where a user starts) -> the Protocol class -> uvloop -> the collector tuned
(gc.freeze() after start-up; the collector off beside it, where measured) ->
the C loop (pyext). A report module (results.py report_modules):
`results.py plotdata` calls plotdata(), which writes RUN_DIR/ladder.csv and
the data of plots/ladder.{png,svg} (harness/plots/ladder.gp); `results.py
report` calls report(), report.md's section. `make plot RUN=DIR` runs both;
`make bench ... PY_GC=default,freeze[,off]` with the four Python contenders
measures the steps (docs/teaching.md has the command).

A step is one cell (cells.py: contender x tier x condition) whose condition
is the collector's setting alone (PY_GC: "gc=default", "gc=off"; freeze, the
default, is the condition ""). Its figures are report.md's: the server's CPU
in the ramp per accepted connection (cells.cpu_us_per_conn), the userspace
and kernel bytes per connection (user_bytes_per_conn, kernel_bytes_per_conn),
medians of the cell's ok runs only (a disturbed run does not stand in here: a
step with no ok run has no figure and its row says so). The saving is the
step it is compared with (`against`: the one before it, or the nearest
earlier one with figures) less this one, in the rounded figures the row
shows.
"""
import os
import statistics

import cells as cellmod
import runstore
from cells import cpu_us_per_conn, label_of, md_table, num

# (fix, contender, PY_GC setting, what the step changes, the step it is
# compared with). A side step (gc-off) is shown only where it was measured.
STEPS = [
    ("streams", "asyncio-streams", "default", "where a user starts: asyncio streams, "
     "CPython's collector untouched", None),
    ("protocol", "asyncio-protocol", "default", "streams -> Protocol (one class with __slots__)",
     "streams"),
    ("uvloop", "uvloop", "default", "asyncio -> uvloop", "protocol"),
    ("freeze", "uvloop", "freeze", "the collector tuned: gc.freeze() after start-up", "uvloop"),
    ("gc-off", "uvloop", "off", "the collector off while serving (beside freeze)", "uvloop"),
    ("pyext", "pyext", "freeze", "the C loop (pyext)", "freeze"),
]
SIDE = ("gc-off",)
COLS = ["tier", "step", "fix", "change", "contender", "gc", "against", "runs", "ok", "statuses",
        "cpu_us", "user_b", "kernel_b", "cpu_saved_us", "user_saved_b", "kernel_saved_b", "note"]
PLOT = "ladder"


def condition_for(gc):
    """The condition bench.sh gives a run of this PY_GC setting and nothing
    else (lib/scenario.sh: freeze is the default, "")."""
    return "" if gc == "freeze" else "gc=" + gc


def median(vals, digits):
    vals = [v for v in vals if v is not None]
    return round(statistics.median(vals), digits) if vals else None


def statuses(cell):
    """"ok 3", "ok 2, disturbed 1": the runs by status, ok first."""
    keys = sorted(cell.counts, key=lambda s: (s != "ok", s))
    return ", ".join("%s %d" % (s, cell.counts[s]) for s in keys)


def ladder_rows(rows):
    """The ladder's rows (dicts of COLS), tier by tier: only tiers where two
    steps or more were measured, one of them with CPython's collector untouched
    (PY_GC=default: what makes a suite a ladder; a plain suite's uvloop and
    pyext are two steps too, and get no ladder)."""
    by = {(c.contender, c.tier, c.condition): c for c in cellmod.cells(rows)}
    out = []
    for tier in sorted({c.tier for c in by.values()}):
        found = {fix: by.get((cont, tier, condition_for(gc))) for fix, cont, gc, _, _ in STEPS}
        if sum(1 for c in found.values() if c) < 2 or not any(
                found[fix] for fix, _, gc, _, _ in STEPS if gc == "default"):
            continue
        done = {}
        for i, (fix, cont, gc, change, against) in enumerate(STEPS, 1):
            c = found[fix]
            if c is None and fix in SIDE:
                continue
            row = dict(tier=label_of(tier), step=i, fix=fix, change=change, contender=cont, gc=gc,
                       against="", runs=0, ok=0, statuses="", note="")
            if c is None:
                row["note"] = "not measured"
            else:
                row.update(runs=len(c.runs), ok=len(c.ok), statuses=statuses(c))
                row["cpu_us"] = median([cpu_us_per_conn(r) for r in c.ok], 2)
                row["user_b"] = median([num(r.get("user_bytes_per_conn")) for r in c.ok], 0)
                row["kernel_b"] = median([num(r.get("kernel_bytes_per_conn")) for r in c.ok], 0)
                if not c.ok:
                    row["note"] = "no ok run (%s)" % statuses(c)
            # compared with the step named, or the nearest earlier one with figures
            prev = against
            while prev and not (done.get(prev) or {}).get("ok"):
                prev = next(s[4] for s in STEPS if s[0] == prev)
            if prev and row["ok"]:
                row["against"] = prev
                for col, saved, digits in (("cpu_us", "cpu_saved_us", 2), ("user_b", "user_saved_b", 0),
                                           ("kernel_b", "kernel_saved_b", 0)):
                    a, b = done[prev].get(col), row.get(col)
                    if a is not None and b is not None:
                        row[saved] = round(a - b, digits)
            done[fix] = row
            out.append(row)
    return out


def cell_text(v, fmt="%.0f"):
    return "" if v is None else fmt % v


def write_csv(path, table):
    """ladder.csv, written as report.md is (runstore.write_csv_rows: a FIFO or a
    symlink in its place is replaced; make plot hung on one, wrote through the other)."""
    runstore.write_csv_rows(path, COLS, (
        [cell_text(r.get(k), "%.2f" if k in ("cpu_us", "cpu_saved_us") else "%.0f")
         if k in ("cpu_us", "user_b", "kernel_b", "cpu_saved_us", "user_saved_b",
                  "kernel_saved_b") else r.get(k, "") for k in COLS] for r in table))


def saved_text(v, unit, fmt):
    return "" if v is None else "%s%s %s" % ("-" if v > 0 else "+", fmt % abs(v), unit)


def gp_q(s):
    return '"%s"' % str(s).replace('"', "'")


def gp_num(v):
    return "NaN" if v is None else "%g" % v


def plotdata(run_dir, rows, data_dir):
    table = ladder_rows(rows)
    if not table:
        return []
    write_csv(os.path.join(run_dir, "ladder.csv"), table)
    tiers = []
    for r in table:
        if r["tier"] not in tiers:
            tiers.append(r["tier"])
    lines, step_of = [], {s[0]: i for i, s in enumerate(STEPS, 1)}
    for r in table:
        name = "%d %s gc=%s" % (r["step"], r["contender"], r["gc"])
        if len(tiers) > 1:
            name += " (%s)" % r["tier"]
        vs = " vs %d)" % step_of[r["against"]] if r["against"] else ""
        cpu = "" if r.get("cpu_us") is None else "%.1f µs" % r["cpu_us"]
        byt = "" if r.get("user_b") is None else "user %.0f B" % r["user_b"]
        if vs and r.get("cpu_saved_us") is not None:
            cpu += " (%s%s" % (saved_text(r["cpu_saved_us"], "µs", "%.1f"), vs)
        if vs and r.get("user_saved_b") is not None:
            byt += " (%s%s" % (saved_text(r["user_saved_b"], "B", "%.0f"), vs)
        lines.append(" ".join([gp_q(name), gp_q(r["contender"]), gp_num(r.get("cpu_us")),
                               gp_num(r.get("user_b")), gp_num(r.get("kernel_b")),
                               gp_q(cpu), gp_q(byt), gp_q(r["note"])]))
    with open(os.path.join(data_dir, "ladder.dat"), "w") as f:
        f.write("# step contender cpu_us user_b kernel_b cpu_label bytes_label note "
                "(report_ladder.py: medians of the ok runs)\n")
        f.write("\n".join(lines) + "\n")
    n_ok = sorted({r["ok"] for r in table if r["ok"]})
    with open(os.path.join(data_dir, "ladder_vars.gp"), "w") as f:
        f.write("ladder_n = %d\n" % len(table))
        f.write("ladder_series = %s\n" % gp_q(" ".join(r["contender"] for r in table)))
        f.write("ladder_title = %s\n" % gp_q(
            "The ladder of fixes at %s: what each step saves (in brackets: the change against "
            "step N)" % ", ".join(tiers)))
        # the bytes axis: about 5 tics of 1, 2 or 5 x 10^k bytes (the labels need room)
        top = max([(r.get("user_b") or 0) + (r.get("kernel_b") or 0) for r in table] + [1]) * 1.6
        mag = 10 ** len(str(int(top / 5))) / 10
        f.write("ladder_bytes_tic = %g\n" % next(m * mag for m in (1, 2, 5, 10) if top / (m * mag) <= 6))
        f.write("ladder_note = %s\n" % gp_q(
            "medians of the ok runs only (%s per step); a step without an ok run: no bar, its "
            "reason" % (" or ".join(str(n) for n in n_ok) or "none")))
    return [PLOT]


def report(run_dir, rows, meta):
    table = ladder_rows(rows)
    if not table:
        return ""
    out = ["## The ladder of fixes: what each step saves\n",
           "What a Python developer can try, one step at a time (harness/lib/report_ladder.py; "
           "`ladder.csv`): each step is one contender under one `PY_GC` setting, compared with "
           "the step before it (or the nearest earlier one with an ok run). CPU: the server's "
           "CPU during the ramp per accepted connection; bytes: per connection, as in the "
           "summary. Medians of the ok runs only; saved: the earlier step's median less this "
           "one's (negative: this step costs more).\n"]
    body = []
    for r in table:
        body.append([r["tier"], r["step"], r["change"], "%s gc=%s" % (r["contender"], r["gc"]),
                     r["statuses"] or "-", r["against"] or "-",
                     cell_text(r.get("cpu_us"), "%.2f") or r["note"], cell_text(r.get("cpu_saved_us"), "%.2f"),
                     cell_text(r.get("user_b")) or r["note"], cell_text(r.get("user_saved_b")),
                     cell_text(r.get("kernel_b")) or r["note"], cell_text(r.get("kernel_saved_b"))])
    out.append(md_table(["tier", "step", "change", "server", "runs", "against", "CPU µs/conn",
                         "saved µs", "user B/conn", "saved B", "kernel B/conn", "saved B"], body) + "\n")
    if os.path.exists(os.path.join(run_dir, "plots", PLOT + ".png")):
        out.append("![The ladder of fixes](plots/%s.png)  \n[SVG](plots/%s.svg)\n" % (PLOT, PLOT))
    return "\n".join(out)
