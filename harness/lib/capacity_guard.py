"""capacity_guard.py - the planner's check against this machine: where its
memory guard (bench.sh MIN_AVAILABLE_MIB, run_one.sh's ramp stop and the
client's --min-available) will stop a contender, and predicted vs measured
once a run has been stopped there.

    harness/capacity --predict-guard RUN CONTENDER [--target-conns N | --min-available MIB] [--out DIR]
    harness/capacity --check DIR

The guard reads usable memory: MemAvailable less SReclaimable (py_server/
cli_rules.py mem_usable_kib; the client's c1m_mem_usable_kib). MemAvailable alone counts
the open sockets' inodes and dentries (sock_inode_cache, dentry: reclaimable
slab) as available although they cannot be reclaimed while the sockets are
open; at 1M that is ~2 GiB, and the kernel's OOM killer ended a server while
MemAvailable read 2 GiB (results/reference-stall-1m-10pct). The prediction
uses the same Model as the planner (capacity_model.py), for this machine: both ends
of each loopback connection, no reserve (usable memory already leaves out what
the machine uses), and for the kernel the run's whole Slab delta
(slab_bytes_per_conn), not only the socket caches: the guard counts every
reclaimable slab, and here an outside process (PID 1) lists every process's
fds, which leaves a /proc inode and dentry per connection (~1.4 KB of
proc_inode_cache, MACHINE.md). With the socket caches alone, the first checks
of this guard stopped c 22% and asyncio-streams 13% before the prediction
(results/reference-capacity-usable/first-try/). Not counted: the client's own
userspace (runs.csv does not measure it).

Predictions saved before the guard read usable memory (no mem_usable_kib in
the file: the committed results/reference-capacity-*) are checked as they were
made: from MemAvailable, with the model they saved (which left the reclaimable
share of the socket slab out, as that guard never saw it fall).
--out DIR saves the prediction (DIR/capacity-prediction.json) where the
validation run will write its results (OUT=DIR; bench.sh accepts a directory
without a runs.csv); --check DIR compares it with the runs there: idle, the
connections open when the guard stopped the ramp; with --stall (the stall
scenario stalls its fraction only once the whole tier is open), a bracket: a
tier 10% below the prediction must hold with its stalled queues full (stall_end
cut or steady), one 10% above must be stopped.
"""
import json
import math
import os

import c1m_root  # noqa: F401  (py_server.cli_rules)
import cells as cellmod
import runstore
from capacity_model import (Model, NoData, app_per_conn, bases_of, conns_per_worker, fmt_n, fmt_pct,
                      idle_per_process, kernel_per_conn, read_meta, read_rows, server_flag,
                      stall_backlog)
from cells import label_of, num
from py_server import cli_rules

PREDICTION_FILE = "capacity-prediction.json"
CHECK_TOLERANCE = 0.10
# A stall run that held counts only if its stalled queues got as full as they
# get: every stalled connection cut as slow at its bound, or nothing moving.
FILLED_ENDS = ("cut", "steady")
# The validation run's client connect rate (connections/s): the client checks
# usable memory on a 100 ms tick, so it opens at most RATE/10 past the floor.
GUARD_RATE = 5000
MIB = 1 << 20


def mem_usable_kib(path="/proc/meminfo"):
    """MemAvailable less SReclaimable (KiB, at least 0), as the guard reads it
    (cli_rules.mem_usable_kib); NoData without MemAvailable."""
    v = cli_rules.mem_usable_kib(path)
    if v is None:
        raise NoData("%s has no MemAvailable" % path)
    return v


def guard_model(basis, stall, opts):
    """This machine: both ends, the whole Slab delta, no reserve (usable
    memory already excludes what the machine uses)."""
    kern, ktxt = kernel_per_conn(basis, 2, "slab")
    app, atxt = app_per_conn(basis)
    if stall > 0:
        backlog, btxt = stall_backlog(basis, 2, opts.stall_backlog)
    else:
        backlog, btxt = 0.0, "no stalled connections"
    idle, itxt, _ = idle_per_process(basis)
    cpw, ctxt = conns_per_worker(basis, opts.worker_conns)
    m = Model(kern, app, stall, backlog, idle, cpw, 0)
    words = {"kernel": ktxt, "app": atxt, "backlog": btxt, "idle": itxt, "workers": ctxt}
    return m, words


def guard_trip(model, avail_kib, floor_mib):
    """Connections open when usable memory (avail_kib before the server
    started) falls under floor_mib: the largest N whose cost leaves floor_mib."""
    budget = avail_kib * 1024.0 - floor_mib * MIB
    return model.fit(budget) if budget > 0 else 0


