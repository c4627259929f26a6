"""capacity.py - the capacity planner's command line (harness/capacity): seed
002's formula filled in with the per-connection costs a results directory
measured (the model: capacity_model.py; docs/capacity.md).

    harness/capacity RUN                          the default table (8/24/64/256 GiB x 0/1/10%)
    harness/capacity RUN --mem 64G [--stall 0.01] the formula with the numbers filled in
    harness/capacity RUN --conns 10m [--stall 0.01]  the other way: the memory N connections need
    harness/capacity --predict-guard RUN CONTENDER [--target-conns N | --min-available MIB] [--out DIR]
    harness/capacity --check DIR                  predicted vs measured (a run stopped by the guard)
(the last two: capacity_guard.py)

Exit: 0 done, 1 no data (no runs; a contender asked for without an ok or
disturbed run), 2 usage.
"""
import argparse
import os
import sys

import capacity_guard
from capacity_model import (DEFAULT_MEMS_GIB, DEFAULT_STALLS, GIB, NoData, Opts, Usage,
                            basis_lines, fmt_mem, fmt_n, fmt_pct, parse_count, parse_fraction,
                            parse_size, plans_for, table_rows)


def text_table(headers, rows):
    w = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    out = ["  ".join("%*s" % (wi, h) if i > 1 else "%-*s" % (wi, h) for i, (h, wi) in enumerate(zip(headers, w)))]
    out.append("  ".join("-" * wi for wi in w))
    for r in rows:
        out.append("  ".join("%*s" % (wi, x) if i > 1 else "%-*s" % (wi, x) for i, (x, wi) in enumerate(zip(r, w))))
    return out


def intro(run_dir, plans, opts):
    p = plans[0][0]
    where = ("a server whose peers are remote (one socket per connection)" if opts.sockets == 1
             else "both ends of each connection on the machine (as in these loopback runs)")
    return ["capacity: %s: connections that fit (seed 002's formula; "
            "docs/capacity.md)" % run_dir,
            "model: %s; machine reserve %s" % (where, p.reserve_txt)]


def cmd_table(run_dir, mems, stalls, opts):
    plans, notes = plans_for(run_dir, stalls, opts)
    lines = intro(run_dir, plans, opts)
    lines += [""] + text_table(["contender", "stalled"] + [fmt_mem(m) for m in mems],
                               table_rows(plans, mems))
    lines += [""] + basis_lines(plans) + notes
    print("\n".join(lines))


def cmd_formula(run_dir, mem, stall, opts):
    plans, notes = plans_for(run_dir, [stall], opts)
    lines = intro(run_dir, plans, opts) + [""]
    for per_stall in plans:
        n, fl = per_stall[0].formula(mem)
        lines += fl + [""]
    print("\n".join(lines + notes).rstrip())


def cmd_need(run_dir, n, stall, opts):
    """The memory a server needs for n connections, per contender: total(n)."""
    plans, notes = plans_for(run_dir, [stall], opts)
    lines = intro(run_dir, plans, opts)
    lines[0] = lines[0].replace("connections that fit", "the memory %s connections need" % fmt_n(n))
    rows = []
    for per_stall in plans:
        m = per_stall[0].model
        rows.append([per_stall[0].basis.name, fmt_pct(m.stall), "%.0f B" % m.per_conn_b,
                     str(m.processes(n)), fmt_mem(m.fixed_b(n)), fmt_mem(m.total_b(n))])
    lines += [""] + text_table(["contender", "stalled", "per connection", "processes", "fixed",
                                "total"], rows)
    lines += [""] + basis_lines(plans) + notes
    print("\n".join(lines))


# ---------------------------------------------------------------- command line
def parser():
    p = argparse.ArgumentParser(
        prog="capacity", description="Connections that fit in a memory, per contender, from a "
        "results directory's measured costs (seed 002's formula).",
        epilog="Modes: RUN (the default table), RUN --mem SIZE [--stall F] (the formula), "
        "--predict-guard RUN CONTENDER, --check DIR. Exit 0 done, 1 no data, 2 usage (a RUN that is no directory included).")
    p.add_argument("run", metavar="RUN", help="a results directory (runs.jsonl or runs.csv)")
    p.add_argument("contender", metavar="CONTENDER", nargs="?", help="with --predict-guard")
    p.add_argument("--mem", metavar="SIZE", help="memory of the machine to plan for: 64G, 512M (binary units)")
    p.add_argument("--conns", metavar="N", help="the other way: the memory N connections need "
                   "(10m; k/m suffixes)")
    p.add_argument("--stall", metavar="F", help="fraction of connections whose peer stops reading: 0.01 or 1%%")
    p.add_argument("--contenders", metavar="LIST", help="comma list (default: every contender in RUN)")
    p.add_argument("--tier", metavar="N", help="use the figures of this tier (default: each contender's "
                   "largest tier with an ok run)")
    p.add_argument("--condition", metavar="C", help="only runs of this condition (default: each one)")
    p.add_argument("--sockets", metavar="1|2", default="1", help="sockets per connection on the machine: "
                   "1 = peers remote (default), 2 = both ends local, as in the loopback runs")
    p.add_argument("--kernel", metavar="sockets|slab", default="sockets",
                   help="kernel figure: the socket slab caches (default) or the whole Slab delta")
    p.add_argument("--stall-backlog", metavar="BYTES", help="bytes a stalled connection holds, when the "
                   "run did not measure it (default: the run's configured bound)")
    p.add_argument("--reserve", metavar="SIZE", help="memory the machine itself needs (default: MemTotal "
                   "- MemAvailable when the run started, from meta.json)")
    p.add_argument("--worker-conns", metavar="N", help="connections per server worker process "
                   "(default: as in the run, set there by the fd limit)")
    p.add_argument("--predict-guard", action="store_true", help="predict where this machine's "
                   "memory guard (MemAvailable less SReclaimable) stops CONTENDER (reads /proc/meminfo now)")
    p.add_argument("--min-available", metavar="MIB", help="with --predict-guard: the guard floor (default 1024)")
    p.add_argument("--target-conns", metavar="N", help="with --predict-guard: pick the floor so the guard "
                   "trips at about N connections")
    p.add_argument("--out", metavar="DIR", help="with --predict-guard: save the prediction in DIR "
                   "(the OUT of the validation run)")
    p.add_argument("--check", action="store_true", help="RUN is a validation run: predicted vs measured")
    return p


