#!/usr/bin/python3
"""stallmon.py - the stall scenario's monitor (scenarios/stall.sh): samples
while peers stall, says when the phase ends, and sums it up.

    stallmon.py sample --out FILE [--once] [--stats FILE --c1m-stat PATH]
                       [--sockstat PATH] [--pids "PID..."] [--server PID]
                       [--workers "PID..."] [--root PID] [--nice N]
                       [--stalled N --t0 S --wait S --floor MIB --csv FILE]
                       [--steady S] [--push-bytes B] [--push-every S]
                       [--interval S] [--page BYTES]
    stallmon.py summary FILE
    stallmon.py steady-s [--steady S] [--push-bytes B] [--push-every S] [--page BYTES]
    stallmon.py cut-times RAMP_CSV --slow0 N --at-us US
    stallmon.py ss-sum --stalled N          (`ss -tmnH` lines on stdin)

sample --once: appends one "before" sample to FILE (JSON lines) and exits.
sample: appends a header line (the phase's parameters) then, every --interval
seconds (default 1), one sample: sockstat's TCP mem (pages) and orphans
(--sockstat, /proc/SERVER/net/sockstat: the server's namespace), the server's
`slow` counter (c1m-stat --get), the RssAnon of --pids summed (KiB),
MemAvailable and the usable memory (MemAvailable less the reclaimable slab,
KiB: py_server/cli_rules.py), and whether the server (--server and every
--workers pid) still lives; a row of --csv (OUT/stall.csv) each. It ends with
an "end" line and exit 0 when the phase ends (Phase.step): "oom-guard",
"server-died", "cut", "steady" or "wait"; on SIGTERM/SIGINT, or when --root
is gone, it exits without one (the run was interrupted).

summary: prints one JSON object: "record" (the stall_* keys of the run's
record, harness/README.md "Scenario stall") and the facts the scenario's
status and note lines test (end, t_end, guard_why, the before/peak/low
figures) and, when the phase ended in oom-guard, the run's note on it
(guard_note).

steady-s: prints the seconds without change that end the phase (steady_s).
cut-times: prints {"record": ...} with the first and the last slow close
after the stall (stall_cut_first_s, stall_cut_last_s; from the run's
ramp.csv, cut_times). ss-sum: prints {"record": ...} with the server's
sockets, their Send-Q and their write memory per stalled peer (ss_sum).

Exit: 0 done, 1 FILE unreadable, 2 usage. Standard library only.
"""
import csv
import json
import math
import os
import re
import sys
import time

import c1m_root  # noqa: F401
import monlib
from monlib import append, live, load, number, stat_get
from runstore import open_regular
from py_server import cli_rules

# The server's RssAnon may move this much (KiB) beyond the TCP tolerance and
# still be "still": the allocator's noise. Small: at 2k connections with a 2 s
# window, 8 MiB of slack hid a naive server's growth while it pushed at a
# third of its schedule (CI 2026-12-05).
RSS_SLACK_KIB = 2048
MAX_PENDING = 4096   # the server's --max-pending the scenario runs (its default)


def steady_s(steady=10, every=1.0, push_bytes=1024, page=4096):
    """The seconds without change that end the phase: STALL_STEADY, and at
    least the push intervals in which a stalled peer still filling takes ten
    ninths of what can hide from the check. What hides: sockstat counts the
    pages the sockets reserved, and a socket keeps up to a page reserved after
    its acked lines are freed (one at each end), and the server's
    --max-pending in its userspace. Over fewer intervals a filling peer can
    move TCP memory by less than the tolerance (a tenth of its lines): c at 1M
    with 10% stalled, 4 KiB peers and a line every 30 s ended "steady" 58 s
    after the stall, nothing cut and every stalled peer still taking lines;
    over 10 s TCP memory had moved 256 pages (sockstat's counter also moves in
    per-CPU batches of 256) where the tolerance was 835 (2026-12-04). With
    1 KiB lines: 14 intervals."""
    w = math.ceil(math.ceil((2 * page + MAX_PENDING) / (0.9 * push_bytes)) * every)
    return max(w, steady)


