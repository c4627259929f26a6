#!/usr/bin/python3
"""disturb.py - how much of the machine something outside the run used.

    disturb.py sample --root PID --out FILE [--interval S] [--controller PID]
    disturb.py summary FILE --ramp T0 T1 [--hold T2 T3] [--phase NAME T4 T5]
                       [--limit PCT] [--init-limit PCT]

sample: every S seconds (default 1), and at once on SIGUSR1 (run_one.sh sends
one at each phase boundary so the windows line up with samples), reads
/proc/stat and every /proc/PID/stat and appends one JSON line: the interval's
machine jiffies (all CPUs), steal and softirq jiffies, and the CPU ticks of
the processes OUTSIDE the run. The run = PID (run_one.sh) and all its
descendants (server, workers, client, ip netns exec, c1m-stat, this sampler),
and stays so: a process once seen in the run is the run's even after its
parent died and it was re-parented (the storm's SIGKILLed server workers, which
PID 1 reaps). Outside = every other process, kernel threads (kworkers:
namespace teardown shows there) and PID 1 included, except the ksoftirqd
kernel threads (PF_KTHREAD set in their /proc/PID/stat flags: a process
calling itself ksoftirqd/N is not one), which are reported apart: on loopback
they mostly process the run's own packets. PID 1 (a system process here that
scans every process's fds) is also reported apart. --controller PID (run_one.sh
gives its parent, bench.sh: the apparatus that started the run, outside its
tree) is measured apart and never counted as outside: that process itself and
the children it reaped unseen, not its other children. A process's ticks are its utime+stime, plus what its
children used and it reaped (cutime+cstime) beyond what the samples saw of
those children: so load from processes that live less than an interval (a
build, a shell loop of short commands) is counted, on the side of the process
that started them, not lost between two samples (see account()).
SIGTERM: one last sample, exit 0; also exits when PID is gone (its script was
killed: nothing is left running). The output file is created once the signals
are set up: a caller may send SIGUSR1 after it exists. Standard library only;
never lists /proc/PID/fd.

summary: prints a JSON object for run_one.sh over the ramp [T0, T1], the
hold [T2, T3] and any --phase NAME window (the scenario's phase: a storm's
recovery, a broadcast, a stall), in unix seconds; an interval straddling a
boundary is prorated; a window shorter than 2 s is judged over its first 2 s:
CPU time is counted in 10 ms ticks, so a 0.1 s window of a 2k ramp holds too
few of them to mean anything: outside_ramp_pct, outside_hold_pct,
outside_NAME_pct, outside_cpu_pct (the largest), outside_top (the busiest
outside process of that window, comm[pid]=pct), init_cpu_pct, controller_cpu_pct, ksoftirqd_pct,
steal_pct, softirq_pct (from the ramp's start to the last window's end), and
disturbed=1 with disturb_cause when, in any window, outside CPU other than
PID 1 exceeds --limit PCT or PID 1's exceeds --init-limit PCT (default 100).
Every percentage is of the whole machine (100 = every CPU busy).

Exit: 0 done, 1 the sample file is unreadable, 2 usage.
"""
import json
import math
import os
import signal
import sys
import time

import monlib

PROC = "/proc"
MIN_WINDOW_S = 2.0
COVERED_MIN = 0.9     # a window is measured when samples cover 90% of it
PF_KTHREAD = 0x00200000   # include/linux/sched.h: a kernel thread (no process can set it)