def cmd_predict(run_dir, contender, stall, opts, target=None, floor=None, out_dir=None,
                meminfo="/proc/meminfo"):
    opts.contenders = [contender]
    bases, _ = bases_of(run_dir, [contender], opts.tier, opts.condition)
    b = bases[0]
    m, words = guard_model(b, stall, opts)
    avail = mem_usable_kib(meminfo)
    if floor is None:
        if target is None:
            floor = 1024
        else:
            floor = int((avail * 1024.0 - m.total_b(target)) // MIB)
            if floor < 1:
                raise NoData("%s at %s connections needs more than the usable memory (%d MiB) now"
                             % (contender, fmt_n(target), avail // 1024))
    n = guard_trip(m, avail, floor)
    lines = ["predict-guard: %s from %s (figures: %s)" % (b.name, run_dir, b.source()),
             "  usable memory now %d MiB (MemAvailable less SReclaimable), guard floor "
             "MIN_AVAILABLE_MIB=%d: the guard trips after %s MiB" % (
                 avail // 1024, floor, fmt_n(avail // 1024 - floor)),
             "  cost on this machine ~= N x (%.0f kernel + %.0f app) B + %s x N x %.0f B backlog "
             "+ processes(N) x %.0f KiB idle" % (m.kernel_b, m.app_b, fmt_pct(stall), m.backlog_b,
                                                   m.idle_pp_b / 1024),
             "  kernel: %s: the whole Slab delta, reclaimable caches included (the guard counts "
             "them; --kernel does not apply here)" % words["kernel"],
             "  app: %s; backlog: %s; idle: %s; processes: 1 + N / %.0f (%s)" % (
                 words["app"], words["backlog"], words["idle"], m.cpw, words["workers"]),
             "  not counted: the client's own userspace (runs.csv does not measure it) and "
             "whatever else the machine does meanwhile",
             "  predicted: the guard stops %s at %s connections" % (b.name, fmt_n(n))]
    out = out_dir or "results/capval-%s" % contender
    if stall > 0:
        # The stall scenario stalls its fraction only after the whole tier is open,
        # so the guard cannot stop the ramp at N: bracket the prediction instead,
        # one tier 10% below (must hold) and one 10% above (the guard must trip).
        step = 10 ** max(2, len(str(int(n))) - 2)     # two significant digits, outward
        lo = max(step, int(math.floor(n * 0.9 / step)) * step)
        hi = int(math.ceil(n * 1.1 / step)) * step
        sndbuf = "0" if basis_sndbuf(b) == 0 else "default"
        lines.append("  run it (root; two tiers bracketing the prediction: %s must hold, %s must "
                     "trip the guard; MEM_GUARD_MIB only lets bench.sh's pre-run estimate pass; "
                     "the reference's push, so the stalled queues fill as they did there):"
                     % (label_of(lo), label_of(hi)))
        lines.append("    make bench SCENARIO=stall STALL=%g STALL_SNDBUF=%s%s TIERS=%s,%s CONTENDERS=%s "
                     "MIN_AVAILABLE_MIB=%d MEM_GUARD_MIB=1048576 HOLD=1 QUIET_MAX=120 OUT=%s" % (
                         stall, sndbuf, basis_push(b), label_of(lo), label_of(hi), contender, floor, out))
    else:
        tier = max(1000, int(math.ceil(n * 1.5 / 1000.0)) * 1000)
        lines.append("  run it (root; the tier is 1.5x the prediction; MEM_GUARD_MIB only lets bench.sh's "
                     "pre-run estimate pass, the in-run stop reads the real usable memory; RATE paces "
                     "the client, which checks it every 100 ms: at most ~%d connections past the "
                     "floor):" % (GUARD_RATE // 10))
        lines.append("    make bench TIERS=%s CONTENDERS=%s MIN_AVAILABLE_MIB=%d MEM_GUARD_MIB=1048576 "
                     "RATE=%d HOLD=1 TIMEOUT=300 QUIET_MAX=120 OUT=%s" % (
                         label_of(tier), contender, floor, GUARD_RATE, out))
    lines.append("    harness/capacity --check %s" % out)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        rec = {"reference": os.path.abspath(run_dir), "contender": contender,
               "condition": b.condition, "basis_tier": b.tier, "stall": stall,
               "mem_usable_kib": avail, "min_available_mib": floor, "predicted": n,
               "model": m.to_json(), "words": words}
        path = os.path.join(out_dir, PREDICTION_FILE)
        runstore.write_json(path, rec, indent=1, sort_keys=True)
        lines.append("  prediction saved: %s" % path)
    print("\n".join(lines))
    return n


def guard_start(pred):
    """(what the guard read, its KiB when predicted, meta.json's key for it at
    the bench's start). A prediction without mem_usable_kib was made when the
    guard read MemAvailable, and is checked against that."""
    if "mem_usable_kib" in pred:
        return "usable memory", pred["mem_usable_kib"], "mem_usable_at_start_kib"
    return "MemAvailable", pred["mem_available_kib"], "mem_available_at_start_kib"


def basis_sndbuf(basis):
    """The run's server --sndbuf: the stall scenario's stall_sndbuf, else server_cmd's."""
    v = basis.get("stall_sndbuf")
    return v if v is not None else server_flag(basis.first_ok("server_cmd"), "--sndbuf")


def basis_push(basis):
    """The reference run's push as bench.sh knobs: the backlog a stalled
    connection reached depends on how fast it was fed and for how long, so the
    validation run must push as the reference did (bench.sh's defaults differ)."""
    knobs = []
    for knob, col in (("STALL_PUSH_BYTES", "stall_push_bytes_cfg"), ("STALL_PUSH_EVERY", "stall_push_every_s")):
        v = basis.first_ok(col)
        if v is not None:
            knobs.append(" %s=%s" % (knob, v))
    return "".join(knobs)


def guard_stopped(r):
    """A run the memory guard's floor stopped: status oom-guard, or its client
    stopped opening at --min-available (run_one.sh then may see the memory
    back above the floor and record a timeout)."""
    if cellmod.status_of(r) == "oom-guard":
        return True
    c = r.get("client")
    if isinstance(c, str):
        try:
            c = json.loads(c)
        except ValueError:
            c = None
    return isinstance(c, dict) and c.get("stopped_reason") == "min-available"


def read_prediction(path):
    """PATH's prediction (--predict-guard --out) with every figure cmd_check
    uses checked: ValueError says which is wrong. A damaged or hand-edited
    file (a stall of "abc", a NaN memory, 0 connections per worker, JSON
    nested past the parser, a FIFO) is no prediction, not a traceback or a hang."""
    try:
        with runstore.open_regular(path) as f:
            pred = json.load(f)
    except RecursionError:
        raise ValueError("nested past the JSON parser") from None
    if not isinstance(pred, dict) or not isinstance(pred.get("model"), dict):
        raise ValueError("not a prediction")

    def figure(name, v, lo=0.0, hi=math.inf, whole=False, hi_in=False):
        # [lo, hi), or [lo, hi] with hi_in (a stall fraction may be 1: STALL=1)
        if isinstance(v, bool) or not isinstance(v, int if whole else (int, float)) \
                or not (lo <= v < hi or hi_in and v == hi):
            raise ValueError("%s: %r" % (name, v))
    m = pred["model"]
    for key in ("kernel_b", "app_b", "backlog_b", "idle_pp_b", "reserve_b"):
        figure(key, m.get(key))
    figure("conns_per_worker", m.get("conns_per_worker"), lo=1.0)
    figure("model stall", m.get("stall"), hi=1.0, hi_in=True)
    figure("stall", pred.get("stall"), hi=1.0, hi_in=True)
    figure("min_available_mib", pred.get("min_available_mib"), whole=True)
    figure("basis_tier", pred.get("basis_tier"), whole=True)
    what, kib, _ = guard_start(pred)
    figure(what, kib, lo=1.0)
    if not isinstance(pred.get("contender"), str):
        raise ValueError("contender: %r" % pred.get("contender"))
    return pred


def cmd_check(out_dir):
    path = os.path.join(out_dir, PREDICTION_FILE)
    try:
        pred = read_prediction(path)
        model = Model.from_json(pred["model"])
        contender = pred["contender"]
        start = guard_start(pred)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise NoData("%s: no usable prediction (%s): run harness/capacity --predict-guard REF "
                     "CONTENDER --out %s first" % (out_dir, e, out_dir))
    rows = read_rows(out_dir)
    meta = read_meta(out_dir)
    if float(pred.get("stall") or 0) > 0:
        return check_stall(out_dir, pred, model, rows)
    runs = [r for r in rows if r.get("contender") == contender and guard_stopped(r)]
    if not runs:
        seen = ", ".join("%s %s: %s" % (r.get("contender"), label_of(r["tier"]), cellmod.status_of(r))
                         for r in rows)
        raise NoData("%s: no %s run was stopped by the memory guard (%s)" % (out_dir, contender, seen))
    what0, avail, meta_key = start
    avail0 = num(meta.get(meta_key))
    lines = ["check: %s (prediction from %s, figures at %s)" % (
        out_dir, pred.get("reference"), label_of(pred.get("basis_tier") or 0))]
    for r in runs:
        floor = num(r.get("min_available_mib")) or num((meta.get("settings") or {}).get("min_available_mib")) \
            or pred["min_available_mib"]
        measured = num(r.get("accepted")) or 0
        lines.append("  %s %s repeat %s (%s): measured %s connections when the guard stopped it "
                     "(MIN_AVAILABLE_MIB %d)" % (contender, label_of(r["tier"]), runstore.cell(r.get("repeat")),
                                                cellmod.status_of(r), fmt_n(measured), floor))
        # The prediction saved before the run, then the same model from the
        # memory bench.sh read at its start (meta.json): both before the run.
        preds = [("predicted at --predict-guard, %s %d MiB" % (what0, int(avail) // 1024),
                  guard_trip(model, avail, floor))]
        if avail0:
            preds.append(("re-predicted from %s %d MiB when the bench started (meta.json)"
                          % (what0, int(avail0) // 1024), guard_trip(model, avail0, floor)))
        held = num(r.get("client_established"))
        if held and abs(held - measured) > 0.01 * held:
            # a server still accepting: the kernel holds the rest, their userspace is not
            # spent yet, so the memory fell for other costs than the model's
            lines.append("    NOT COMPARABLE: the client held %s connections but the server had accepted "
                         "%s: the rest cost kernel memory only (a CPU-starved server lags its accept "
                         "queue)" % (fmt_n(held), fmt_n(measured)))
            continue
        for what, p in preds:
            err = (measured - p) / p if p else float("inf")
            lines.append("    %s: %s; measured/predicted %.3f (%+.1f%%): %s 10%%" % (
                what, fmt_n(p), measured / p if p else float("inf"), err * 100,
                "within" if abs(err) <= CHECK_TOLERANCE else "NOT within"))
    print("\n".join(lines))


def check_stall(out_dir, pred, model, rows):
    """A stall prediction: each run of the bracket either held or was stopped by
    the guard (in its stall phase, or already in its ramp); the prediction is
    within 10% when every run at or below 0.9 x N held and every run at or above
    1.1 x N was stopped, with at least one of each."""
    contender = pred["contender"]
    what0, avail, _ = guard_start(pred)
    p = guard_trip(model, avail, pred["min_available_mib"])
    runs = [r for r in rows if r.get("contender") == contender and num(r.get("stall_fraction"))]
    if not runs or not p:
        raise NoData("%s: no %s stall run (or a prediction of 0) to check" % (out_dir, contender))
    lines = ["check: %s (stall %s; prediction from %s, figures at %s): the guard stops %s at %s "
             "connections (%s %d MiB, MIN_AVAILABLE_MIB %d)" % (
                 out_dir, fmt_pct(float(pred["stall"])), pred.get("reference"),
                 label_of(pred.get("basis_tier") or 0), contender, fmt_n(p),
                 what0, int(avail) // 1024, pred["min_available_mib"])]
    below = above = 0
    bad = []
    for r in sorted(runs, key=lambda r: num(r.get("tier"))):
        tier = num(r.get("tier"))
        stopped = guard_stopped(r)
        ratio = tier / p
        end = runstore.cell(r.get("stall_end")) or "-"
        held = "held" if end in FILLED_ENDS else "did not fill (stall_end %s): proves nothing" % end
        lines.append("  %s %s (%.2f x predicted): %s (%s, stall_end %s)" % (
            contender, label_of(tier), ratio, "stopped by the guard" if stopped else held,
            cellmod.status_of(r), end))
        if not stopped and end not in FILLED_ENDS:
            # still filling (wait) or a dead server: it neither held the
            # predicted load nor was stopped by it
            continue
        if ratio <= 1 - CHECK_TOLERANCE:
            below += 1
            if stopped:
                bad.append(label_of(tier))
        elif ratio >= 1 + CHECK_TOLERANCE:
            above += 1
            if not stopped:
                bad.append(label_of(tier))
    if bad:
        verdict = "NOT within 10%% (%s contradict the prediction)" % ", ".join(bad)
    elif below and above:
        verdict = "within 10%"
    else:
        verdict = "undecided: needs a run at or below 0.9 x and one at or above 1.1 x the prediction"
    lines.append("  verdict: %s" % verdict)
    print("\n".join(lines))
