"""The live counters file (byte-compatible with c_server/lib/stats.h): the
Python servers' writer. The format is defined in C and read by c1m-stat (the
one reader: text, JSON, CSV, waits, dead workers); what is left here on the
reading side is raw record access for the writer itself (set_state) and for
tests.

Layout: a 64-byte header (magic b"C1MSTAT1", u32 version 1, u32 nworkers,
u64 target, u64 parent_pid, char kind[32]) then one 128-byte record of 16
little-endian u64 per worker (seq, pid, state, open, accepted, closed, slow,
lines, pongs, oversized, accept_errors, updated_ns, pushed, reserved x3). Each
record is written under a sequence lock: seq is odd while the writer is in it.
`pushed` took reserved[0] (version still 1: older files read 0 there).
"""
import errno
import mmap
import os
import stat
import struct
import tempfile
import time

MAGIC = b"C1MSTAT1"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ32s")
RECORD = struct.Struct("<16Q")
assert HEADER.size == 64 and RECORD.size == 128
_SEQ = struct.Struct("<Q")
_BODY = struct.Struct("<12Q")      # the record after seq, up to `pushed`

STARTING, LISTENING, FULL, STOPPING, EXITED, FAILED = range(6)
STATE_NAMES = ("starting", "listening", "full", "stopping", "exited", "failed")
FIELDS = ("seq", "pid", "state", "open", "accepted", "closed", "slow", "lines", "pongs",
          "oversized", "accept_errors", "updated_ns", "pushed")
COUNTERS = ("open", "accepted", "closed", "slow", "lines", "pongs", "oversized", "accept_errors",
            "pushed")
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
        never maps a half-initialised one (as c1m_stats_create does). The
        temporary is made by mkstemp (O_CREAT|O_EXCL, an unpredictable name):
        never opened through a symlink planted in a shared directory such as
        /dev/shm; rename() replaces a symlink at path without following it."""
        # rename() replaces whatever is at path: refuse anything but a regular
        # file or a symlink (a root server must not replace /dev/null)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory, not a counters file")
            raise OSError(errno.ENODEV, "not a regular file")
        size = HEADER.size + nworkers * RECORD.size
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".",
                                   dir=os.path.dirname(path) or ".")
        try:
            os.fchmod(fd, 0o644)
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
        """Map path read-only (tests; c1m-stat is the reader for people)."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO: no hang
        try:
            sb = os.fstat(fd)
            if not stat.S_ISREG(sb.st_mode):
                raise ValueError("%s: not a regular file" % path)
            size = sb.st_size
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
        counter attributes (protocol.Counters), or None to keep them.

        Every worker calls this 20 times a second (worker.py PUBLISH_S)
        through its whole run, so it is the one hot path of this module: the
        values are clamped to u64 only when packing them as they are fails.
        (It used to build a list and clamp each value through a Python call:
        at 1M, 53 pyext workers spent ~1.4 us of CPU per accepted connection
        in this timer: the tick, this and re-arming it;
        results/reference-anatomy-cpu-1m.)

        Each step is a slice assignment of bytes packed beforehand (one
        memcpy): odd seq, body, even seq, in that order (x86 keeps stores in
        program order; c1m-stat retries while seq is odd or moved).
        Struct.pack_into would not do: it zero-fills its target before
        writing the fields, and a reader landing in between would see seq 0,
        even, over a zeroed body: a consistent-looking record of a worker
        with pid 0 and nothing open."""
        mm = self.mm
        off = HEADER.size + i * RECORD.size
        seq = self._seq.get(i)
        if seq is None:
            seq = _SEQ.unpack_from(mm, off)[0]
        seq += 1
        if not seq & 1:  # a writer died mid-update: make it odd again
            seq += 1
        if now_ns is None:
            now_ns = time.monotonic_ns()
        if c is None:
            old = RECORD.unpack_from(mm, off)
            vals = (pid, state) + old[3:11] + (now_ns, old[12])
        else:
            vals = (pid, state, c.open, c.accepted, c.closed, c.slow, c.lines, c.pongs,
                    c.oversized, c.accept_errors, now_ns,
                    getattr(c, "pushed", 0))  # a writer without push (tests' stand-ins)
        try:
            body = _BODY.pack(*vals)
        except struct.error:     # a figure outside u64 (a bug elsewhere): clamped, never lost
            body = _BODY.pack(*map(_u64, vals))
        mm[off:off + 8] = _SEQ.pack(seq)
        mm[off + 8:off + 8 + _BODY.size] = body
        mm[off:off + 8] = _SEQ.pack(seq + 1)
        self._seq[i] = seq + 1

    def attach(self, i, counters):
        """Hand record i to a c1m.Counters, which writes it from C from now on
        (counters.publish(), Loop.publish_counters()). The seq cached here is
        dropped: a later publish() of this record reads the record's own."""
        counters.attach(self.mm, HEADER.size + i * RECORD.size)
        self._seq.pop(i, None)

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
    """One snapshot of the counters file at path: raw records and their plain
    sums, for tests. Dead-worker accounting and every output format are
    c1m-stat's (the one reader)."""
    st = StatsFile.open(path)
    try:
        return st.snapshot()
    finally:
        st.close()


if __name__ == "__main__":
    # The reading CLI that used to live here is c1m-stat's job (one reader).
    import sys
    sys.exit("py_server.stats only writes the counters file: read it with c1m-stat FILE "
             "(make build; see README \"Live counters\")")