def parse(argv):
    p = parser()
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        if e.code == 0:
            raise
        raise Usage(None)
    # as make plot and make compare say it: a RUN that is no directory is a
    # usage error (2), one without runs no data (1)
    if not os.path.isdir(a.run):
        raise Usage("%s is not a directory (give one written by harness/bench.sh)" % a.run)
    o = Opts()
    if a.sockets not in ("1", "2"):
        raise Usage("--sockets: expects 1 or 2, not %r" % a.sockets)
    o.sockets = int(a.sockets)
    if a.kernel not in ("sockets", "slab"):
        raise Usage("--kernel: expects sockets or slab, not %r" % a.kernel)
    o.kernel = a.kernel
    if a.contenders is not None:
        o.contenders = [c for c in a.contenders.split(",") if c]
        if not o.contenders:
            raise Usage("--contenders: expects a comma list of contender names")
    o.tier = parse_count(a.tier, "--tier") if a.tier is not None else None
    o.condition = a.condition
    o.stall_backlog = (parse_size(a.stall_backlog, "--stall-backlog", unit_required=False)
                       if a.stall_backlog is not None else None)
    o.reserve = None
    if a.reserve is not None:
        o.reserve = 0 if a.reserve.strip() == "0" else parse_size(a.reserve, "--reserve")
    o.worker_conns = parse_count(a.worker_conns, "--worker-conns") if a.worker_conns is not None else None
    mem = parse_size(a.mem, "--mem") if a.mem is not None else None
    a.need = parse_count(a.conns, "--conns") if a.conns is not None else None
    if a.need is not None and (mem is not None or a.predict_guard or a.check):
        raise Usage("--conns: not with --mem, --predict-guard or --check (one question at a time)")
    stall = parse_fraction(a.stall) if a.stall is not None else None
    if a.predict_guard and a.check:
        raise Usage("--predict-guard and --check: one mode at a time")
    if not a.predict_guard:
        for k in ("contender", "min_available", "target_conns", "out"):
            if getattr(a, k) is not None:
                raise Usage("%s: only with --predict-guard" % (
                    "CONTENDER" if k == "contender" else "--" + k.replace("_", "-")))
    if a.predict_guard:
        if not a.contender:
            raise Usage("--predict-guard: needs RUN and CONTENDER")
        if a.mem is not None:
            raise Usage("--mem: not with --predict-guard (it reads this machine's memory now)")
        if a.min_available is not None and a.target_conns is not None:
            raise Usage("--min-available and --target-conns: give one")
    return a, o, mem, stall


def main(argv):
    try:
        a, o, mem, stall = parse(argv)
        if a.check:
            capacity_guard.cmd_check(a.run)
        elif a.predict_guard:
            floor = parse_count(a.min_available, "--min-available", 0, 1 << 30) \
                if a.min_available is not None else None
            target = parse_count(a.target_conns, "--target-conns") if a.target_conns is not None else None
            capacity_guard.cmd_predict(a.run, a.contender, stall or 0.0, o, target, floor, a.out)
        elif a.need is not None:
            cmd_need(a.run, a.need, stall or 0.0, o)
        elif mem is not None:
            cmd_formula(a.run, mem, stall or 0.0, o)
        else:
            cmd_table(a.run, [g * GIB for g in DEFAULT_MEMS_GIB],
                      [stall] if stall is not None else list(DEFAULT_STALLS), o)
    except Usage as e:
        if e.args and e.args[0]:
            print("capacity: %s" % e.args[0], file=sys.stderr)
            print("usage: harness/capacity RUN [--mem SIZE] [--stall F] [options]; --help lists them",
                  file=sys.stderr)
        return 2
    except NoData as e:
        print("capacity: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("capacity: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
