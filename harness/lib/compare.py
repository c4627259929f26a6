"""compare.py - `make compare A=results/X B=results/Y`
(`results.py compare [options] A_DIR B_DIR`, or `--reference B_DIR`): for
every contender, tier and condition (cells.py; the tier column names a
non-default condition after the tier) and scenario (runs of different
scenarios never pair) present in both results directories, the ratio of
medians B/A of each metric with a percentile-bootstrap 95% interval of that
ratio, and a verdict in the manner of pyperf's compare_to (bootstrap.verdict):
"slower (significant)" / "faster (significant)" when the interval excludes 1.0
and the medians differ by more than the runs' own spread, else "not
significant"; "not enough runs" with fewer than 3 runs on a side.

First it prints where the two machines differ (meta.json `fingerprint`,
fingerprint.py) and the calibration's B/A (meta.json `calibration`). An
absolute time or CPU figure belongs to one instance (MACHINE.md: the same
command 1.36x slower on an instance booted with pti=on). So, unless the two
fingerprints are shown to be the same and the calibration's floor CPU per
accept agrees within CAL_MOVED, time and CPU are compared as each run's ratio
to a baseline contender of the same invocation (the floor, else c), paired by
tier, condition and repeat; bytes stay absolute. The output says which it
did and why.

Options:
  --mode auto|absolute|ratio   auto (default): ratio unless both fingerprints
                               exist and are equal
  --disturbed                  count disturbed runs too, marked with a dagger
                               as report.md marks them (default: ok runs only)
  --format text|md|json|csv    the output (default text)
  --reference B_DIR            A is the committed results/reference* directory
                               sharing the most cells with B
Exit: 0 printed, 1 a directory has no readable runs or the two share no
contender and tier, 2 usage.
"""
import csv
import glob
import io
import json
import os
import statistics
import sys

import bootstrap
import cells as cellmod
import fingerprint
from runstore import read_meta, read_runs, unreadable

# metric, what it is, the words for B above / below A, compared as a ratio to
# the baseline contender when the machines cannot be shown the same
METRICS = [
    ("t_accept_s", "time to connect, s", "slower", "faster", True),
    ("server_cpu_connect_s", "server CPU during the connect phase, s", "more CPU", "less CPU", True),
    ("server_cpu_hold_pct", "server CPU during the hold, %", "more CPU", "less CPU", True),
    ("user_bytes_per_conn", "server userspace bytes per connection", "bigger", "smaller", False),
    ("kernel_bytes_per_conn", "kernel bytes per connection (2 sockets)", "bigger", "smaller", False),
]
BASELINES = ("floor", "c")
MODES = ("auto", "absolute", "ratio")
FORMATS = ("text", "md", "json", "csv")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USAGE = ("usage: make compare A=results/X B=results/Y [MODE=auto|absolute|ratio] [DISTURBED=1] "
         "[FORMAT=text|md|json|csv]   (B= alone: A is the committed reference sharing the most cells)\n"
         "       results.py compare [--mode M] [--disturbed] [--format F] (A_DIR | --reference) B_DIR")


class Usage(Exception):
    pass


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


def counted(cell, disturbed):
    """The runs a side's figures use: ok ones, and disturbed ones with --disturbed
    (as report.md: only those the sanity bounds passed, record.py `flags`)."""
    if cell is None:
        return []
    return [r for r in cell.runs if cellmod.status_of(r) == "ok"
            or (disturbed and cellmod.status_of(r) == "disturbed" and not r.get("flags"))]


def values(runs, col, base=None):
    """[(value, disturbed?)] of COL; with BASE (the baseline's runs) each
    run's value over the baseline's of the same repeat (unpaired runs skipped)."""
    by_rep = {}
    for r in base or []:
        by_rep.setdefault(str(r.get("repeat")), r)
    out = []
    for r in runs:
        v = cellmod.num(r.get(col))
        dist = cellmod.status_of(r) == "disturbed"
        if v is None:
            continue
        if base is not None:
            b = by_rep.get(str(r.get("repeat")))
            bv = cellmod.num(b.get(col)) if b else None
            if not bv:
                continue
            v, dist = v / bv, dist or cellmod.status_of(b) == "disturbed"
        out.append((v, dist))
    return out


