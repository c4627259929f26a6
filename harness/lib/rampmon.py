#!/usr/bin/python3
"""rampmon.py - when a ramp ends: the one home of its stop rules (Ramp),
for both drivers: run_one.sh (make bench's runs, and harness/anatomy-cpu's
through it) watches a local ramp with `rampmon.py watch`; run_remote.py steps
a Ramp over the counters it streams back from the server host.

    rampmon.py watch --out FILE --stats FILE --c1m-stat PATH --conns N
                     --server PID (--go FILE | --t0 S --client PID)
                     [--timeout S] [--ramp-stall S] [--min-available MIB]
                     [--client-log FILE] [--root PID] [--label TEXT]
                     [--progress off|line|tty]

--go FILE: started before the client, it creates FILE.ready once it waits,
then waits (polling every 2 ms) for FILE to hold the line "T0 CLIENT_PID"
(the caller writes it once the client runs) and watches from then on. Its
start-up (an interpreter and its imports: 30-50 ms of CPU) is then neither
in the timed ramp nor taking the CPUs from it: started with the client, it
made a 10k ramp of c 0.14 s instead of 0.09 s (five runs each). --t0 and
--client instead: a watch started once the client runs (the tests do).
It ends with os._exit once its file is written: its caller reads the
server's CPU when it is gone, and the interpreter's teardown would be in
that window.

watch: polls the server's counters (c1m-stat --wait open=N, which polls the
file every 10 ms, for at most a second a pass; then its total line for the
open and dead counts) until a rule below ends the ramp, with a progress line
on stderr (--progress: tty redraws one line with \\r, line prints one at the
start and one every 10 s; off: none). Then it writes FILE: one JSON object,
the observations saying how the ramp ended (`ramp_end` and its facts, as
lib/judge.py reads them: record.py write --merge-obs) and `t1` (when it
ended, the epoch in seconds); a ramp that did not reach N is also said on
stderr, in lib/judge.py's words ("LABEL: not all accepted after 600s"). On SIGTERM, SIGINT or
SIGHUP, or once --root is gone, it exits 130 writing nothing (the run was
stopped: its caller's cleanup says so).

The rules, tried in this order at every pass (Ramp.step); the ramp ends at
the first that holds:
  reached        the server's counters show N open
  worker-died    they show a dead worker (c1m-stat's waits fail at once
                 then: without this rule a ramp whose server outlived a
                 worker polled without pause until --ramp-stall)
  server-exited  the server's process is gone
  client-exited  the load client is gone (it ends early only on failure;
                 the end of --client-log is kept)
  oom-guard      usable memory (MemAvailable less SReclaimable,
                 py_server/cli_rules.py) under --min-available MiB
  timeout        more than --timeout s since t0 (default 600)
  ramp-stalled   no new high of the open count for --ramp-stall s (default
                 120; 0: never): a server at a limit (threads at its thread
                 limit) stops here, not at --timeout

Exit: 0 reached, 3 the ramp ended otherwise (FILE says how), 1 FILE cannot
be written, 2 usage, 130 stopped. Standard library only.
"""
import json
import math
import os
import sys
import time

import c1m_root  # noqa: F401  (py_server.cli_rules)
import judge
import monlib
from monlib import live, log_tail, wait_open
from progress import Progress
from py_server import cli_rules

# progress line: the contender, N, accepted of N, the rate, seconds (run_one.sh's)
PROGRESS_FMT = "  %-17s %8s  accepted %8d / %-8d %7.0f/s  %6.1fs%s "


class Ramp:
    """The ramp's stop rules (the module's doc lists them, in order).
    step() gets one pass's readings and returns None while the ramp goes on,
    else the observations that end it: {"ramp_end": RULE, ...its facts}."""

    def __init__(self, target, t0, timeout=600, stall=120, min_available=0):
        self.target, self.t0, self.timeout, self.stall = target, t0, timeout, stall
        self.min_available = min_available
        self.best, self.t_best = 0, t0    # progress: a new high of the open count

    def step(self, now, opened, dead=0, server=True, client=True, usable_mib=None):
        """OPENED: the server's open count (None: unreadable this pass); DEAD:
        its dead workers; SERVER, CLIENT: whether each still runs; USABLE_MIB:
        usable memory (None: not watched)."""
        el = now - self.t0
        if opened is not None and opened >= self.target:
            return {"ramp_end": "reached"}
        if dead:
            return {"ramp_end": "worker-died"}
        if not server:
            return {"ramp_end": "server-exited"}
        if not client:
            return {"ramp_end": "client-exited"}
        if usable_mib is not None and usable_mib < self.min_available:
            return {"ramp_end": "oom-guard"}
        if el > self.timeout:
            return {"ramp_end": "timeout"}
        if opened is not None and opened > self.best:
            self.best, self.t_best = opened, now
        elif self.stall > 0 and now - self.t_best > self.stall:
            return {"ramp_end": "ramp-stalled", "ramp_best": str(self.best),
                    "ramp_open": "" if opened is None else str(opened), "ramp_elapsed_s": f"{el:.3f}"}
        return None


