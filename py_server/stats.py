"""The live counters file (byte-compatible with c_server/lib/stats.h), writer
and reader, and a reader CLI printing what c1m-stat prints:

    python3 -m py_server.stats FILE [--total | --json | --get FIELD]
                               [--watch MS [--count N]] [--wait-ready | --wait FIELD=N]
                               [--timeout S]

Layout: a 64-byte header (magic b"C1MSTAT1", u32 version 1, u32 nworkers,
u64 target, u64 parent_pid, char kind[32]) then one 128-byte record of 16
little-endian u64 per worker (seq, pid, state, open, accepted, closed, slow,
lines, pongs, oversized, accept_errors, updated_ns, reserved x4). Each record
is written under a sequence lock: seq is odd while the writer is in it.
"""
import json
import mmap
import os
import struct
import sys
import time

MAGIC = b"C1MSTAT1"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ32s")
RECORD = struct.Struct("<16Q")
assert HEADER.size == 64 and RECORD.size == 128
_SEQ = struct.Struct("<Q")
_BODY = struct.Struct("<11Q")  # pid .. updated_ns, right after seq

STARTING, LISTENING, FULL, STOPPING, EXITED, FAILED = range(6)
STATE_NAMES = ("starting", "listening", "full", "stopping", "exited", "failed")
FIELDS = ("seq", "pid", "state", "open", "accepted", "closed", "slow", "lines", "pongs",
          "oversized", "accept_errors", "updated_ns")
COUNTERS = ("open", "accepted", "closed", "slow", "lines", "pongs", "oversized", "accept_errors")
_U64 = (1 << 64) - 1


def state_name(state):
    return STATE_NAMES[state] if 0 <= state < len(STATE_NAMES) else "unknown"


def _u64(x):
    return x if 0 <= x <= _U64 else (0 if x < 0 else _U64)


class StatsFile:
    """A mapped counters file. create() (the parent, before forking: the
    MAP_SHARED mapping survives fork) or open() (readers, read-only)."""

    def __init__(self, mm, size, writable):
        self.mm = mm
        self.size = size
        self.writable = writable
        self._seq = {}

    # -- creation / opening -------------------------------------------------
    @classmethod
    def create(cls, path, nworkers, target, kind):
        """Write a new file next to path and rename it into place, so a reader
        never maps a half-initialised one (as c1m_stats_create does)."""
        size = HEADER.size + nworkers * RECORD.size
        tmp = "%s.%d.tmp" % (path, os.getpid())
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.ftruncate(fd, size)
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            kb = kind.encode()[:31]
            HEADER.pack_into(mm, 0, MAGIC, VERSION, nworkers, _u64(target), os.getpid(), kb)
            os.rename(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)
        return cls(mm, size, True)

    @classmethod
    def open(cls, path):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            if size < HEADER.size:
                raise ValueError("%s: not a c1m counters file (too short)" % path)
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        st = cls(mm, size, False)
        magic, version, nworkers = st.header()[:3]
        if magic != MAGIC or version != VERSION or HEADER.size + nworkers * RECORD.size > size:
            mm.close()
            raise ValueError("%s: not a c1m counters file (bad magic, version or size)" % path)
        return st

    def close(self):
        self.mm.close()

    # -- header -------------------------------------------------------------
    def header(self):
        return HEADER.unpack_from(self.mm, 0)

    @property
    def nworkers(self):
        return self.header()[2]

    def info(self):
        magic, version, nworkers, target, parent_pid, kind = self.header()
        return {"kind": kind.split(b"\0", 1)[0].decode(errors="replace"), "version": version,
                "nworkers": nworkers, "target": target, "parent_pid": parent_pid}

    # -- writer side --------------------------------------------------------
    def publish(self, i, pid, state, c=None, now_ns=None):
        """Write record i under the sequence lock. c: an object with the
        counter attributes (protocol.Counters), or None to keep them."""
        mm = self.mm
        off = HEADER.size + i * RECORD.size
        seq = self._seq.get(i)
        if seq is None:
            seq = _SEQ.unpack_from(mm, off)[0]
        seq += 1
        if not seq & 1:  # a writer died mid-update: make it odd again
            seq += 1
        _SEQ.pack_into(mm, off, seq)
        if c is None:
            old = RECORD.unpack_from(mm, off)
            vals = [pid, state] + list(old[3:11])
        else:
            vals = [pid, state, c.open, c.accepted, c.closed, c.slow, c.lines, c.pongs,
                    c.oversized, c.accept_errors]
        vals.append(time.monotonic_ns() if now_ns is None else now_ns)
        _BODY.pack_into(mm, off + 8, *map(_u64, vals))
        _SEQ.pack_into(mm, off, seq + 1)
        self._seq[i] = seq + 1

    def set_state(self, i, state, pid=None):
        """Change only the state (and pid, when given) of record i: the parent
        marking a dead worker failed. Keeps its counters."""
        rec = self.read(i)
        self._seq.pop(i, None)
        self.publish(i, rec["pid"] if pid is None else pid, state, None, rec["updated_ns"])

    # -- reader side --------------------------------------------------------
    def read(self, i):
        """A consistent copy of record i as a dict (c1m_stats_read)."""
        if not 0 <= i < self.nworkers:
            raise IndexError(i)
        off = HEADER.size + i * RECORD.size
        mm = self.mm
        vals = None
        for _ in range(1000):
            s1 = _SEQ.unpack_from(mm, off)[0]
            vals = RECORD.unpack_from(mm, off)
            s2 = _SEQ.unpack_from(mm, off)[0]
            if s1 == s2 and not s1 & 1:
                break
        # else: a writer that died mid-update: the last copy as is
        return dict(zip(FIELDS, vals))

    def snapshot(self):
        """{"kind", "target", "parent_pid", "workers": [...], "total": {...}}."""
        info = self.info()
        workers = [self.read(i) for i in range(info["nworkers"])]
        return {"kind": info["kind"], "target": info["target"],
                "parent_pid": info["parent_pid"], "workers": workers,
                "total": totals(workers)}


