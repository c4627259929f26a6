#!/usr/bin/python3
"""stormmon.py - the reconnect storm's recovery watch (scenarios/storm.sh).

    stormmon.py sample --out FILE --once --netstat PATH
    stormmon.py sample --out FILE --stats FILE --c1m-stat PATH --conns N
                       --t-kill S --timeout S --server PID --client PID
                       [--pids "PID..."] [--client-log FILE] [--netstat PATH]
                       [--root PID] [--label TEXT]
    stormmon.py summary FILE

sample --once: appends the "before" line to FILE (JSON lines): the
namespace's TCP drop counters (--netstat: /proc/SERVER/net/netstat, the
TcpExt lines; probe.sh netns_tcp_counters names them).
sample: until the restarted server holds all N (c1m-stat --wait open=N, which
polls its counters every 10 ms, for at most a second a pass), one line a pass:
seconds since the kill, the server's open count, dead workers and the PSS of
--pids summed (KiB). It ends with an "end" line: "recovered", or the failure
(status) and why: storm-server-died (the restarted server or one of its
workers gone), client-stopped (the client exited: the end of its log),
storm-timeout (not all N after --timeout seconds from the kill); the end line
has the open count, the PSS and the counters at the end. A line on stderr
every 10 s says how far it got. SIGTERM/SIGINT, or --root gone: exit without
an end line (the run was interrupted); a summary without one fails the storm
(scenario-failed: it was not seen to recover).

summary: one JSON object: "record" (storm_recovery_s when recovered,
storm_window_s, storm_open, storm_server_pss_peak_kib, storm_COUNTER: each
counter's growth over the storm) and the facts the scenario tests: end,
failed (the status, "" when recovered), why, t_done.

Exit: 0 done, 1 FILE unreadable, 2 usage.
"""
import json
import sys
import time

import monlib
from monlib import append, live, load, log_tail, number, stat_get, wait_open

# TcpExt counter -> its key (probe.sh netns_tcp_counters)
COUNTERS = {"ListenOverflows": "listen_overflows", "ListenDrops": "listen_drops",
            "TCPReqQFullDrop": "reqq_full_drop", "TCPReqQFullDoCookies": "reqq_full_cookies",
            "SyncookiesSent": "syncookies_sent", "TCPSynRetrans": "syn_retrans"}


def tcp_counters(path):
    """{key: value} of the TcpExt counters this kernel has (a counter it
    lacks is left out: unknown, never a made-up 0); {} when unreadable."""
    try:
        with open(path) as f:
            lines = [line.split() for line in f if line.startswith("TcpExt:")]
    except OSError:
        return {}
    if len(lines) < 2:
        return {}
    return {COUNTERS[n]: int(v) for n, v in zip(lines[0][1:], lines[1][1:]) if n in COUNTERS and monlib.ascii_digits(v)}