def baseline_of(a, b, k, col, disturbed):
    """The baseline contender for key K and metric COL: the first of BASELINES
    with counted runs at K's tier, condition and scenario on both sides, none of
    them 0 in COL (the floor's hold CPU is 0: there c is the baseline); None without."""
    for name in BASELINES:
        kk = (name,) + k[1:]
        ra, rb = counted(a.get(kk), disturbed), counted(b.get(kk), disturbed)
        if ra and rb and all(cellmod.num(r.get(col)) for r in ra + rb):
            return name
    return None


def compare_rows(a_rows, b_rows, col, up, down, ratio=False, disturbed=False):
    """([row dict] for every contender x tier in both, [(contender, tier label,
    side)] for those in one only). A row: contender, tier, a/b (median or None),
    a_n/b_n, a_dist/b_dist (disturbed runs counted), ratio, lo, hi, verdict,
    basis ("absolute" or "ratio to NAME")."""
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
        ra, rb = counted(a[k], disturbed), counted(b[k], disturbed)
        basis, ba, bb = "absolute", None, None
        if ratio:
            name = baseline_of(a, b, k, col, disturbed)
            if name == k[0]:
                continue            # the baseline against itself: 1.00 by construction
            if name is None:
                basis = "no baseline"
                ra = rb = []
            else:
                basis = "ratio to " + name
                ba, bb = counted(a[(name,) + k[1:]], disturbed), counted(b[(name,) + k[1:]], disturbed)
        va, vb = values(ra, col, ba), values(rb, col, bb)
        r, lo, hi, verdict = bootstrap.verdict([v for v, _ in va], [v for v, _ in vb], up, down)
        if basis == "no baseline":
            verdict = "no baseline (floor or c, nonzero) in both"
        both.append({
            "contender": k[0], "tier": tier, "basis": basis,
            "a": statistics.median([v for v, _ in va]) if va else None, "a_n": len(va),
            "a_dist": sum(d for _, d in va),
            "b": statistics.median([v for v, _ in vb]) if vb else None, "b_n": len(vb),
            "b_dist": sum(d for _, d in vb),
            "ratio": r, "lo": lo, "hi": hi, "verdict": verdict})
    return both, only


# ---------------------------------------------------------------- machines
def legacy_fingerprint(meta):
    """What a meta.json from before fingerprints says of its machine."""
    return {"kernel_release": meta.get("kernel"), "kernel_build": meta.get("kernel_version"),
            "cpu_model": meta.get("cpu_model"), "cpu_count": meta.get("cores")}


# How far the calibration's floor CPU per accept may move between two suites
# and the machines still count as one: three suites on one busy instance read
# 5.45, 5.97 and 6.54 us (harness/README.md "Machine fingerprint and
# calibration"); two instances with the same fingerprint read 5.16 and 3.96
# (2026-12-07: PID 1 scanning fds on one, not on the other), and their 1M
# figures differed by 0.56-0.69x.
CAL_MOVED = 0.15


def cal_median(cal, key):
    """The median of CAL's KEY when it is a figure above 0, else None (a
    damaged meta.json: missing, never a TypeError or a ratio of nonsense)."""
    v = cellmod.num((cal.get(key) or {}).get("median"))
    return v if v is not None and 0 < v < float("inf") else None


