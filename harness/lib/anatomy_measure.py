#!/usr/bin/python3
"""anatomy_measure.py - a CPU anatomy's measurements of one contender, from its
run: harness/anatomy-cpu runs each contender through run_one.sh --perf 1 (the
same run as make bench's: gate, namespace, ramp, hold, health, verdict), and
this turns that run's record (RUN_DIR/result.json, judged by lib/judge.py)
and observations (RUN_DIR/observations.json) into what lib/perf_layers.py's
table reads: RUN_DIR/measure-ramp.json and measure-hold.json.

    anatomy_measure.py RUN_DIR [--fold-failed PHASE=WHY]...

Each measure holds the phase's connections (the ramp's: N when reached, else
what the counters said; the hold's: open at its end), the server processes'
CPU nanoseconds over it (cpu_ns, and cpu_ns_by_pid "PID:NS,...": the
processes read at both ends; schedstat, lib/probe.sh cpu_ns_by_pid), its
clock ticks, its window (the ramp: t0 to t1; the hold: between the readings
around the nanoseconds), perf's state (ok, unavailable or failed, and why;
--fold-failed: a phase whose profile could not be folded), and the run's
quiet gate, disturbance figures, status and flags. A run that is not ok,
disturbed or suspect (lib/judge.py: it did not reach N, a process died, the
counts disagree...) writes failed-measure-PHASE.json instead: kept for a
look, left out of the table. (A suspect run counts: its flags name a sanity
bound, most often a memory figure's, that says nothing of the CPU; they are
kept in the measure.)

Prints, one line each, the phases whose perf failed ("PHASE: why"), and on
stderr why a failed run failed. Exit: 0 the run counts, 1 it failed (or its
record cannot be read), 2 usage.
"""
import json
import math
import os
import sys

import c1m_root  # noqa: F401  (py_server.cli_rules)
import runstore
from py_server.cli_rules import ascii_digits

PHASES = ("ramp", "hold")
USABLE = ("ok", "disturbed", "suspect")


def by_pid(text):
    """{pid: ns} of a "PID:NS ..." reading (a malformed word is left out)."""
    out = {}
    for w in str(text or "").replace(",", " ").split():
        p, _, v = w.partition(":")
        if ascii_digits(p) and ascii_digits(v):    # ("²" is a digit int() refuses)
            out[p] = int(v)
    return out


def _f(v):
    """V as a finite float, or None (a measure is JSON: no inf, no NaN)."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):     # (OverflowError: an int past a float's range)
        return None
    return f if math.isfinite(f) else None


def _i(v):
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):     # (OverflowError: int() of an infinite float)
        return None


def perf_state(text):
    """(perf, perf_cause) of an observation: ok, "unavailable: why", "failed: why"."""
    text = str(text or "unavailable: not recorded")
    word, _, why = text.partition(": ")
    return (word if word in ("ok", "unavailable", "failed") else "failed"), why


def phase(rec, obs, name, fold_failed=None):
    """The measure of phase NAME, or None when the run has none."""
    ns0, ns1 = by_pid(obs.get(f"{name}_ns0")), by_pid(obs.get(f"{name}_ns1"))
    if f"{name}_ns1" not in obs:
        return None
    delta = {p: ns1[p] - ns0[p] for p in ns1 if p in ns0}
    if name == "ramp":
        reached = obs.get("ramp_end") == "reached"
        conns = rec.get("target") if reached else rec.get("accepted")
        ticks = (_i(obs.get("cpu1")), _i(obs.get("cpu0")))
        t = (_f(obs.get("t1")), _f(obs.get("t0")))
    else:
        reached = True
        conns = rec.get("open_after_hold")
        ticks = (_i(obs.get("hold_cpu1")), _i(obs.get("hold_cpu0")))
        t = (_f(obs.get("hold_c")), _f(obs.get("hold_b")))
    perf, cause = perf_state(obs.get(f"perf_{name}"))
    if fold_failed and name in fold_failed and perf == "ok":
        perf, cause = "failed", fold_failed[name]
    disturbed = rec.get("status") == "disturbed" or bool(rec.get("disturb_cause"))
    return {
        "contender": rec.get("contender"), "phase": name, "target": rec.get("target"),
        "conns": conns, "reached": int(reached), "status": rec.get("status"), "note": rec.get("note"),
        "flags": rec.get("flags") or None,
        "ramp_end": obs.get("ramp_end") if name == "ramp" else None,
        "cpu_ns": sum(delta.values()),
        "cpu_ns_by_pid": ",".join(f"{p}:{v}" for p, v in delta.items()),
        "cpu_ticks": ticks[0] - ticks[1] if None not in ticks else None,
        "clk_tck": _i(obs.get("clk_tck")),
        "window_s": round(t[0] - t[1], 3) if None not in t else None,
        "workers": rec.get("server_workers"),
        "perf": perf, "perf_cause": cause or None, "perf_warning": obs.get(f"perf_warning_{name}") or None,
        "gate": rec.get("gate"), "gate_wait_s": rec.get("gate_wait_s"), "gate_cause": obs.get("gate_cause") or None,
        "outside_cpu_pct": rec.get("outside_cpu_pct"), "outside_phase_pct": rec.get(f"outside_{name}_pct"),
        "init_cpu_pct": rec.get("init_cpu_pct"), "outside_top": rec.get("outside_top"),
        "disturbed": int(disturbed), "disturb_cause": rec.get("disturb_cause"),
    }


def read_object(path):
    """The JSON object in PATH (OSError, ValueError when there is none)."""
    with open(path) as f:
        obj = json.load(f)
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: not a JSON object")
    return obj


def usage(msg=None):
    if msg:
        print(f"anatomy_measure.py: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def main(argv):
    if not argv or argv[0] in ("-h", "--help") or argv[0].startswith("-"):
        usage()
    run_dir, rest, fold_failed = argv[0], argv[1:], {}
    while rest:
        if rest[0] != "--fold-failed" or len(rest) < 2 or "=" not in rest[1] \
                or rest[1].partition("=")[0] not in PHASES:
            usage(f"expects --fold-failed PHASE=WHY (PHASE: ramp or hold), not {' '.join(rest[:2])!r}")
        p, _, why = rest[1].partition("=")
        fold_failed[p] = why
        rest = rest[2:]
    try:
        rec, obs = (read_object(os.path.join(run_dir, f)) for f in ("result.json", "observations.json"))
    except (OSError, ValueError, RecursionError) as e:
        print(f"anatomy_measure.py: {run_dir}: the run's record cannot be read: {e}", file=sys.stderr)
        return 1
    usable = rec.get("status") in USABLE
    prefix = "measure-" if usable else "failed-measure-"
    for name in PHASES:
        m = phase(rec, obs, name, fold_failed)
        if m is None:
            continue
        try:
            runstore.write_json(os.path.join(run_dir, prefix + name + ".json"), m, indent=1, sort_keys=True)
        except OSError as e:
            print(f"anatomy_measure.py: {run_dir}: {e}", file=sys.stderr)
            return 1
        if m["perf"] == "failed":
            print(f"{name}: {m['perf_cause'] or 'perf failed'}")
    if not usable:
        print(f"{rec.get('contender')}: {rec.get('status')}: {rec.get('note') or ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