def still_pages(n, seconds, every=1.0, push_bytes=1024, page=4096):
    """How far (pages) sockstat's TCP mem may move in SECONDS and still count
    as "nothing moves" with N stalled: a tenth of what N peers would pin if
    every line to them were held (N x push_bytes per every), plus 2. Scaled by
    the stalled peers' own rate, not by the machine's total: with 1M reading
    peers the total (~800,000 pages) swings by 2-28% between samples, and 1%
    of it hid 10,000 peers filling at one line per 20 s (pyext at 1M ended
    "steady" after 53 s, nothing cut, 2026-12-04)."""
    return int(n * push_bytes * seconds / every / page / 10 + 2)


class Window:
    """The "nothing moves" window: still while MEM stays within tol pages of
    the window's first sample, SLOW (the server's cut count) has not moved
    since it, and RSS (the server's RssAnon, KiB) within tol pages plus
    RSS_SLACK_KIB of it; otherwise this sample opens a new window; so does an
    RSS read at one end of the window and not the other. Against the window's
    first sample, not the previous one: a queue that fills slowly moves little
    between two samples, not over a window. The RSS term: a server that
    buffers in userspace without limit (STALL_PUSH_FLOW=ignore) keeps the
    kernel's queues full and flat while its own memory grows."""

    def __init__(self, tol, page=4096):
        self.tol, self.page = tol, page
        self.since = None   # the window's first sample: (t, mem, slow, rss)

    def still(self, t, mem, slow, rss=None):
        """True while nothing moved since the window's first sample."""
        if self.since is not None:
            _, mem0, slow0, rss0 = self.since
            if slow == slow0 and abs(mem - mem0) <= self.tol:
                if rss is None and rss0 is None:
                    return True    # no RssAnon at either end: TCP alone
                if rss is not None and rss0 is not None \
                        and abs(rss - rss0) <= self.tol * self.page // 1024 + RSS_SLACK_KIB:
                    return True
        self.since = (t, mem, slow, rss)
        return False


def guard(usable, prev, floor, seconds):
    """Why the phase must stop (None: go on): usable memory (MiB) under the
    floor, or falling so fast that the next sample, at the pace of the last
    SECONDS, would be under it (the "predicted" stop). None without a figure."""
    if usable is None:
        return None
    what = f"usable memory {usable} MiB (MemAvailable less the reclaimable slab)"
    if usable < floor:
        return f"{what}, under the {floor} MiB floor"
    if prev is not None and 2 * usable - prev < floor:
        return (f"{what}, which fell {prev - usable} MiB over the last {seconds} s: "
                f"the next sample would have been under the {floor} MiB floor")
    return None


class Phase:
    """The phase's end, sample by sample. P: the header (stalled, slow0, tol,
    steady_s, floor, page, t_dead). step(sample) -> (end, why) or None.
    In order: the memory guard, a dead server, every stalled peer cut,
    nothing moving for steady_s, the deadline."""

    def __init__(self, p):
        self.p = p
        self.window = Window(p["tol"], p["page"])
        self.prev_usable = None
        self.prev_t = p["t0"]

    def step(self, s):
        p = self.p
        usable = s["usable_kib"] // 1024 if s.get("usable_kib") is not None else None
        why = guard(usable, self.prev_usable, p["floor"], int(s["t"]) - int(self.prev_t))
        if why:
            return "oom-guard", why
        self.prev_usable = usable
        if not s.get("alive", True):
            return "server-died", None
        slow, slow0 = s.get("slow"), p.get("slow0")
        if slow is not None and slow0 is not None and slow - slow0 >= p["stalled"]:
            return "cut", None
        if s.get("mem") is not None and self.window.still(s["t"], s["mem"], slow or 0, s.get("rss")) \
                and int(s["t"]) - int(self.window.since[0]) >= p["steady_s"]:
            return "steady", None
        self.prev_t = s["t"]
        if s["t"] >= p["t_dead"]:
            return "wait", None
        return None


# ---- reading the live machine ----------------------------------------------

def read_sockstat(path):
    """(mem pages, orphans) of sockstat's TCP line, or (None, None)."""
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if w and w[0] == "TCP:":
                    v = dict(zip(w[1::2], w[2::2]))
                    return int(v.get("mem", 0)), int(v.get("orphan", 0))
    except (OSError, ValueError):
        pass
    return None, None


def rss_anon_kib(pids):
    """The RssAnon of PIDS summed (KiB); None when none could be read."""
    total = None
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        total = (total or 0) + int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            pass
    return total