def machines(ma, mb, mode):
    """(mode used, why, [(field, A, B)] differences, {calibration B/A})."""
    fa, fb = ma.get("fingerprint"), mb.get("fingerprint")
    if fa and fb:
        diffs = fingerprint.differences(fa, fb)
        why = ("the machines' fingerprints differ" if diffs
               else "the machines' fingerprints are the same")
        auto = "ratio" if diffs else "absolute"
    else:
        la, lb = fa or legacy_fingerprint(ma), fb or legacy_fingerprint(mb)
        diffs = [d for d in fingerprint.differences(la, lb) if d[1] is not None and d[2] is not None]
        missing = " and ".join(s for s, f in (("A", fa), ("B", fb)) if not f)
        why = ("%s %s no machine fingerprint (meta.json from before fingerprints): the machines "
               "cannot be shown to be the same" % (missing, "have" if " and " in missing else "has"))
        auto = "ratio"
    cal = {}
    ca, cb = ma.get("calibration") or {}, mb.get("calibration") or {}
    for key in ("accept_cpu_us", "syscall_ns", "python_ns"):
        x, y = cal_median(ca, key), cal_median(cb, key)
        cal[key] = {"a": x, "b": y, "b_over_a": y / x if x and y else None}
    moved = cal["accept_cpu_us"]["b_over_a"]
    if auto == "absolute" and moved is not None and abs(moved - 1) > CAL_MOVED:
        # the same fingerprint, another machine by what it costs to accept
        diffs = diffs + [("calibration/accept_cpu_us", fmt(cal["accept_cpu_us"]["a"]), fmt(cal["accept_cpu_us"]["b"]))]
        why = ("the machines' fingerprints are the same, but the calibration's floor CPU per accept moved "
               "by %.2fx (more than %d%%)" % (moved, round(CAL_MOVED * 100)))
        auto = "ratio"
    if mode != "auto":
        why = "MODE=%s (auto would have compared %s: %s)" % (mode, auto, why)
    return (auto if mode == "auto" else mode), why, diffs, cal


# ---------------------------------------------------------------- A by default
def cell_keys(rows):
    return {k for k, c in keyed_cells(rows).items() if c.runs}


def pick_reference(b_rows, results_dir=None, b_dir=None):
    """The committed results/reference* directory sharing the most cells with
    B (ties: the shorter name, then the first by name), B_DIR itself left out
    (a committed directory as B was compared with itself); None when none
    shares one."""
    results_dir = results_dir or os.path.join(ROOT, "results")
    kb, best = cell_keys(b_rows), None
    b_real = os.path.realpath(b_dir) if b_dir else None
    for d in sorted(glob.glob(os.path.join(results_dir, "reference*"))):
        if os.path.realpath(d) == b_real:
            continue
        try:
            rows = read_runs(d)
        except (OSError, ValueError):
            continue
        n = len(kb & cell_keys(rows))
        if n and (best is None or (n, -len(d)) > (best[0], -len(best[1]))):
            best = (n, d)
    return best[1] if best else None


# ---------------------------------------------------------------- output
def result(a_dir, b_dir, a_rows, b_rows, mode="auto", disturbed=False):
    """Everything compare prints, as data."""
    mode, why, diffs, cal = machines(read_meta(a_dir), read_meta(b_dir), mode)
    out = {"a": a_dir, "b": b_dir, "a_runs": len(a_rows), "b_runs": len(b_rows),
           "mode": mode, "mode_why": why, "machine_differences": diffs, "calibration": cal,
           "disturbed_counted": disturbed, "scenarios": [scenarios_of(a_rows), scenarios_of(b_rows)],
           "metrics": [], "only": []}
    for col, what, up, down, as_ratio in METRICS:
        both, only = compare_rows(a_rows, b_rows, col, up, down, mode == "ratio" and as_ratio, disturbed)
        out["metrics"].append({"metric": col, "what": what, "rows": both})
        out["only"] = only
    return out


def cell_text(v, n, nd):
    return "%s (%d)%s" % (fmt(v), n, cellmod.DAGGER if nd else "")


