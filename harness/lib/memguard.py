#!/usr/bin/python3
"""memguard.py - bench.sh's memory guard before a local run: does CONTENDER
at N connections fit in this machine's usable memory, by what this suite has
measured so far?

    memguard.py check RUN_DIR CONTENDER N --min-available MIB [--mem-guard-mib MIB]

The cost of a connection is learned from RUN_DIR/runs.jsonl, the suite's runs
so far: for each run of a contender whose ramp ended normally (not crashed,
failed, timeout, ramp-stalled or client-stopped: those measured a dead server
or a handful of connections), its userspace bytes per connection (at least
0), plus the larger of its Slab and socket-cache deltas per connection, plus
its server's idle RSS spread over the connections it accepted (workers, each
with its own interpreter, grow in number with N). A contender's figure is its
largest tier's (small tiers overstate the idle share; repeats at one tier
keep the largest). None for CONTENDER: the largest learned for another
contender; none at all, or under it: the floor, 8192 B (two sockets).

    need MiB = ceil(N x cost x 1.15 / MiB) + the floor (--min-available) + 256

against usable memory (MemAvailable less SReclaimable, py_server/
cli_rules.py), or --mem-guard-mib (MEM_GUARD_MIB) when given. Prints the
verdict's line ("needs ~X MiB (...); usable Y MiB (...)"). Exit: 0 it fits
(or usable memory is unreadable: no verdict, as every other guard), 3 it
does not, 1 RUN_DIR's runs cannot be read, 2 usage.
"""
import os
import sys

import c1m_root  # noqa: F401  (py_server.cli_rules)
import entry
import monlib
import runstore
from py_server import cli_rules

PCT = 115                   # the estimate's headroom
FLOOR_BYTES = 8192          # two sockets: no idle connection costs less
MARGIN_MIB = 256
FAILED_RAMPS = ("crashed", "failed", "timeout", "ramp-stalled", "client-stopped")


def _int(v):
    """V when it is a whole-number figure (monlib.number), else None."""
    return v if isinstance(monlib.number(v), int) else None


def learned(records):
    """{contender: (tier, bytes per connection)} from the runs (the module's doc)."""
    cost = {}
    for r in records:
        if r.get("status") in FAILED_RAMPS:
            continue
        user, slab, acc, tier = (_int(r.get(k)) for k in ("user_bytes_per_conn", "slab_bytes_per_conn",
                                                            "accepted", "tier"))
        kern, idle = r.get("kernel_bytes_per_conn"), r.get("server_rss_idle_kib")
        if None in (user, slab, acc, tier) or acc <= 0 or (kern is not None and _int(kern) is None) \
                or (idle is not None and _int(idle) is None):
            continue
        per = max(user, 0) + max(slab, kern if kern is not None else slab) + (idle or 0) * 1024 // acc
        c = r.get("contender")
        prev = cost.get(c)
        if prev is None or tier > prev[0] or (tier == prev[0] and per > prev[1]):
            cost[c] = (tier, per)
    return cost


def verdict(cost, contender, n, min_available, mem_guard_mib=None, usable_mib=None):
    """(fits, the line saying why): USABLE_MIB is this machine's usable memory
    (None: unreadable), MEM_GUARD_MIB stands in for it when given."""
    if contender in cost:
        per, basis = cost[contender][1], f"measured for {contender}"
    else:
        per = max((p for _, p in cost.values() if p > 0), default=None)
        basis = "largest measured for another contender"
    if per is None:
        per, basis = FLOOR_BYTES, "floor, nothing measured yet"
    elif per < FLOOR_BYTES:
        per, basis = FLOOR_BYTES, "floor"
    need = (n * per * PCT // 100 + (1 << 20) - 1) // (1 << 20) + min_available + MARGIN_MIB
    if mem_guard_mib is not None:
        avail, src = mem_guard_mib, "MEM_GUARD_MIB"
    else:
        if usable_mib is None:
            return True, "usable memory unreadable: not estimated"
        avail, src = usable_mib, "MemAvailable less the reclaimable slab"
    return need <= avail, (f"needs ~{need} MiB ({per} B/conn, {basis}, +{PCT - 100}% + {MARGIN_MIB} MiB + "
                           f"the {min_available} MiB floor); usable {avail} MiB ({src})")


def usage(msg=None):
    monlib.usage("memguard.py", __doc__, msg)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    if argv[0] != "check":
        usage(f"unknown command: {argv[0]}")
    ap = monlib.parser("memguard.py", __doc__, "check")
    ap.add_argument("run_dir")
    ap.add_argument("contender")
    ap.add_argument("n", type=monlib.positive(int))
    ap.add_argument("--min-available", type=monlib.count(), required=True)
    ap.add_argument("--mem-guard-mib", type=monlib.count())
    a = ap.parse_args(argv[1:])
    path = os.path.join(a.run_dir, "runs.jsonl")
    try:
        records = runstore.read_jsonl(path) if os.path.exists(path) else []
    except (OSError, ValueError) as e:
        print(f"memguard.py: {e}", file=sys.stderr)
        return 1
    fits, line = verdict(learned(records), a.contender, a.n, a.min_available, a.mem_guard_mib,
                         cli_rules.mem_usable_mib())
    print(line)
    return 0 if fits else 3


if __name__ == "__main__":
    entry.run(main, sys.argv[1:])
