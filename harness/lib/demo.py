"""demo.py - the figures of `make demo` (harness/demo): one picture's data and
the summary a class reads.

    demo.py RUN_DIR ANATOMY_JSON DATA_DIR CONTENDER

RUN_DIR is the demo's bench.sh directory (one tier, one run per contender),
ANATOMY_JSON what `python3 -m py_server.anatomy --json` wrote for CONTENDER.
Writes into DATA_DIR the gnuplot input of harness/plots/demo.gp (vars.gp,
contenders.dat, anatomy.dat) and demo.json (every figure the picture shows),
and prints the summary. A contender's figures come from its ok run, else from
a disturbed or suspect one (marked with the dagger), each figure its sanity
flags name left out (DRAWN below); a contender with no such run is named with
its status and drawn without bars.

Exit: 0 written, 1 no runs or an unreadable anatomy, 2 usage.
"""
import json
import os
import sys

import cells as cellmod
from runstore import read_runs, write_json

# the anatomy panel: the largest types, then the rest of the gc-tracked ones
ANATOMY_TYPES = 8
# the longest type name the panel's axis takes, as long as its own "outside gc"
# label: a longer one (asyncio.selector_events._SelectorSocketTransport) took
# the panel's width from its bars
ANATOMY_LABEL_MAX = 28
# What measures the demo's figures properly (harness/README.md "make demo"):
# results/reference's settings (its meta.json command), so the two compare
# (tests/py/test_demo.py holds them to it).
MEASURE_TIERS = "300k,500k,800k,1m"
MEASURE_REPEAT = 3
MEASURE_EXTRA = "INIT_PCT=100 TCP_MEM=auto"
# /proc's CPU figures count 10 ms ticks
TICK_US = 10000


# The statuses whose figures the demo draws, figure by figure: one its run's
# sanity flags name (record.py: "negative:COLUMN", ...) is left out alone. With
# one run per contender, a machine-wide slab delta that a busy machine drove
# negative must not hide the server's own bytes and CPU (cells.py drops the
# whole run: right for medians, too much for a demo).
DRAWN = ("ok", "disturbed", "suspect")
FIGURES = {"user": ("user_bytes_per_conn",), "kernel": ("kernel_bytes_per_conn",),
           "us": ("server_cpu_connect_s", "accepted")}
FIGURE_NAMES = {"user": "userspace", "kernel": "kernel", "us": "CPU"}


def flagged(run):
    """The columns a run's flags name; "*" for a flag on the run as a whole."""
    out = set()
    for f in str(run.get("flags") or "").split(";"):
        if f:
            out.add(f.split(":", 1)[1] if ":" in f else "*")
    return out


def contender_rows(rows):
    """[{contender, tier, status, mark, user, kernel, us, dropped}] in run order:
    each contender's first ok run, else its first run of another DRAWN status
    (marked with the dagger); dropped: the figures its flags left out."""
    out = []
    for c in cellmod.cells(rows):
        runs = c.ok or [x for x in c.runs if cellmod.status_of(x) in DRAWN]
        r = {"contender": c.contender, "tier": c.tier, "status": c.status_text(),
             "mark": "", "user": None, "kernel": None, "us": None, "dropped": {}}
        if runs:
            run, r["status"] = runs[0], cellmod.status_of(runs[0])
            r["mark"] = "" if r["status"] == "ok" else cellmod.DAGGER
            bad, vals = flagged(run), {}
            for fig, cols in FIGURES.items():
                hit = [x for x in cols if x in bad] + sorted(bad & {"*"})
                vals[fig] = None if hit else [cellmod.num(run.get(x)) for x in cols]
                if hit:
                    r["dropped"][fig] = ";".join(f for f in str(run["flags"]).split(";")
                                                 if f.split(":", 1)[-1] in hit or ":" not in f)
            if vals["user"] and vals["user"][0] is not None:
                r["user"] = max(vals["user"][0], 0)
            if vals["kernel"]:
                r["kernel"] = vals["kernel"][0]
            if vals["us"] and None not in vals["us"] and vals["us"][1]:
                r["us"] = vals["us"][0] * 1e6 / vals["us"][1]
        out.append(r)
    return out