def table_rows(m):
    return [[r["contender"], r["tier"], cell_text(r["a"], r["a_n"], r["a_dist"]),
             cell_text(r["b"], r["b_n"], r["b_dist"]),
             "-" if r["ratio"] is None else "%.2f" % r["ratio"],
             "-" if r["ratio"] is None else "[%.2f, %.2f]" % (r["lo"], r["hi"]), r["verdict"]]
            for r in m["rows"]]


def headers(ratio):
    v = "ratio to baseline" if ratio else "median"
    return ["contender", "tier", "A %s (n)" % v, "B %s (n)" % v, "B/A", "95% interval", "verdict"]


def table(hdr, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(hdr)]
    out = ["  ".join("%-*s" % (w, h) for h, w in zip(hdr, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join("%-*s" % (w, v) for v, w in zip(r, widths)).rstrip() for r in rows]
    return out


def preamble(res):
    out = ["A: %s (%d runs)" % (res["a"], res["a_runs"]),
           "B: %s (%d runs)" % (res["b"], res["b_runs"])]
    diffs = res["machine_differences"]
    out.append("machines differ in:" + ("" if diffs else " nothing recorded"))
    out += ["  %s: A %s; B %s" % (k, va, vb) for k, va, vb in diffs]
    cal = res["calibration"]
    parts = []
    for key, what, unit in (("accept_cpu_us", "floor CPU per accept", "us"),
                            ("syscall_ns", "getppid", "ns"), ("python_ns", "Python loop", "ns")):
        c = cal[key]
        if key == "python_ns" and c["a"] is None and c["b"] is None:
            continue    # before lib/pycalib.py: said for neither
        parts.append("%s B/A %s (A %s, B %s %s)" % (
            what, "-" if c["b_over_a"] is None else "%.2f" % c["b_over_a"],
            fmt(c["a"]), fmt(c["b"]), unit))
    out.append("calibration: " + "; ".join(parts))
    if res["mode"] == "ratio":
        out.append("compared: time and CPU as each run's ratio to the baseline contender of the same "
                   "invocation (floor, else c; paired by tier and repeat), bytes absolute, because "
                   + res["mode_why"])
    else:
        out.append("compared: absolute figures, because " + res["mode_why"])
    out.append("B/A: ratio of the medians, bootstrap 95%% interval (%d resamples, each side "
               "resampled). significant: the interval excludes 1.00 and the medians differ by more "
               "than the runs' standard deviation; at least %d runs a side. %s"
               % (bootstrap.RESAMPLES, bootstrap.MIN_RUNS,
                  "Disturbed runs counted: %s marks a figure that includes one." % cellmod.DAGGER
                  if res["disturbed_counted"] else "Only ok runs count (DISTURBED=1: disturbed ones too)."))
    sa, sb = res["scenarios"]
    if sa != sb:
        out.append("scenarios: A %s, B %s: runs of different scenarios are never paired "
                   "(the tier column names a scenario other than idle)" % (", ".join(sa), ", ".join(sb)))
    return out


def is_ratio(m):
    return any(r["basis"].startswith("ratio") for r in m["rows"])


def render_text(res):
    out = preamble(res)
    for m in res["metrics"]:
        basis = sorted({r["basis"] for r in m["rows"]} - {"absolute"})
        out += ["", "%s (%s%s)" % (m["metric"], m["what"], "; " + ", ".join(basis) if basis else "")]
        out += table(headers(is_ratio(m)), table_rows(m)) if m["rows"] else ["  no contender and tier in both"]
    if res["only"]:
        out += [""] + ["only in %s: %s %s" % (side, c, t) for c, t, side in res["only"]]
    return "\n".join(out) + "\n"


def render_md(res):
    out = ["# make compare", ""] + ["- " + ln.strip() for ln in preamble(res)]
    for m in res["metrics"]:
        out += ["", "## %s (%s)" % (m["metric"], m["what"]), ""]
        out.append(cellmod.md_table(headers(is_ratio(m)), table_rows(m)))
    if res["only"]:
        out += [""] + ["- only in %s: %s %s" % (side, c, t) for c, t, side in res["only"]]
    return "\n".join(out) + "\n"


CSV_COLS = ["metric", "contender", "tier", "basis", "a", "a_n", "a_disturbed", "b", "b_n",
            "b_disturbed", "ratio", "lo", "hi", "verdict"]


def render_csv(res):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLS)
    for m in res["metrics"]:
        for r in m["rows"]:
            w.writerow([m["metric"], r["contender"], r["tier"], r["basis"], r["a"], r["a_n"],
                        r["a_dist"], r["b"], r["b_n"], r["b_dist"], r["ratio"], r["lo"], r["hi"],
                        r["verdict"]])
    return buf.getvalue()


def render(res, form):
    if form == "json":
        return json.dumps(res, indent=2) + "\n"
    return {"text": render_text, "md": render_md, "csv": render_csv}[form](res)


# ---------------------------------------------------------------- main
def parse(args):
    opts = {"mode": "auto", "format": "text", "disturbed": False, "reference": False}
    pos, it = [], iter(args)
    for a in it:
        name, eq, val = a.partition("=")
        if name in ("-h", "--help"):
            raise Usage("help")
        if name in ("--mode", "--format"):
            val = val if eq else next(it, None)
            allowed = MODES if name == "--mode" else FORMATS
            if val not in allowed:
                raise Usage("compare: %s must be one of %s, not %r" % (name, "|".join(allowed), val))
            opts[name[2:]] = val
        elif a in ("--disturbed", "--reference"):
            opts[a[2:]] = True
        elif a.startswith("--"):
            raise Usage("compare: unknown option %r" % a)
        else:
            pos.append(a)
    if len(pos) != (1 if opts["reference"] else 2):
        raise Usage(None)
    return opts, pos


def load(d):
    """The runs of D, or an error message."""
    try:
        rs = read_runs(d)
    except OSError as e:
        return None, "compare: " + unreadable(d, e)
    except ValueError as e:
        return None, "compare: %s" % e
    return (rs, None) if rs else (None, "compare: %s holds no runs" % d)


def main(args):
    try:
        opts, dirs = parse(args)
    except Usage as e:
        if str(e) == "help":
            print(__doc__.rstrip() + "\n\n" + USAGE)
            return 0
        print(("%s\n" % e if e.args[0] else "") + USAGE, file=sys.stderr)
        return 2
    for d in dirs:
        if not os.path.isdir(d):
            print("compare: %r is not a directory\n%s" % (d, USAGE), file=sys.stderr)
            return 2
    rows = []
    for d in dirs:
        rs, err = load(d)
        if err:
            print(err, file=sys.stderr)
            return 1
        rows.append(rs)
    if opts["reference"]:
        a = pick_reference(rows[0], b_dir=dirs[0])
        if a is None:
            print("compare: no committed results/reference* directory shares a contender and tier "
                  "with %s: give A=" % dirs[0], file=sys.stderr)
            return 1
        a = os.path.relpath(a)    # as B was given: under the repository, from make
        print("A: the committed reference sharing the most cells with B: %s" % a, file=sys.stderr)
        dirs, rows = [a] + dirs, [read_runs(a)] + rows
    shared = cell_keys(rows[0]) & cell_keys(rows[1])
    if not shared:
        tiers = [", ".join(cellmod.label_of(t) for t in sorted({k[1] for k in cell_keys(r)}))
                 or "-" for r in rows]
        print("compare: no contender and tier in both: A %s has %s; B %s has %s (contenders A %s; B %s)"
              % (dirs[0], tiers[0], dirs[1], tiers[1], ", ".join(cellmod.contenders_of(rows[0])),
                 ", ".join(cellmod.contenders_of(rows[1]))), file=sys.stderr)
        return 1
    sys.stdout.write(render(result(dirs[0], dirs[1], rows[0], rows[1], opts["mode"],
                                   opts["disturbed"]), opts["format"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