def usage(msg=None):
    if msg:
        print(f"disturb.py: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def read_cpu():
    """/proc/stat's cpu line: (total, steal, softirq) jiffies over all CPUs."""
    with open(f"{PROC}/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                v = [int(x) for x in line.split()[1:]]
                # user nice system idle iowait irq softirq steal (guest is inside user)
                return sum(v[:8]), v[7] if len(v) > 7 else 0, v[6]
    raise OSError("no cpu line in /proc/stat")


def read_procs():
    """{pid: (ppid, comm, ticks, reaped, starttime, kthread)} for every process
    readable now: ticks = its utime+stime, reaped = its cutime+cstime (the
    children it waited for), kthread = PF_KTHREAD in its flags."""
    procs = {}
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as f:
                data = f.read().decode("utf-8", "replace")
        except OSError:
            continue   # exited meanwhile
        lp, rp = data.find("("), data.rfind(")")
        if lp < 0 or rp < 0:
            continue
        rest = data[rp + 2:].split()
        try:
            # fields after comm, 0-based here: state(0) ppid(1) ... flags(6) ...
            # utime(11) stime(12) cutime(13) cstime(14) ... starttime(19)
            procs[int(name)] = (int(rest[1]), data[lp + 1:rp], int(rest[11]) + int(rest[12]),
                                int(rest[13]) + int(rest[14]), int(rest[19]),
                                bool(int(rest[6]) & PF_KTHREAD))
        except (IndexError, ValueError):
            continue
    return procs


def tree_of(roots, procs):
    """the roots and every descendant of them."""
    children = {}
    for pid, p in procs.items():
        children.setdefault(p[0], []).append(pid)
    tree, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in tree or pid not in procs:     # a root already gone
            continue
        tree.add(pid)
        todo.extend(children.get(pid, ()))
    return tree


class Accounting:
    """Charges each interval's CPU ticks to the run, to ksoftirqd, to the
    controller or to the outside, from successive read_procs() snapshots.

    A process's own ticks (utime+stime) are charged to its side as they grow.
    What a process used after the last snapshot that saw it, or entirely
    between two snapshots, appears only in its reaper's cutime+cstime once it
    was waited for, as its whole life's ticks: so a reaper's growth of
    `reaped`, minus the last-seen ticks (own + reaped) of the children of it
    that vanished since (those were counted already), is new CPU. It belongs
    to the side of those children when the snapshots knew them (a re-parented
    worker of the run that PID 1 reaped stays the run's), else to the
    reaper's own side (children of the run are the run's, children of an
    outside process are outside); outside, it is named after the reaper, the
    process that started them (a build's make, a shell loop). Children whose parent ignores SIGCHLD are
    reaped without adding to any cutime: their unseen time stays uncounted.
    A child whose parent vanished in the same interval (a storm's SIGKILL of
    the server and its workers at once) was re-parented and reaped unseen,
    by PID 1 or a subreaper: its last-seen ticks are taken off the first
    reaper whose growth they fit, and what it used since is on its side.

    The run's side is sticky: every (pid, starttime) once seen as a
    descendant of the root stays the run's, with its later children. The
    controller (pid, starttime at the first snapshot) is the controller's
    side, whatever it reaps."""

    def __init__(self, root, controller=None):
        self.root = root
        self.controller = controller    # a pid; its key is taken at the first snapshot
        self.prev = {}          # pid -> read_procs() tuple of the last snapshot
        self.run_keys = set()   # (pid, starttime) ever seen in the run

    def interval(self, procs, started_after):
        """The ticks since the last call: {outside, ksoftirqd, init,
        controller, busiest {name: ticks}, tree}. A process not in the last snapshot whose
        starttime is at least started_after (boot ticks) started during the
        interval: all its ticks are new; an older one (the first snapshot, a
        pid reused unseen) has no baseline and counts from now."""
        prev, keys = self.prev, self.run_keys
        if isinstance(self.controller, int):
            c = procs.get(self.controller)
            self.controller = (self.controller, c[4]) if c is not None else None
        roots = [self.root] + [pid for pid, p in procs.items() if (pid, p[4]) in keys]
        tree = tree_of(roots, procs)
        keys.update((pid, procs[pid][4]) for pid in tree)
        out = {"outside": 0, "ksoftirqd": 0, "init": 0, "controller": 0, "busiest": {},
               "tree": len(tree)}

        def charge(pid, comm, start, kthread, d, side=None):
            """d ticks of the process pid (named comm[pid], a kernel thread
            or not); side = the (pid, starttime) whose side they are on, when
            not pid's own"""
            if d <= 0 or (side or (pid, start)) in keys:
                return
            if kthread and comm.startswith("ksoftirqd/"):
                out["ksoftirqd"] += d
                return
            if (pid, start) == self.controller:
                out["controller"] += d
                return
            out["outside"] += d
            if pid == 1:
                out["init"] += d
            name = f"{comm}[{pid}]"
            out["busiest"][name] = out["busiest"].get(name, 0) + d

        vanished = {}            # last-seen ppid -> [pid] gone since the last snapshot
        for pid, p in prev.items():
            q = procs.get(pid)
            if q is None or q[4] != p[4]:
                vanished.setdefault(p[0], []).append(pid)
        gone = {k for ks in vanished.values() for k in ks}
        seen = lambda k: prev[k][2] + prev[k][3]
        # children of a parent gone too, re-parented unseen: their reaper is unknown
        orphans = sorted((k for k in gone if prev[k][0] in gone), key=seen, reverse=True)
        for pid, (ppid, comm, ticks, reaped, start, kthread) in procs.items():
            p = prev.get(pid)
            if p is not None and p[4] == start:
                d_own, d_reaped = ticks - p[2], reaped - p[3]
            elif start >= started_after:
                d_own, d_reaped = ticks, reaped
            else:
                d_own = d_reaped = 0
            charge(pid, comm, start, kthread, d_own)
            kids = [k for k in vanished.get(pid, ()) if k not in orphans]
            rest = d_reaped - sum(seen(k) for k in kids)
            for k in list(orphans) if rest > 0 else ():
                if seen(k) <= rest:
                    rest -= seen(k)
                    kids.append(k)
                    orphans.remove(k)
            if rest > 0:
                if kids:    # on the side of the child that had used the most
                    k = max(kids, key=seen)
                    charge(pid, comm, start, kthread, rest, side=(k, prev[k][4]))
                else:
                    charge(pid, comm, start, kthread, rest)
        self.prev = procs
        # forget the run's processes that are gone (their pids may be reused)
        self.run_keys = {(pid, start) for pid, start in keys
                         if pid in procs and procs[pid][4] == start}
        return out


def boot_ticks(hz):
    with open(f"{PROC}/uptime") as f:
        return float(f.read().split()[0]) * hz


def cmd_sample(args):
    root, out, interval, controller = None, None, 1.0, None
    i = 0
    while i < len(args):
        a = args[i]
        v = args[i + 1] if i + 1 < len(args) else None
        if a in ("--root", "--out", "--interval", "--controller") and v is None:
            usage(f"{a}: needs a value")
        if a in ("--root", "--controller"):
            if not v.isdigit() or int(v) < 1:
                usage(f"{a}: expects a pid: {v}")
            if a == "--root":
                root = int(v)
            else:
                controller = int(v)
        elif a == "--out":
            out = v
        elif a == "--interval":
            try:
                interval = float(v)
            except ValueError:
                usage(f"--interval: expects seconds: {v}")
            if not 0.05 <= interval <= 60:
                usage(f"--interval: expects 0.05..60 seconds: {v}")
        else:
            usage(f"unknown flag: {a}")
        i += 2
    if root is None or out is None:
        usage("sample: needs --root and --out")
    hz = os.sysconf("SC_CLK_TCK")
    # Signals are blocked and taken synchronously: a sample is never cut in half.
    sigs = {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        f = open(out, "a", buffering=1)
    except OSError as e:
        print(f"disturb.py: cannot write {out}: {e}", file=sys.stderr)
        return 1
    prev_cpu, prev_t, prev_boot = read_cpu(), time.time(), boot_ticks(hz)
    acc = Accounting(root, controller)
    acc.interval(read_procs(), prev_boot - hz)      # the baseline: nothing counted yet
    stop = False
    while not stop:
        got = signal.sigtimedwait(sigs, interval)
        if got is not None and got.si_signo != signal.SIGUSR1:
            stop = True
        cpu, t, boot = read_cpu(), time.time(), boot_ticks(hz)
        procs = read_procs()
        x = acc.interval(procs, prev_boot - hz)
        top = sorted(x["busiest"].items(), key=lambda kv: -kv[1])[:5]
        f.write(json.dumps({
            "t0": round(prev_t, 3), "t1": round(t, 3), "total": cpu[0] - prev_cpu[0],
            "steal": cpu[1] - prev_cpu[1], "softirq": cpu[2] - prev_cpu[2],
            "outside": x["outside"], "ksoftirqd": x["ksoftirqd"], "init": x["init"],
            "controller": x["controller"], "top": top,
            "tree": x["tree"]}) + "\n")
        prev_cpu, prev_t, prev_boot = cpu, t, boot
        if root not in procs:
            stop = True
    f.close()
    return 0


SUMS = ("steal", "softirq", "outside", "ksoftirqd", "init", "controller")   # window()'s, beside total


def is_sample(x):
    """A line cmd_sample wrote: its window and CPU in figures (monlib.number;
    the SUMS may be absent), its busiest listed as [name, figure]."""
    return (all(monlib.number(x.get(k)) is not None for k in ("t0", "t1", "total"))
            and all(monlib.number(x.get(k, 0)) is not None for k in SUMS)
            and isinstance(x.get("top"), list)
            and all(isinstance(t, list) and len(t) == 2 and isinstance(t[0], str)
                    and monlib.number(t[1]) is not None for t in x["top"]))


def window(samples, a, b):
    """Sums over [a, b]: each sample's share = the part of its interval inside."""
    s = {"total": 0.0, "steal": 0.0, "softirq": 0.0, "outside": 0.0, "ksoftirqd": 0.0,
         "init": 0.0, "controller": 0.0, "top": {}, "covered": 0.0}
    for x in samples:
        span = x["t1"] - x["t0"]
        if span <= 0:
            continue
        part = (min(b, x["t1"]) - max(a, x["t0"])) / span
        if part <= 0:
            continue
        part = min(part, 1.0)
        s["covered"] += part * span          # seconds of [a, b] this sample saw
        for k in ("total",) + SUMS:
            s[k] += x.get(k, 0) * part    # (controller: not in samples before 2026-12-06)
        for name, d in x["top"]:
            s["top"][name] = s["top"].get(name, 0) + d * part
    return s


def pct(part, total):
    return 100.0 * part / total if total > 0 else 0.0


def top_text(s, n):
    top = sorted(s["top"].items(), key=lambda kv: -kv[1])[:n]
    return " ".join(f"{name}={pct(d, s['total']):.1f}" for name, d in top if d > 0)


def cmd_summary(args):
    if not args:
        usage("summary: needs FILE")
    path, limit, init_limit = args[0], None, None
    bounds = {}         # window name -> (t0, t1), in the order given: ramp, hold, phases
    i = 1
    try:
        while i < len(args):
            a = args[i]
            if a in ("--ramp", "--hold"):
                bounds[a[2:]] = (float(args[i + 1]), float(args[i + 2]))
                i += 3
            elif a == "--phase":
                name = args[i + 1]
                if not name.isidentifier() or name in ("ramp", "hold", "cpu") or name in bounds:
                    usage(f"--phase: a new window name (letters, digits, _): {name}")
                bounds[name] = (float(args[i + 2]), float(args[i + 3]))
                i += 4
            elif a == "--limit":
                limit = float(args[i + 1])
                i += 2
            elif a == "--init-limit":
                init_limit = float(args[i + 1])
                i += 2
            else:
                usage(f"unknown flag: {a}")
    except (IndexError, ValueError):
        usage(f"{args[i]}: expects numbers")
    if not all(math.isfinite(x) for x in [v for w in bounds.values() for v in w] + [limit or 0, init_limit or 0]):
        usage("the windows and limits: finite numbers, not nan or inf")
    if "ramp" not in bounds:
        usage("summary: needs --ramp T0 T1")
    try:
        # a line cut by a kill, or that is no sample (a field no figure), is skipped:
        # the others still count
        samples = [x for x in monlib.load(path, missing_ok=False) if is_sample(x)]
    except OSError as e:
        print(f"disturb.py: cannot read {path}: {e}", file=sys.stderr)
        return 1
    out = {}
    wins = {n: window(samples, a, max(b, a + MIN_WINDOW_S)) for n, (a, b) in bounds.items()}
    # A window the samples do not cover (the sampler died, or started late) is
    # not proven quiet: flagged (run_one.sh: an ok run becomes suspect), never
    # judged on the part that was seen alone. Coverage is of the window itself,
    # not of its 2 s widening (the sampler stops soon after a 1 s hold).
    unmeasured = [n for n, (a, b) in bounds.items()
                  if window(samples, a, b)["covered"] < COVERED_MIN * (b - a)]
    if unmeasured:
        out["flags"] = ";".join("disturbance-unmeasured:" + n for n in unmeasured)
    worst = None
    for name, s in wins.items():
        if s["total"] <= 0:
            continue        # no sample covers it: unknown, not zero
        out[f"outside_{name}_pct"] = f"{pct(s['outside'], s['total']):.1f}"
        if worst is None or s["outside"] / s["total"] > worst[1]["outside"] / worst[1]["total"]:
            worst = (name, s)
    if worst is not None:
        name, s = worst
        out["outside_cpu_pct"] = f"{pct(s['outside'], s['total']):.1f}"
        out["outside_top"] = top_text(s, 1)
        start = bounds["ramp"][0]
        end = max(max(b for _, b in bounds.values()), start + MIN_WINDOW_S)
        both = window(samples, start, end)
        for k, col in (("init", "init_cpu_pct"), ("controller", "controller_cpu_pct"),
                       ("ksoftirqd", "ksoftirqd_pct"),
                       ("steal", "steal_pct"), ("softirq", "softirq_pct")):
            out[col] = f"{pct(both[k], both['total']):.1f}"
        if limit is not None:
            # PID 1 (this machine kind's fd scanner) is judged on a limit of
            # its own, so a cause names it apart and a user can knowingly
            # accept it (bench.sh INIT_PCT): its load grows with the fds the
            # run itself opens (16-21% of the machine over 1M runs here, which
            # took 2-2.5x the server CPU of the quiet reference).
            # Everything else outside the run is judged on --limit.
            il = 100.0 if init_limit is None else init_limit
            over = []
            for n, w in wins.items():
                if w["total"] <= 0:
                    continue
                other, init = pct(w["outside"] - w["init"], w["total"]), pct(w["init"], w["total"])
                if other > limit:
                    over.append(f"outside CPU other than PID 1 {other:.1f}% during the {n} "
                                f"(limit {limit:g}%)")
                if init > il:
                    over.append(f"PID 1 {init:.1f}% during the {n} (limit {il:g}%)")
            out["disturbed"] = "1" if over else "0"
            if over:
                out["disturb_cause"] = (f"{'; '.join(over)} of the machine: {top_text(s, 3)}")
    print(json.dumps(out))
    return 0


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        usage()
    if argv[0] == "sample":
        return cmd_sample(argv[1:])
    if argv[0] == "summary":
        return cmd_summary(argv[1:])
    usage(f"unknown command: {argv[0]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