def pss_kib(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            pass
    return total


def judge(s, conns, limit):
    """The failure a pass shows, as (status, why), or None: S holds the pass's
    open, dead, server (alive), client (alive) and el (seconds since the kill)."""
    if not s["server"] or (s["dead"] or 0) > 0:
        parent = "" if s.get("parent", True) else ", parent gone"
        return ("storm-server-died", "the restarted server died during the recovery "
                f"({'?' if s['dead'] is None else s['dead']} worker(s) dead{parent})")
    if not s["client"]:
        return "client-stopped", f"client exited during the storm: {s.get('client_log', '')}"
    if s["el"] > limit:
        return ("storm-timeout", f"the server held {'?' if s['open'] is None else s['open']} "
                f"of {conns} {limit}s after the kill")
    return None


def cmd_sample(a):
    if a.once:
        append(a.out, {"tag": "before", "counters": tcp_counters(a.netstat) if a.netstat else {}})
        return 0
    stop = monlib.stop_flag()
    pids = a.pids.split()
    peak, shown, end = 0, 0, None
    while end is None:
        if wait_open(a.c1m_stat, a.stats, a.conns):
            end = ("recovered", "")
            break
        if stop or (a.root and not live(a.root)):
            return 0
        el = time.time() - a.t_kill
        tot = monlib.stat_total(a.c1m_stat, a.stats)
        s = {"t": time.time(), "el": round(el, 3), "open": tot.get("open"),
             "dead": tot.get("workers_dead"), "pss": pss_kib(pids)}
        peak = max(peak, s["pss"])
        append(a.out, s)
        if el >= shown + 10:
            shown = int(el // 10) * 10
            print(f"  {a.label:<17s} {a.conns:>8d}  storm: open {s['open'] or 0:8d} / {a.conns:<8d} {el:6.1f}s",
                  file=sys.stderr)
        s.update(server=live(a.server), client=live(a.client))
        if not s["server"] or (s["dead"] or 0) > 0:
            # a stop signal to the whole group also ends the server: wait a
            # little so that one still pending ends the run as interrupted
            time.sleep(0.3)
            if stop:
                return 0
            s["parent"] = live(a.server)
        if not s["client"]:
            s["client_log"] = log_tail(a.client_log) if a.client_log else ""
        end = judge(s, a.conns, a.timeout)
    append(a.out, {"tag": "end", "end": end[0], "why": end[1], "t": time.time(),
                   "open": stat_get(a.c1m_stat, a.stats, "open"), "pss": max(peak, pss_kib(pids)),
                   "counters": tcp_counters(a.netstat) if a.netstat else {}})
    return 0


def summarize(rows, t_kill):
    """The summary object from the monitor's lines and the kill's time."""
    before = next((r for r in rows if r.get("tag") == "before"), {})
    # an end line says when and how it ended; one that does not is none
    end = next((r for r in rows if r.get("tag") == "end" and isinstance(r.get("end"), str)
                and number(r.get("t")) is not None), None)
    if end is None:     # (an interrupted run never reads this: run_one.sh exits 130)
        return {"record": {}, "end": None, "failed": "scenario-failed",
                "why": "the recovery watch ended without a verdict (stopped or killed)", "t_done": None}
    samples = [r for r in rows if "tag" not in r]
    # a field that is no figure (monlib.number) is unknown
    rec = {"storm_open": number(end.get("open")), "storm_window_s": f"{end['t'] - t_kill:.3f}",
           "storm_server_pss_peak_kib": max([number(end.get("pss")) or 0]
                                            + [number(s.get("pss")) or 0 for s in samples])}
    if end["end"] == "recovered":
        rec["storm_recovery_s"] = rec["storm_window_s"]
    c0, c1 = (x.get("counters") if isinstance(x.get("counters"), dict) else {} for x in (before, end))
    for k, v in c1.items():
        if number(v) is not None and number(c0.get(k)) is not None:
            rec[f"storm_{k}"] = v - c0[k]
    return {"record": rec, "end": end["end"], "failed": "" if end["end"] == "recovered" else end["end"],
            "why": str(end.get("why") or ""), "t_done": end["t"]}


def usage(msg=None):
    monlib.usage("stormmon.py", __doc__, msg)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    cmd, rest = argv[0], argv[1:]
    ap = monlib.parser("stormmon.py", __doc__, cmd)
    if cmd == "summary":
        ap.add_argument("file")
        ap.add_argument("--t-kill", type=monlib.finite, required=True)
        a = ap.parse_args(rest)
        try:
            rows = load(a.file)
        except (OSError, ValueError) as e:
            print(f"stormmon.py: {a.file}: {e}", file=sys.stderr)
            return 1
        print(json.dumps(summarize(rows, a.t_kill)))
        return 0
    if cmd != "sample":
        usage(f"unknown command: {cmd}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--netstat")
    ap.add_argument("--stats")
    ap.add_argument("--c1m-stat")
    ap.add_argument("--conns", type=monlib.conns)
    ap.add_argument("--t-kill", type=monlib.finite)
    ap.add_argument("--timeout", type=int)
    ap.add_argument("--server", type=int)
    ap.add_argument("--client", type=int)
    ap.add_argument("--pids", default="")
    ap.add_argument("--client-log")
    ap.add_argument("--root", type=int)
    ap.add_argument("--label", default="")
    a = ap.parse_args(rest)
    if not a.once:
        for need in ("stats", "c1m_stat", "conns", "t_kill", "timeout", "server", "client"):
            if getattr(a, need) is None:
                usage(f"sample: needs --{need.replace('_', '-')}")
    return cmd_sample(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
