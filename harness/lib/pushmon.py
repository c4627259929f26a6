#!/usr/bin/python3
"""pushmon.py - the push scenario's broadcast watch and the server's settled
push count (scenarios/push.sh).

    pushmon.py broadcast --stats FILE --c1m-stat PATH --client-log FILE
                         --conns N --wait S [--root PID]
                         (--go FILE | --t-sig-us US [--pushed0 N])
    pushmon.py settled --stats FILE --c1m-stat PATH

broadcast: the harness signals the server's workers at T_SIG_US (the
realtime clock, microseconds since the epoch: the clock of the client's log
lines), the server's `pushed` counter being PUSHED0 just before. --go FILE:
started before the signal, it creates FILE.ready once it waits, then waits
for FILE to hold the line "T_SIG_US [PUSHED0]" (monlib.wait_go), which the
caller writes just before it signals: the watch's own start-up (20-30 ms)
is then out of the timed window (started after the signal, its first look
at the server came that late). --t-sig-us and --pushed0 instead: a watch
started after the signal (the tests do). Every 50 ms, until the client's log says that its push window reached
all its reading connections, or --wait seconds after the signal: the server's
`pushed` counter (once --conns past --pushed0: every connection's line handed
to the kernel, paced lines included; no longer watched once the client's line
is there) and the client's log. Prints one JSON object: "record"
(broadcast_server_s, broadcast_reached and broadcast_s, "" when not
measured), failed ("broadcast-timeout" or "") and why.
settled: the server's `pushed` once it has not moved over three looks 0.1 s
apart (the Python servers publish at 20 Hz), within 5 s: its last value
(an empty line when unreadable).

SIGTERM/SIGINT, or --root gone: exit 130 printing nothing (the run is being
stopped).
Exit: 0 done, 1 FILE.ready not created, 2 usage, 130 stopped.
"""
import json
import re
import sys
import time

import monlib
import runstore
from monlib import stat_get

REACHED = re.compile(rb"^c1m-client: push window reached all ([0-9]+) reading connections, "
                     rb"last at ([0-9]+) us")
POLL_S = 0.05


class LogLines:
    """The complete lines appended to a file since the last call (a client's
    log, read as it grows; a missing file, or one that is no regular file,
    has none: runstore.open_regular, as a FIFO there held the watch in open(),
    deaf to its stop signals)."""

    def __init__(self, path):
        self.path, self.off, self.part = path, 0, b""

    def new(self):
        try:
            with runstore.open_regular(self.path, mode="rb") as f:
                f.seek(self.off)
                data = f.read(1 << 20)
        except OSError:
            return []
        self.off += len(data)
        lines = (self.part + data).split(b"\n")
        self.part = lines.pop()
        return lines


def now_us():
    return time.time_ns() // 1000


def reached_line(lines):
    """(connections, last receipt in us) of the client's "reached all" line, or None."""
    for line in lines:
        m = REACHED.match(line)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def verdict(reached, t_sig_us, wait):
    """The broadcast's figures and status from the client's line (None: not
    seen within the wait)."""
    if reached is None:
        return {"broadcast_reached": ""}, "broadcast-timeout", \
            f"the broadcast had not reached every connection after {wait}s"
    n, last = reached
    s = (last - t_sig_us) / 1e6
    rec = {"broadcast_reached": n, "broadcast_s": "%.6f" % s}
    if s > wait:
        return rec, "broadcast-timeout", f"the broadcast took {rec['broadcast_s']} s, over PUSH_WAIT={wait}s"
    return rec, "", ""


def read_go(words):
    """(t_sig_us, pushed0 or None) from the --go file's words, or None."""
    if not 1 <= len(words) <= 2 or not all(monlib.ascii_digits(w) and len(w) < 19 for w in words):
        return None
    return (int(words[0]), int(words[1]) if len(words) == 2 else None) if int(words[0]) > 0 else None


def cmd_broadcast(a, stop):
    if a.go:
        try:
            go = monlib.wait_go(a.go, read_go, stop, a.root)
        except OSError as e:
            print(f"pushmon.py: {a.go}.ready: {e.strerror}", file=sys.stderr)
            return 1
        if go is None:
            return 130
        a.t_sig_us, a.pushed0 = go
    log = LogLines(a.client_log)
    server_s, reached = "", None
    while True:
        # the server first: both done by one look, the server's figure is kept
        t = now_us()
        if server_s == "" and a.pushed0 is not None:
            n = stat_get(a.c1m_stat, a.stats, "pushed")
            if n is not None and n >= a.pushed0 + a.conns:
                server_s = "%.3f" % ((now_us() - a.t_sig_us) / 1e6)
        reached = reached_line(log.new())
        if reached:
            break
        if stop or (a.root and not monlib.live(a.root)):
            return 130
        if (t - a.t_sig_us) / 1e6 > a.wait:
            reached = reached_line(log.new())   # a last look
            break
        time.sleep(POLL_S)
    rec, failed, why = verdict(reached, a.t_sig_us, a.wait)
    rec["broadcast_server_s"] = server_s
    print(json.dumps({"record": rec, "failed": failed, "why": why}))
    return 0


def cmd_settled(a, stop):
    last, same = None, 0
    for _ in range(50):
        n = stat_get(a.c1m_stat, a.stats, "pushed")
        same = same + 1 if n is not None and n == last else 0
        last = n
        if same >= 3 or stop:
            break
        time.sleep(0.1)
    if stop:
        return 130
    print("" if last is None else last)
    return 0


def usage(msg=None):
    monlib.usage("pushmon.py", __doc__, msg)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    cmd, rest = argv[0], argv[1:]
    if cmd not in ("broadcast", "settled"):
        usage(f"unknown command: {cmd}")
    ap = monlib.parser("pushmon.py", __doc__, cmd)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--c1m-stat", required=True)
    if cmd == "broadcast":
        ap.add_argument("--client-log", required=True)
        ap.add_argument("--conns", type=monlib.positive(int), required=True)
        ap.add_argument("--wait", type=monlib.positive(int), required=True)
        ap.add_argument("--go")
        ap.add_argument("--root", type=monlib.positive(int))
        ap.add_argument("--t-sig-us", type=monlib.positive(int))
        ap.add_argument("--pushed0", type=monlib.count())
    a = ap.parse_args(rest)
    if cmd == "broadcast" and (a.go is None) == (a.t_sig_us is None) or \
            cmd == "broadcast" and a.go is not None and (a.go == "" or a.pushed0 is not None):
        usage("broadcast: --go FILE, or --t-sig-us (and --pushed0)")
    stop = monlib.stop_flag()
    return (cmd_broadcast if cmd == "broadcast" else cmd_settled)(a, stop)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