def short_type(name):
    """A type's name as the anatomy panel's axis shows it: whole up to
    ANATOMY_LABEL_MAX characters, else its leading modules dropped (an
    ellipsis for them) until it fits, the class's own name always kept."""
    parts, short = name.split("."), name
    while len(short) > ANATOMY_LABEL_MAX and len(parts) > 1:
        parts.pop(0)
        short = "\u2026" + ".".join(parts)
    return short


def measure_cmd(contenders):
    return "make bench TIERS=%s CONTENDERS=%s REPEAT=%d %s" % (
        MEASURE_TIERS, ",".join(contenders), MEASURE_REPEAT, MEASURE_EXTRA)


def gp_str(s):
    """A gnuplot double-quoted string (a newline as \\n): for vars.gp, and a
    column of the .dat files (where gnuplot reads it whole, escapes kept:
    demo.gp turns '|' into a line break)."""
    return '"' + s.replace("\\", "\\\\").replace('"', "'").replace("\n", "\\n") + '"'


def fmt(v, f="%.0f"):
    return "-" if v is None else f % v


def gp_num(v):
    return "NaN" if v is None else "%.3f" % v


def main(argv):
    if len(argv) != 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    run_dir, anatomy_json, data_dir, anatomy_contender = argv[1:]
    try:
        rows = [r for r in read_runs(run_dir) if r.get("contender")]
    except (OSError, ValueError) as e:
        print("demo.py: cannot read the runs of %s: %s" % (run_dir, e), file=sys.stderr)
        return 1
    if not rows:
        print("demo.py: no runs in %s" % run_dir, file=sys.stderr)
        return 1
    try:
        with open(anatomy_json) as f:
            anat = json.load(f)
        # every figure read here, as (name, bytes) pairs: a damaged file is said, not a traceback
        types = [(str(t["type"]), float(t["bytes"])) for t in anat["types"]]
        n_anat = int(anat["connections"])
        rss, outside = float(anat["rss_anon_bytes"]), float(anat["outside_gc_bytes"])
        tracked = float(anat.get("gc_tracked_bytes", 0))
    except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError) as e:
        print("demo.py: cannot read the anatomy %s: %s" % (anatomy_json, e), file=sys.stderr)
        return 1
    conts = contender_rows(rows)
    tier = cellmod.label_of(max(r["tier"] for r in conts))
    os.makedirs(data_dir, exist_ok=True)

    with open(os.path.join(data_dir, "contenders.dat"), "w") as f:
        f.write("# contender user_B kernel_B server_us_per_accept series note_bytes note_cpu "
                "user_base_B bar_top_B "
                "(one run each; name%s: not an ok run; a note: why a bar is missing)\n"
                % cellmod.DAGGER)
        for r in conts:
            # what a panel says where it has no bar (left: bytes, middle: CPU)
            if r["user"] is None and r["kernel"] is None and r["us"] is None:
                left = mid = "not drawn: " + r["status"]
            else:
                left = " + ".join(FIGURE_NAMES[k] for k in ("kernel", "user") if k in r["dropped"])
                left = left and left + " flagged"
                mid = "CPU flagged" if "us" in r["dropped"] else ""
            # where the userspace bar starts and the bytes panel's bar ends (gnuplot
            # drops a point whose expression reads a NaN column)
            base = r["kernel"] or 0
            top = base + (r["user"] or 0)
            f.write("%s %s %s %s %s %s %s %s %s\n" % (
                gp_str(r["contender"] + r["mark"]), gp_num(r["user"]), gp_num(r["kernel"]),
                gp_num(r["us"]), gp_str(r["contender"]), gp_str(left), gp_str(mid),
                gp_num(base), gp_num(top)))

    # the anatomy, largest last: gnuplot draws the first row at the bottom
    bars = [(short_type(name), b, 0) for name, b in types[:ANATOMY_TYPES]]
    rest = types[ANATOMY_TYPES:]
    if rest:
        bars.append(("(%d more types)" % len(rest), sum(b for _, b in rest), 1))
    bars.append(("outside gc: C allocations,|str/bytes, allocator", outside, 2))
    with open(os.path.join(data_dir, "anatomy.dat"), "w") as f:
        f.write("# label bytes_per_connection kind (0 a gc-tracked type, 1 the rest, 2 outside gc)\n")
        for label, b, kind in reversed(bars):
            f.write("%s %.1f %d\n" % (gp_str(label), b, kind))

    cmd = measure_cmd([r["contender"] for r in conts])
    disturbed = any(r["mark"] for r in conts)
    res_us = TICK_US / max(r["tier"] for r in conts)
    with open(os.path.join(data_dir, "vars.gp"), "w") as f:
        f.write("tier = %s\n" % gp_str(tier))
        # the rows' contenders (their colours, common.gp), and the anatomy's
        f.write("demo_series = %s\n" % gp_str(" ".join(r["contender"] for r in conts)))
        f.write("anatomy_series = %s\n" % gp_str(anatomy_contender))
        f.write("anatomy_title = %s\n" % gp_str(
            "The userspace of one %s connection: %.0f B\nby object type (py_server.anatomy, %d "
            "connections, python %s)" % (anatomy_contender, rss, n_anat,
                                         anat.get("python_version", "?"))))
        f.write("demo_note = %s\n" % gp_str(
            "A DEMO, not a measurement: %s connections, one run per contender, quiet gate off%s; "
            "CPU counted in 10 ms ticks: %.1f us per connection" % (
                tier, ("; " + cellmod.DAGGER + " not an ok run: the machine was busy") if disturbed else "",
                res_us)))
        f.write("measure_note = %s\n" % gp_str("Measure them: " + cmd))
        # common.gp's tier-axis settings read these
        f.write("logx = 0\nconditions = ''\n")

    fig = {"tier": tier, "contenders": conts, "anatomy_contender": anatomy_contender,
           "anatomy": anat, "measure": cmd,
           "demo": "small N, one run per contender, quiet gate off: not a measurement"}
    write_json(os.path.join(data_dir, "demo.json"), fig, indent=1)

    print("c1m demo at %s connections: one run per contender, quiet gate off (a demo, not a "
          "measurement)" % tier)
    print("  %-18s %-14s %12s %14s %18s" % ("contender", "status", "user B/conn", "kernel B/conn",
                                            "server us/accept"))
    for r in conts:
        print("  %-18s %-14s %12s %14s %18s" % (r["contender"] + r["mark"], r["status"], fmt(r["user"]),
                                                fmt(r["kernel"]), fmt(r["us"], "%.1f")))
    print("  kernel: the socket slab caches of both loopback ends; user: the server's RssAnon "
          "growth; us/accept: server CPU in the ramp / connections (10 ms ticks: %.1f us here)" % res_us)
    for r in conts:
        for fig, why in r["dropped"].items():
            print("  %s: %s not drawn (flagged: %s)" % (r["contender"], FIGURE_NAMES[fig], why))
    if disturbed:
        print("  %s not an ok run (the machine was busy beside it): its figures are shown, marked"
              % cellmod.DAGGER)
    top = ", ".join("%s %.0f" % t for t in types[:4])
    print("one %s connection (py_server.anatomy, %d connections): %.0f B of RssAnon = %.0f B in "
          "gc-tracked objects (%s, ...) + %.0f B outside the gc" % (
              anatomy_contender, n_anat, rss, tracked, top, outside))
    print("measure them properly: %s" % cmd)
    print("  (results/reference's settings: then make compare A=results/reference B=<its results directory>)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