def note(end, target, timeout, stall, min_available):
    """lib/judge.py's note for the ramp's end ("" when reached)."""
    rec = {"target": target, "timeout_s": timeout, "ramp_stall_s": stall, "min_available_mib": min_available}
    return judge.ramp_verdict(rec, dict(end, ready="ok"))[1]


def read_go(words):
    """(t0, client pid) from the --go file's words ("T0 CLIENT_PID"), or None."""
    if len(words) != 2:
        return None
    try:
        t0, pid = float(words[0]), int(words[1])
    except ValueError:
        return None
    return (t0, pid) if math.isfinite(t0) and t0 > 0 and pid > 0 else None


def cmd_watch(a):
    stop = monlib.stop_flag()
    if a.go:
        try:
            go = monlib.wait_go(a.go, read_go, stop, a.root)
        except OSError as e:
            say(f"rampmon.py: {a.go}.ready: {e.strerror}")
            return 1
        if go is None:
            return 130
        a.t0, a.client = go
    ramp = Ramp(a.conns, a.t0, a.timeout, a.ramp_stall, a.min_available)
    shown = Progress(a.progress)
    while True:
        if wait_open(a.c1m_stat, a.stats, a.conns):
            end = {"ramp_end": "reached"}
            break
        if stop or (a.root and not live(a.root)):
            shown.end()
            return 130
        now = time.time()
        t = monlib.stat_total(a.c1m_stat, a.stats)
        opened = t.get("open")
        el = now - a.t0
        shown.show(PROGRESS_FMT, (a.label, a.conns, opened or 0, a.conns, opened / el if opened and el > 0 else 0, el, ""))
        end = ramp.step(now, opened, dead=t.get("workers_dead", 0), server=live(a.server), client=live(a.client),
                        usable_mib=cli_rules.mem_usable_mib() if a.min_available else None)
        if end is not None:
            break
    t1 = time.time()
    shown.end()
    if end["ramp_end"] == "client-exited" and a.client_log:
        end["client_log"] = log_tail(a.client_log)
    end["t1"] = f"{t1:.6f}"
    if end["ramp_end"] != "reached":
        say(f"{a.label or 'rampmon.py'}: {note(end, a.conns, a.timeout, a.ramp_stall, a.min_available)}")
    tmp = f"{a.out}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(json.dumps(end) + "\n")
        os.replace(tmp, a.out)
    except OSError as e:
        say(f"rampmon.py: {a.out}: {e.strerror}")
        return 1
    return 0 if end["ramp_end"] == "reached" else 3


def say(line):
    """A line on stderr; none when it cannot be written (its reader gone): the
    watch's verdict is its file, and it must be written whatever."""
    if sys.stderr is None:      # (started with fd 2 closed: print would write to stdout)
        return
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


def usage(msg=None):
    monlib.usage("rampmon.py", __doc__, msg)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    cmd, rest = argv[0], argv[1:]
    if cmd != "watch":
        usage(f"unknown command: {cmd}")
    ap = monlib.parser("rampmon.py", __doc__, cmd)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--c1m-stat", required=True)
    ap.add_argument("--conns", type=monlib.conns, required=True)
    ap.add_argument("--go")
    ap.add_argument("--t0", type=monlib.positive(float))
    ap.add_argument("--server", type=monlib.positive(int), required=True)
    ap.add_argument("--client", type=monlib.positive(int))
    ap.add_argument("--timeout", type=monlib.positive(int), default=600)
    ap.add_argument("--ramp-stall", type=monlib.count(), default=120)
    ap.add_argument("--min-available", type=monlib.count(), default=0)
    ap.add_argument("--client-log")
    ap.add_argument("--root", type=monlib.positive(int))
    ap.add_argument("--label", default="")
    ap.add_argument("--progress", choices=("off", "line", "tty"), default="line")
    a = ap.parse_args(rest)
    given = (a.t0 is not None, a.client is not None)
    if (a.go is not None and (a.go == "" or any(given))) or (a.go is None and not all(given)):
        usage("watch: --go FILE, or --t0 and --client")
    return cmd_watch(a)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, AttributeError):     # (AttributeError: None, started without that fd)
            pass
    os._exit(code)      # (no teardown: see the module's doc)