def meminfo():
    """(MemAvailable, usable) KiB, each None when unreadable."""
    try:
        with open("/proc/meminfo") as f:
            text = f.read()
    except OSError:
        return None, None
    return cli_rules._meminfo_field(text, "MemAvailable"), cli_rules.meminfo_usable_kib(text)


def read_sample(a):
    mem, orph = read_sockstat(a.sockstat) if a.sockstat else (None, None)
    avail, usable = meminfo()
    s = {"t": time.time(), "mem": mem, "orph": orph, "rss": rss_anon_kib(a.pids.split()),
         "slow": stat_get(a.c1m_stat, a.stats, "slow"), "avail_kib": avail, "usable_kib": usable}
    if a.server:
        s["alive"] = live(a.server) and all(live(w) for w in a.workers.split())
    return s


def csv_row(s, t0):
    """A row of OUT/stall.csv: seconds,tcp_mem_pages,orphans,slow,server_rss_kib,mem_available_mib."""
    def f(v):
        return "" if v is None else str(v)
    avail = s["avail_kib"] // 1024 if s.get("avail_kib") is not None else None
    return ",".join([f"{s['t'] - t0:.3f}", f(s["mem"]), f(s["orph"]), f(s["slow"]), f(s["rss"]), f(avail)])


def cmd_sample(a):
    if a.once:
        append(a.out, dict(read_sample(a), tag="before", page=a.page))
        return 0
    for need in ("stalled", "t0", "wait", "floor", "csv"):
        if getattr(a, need) is None:
            usage(f"sample: needs --{need.replace('_', '-')}")
    stop = monlib.stop_flag()
    if a.nice:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, a.nice)
        except OSError:
            pass
    before = [r for r in load(a.out) if r.get("tag") == "before"]
    steady = steady_s(a.steady, a.push_every, a.push_bytes, a.page)
    p = {"tag": "phase", "stalled": a.stalled, "t0": a.t0, "t_dead": int(a.t0) + a.wait,
         "steady_s": steady, "tol": still_pages(a.stalled, steady, a.push_every, a.push_bytes, a.page),
         "floor": a.floor, "page": a.page, "slow0": before[-1]["slow"] if before else None}
    append(a.out, p)
    with open(a.csv, "w") as f:
        f.write("seconds,tcp_mem_pages,orphans,slow,server_rss_kib,mem_available_mib\n")
    phase = Phase(p)
    for _ in range(a.wait):
        # seconds of the clock, not samples: on a saturated machine a pass
        # of the old shell loop took ~35 s at 1M with pushes
        time.sleep(a.interval)
        if stop or (a.root and not live(a.root)):
            return 0
        s = read_sample(a)
        append(a.out, s)
        with open(a.csv, "a") as f:
            f.write(csv_row(s, a.t0) + "\n")
        r = phase.step(s)
        if r:
            append(a.out, {"tag": "end", "end": r[0], "why": r[1], "t": time.time()})
            return 0
        if stop:
            return 0
    append(a.out, {"tag": "end", "end": "wait", "why": None, "t": time.time()})
    return 0


# ---- the summary -------------------------------------------------------------

