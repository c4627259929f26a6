"""capacity_model.py - the capacity planner's model: seed 002's formula filled
in with the per-connection costs a results directory measured.

    total ~= N x (kernel + application per connection)
             + stalled fraction x N x backlog per stalled connection
             + fixed (idle server processes + what the machine itself uses)

and the largest N whose total fits in a given memory, per contender.

The model alone: capacity.py is its command line (harness/capacity),
capacity_guard.py its check against this machine's memory guard, results.py
puts report_section() in report.md; each imports this module, which imports
none of them.

Where each figure comes from (docs/capacity.md):
- per contender (and condition), the medians of the `ok` runs at its largest tier
  with one (or --tier): a small tier overstates the idle share. As cells.py does,
  a contender with no `ok` run anywhere uses its disturbed runs, marked with the
  dagger: disturbance is CPU load from outside, the byte figures stay measured.
- kernel: kernel_bytes_per_conn (the socket slab caches; --kernel slab: the whole
  Slab delta, which here includes a system process's proc inodes). It covers BOTH
  ends of a loopback connection: a server whose peers are remote pays one socket,
  half of it (--sockets 2 counts both, as on this machine).
- application: user_bytes_per_conn (server RssAnon growth per connection).
- fixed: the idle server processes: idle memory per process (server_pss_idle_kib
  when the run has it, else server_rss_idle_kib, RssAnon, which counts forked
  workers' shared pages once per worker) x processes, where processes = 1 + the
  workers N needs at the run's connections per worker (--worker-conns); plus the
  machine's own use (--reserve; default MemTotal - MemAvailable when the run
  started, meta.json).
- backlog per stalled connection: the stall scenario's measured columns
  (harness/lib/scenarios/stall.sh). This machine (both ends):
  stall_avail_drop_bytes_per_stalled, the MemAvailable it lost, which counts
  what the sockets are charged, the server's userspace and the 32 KiB page
  fragments that a held line keeps in memory with the lines around it. A server
  machine: its share of that, the kernel part scaled by the server sockets'
  part of the charge (stall_wmem_bytes_per_stalled /
  stall_tcp_mem_bytes_per_stalled; the pinned pages split as the bytes held
  do, an estimate), plus stall_user_bytes_per_stalled. Runs from before that
  column: the charge alone, stall_wmem_bytes_per_stalled (else
  stall_sendq_bytes_per_stalled) or stall_tcp_mem_bytes_per_stalled, plus
  stall_user_bytes_per_stalled, which undercounts (said so). Without them
  --stall-backlog BYTES, else the configured bound of the run's server (what the
  sockets may be charged, not what the machine loses: see above; an upper
  bound, not a measurement; see bound_backlog()).
"""
import math
import os
import re
import statistics

import c1m_root  # noqa: F401  (py_server.cli_rules)
import cells as cellmod
import runstore
from py_server import cli_rules
from cells import condition_of, label_of, md_table, num
from runstore import read_meta  # noqa: F401  (capacity_guard imports it from here)

DEFAULT_MEMS_GIB = (8, 24, 64, 256)
DEFAULT_STALLS = (0.0, 0.01, 0.10)
# The servers' own defaults for --sndbuf and --max-pending (c1m-server and
# py_server agree; tests/capacity.bats checks both --help texts still say so).
SERVER_DEFAULT_SNDBUF = 4096
SERVER_DEFAULT_MAX_PENDING = 4096
GIB = 1 << 30
MIB = 1 << 20
UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class Usage(Exception):
    """A bad flag or argument: exit 2."""


class NoData(Exception):
    """Nothing to plan from: exit 1."""


# ---------------------------------------------------------------- parsing
SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kKmMgGtT])(?:i?[bB])?\s*$")


def parse_size(text, flag, unit_required=True):
    """"64G", "64GiB", "512M", "1.5T" -> bytes (binary units). A plain number
    is bytes only when unit_required is False. Usage names FLAG."""
    t = str(text).strip()
    m = SIZE_RE.match(t)
    if m:
        v = float(m.group(1)) * UNITS[m.group(2).lower()]
    elif not unit_required and re.match(r"^[0-9]+$", t):
        v = float(t)
    else:
        raise Usage("%s: expects a size with a unit (K, M, G or T, binary: 64G = 64 GiB), not %r"
                    % (flag, text) if unit_required else
                    "%s: expects bytes (a whole number, or with a unit K/M/G/T), not %r" % (flag, text))
    if v <= 0 or v != v or v > (1 << 60):
        raise Usage("%s: must be positive and at most 1024 PiB, not %r" % (flag, text))
    return int(v)