def totals(workers):
    t = {"workers": len(workers)}
    for name in STATE_NAMES:
        t[name] = 0
    for k in COUNTERS:
        t[k] = 0
    for w in workers:
        if 0 <= w["state"] < len(STATE_NAMES):
            t[STATE_NAMES[w["state"]]] += 1
        for k in COUNTERS:
            t[k] += w[k]
    t["ready"] = int(t["workers"] > 0 and t["listening"] + t["full"] == t["workers"])
    return t


def read_file(path):
    """One snapshot of the counters file at path."""
    st = StatsFile.open(path)
    try:
        return st.snapshot()
    finally:
        st.close()


# -- output (the same text and JSON as c1m-stat) ---------------------------
def _counters_text(d):
    return " ".join("%s=%d" % (k, d[k]) for k in COUNTERS)


def format_text(snap, total_only=False):
    out = []
    if not total_only:
        for i, w in enumerate(snap["workers"]):
            out.append("worker=%d pid=%d state=%s %s" % (i, w["pid"], state_name(w["state"]),
                                                         _counters_text(w)))
    t = snap["total"]
    out.append("total kind=%s workers=%d listening=%d full=%d failed=%d %s" % (
        snap["kind"], t["workers"], t["listening"], t["full"], t["failed"], _counters_text(t)))
    return "\n".join(out)


def format_json(snap):
    t = snap["total"]
    doc = {
        "kind": snap["kind"], "target": snap["target"], "parent_pid": snap["parent_pid"],
        "workers": [dict([("pid", w["pid"]), ("state", state_name(w["state"]))] +
                         [(k, w[k]) for k in COUNTERS]) for w in snap["workers"]],
        "total": dict([(k, t[k]) for k in ("workers", "listening", "full", "failed")] +
                      [(k, t[k]) for k in COUNTERS]),
    }
    return json.dumps(doc, separators=(",", ":"))


GET_FIELDS = COUNTERS + ("workers",) + STATE_NAMES + ("ready", "pid")


def get_field(snap, name):
    if name == "pid":
        return snap["parent_pid"]
    return snap["total"][name]


USAGE = ("usage: python3 -m py_server.stats [--total | --json | --get FIELD] "
         "[--watch MS [--count N]]\n"
         "                                  [--wait-ready | --wait FIELD=N] [--timeout S] FILE\n")


def main(argv=None):
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            sys.stderr.write("py_server.stats: %s\n%s" % (message, USAGE))
            sys.exit(2)

    p = Parser(prog="python3 -m py_server.stats",
               description="Print the counters a c1m server publishes in FILE: one line per "
                           "worker and a 'total' line (key=value), or JSON.")
    p.add_argument("file", metavar="FILE")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--total", action="store_true", help="only the total line")
    g.add_argument("--json", action="store_true", help='{"kind":..,"workers":[..],"total":{..}}')
    g.add_argument("--get", metavar="FIELD", choices=GET_FIELDS,
                   help="print one total: " + " ".join(GET_FIELDS))
    p.add_argument("--watch", metavar="MS", type=int, default=0,
                   help="print again every MS milliseconds")
    p.add_argument("--count", metavar="N", type=int, default=0, help="with --watch: N times")
    w = p.add_mutually_exclusive_group()
    w.add_argument("--wait-ready", action="store_true",
                   help="exit 0 once every worker is listening or full, 1 at --timeout")
    w.add_argument("--wait", metavar="FIELD=N", help="exit 0 once total FIELD >= N")
    p.add_argument("--timeout", metavar="S", type=float, default=30.0)
    a = p.parse_args(argv)
    if a.watch < 0:
        p.error("--watch: expects milliseconds >= 0")
    if a.count < 0:
        p.error("--count: expects a number >= 0")
    wait = None
    if a.wait:
        name, sep, val = a.wait.partition("=")
        if not sep or name not in GET_FIELDS or not val.isdigit():
            p.error("--wait: expects FIELD=N with FIELD one of " + " ".join(GET_FIELDS))
        wait = (name, int(val))
    if a.wait_ready:
        wait = ("ready", 1)

    def show(snap):
        if a.json:
            print(format_json(snap))
        elif a.get:
            print(get_field(snap, a.get))
        else:
            print(format_text(snap, a.total))
        sys.stdout.flush()

    try:
        if wait is not None:
            deadline = time.monotonic() + a.timeout
            while True:
                try:
                    snap = read_file(a.file)
                    if get_field(snap, wait[0]) >= wait[1]:
                        return 0
                except (OSError, ValueError):
                    snap = None
                if time.monotonic() >= deadline:
                    sys.stderr.write("py_server.stats: timed out waiting for %s>=%d\n" % wait)
                    return 1
                time.sleep(0.02)
        snap = read_file(a.file)
        show(snap)
        n = 1
        while a.watch and (a.count == 0 or n < a.count):
            time.sleep(a.watch / 1000.0)
            show(read_file(a.file))
            n += 1
    except (OSError, ValueError) as e:
        sys.stderr.write("py_server.stats: %s\n" % e)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