def summarize(rows):
    """The summary object from the monitor's lines (see the module's doc). A
    field that is no figure (monlib.number: a string, NaN, a cut line's) is
    unknown, as if absent; a phase or end line without its start, count, window
    or time is none."""
    def num(r, k):
        return number(r.get(k))

    def page_of(r):
        v = num(r, "page")
        return v if isinstance(v, int) and v > 0 else None

    before = next((r for r in rows if r.get("tag") == "before"), {})
    p = next((r for r in rows if r.get("tag") == "phase" and num(r, "t0") is not None
              and isinstance(num(r, "stalled"), int) and num(r, "steady_s") is not None), None)
    end = next((r for r in rows if r.get("tag") == "end" and isinstance(r.get("end"), str)
                and num(r, "t") is not None), None)
    samples = [r for r in rows if "tag" not in r]
    page = (page_of(p) if p else None) or page_of(before) or 4096
    mem0, rss0, avail0 = num(before, "mem"), num(before, "rss"), num(before, "avail_kib")
    rec = {"stall_tcp_mem0_kib": (mem0 or 0) * page // 1024}
    out = {"record": rec, "end": None, "t_end": None, "guard_why": None, "page": page,
           "mem0": mem0, "rss0": rss0, "avail0": avail0, "slow0": num(before, "slow")}
    if p is None:
        return out
    n = p["stalled"]
    # a sample may lack a field (a cut or damaged line): that field is unknown
    mem_peak = max([mem0 or 0] + [num(s, "mem") for s in samples if num(s, "mem") is not None])
    rss_peak = max([rss0 or 0] + [num(s, "rss") for s in samples if num(s, "rss") is not None])
    lows = [x for x in [avail0] + [num(s, "avail_kib") for s in samples] if x is not None]
    avail_low = min(lows) if lows else None
    last = samples[-1] if samples else {}
    t_end = end["t"] if end else (num(last, "t") or p["t0"])
    why = end.get("why") if end else None
    usable = num(last, "usable_kib")
    out.update(end=end["end"] if end else "wait", t_end=t_end, guard_why=why if isinstance(why, str) else None,
               mem_peak=mem_peak, rss_peak=rss_peak, avail_low=avail_low, n=n,
               usable=usable // 1024 if usable is not None else None)
    rec.update(stall_phase_s=f"{t_end - p['t0']:.3f}", stall_end=out["end"], stall_steady_s=p["steady_s"],
               stall_tcp_mem_peak_kib=mem_peak * page // 1024,
               stall_tcp_mem_end_kib=(num(last, "mem") or 0) * page // 1024,
               stall_orphans_end=num(last, "orph"))
    if n > 0:
        rec["stall_tcp_mem_bytes_per_stalled"] = (mem_peak - (mem0 or 0)) * page // n
        rec["stall_user_bytes_per_stalled"] = (rss_peak - (rss0 or 0)) * 1024 // n
        if avail0 is not None and avail_low is not None:
            rec.update(stall_avail0_kib=avail0, stall_avail_min_kib=avail_low,
                       stall_avail_drop_bytes_per_stalled=(avail0 - avail_low) * 1024 // n)
    slow0, slow = num(p, "slow0"), num(last, "slow")
    if slow0 is not None and slow is not None:
        rec["stall_cut"] = slow - slow0
    if out["end"] == "oom-guard":
        out["guard_note"] = guard_note(out)
    return out


def _tdiv(a, b):
    # integer division toward zero, as the note's figures were in bash
    q = abs(a) // b
    return q if a >= 0 else -q


def guard_note(out):
    """The run's note on a phase the memory guard stopped (the summary OUT):
    how long, how many stalled, why, and what the server, the TCP buffers and
    the machine's available memory took, in MiB and per stalled peer ("?"
    where a figure is unknown)."""
    rec, page = out["record"], out["page"]
    per = {k: rec.get("stall_%s_bytes_per_stalled" % k, "?") for k in ("user", "tcp_mem", "avail_drop")}
    return (f"stopped after {rec['stall_phase_s']}s with {out['n']} stalled at {out['guard_why'] or ''}; "
            f"the server's RssAnon grew {_tdiv(out['rss_peak'] - (out['rss0'] or 0), 1024)} MiB "
            f"({per['user']} B per stalled connection), "
            f"TCP buffers {_tdiv((out['mem_peak'] - (out['mem0'] or 0)) * page, 1048576)} MiB ({per['tcp_mem']} B), "
            f"MemAvailable down {_tdiv((out['avail0'] or 0) - (out['avail_low'] or 0), 1024)} MiB "
            f"({per['avail_drop']} B)")


def cut_times(rows, slow0, at_us):
    """The first and the last slow close after the stall, seconds from it
    (at_us, the client's stall time in us, unix), from ramp.csv's rows (dicts:
    unix_ms, slow, ...; 10 Hz): the first row at or after the stall whose
    `slow` is above SLOW0, and the row where `slow` reached its top; both
    None when none (the record's columns, null); a row whose fields are no
    figures is passed over."""
    def fig(text):
        try:
            return number(float(text))
        except (TypeError, ValueError):
            return None
    t0 = at_us // 1000
    first = last = None
    top = 0
    for r in rows:
        t, slow = fig(r.get("unix_ms")), fig(r.get("slow"))
        if t is None or slow is None or t < t0 or not slow > slow0:
            continue
        if first is None:
            first = t
        if slow > top:
            top, last = slow, t
    if first is None:
        return {"stall_cut_first_s": None, "stall_cut_last_s": None}
    return {"stall_cut_first_s": "%.3f" % ((first - t0) / 1000),
            "stall_cut_last_s": "%.3f" % ((last - t0) / 1000) if last is not None else ""}


SKMEM_W = re.compile(r"[(,]w([0-9]+)")


def ss_sum(lines, stalled):
    """The server's sockets from `ss -tmnH` LINES: how many, and their Send-Q
    and skmem w (write memory queued) summed, per stalled peer when STALLED >
    0 (stall_ss_sockets, stall_sendq_/stall_wmem_bytes_per_stalled). A
    socket's line has Recv-Q and Send-Q as its first two words, or after its
    state; skmem may stand on the next line."""
    n = q = w = 0
    for line in lines:
        f = line.split()
        for word in f:
            if word.startswith("skmem:("):
                m = SKMEM_W.search(word)
                if m:
                    w += int(m.group(1))
        if len(f) >= 2 and cli_rules.ascii_digits(f[0]) and cli_rules.ascii_digits(f[1]):
            n, q = n + 1, q + int(f[1])
        elif len(f) >= 3 and cli_rules.ascii_digits(f[1]) and cli_rules.ascii_digits(f[2]):
            n, q = n + 1, q + int(f[2])
    rec = {"stall_ss_sockets": n}
    if stalled > 0:
        rec.update(stall_sendq_bytes_per_stalled=q // stalled, stall_wmem_bytes_per_stalled=w // stalled)
    return rec


def usage(msg=None):
    monlib.usage("stallmon.py", __doc__, msg)


def knobs(ap):
    # bounded: steady_s's arithmetic stays finite (--push-every 1e308 was an
    # OverflowError traceback)
    at_most, positive = monlib.at_most, monlib.positive
    ap.add_argument("--steady", type=at_most(positive(int), 31536000), default=10)
    ap.add_argument("--push-bytes", type=at_most(positive(int), 1 << 30), default=1024)
    ap.add_argument("--push-every", type=at_most(positive(float), cli_rules.PUSH_EVERY_MAX), default=1.0)
    ap.add_argument("--page", type=at_most(positive(int), 1 << 30), default=os.sysconf("SC_PAGESIZE"))


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    cmd, rest = argv[0], argv[1:]
    if cmd == "summary":
        if len(rest) != 1:
            usage("summary: needs FILE")
        try:
            rows = load(rest[0])
        except (OSError, ValueError) as e:
            print(f"stallmon.py: {rest[0]}: {e}", file=sys.stderr)
            return 1
        print(json.dumps(summarize(rows)))
        return 0
    ap = monlib.parser("stallmon.py", __doc__, cmd)
    if cmd == "cut-times":
        ap.add_argument("ramp")
        ap.add_argument("--slow0", type=monlib.finite, required=True)
        ap.add_argument("--at-us", type=monlib.positive(int), required=True)
        a = ap.parse_args(rest)
        try:
            with open_regular(a.ramp, newline="") as f:
                rec = cut_times(csv.DictReader(f), a.slow0, a.at_us)
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            print(f"stallmon.py: {a.ramp}: {e}", file=sys.stderr)
            return 1
        print(json.dumps({"record": rec}))
        return 0
    if cmd == "ss-sum":
        ap.add_argument("--stalled", type=monlib.count(), required=True)
        a = ap.parse_args(rest)
        lines = (b.decode("utf-8", "replace") for b in sys.stdin.buffer)
        print(json.dumps({"record": ss_sum(lines, a.stalled)}))
        return 0
    knobs(ap)
    if cmd == "steady-s":
        a = ap.parse_args(rest)
        print(steady_s(a.steady, a.push_every, a.push_bytes, a.page))
        return 0
    if cmd != "sample":
        usage(f"unknown command: {cmd}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--stats")
    ap.add_argument("--c1m-stat")
    ap.add_argument("--sockstat")
    ap.add_argument("--pids", default="")
    ap.add_argument("--server", type=int)
    ap.add_argument("--workers", default="")
    ap.add_argument("--root", type=int)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--stalled", type=int)
    ap.add_argument("--t0", type=monlib.finite)
    ap.add_argument("--wait", type=int)
    ap.add_argument("--floor", type=int)
    ap.add_argument("--csv")
    ap.add_argument("--interval", type=monlib.positive(float), default=1.0)
    return cmd_sample(ap.parse_args(rest))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