def parse_fraction(text, flag="--stall"):
    """"0.01" or "1%" -> 0.01; outside [0, 1] is a usage error."""
    t = str(text).strip()
    pct = t.endswith("%")
    try:
        v = float(t[:-1] if pct else t)
    except ValueError:
        raise Usage("%s: expects a fraction 0..1 (0.01) or a percentage (1%%), not %r" % (flag, text))
    if pct:
        v /= 100.0
    if not (0.0 <= v <= 1.0):      # also false for NaN
        raise Usage("%s: must be within [0, 1] (0%%..100%%), not %r" % (flag, text))
    return v


def parse_count(text, flag, lo=1, hi=10 ** 9):
    """A count with k/m suffixes (cli_rules.parse_long, as the C programs take
    it), white space around it allowed. Usage names FLAG."""
    try:
        return cli_rules.parse_long(str(text).strip(), lo, hi, True)
    except ValueError:
        raise Usage("%s: expects a whole number %d..%d (k/m suffixes allowed), not %r"
                    % (flag, lo, hi, text)) from None


# ---------------------------------------------------------------- formatting
def fmt_n(n):
    return "{:,}".format(int(n))


def fmt_mem(b):
    if b >= GIB and b % GIB == 0:
        return "%d GiB" % (b // GIB)
    if b >= GIB:
        return "%.2f GiB" % (b / GIB)
    return "%.1f MiB" % (b / MIB)


def fmt_pct(f):
    p = f * 100
    return ("%g%%" % p) if p == int(p) else ("%.3g%%" % p)


# ---------------------------------------------------------------- inputs
def read_rows(run_dir):
    if not os.path.isdir(run_dir):
        raise NoData("%s is not a directory" % run_dir)
    try:
        rows = runstore.read_runs(run_dir)
    except OSError as e:
        raise NoData(runstore.unreadable(run_dir, e))
    except ValueError as e:
        raise NoData(str(e))
    rows = [r for r in rows if num(r.get("tier")) is not None]
    if not rows:
        raise NoData("%s holds no runs" % run_dir)
    return rows


def median_used(cell, col):
    """Median of COL over the runs the cell's figures use (cells.py: its ok
    runs; with none, its disturbed runs); None when none measured it."""
    vals = [v for v in (num(r.get(col)) for r in cell.used) if v is not None]
    return statistics.median(vals) if vals else None


class Basis:
    """One contender (in one condition) at the tier its figures come from."""

    def __init__(self, cell, condition, run_dir, meta):
        self.contender, self.condition, self.tier = cell.contender, condition, cell.tier
        self.cell, self.run_dir, self.meta = cell, run_dir, meta
        self.n_used, self.n_runs = len(cell.used), len(cell.runs)
        self.med = {}

    def get(self, col):
        if col not in self.med:
            self.med[col] = median_used(self.cell, col)
        return self.med[col]

    @property
    def name(self):
        return self.contender + (" [%s]" % self.condition if self.condition else "")

    def source(self):
        kind = "disturbed" if self.cell.all_disturbed else "ok"
        return "%s, median of %d %s run%s%s" % (
            label_of(self.tier), self.n_used, kind, "" if self.n_used == 1 else "s",
            " " + cellmod.DAGGER if self.cell.all_disturbed else "")

    def first_ok(self, col):
        """A text column of the first run used that has it (server_cmd, run_dir)."""
        for r in self.cell.used:
            v = r.get(col)
            if v not in (None, ""):
                return str(v)
        return None


def bases_of(run_dir, contenders=None, tier=None, condition=None):
    """[Basis] per contender and condition, plus [note] for those left out.
    contenders named explicitly must have an ok or disturbed run (else NoData)."""
    rows = read_rows(run_dir)
    meta = read_meta(run_dir)
    conds = []
    for r in rows:
        if condition_of(r) not in conds:
            conds.append(condition_of(r))
    if condition is not None:
        if condition not in conds:
            raise NoData("%s has no runs in condition %r (it has: %s)" % (
                run_dir, condition, ", ".join(repr(c) for c in conds)))
        conds = [condition]
    out, notes = [], []
    for cond in conds:
        mine = [r for r in rows if condition_of(r) == cond]
        cl = cellmod.cells(mine)
        names = cellmod.contenders_of(mine)
        for name in (contenders or names):
            mine_c = [c for c in cl if c.contender == name and (tier is None or c.tier == tier)]
            # cells.py's rule: the ok runs; a cell without any, its disturbed runs (marked)
            cand = [c for c in mine_c if c.ok] or [c for c in mine_c if c.all_disturbed]
            label = name + (" [%s]" % cond if cond else "")
            if not cand:
                why = "no ok or disturbed run" + (" at %s" % label_of(tier) if tier else "")
                if name not in names:
                    why = "no runs"
                if contenders and (condition is not None or len(conds) == 1):
                    raise NoData("%s: %s in %s" % (label, why, run_dir))
                notes.append("%s: %s: not planned" % (label, why))
                continue
            b = Basis(max(cand, key=lambda c: c.tier), cond, run_dir, meta)
            if b.get("kernel_bytes_per_conn") is None:
                notes.append("%s: its runs have no kernel_bytes_per_conn: not planned" % label)
                continue
            out.append(b)
    if not out:
        raise NoData("%s: no contender with an ok or disturbed run to plan from%s" % (
            run_dir, (" (" + "; ".join(notes) + ")") if notes else ""))
    return out, notes


# ---------------------------------------------------------------- the stall term
def server_flag(cmd, flag):
    """The value of FLAG in a server command line ("--sndbuf 0" / "--sndbuf=0")."""
    if not cmd:
        return None
    m = re.search(r"(?:^|\s)%s(?:=|\s+)([0-9]+)(?=\s|$)" % re.escape(flag), cmd)
    return int(m.group(1)) if m else None


def sysctl_of(basis, key):
    """A namespace sysctl of the basis's runs: its first used run's sysctl.txt,
    else meta.json's sysctl_profile."""
    rd = basis.first_ok("run_dir")
    if rd:
        try:
            with runstore.open_regular(os.path.join(basis.run_dir, rd, "sysctl.txt")) as f:
                for line in f:
                    k, sep, v = line.rstrip("\n").partition("=")
                    if sep and k.strip() == key:
                        return v.strip()
        except OSError:
            pass
    prof = basis.meta.get("sysctl_profile") or {}
    v = prof.get(key) if isinstance(prof, dict) else None
    return str(v) if v is not None else None


def buffer_max(basis, key):
    v = sysctl_of(basis, key)
    parts = v.split() if v else []
    return int(parts[2]) if len(parts) == 3 and cli_rules.ascii_digits(parts[2]) else None


def bound_backlog(basis, sockets):
    """(bytes, text): the most the run's configuration lets a stalled peer hold
    before the server's slow cut: the server socket's send queue limit
    (SO_SNDBUF doubled by the kernel, sk_sndbuf = 2 x --sndbuf; with --sndbuf 0
    the kernel autotunes it up to tcp_wmem's max) plus --max-pending of
    userspace; with both ends on this machine (sockets 2) also the client's
    receive queue (it sets no SO_RCVBUF: up to tcp_rmem's max). Raises NoData
    when a needed sysctl is unknown."""
    cmd = basis.first_ok("server_cmd")
    snd = basis.get("stall_sndbuf")      # the stall scenario's: 0, or "default" (not a number)
    snd_src = "the run's stall_sndbuf"
    if snd is None:
        snd = server_flag(cmd, "--sndbuf")
        snd_src = "--sndbuf in its server_cmd"
    if snd is None:
        snd, snd_src = SERVER_DEFAULT_SNDBUF, "the servers' default --sndbuf"
    mp = server_flag(cmd, "--max-pending")
    mp_src = "--max-pending in server_cmd"
    if mp is None:
        mp, mp_src = SERVER_DEFAULT_MAX_PENDING, "the default --max-pending"
    snd, mp = int(snd), int(mp)
    if snd > 0:
        kq, ktxt = 2 * snd, "2 x %d (%s; the kernel doubles SO_SNDBUF)" % (snd, snd_src)
    else:
        kq = buffer_max(basis, "net.ipv4.tcp_wmem")
        if kq is None:
            raise NoData("%s: --sndbuf 0 and the run's net.ipv4.tcp_wmem is unknown: "
                         "pass --stall-backlog BYTES" % basis.name)
        ktxt = "tcp_wmem max %d (--sndbuf 0: kernel autotuning)" % kq
    total, text = kq + mp, "%s + %d (%s)" % (ktxt, mp, mp_src)
    if sockets == 2:
        rq = buffer_max(basis, "net.ipv4.tcp_rmem")
        if rq is None:
            raise NoData("%s: the run's net.ipv4.tcp_rmem is unknown: pass --stall-backlog BYTES"
                         % basis.name)
        total += rq
        text += " + tcp_rmem max %d (the client's receive queue)" % rq
    # c1m-server and pyext end each send() with MSG_EOR, so the kernel holds
    # the send buffer and at most one packet more; a transport without it
    # (asyncio, uvloop) lets small writes pile onto the last unsent packet
    # past SO_SNDBUF (docs/push.md, docs/stalled-readers.md).
    return total, ("configured bound, not a measurement: %s = %d B, what a stalled peer "
                   "holds before the slow cut when each write is its own packet (MSG_EOR: c, "
                   "pyext; asyncio's and uvloop's transports let up to 17 small writes pass "
                   "SO_SNDBUF)" % (text, total))


def stall_backlog(basis, sockets, given=None):
    """(bytes per stalled connection, where it comes from)."""
    if given is not None:
        return given, "--stall-backlog %d B (given)" % given
    user = basis.get("stall_user_bytes_per_stalled")
    lost = basis.get("stall_avail_drop_bytes_per_stalled")
    both, wmem = basis.get("stall_tcp_mem_bytes_per_stalled"), basis.get("stall_wmem_bytes_per_stalled")
    if lost is not None and sockets == 2:
        return max(lost, 0), "measured: stall_avail_drop_bytes_per_stalled %.0f (MemAvailable lost)" % lost
    if lost is not None and not (user is not None and both and wmem is not None):
        # the server's share is unknown (ss gave nothing): all of it, an upper value
        return max(lost, 0), ("measured: stall_avail_drop_bytes_per_stalled %.0f (MemAvailable lost, both "
                              "ends: the server's share is unknown, the run has no stall_wmem/stall_tcp_mem "
                              "figures; an upper value)" % lost)
    if lost is not None:
        # the server's share of the pages held: its sockets' part of the charge
        share = min(max(wmem, 0) / both, 1.0)
        kern = max(lost - max(user, 0), 0)
        return kern * share + max(user, 0), (
            "estimated: (stall_avail_drop_bytes_per_stalled %.0f - user %.0f) x the server sockets' "
            "part of the charge (stall_wmem %.0f / stall_tcp_mem %.0f = %.3f) + "
            "stall_user_bytes_per_stalled %.0f" % (lost, user, wmem, both, share, user))
    # runs from before the MemAvailable column: what the sockets were charged. A
    # server with remote peers: its sockets' send-queue memory (ss skmem w), else
    # their Send-Q bytes; this machine: sockstat's TCP memory (both ends)
    kcol = "stall_tcp_mem_bytes_per_stalled"
    if sockets == 1:
        kcol = "stall_wmem_bytes_per_stalled"
        if basis.get(kcol) is None:
            kcol = "stall_sendq_bytes_per_stalled"
    kern = basis.get(kcol)
    if kern is not None and user is not None:
        return max(kern, 0) + max(user, 0), (
            "measured: %s %.0f + stall_user_bytes_per_stalled %.0f (what the sockets were charged: "
            "the run predates stall_avail_drop_bytes_per_stalled, so the page fragments the held lines "
            "keep in memory are not counted: an undercount)" % (kcol, kern, user))
    b, txt = bound_backlog(basis, sockets)
    return b, "no stall measurement in the run (no stall_*_bytes_per_stalled columns): %s" % txt


# ---------------------------------------------------------------- the model
class Model:
    """total(N) = N x (kernel + app + stall x backlog) + processes(N) x idle + reserve"""

    def __init__(self, kernel_b, app_b, stall, backlog_b, idle_pp_b, conns_per_worker, reserve_b):
        self.kernel_b, self.app_b = float(kernel_b), float(app_b)
        self.stall, self.backlog_b = float(stall), float(backlog_b)
        self.idle_pp_b, self.cpw = float(idle_pp_b), float(conns_per_worker)
        self.reserve_b = float(reserve_b)

    @property
    def per_conn_b(self):
        return self.kernel_b + self.app_b + self.stall * self.backlog_b

    def processes(self, n):
        return 1 + int(math.ceil(n / self.cpw)) if n > 0 else 1

    def fixed_b(self, n):
        return self.processes(n) * self.idle_pp_b + self.reserve_b

    def total_b(self, n):
        return n * self.per_conn_b + self.fixed_b(n)

    def fit(self, mem_b):
        """The largest N with total(N) <= mem_b (total grows with N)."""
        if self.total_b(0) > mem_b:
            return 0
        lo, hi = 0, int(mem_b // self.per_conn_b) + 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.total_b(mid) <= mem_b:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def to_json(self):
        return {"kernel_b": self.kernel_b, "app_b": self.app_b, "stall": self.stall,
                "backlog_b": self.backlog_b, "idle_pp_b": self.idle_pp_b,
                "conns_per_worker": self.cpw, "reserve_b": self.reserve_b}

    @classmethod
    def from_json(cls, d):
        return cls(d["kernel_b"], d["app_b"], d["stall"], d["backlog_b"], d["idle_pp_b"],
                   d["conns_per_worker"], d["reserve_b"])


def idle_per_process(basis):
    """(bytes of idle memory per server process, text)."""
    workers = basis.get("server_workers")
    procs = int(workers) + 1 if workers and workers > 0 else None
    for col, what in (("server_pss_idle_kib", "PSS"),
                      ("server_rss_idle_kib", "RssAnon; counts forked workers' shared pages once each")):
        v = basis.get(col)
        if v is not None and procs:
            return v * 1024.0 / procs, "%s %.0f KiB / %d processes (%s)" % (col, v, procs, what), \
                "%s: %s" % (col, what.split(";")[0])
    return 0.0, "no server idle memory or worker count in the run: fixed cost 0", "not measured"


def conns_per_worker(basis, given=None):
    if given:
        return float(given), "--worker-conns %d" % given
    workers = basis.get("server_workers")
    acc = basis.get("accepted") or basis.tier
    if workers and workers > 0:
        return acc / workers, "%s / %d workers in the run" % (fmt_n(acc), int(workers))
    return float(acc), "one worker (the run recorded none)"


def machine_reserve(meta, given=None):
    if given is not None:
        return given, "--reserve %s" % fmt_mem(given)
    tot, avail = num(meta.get("mem_total_kib")), num(meta.get("mem_available_at_start_kib"))
    if tot and avail is not None and tot >= avail:
        b = (tot - avail) * 1024
        return b, ("%s: MemTotal - MemAvailable when the run started (meta.json: what the machine "
                   "used before the benchmark)" % fmt_mem(b))
    return 0, "0 (meta.json has no MemTotal/MemAvailable: pass --reserve SIZE)"


def kernel_per_conn(basis, sockets, kernel="sockets"):
    col = "kernel_bytes_per_conn" if kernel == "sockets" else "slab_bytes_per_conn"
    v = basis.get(col)
    if v is None:
        raise NoData("%s: no %s in its runs" % (basis.name, col))
    v = max(v, 0.0)
    if sockets == 1:
        return v / 2, "%s %.0f / 2 (it covers both loopback ends; a server with remote peers pays one)" % (col, v)
    return v, "%s %.0f (both ends, as on this machine)" % (col, v)


def app_per_conn(basis):
    v = basis.get("user_bytes_per_conn")
    if v is None:
        return 0.0, "user_bytes_per_conn not measured: 0"
    if v < 0:
        return 0.0, "user_bytes_per_conn %.0f (below 0: counted as 0)" % v
    return v, "user_bytes_per_conn %.0f" % v


def tcp_mem_default(mem_b, page=4096):
    """(low, pressure, high) bytes: the net.ipv4.tcp_mem the kernel sizes for a
    machine of mem_b at boot (tcp_init_mem: limit = free buffer pages / 16, low =
    limit / 4 x 3, high = low x 2), taking all of mem_b as free: a little high
    (this machine: 383,885 pages of pressure against 385,684 from MemTotal)."""
    limit = max(int(mem_b // page) // 16, 128)
    low = limit // 4 * 3
    return low * page, limit * page, low * 2 * page


def tcp_mem_counted(basis, sockets, stall):
    """(bytes the kernel counts against tcp_mem per connection, the stalled ones'
    share included; text), or (None, why). Both ends as measured; a server with
    remote peers: half of the idle figure, and the server sockets' part of a
    stalled connection's (stall_wmem / stall_tcp_mem; all of it without ss)."""
    acc = basis.get("accepted") or basis.tier
    col = "stall_tcp_mem0_kib" if basis.get("stall_tcp_mem0_kib") is not None else "sockstat_tcp_mem_kib"
    kib = basis.get(col)
    if kib is None or not acc:
        return None, "the run has no sockstat_tcp_mem_kib (recorded since 2026-12-04)"
    idle = kib * 1024.0 / acc
    txt = "%s %.0f KiB / %s connections = %.0f B" % (col, kib, fmt_n(acc), idle)
    if sockets == 1:
        idle /= 2
        txt += " / 2 (both ends counted)"
    per = idle
    both = basis.get("stall_tcp_mem_bytes_per_stalled")
    if stall > 0 and both is not None:
        share, how = 1.0, "all of it"
        wmem = basis.get("stall_wmem_bytes_per_stalled")
        if sockets == 1 and wmem is not None and both > 0:
            share, how = min(max(wmem, 0) / both, 1.0), "the server's part %.3f" % min(max(wmem, 0) / both, 1.0)
        elif sockets == 2:
            how = "both ends"
        per += stall * max(both, 0) * share
        txt += " + %s x stall_tcp_mem_bytes_per_stalled %.0f (%s)" % (fmt_pct(stall), both, how)
    elif stall > 0:
        txt += " (stalled connections not counted: the run has no stall_tcp_mem_bytes_per_stalled)"
    return per, txt


class Plan:
    """A basis turned into a Model for a server machine, with the words for each term."""

    def __init__(self, basis, stall, opts):
        self.basis = basis
        self.kernel_b, self.kernel_txt = kernel_per_conn(basis, opts.sockets, opts.kernel)
        self.app_b, self.app_txt = app_per_conn(basis)
        if stall > 0:
            self.backlog_b, self.backlog_txt = stall_backlog(basis, opts.sockets, opts.stall_backlog)
        else:
            self.backlog_b, self.backlog_txt = 0.0, "no stalled connections"
        self.idle_b, self.idle_txt, self.idle_col = idle_per_process(basis)
        self.cpw, self.cpw_txt = conns_per_worker(basis, opts.worker_conns)
        self.reserve_b, self.reserve_txt = machine_reserve(basis.meta, opts.reserve)
        if self.kernel_b + self.app_b <= 0:
            raise NoData("%s: its runs measured no cost per connection (kernel %s, app %s)"
                         % (basis.name, self.kernel_txt, self.app_txt))
        self.model = Model(self.kernel_b, self.app_b, stall, self.backlog_b, self.idle_b,
                           self.cpw, self.reserve_b)
        self.tcp_b, self.tcp_txt = tcp_mem_counted(basis, opts.sockets, stall)

    def tcp_mem_lines(self, n, mem_b):
        """Whether N connections pass the tcp_mem the kernel would size for mem_b:
        past its pressure threshold it clamps every socket's buffers, past its
        hard limit it kills connections (docs/trust.md)."""
        if self.tcp_b is None:
            return ["    tcp_mem: not checked: %s" % self.tcp_txt]
        need = n * self.tcp_b
        low, pressure, high = tcp_mem_default(mem_b)
        if need <= pressure:
            verdict = "under the pressure threshold the kernel sizes for %s (%s)" % (fmt_mem(mem_b), fmt_mem(pressure))
        else:
            verdict = ("OVER the %s pressure threshold the kernel sizes for %s%s: raise "
                       "net.ipv4.tcp_mem (machine-wide; the harness: TCP_MEM) to at least %d pages "
                       "of pressure, or the kernel clamps every socket's buffers%s" % (
                           fmt_mem(pressure), fmt_mem(mem_b),
                           " (and its %s hard limit)" % fmt_mem(high) if need > high else "",
                           int(math.ceil(need / 4096.0)),
                           " and kills connections" if need > high else ""))
        return ["    tcp_mem: the kernel counts ~%s of TCP memory for them (%.0f B per connection: %s): %s"
                % (fmt_mem(need), self.tcp_b, self.tcp_txt, verdict)]

    def formula(self, mem_b):
        m = self.model
        n = m.fit(mem_b)
        lines = ["%s (figures: %s)" % (self.basis.name, self.basis.source())]
        lines.append("  total ~= N x (%.0f kernel + %.0f app) B + %s x N x %.0f B backlog "
                     "+ %d processes x %.0f KiB idle + %s machine" % (
                         m.kernel_b, m.app_b, fmt_pct(m.stall), m.backlog_b,
                         m.processes(n), m.idle_pp_b / 1024, fmt_mem(m.reserve_b)))
        lines.append("        = N x %.0f B + %s  <=  %s" % (m.per_conn_b, fmt_mem(m.fixed_b(n)), fmt_mem(mem_b)))
        lines.append("  N = %s connections fit%s" % (
            fmt_n(n), (" (%s of them stalled)" % fmt_n(round(n * m.stall))) if m.stall else ""))
        lines.append("    kernel:  %s" % self.kernel_txt)
        lines.append("    app:     %s" % self.app_txt)
        lines.append("    backlog: %s" % self.backlog_txt)
        lines.append("    fixed:   idle %s; processes 1 + N / %.0f connections per worker (%s); "
                     "machine %s (above)" % (self.idle_txt, m.cpw, self.cpw_txt, fmt_mem(m.reserve_b)))
        lines += self.tcp_mem_lines(n, mem_b)
        return n, lines


def plans_for(run_dir, stalls, opts):
    bases, notes = bases_of(run_dir, opts.contenders, opts.tier, opts.condition)
    out = []
    for b in bases:
        out.append([Plan(b, s, opts) for s in stalls])
    return out, notes


class Opts:
    """The planner's choices (argparse's namespace or the report's defaults)."""
    contenders = None
    tier = None
    condition = None
    sockets = 1
    kernel = "sockets"
    stall_backlog = None
    worker_conns = None
    reserve = None

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


# ---------------------------------------------------------------- table
def table_rows(plans, mems):
    rows = []
    for per_stall in plans:
        for p in per_stall:
            rows.append([p.basis.name, fmt_pct(p.model.stall)] + [fmt_n(p.model.fit(m)) for m in mems])
    return rows


def basis_lines(plans):
    """Where the table's figures come from: one line per contender, then the
    backlog per stalled connection (once when every contender shares it)."""
    out = ["figures: medians of the ok runs at each contender's largest tier with one "
           "(memory only: fds, ports and CPU are not in the formula)"]
    if any(per[0].basis.cell.all_disturbed for per in plans):
        out.append("%s no ok run: the median of the disturbed runs (outside CPU load; the "
                   "bytes are still measured)" % cellmod.DAGGER)
    backlogs = []
    for per_stall in plans:
        p = per_stall[0]
        out.append("  %s: %s: kernel %.0f B + app %.0f B per connection; idle %.0f KiB x "
                   "(1 + N / %.0f) server processes (%s)" % (
                       p.basis.name, p.basis.source(), p.kernel_b, p.app_b, p.idle_b / 1024,
                       p.cpw, p.idle_col))
        stalled = [q for q in per_stall if q.model.stall > 0]
        if stalled:
            backlogs.append((p.basis.name, stalled[0].backlog_txt))
    if backlogs and len({t for _, t in backlogs}) == 1:
        out.append("backlog per stalled connection, every contender: %s" % backlogs[0][1])
    elif backlogs:
        out.append("backlog per stalled connection:")
        out += ["  %s: %s" % nt for nt in backlogs]
    return out


def report_section(run_dir, rows=None, meta=None):
    """report.md's "Capacity" section: the default table (never raises)."""
    mems = [g * GIB for g in DEFAULT_MEMS_GIB]
    head = "## Capacity: connections that fit (seed 002's formula, `make capacity`)\n"
    # the report is in that directory: its path, as given, would only make the
    # text depend on how the report was called (one spelling, then replaced)
    where = os.path.abspath(run_dir)
    try:
        plans, notes = plans_for(where, DEFAULT_STALLS, Opts())
    except Exception as e:   # noqa: BLE001 - a report is never lost to the planner
        return head + "\nNot computed: %s\n" % str(e).replace(where, "this directory")
    body = md_table(["contender", "stalled"] + [fmt_mem(m) for m in mems], table_rows(plans, mems))
    lines = ["", "total ~= N x (kernel + app per connection) + stalled x N x backlog per stalled "
             "connection + fixed (idle server processes + the machine's own use), for a server "
             "whose peers are remote; the machine's own use: %s." % plans[0][0].reserve_txt,
             "", body, ""]
    lines += [("  - " + x.strip()) if x.startswith("  ") else ("- " + x)
              for x in basis_lines(plans) + notes]
    lines.append("- `make capacity RUN=<this directory> MEM=64G STALL=0.01` prints the formula with "
                 "the numbers filled in; docs/capacity.md says what each term "
                 "assumes.\n")
    return head + "\n".join(lines)
