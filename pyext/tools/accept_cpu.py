"""accept_cpu.py - server CPU per accepted connection over the ramp, several
contenders in interleaved rounds (root: each run in its own network namespace).

    /usr/bin/python3 pyext/tools/accept_cpu.py --build build \
        [--contenders floor,c,pyext] [--conns 30000] [--worker-conns 10000] \
        [--rounds 5] [--perf-record DIR]

A contender is a name of the harness registry, or LABEL=NAME@BUILD_DIR to run
NAME with the binaries and extension of another build (before/after
comparisons in the same interleaved rounds: c1m-client and c1m-stat always
come from --build), e.g. --contenders c,pyext,pyext-old=pyext@/tmp/old/build.
A spec may end with :ARGS, server flags added to the contender's command
(split at blanks; after the first ':', so BUILD holds none), e.g.
pyext-gcoff=pyext:--gc off.

A run starts the contender with the harness's command (harness/lib/
contenders.py: --host 0.0.0.0 --port 9000 --max-conns N --worker-conns W
--stats FILE --quiet), waits until it is ready, reads the CPU time of its
process tree (the parent and the workers of the counters file:
sum_exec_runtime of /proc/PID/task/*/schedstat, nanoseconds), opens N connections
with c1m-client (--hold inf), waits until the server's counters say open=N,
reads the CPU time again and stops everything. CPU per connection = the
difference / N, in microseconds; `wall` is the time to all accepted.
--perf-record DIR also records the server's processes over the ramp
(`perf record -g`, DIR/CONTENDER-ROUND.data; read with `perf report -i`).

It is a developer's tool for before/after comparisons on one machine in one
sitting: CPU time is less sensitive to other load than wall time, but not
immune; compare the min and median of interleaved rounds, never single runs,
and leave absolute claims to `make bench`.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "harness", "lib"))
import contenders  # noqa: E402  (the registry: one home for a contender's command)
PORT = 9000
READY_S = 30
RAMP_S = 300
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def sh(*args, check=True, **kw):
    return subprocess.run(args, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def contender_cmd(name, build, python, args):
    """The harness registry's command line for contender `name`."""
    try:
        return contenders.command(name, args, build, python)
    except KeyError:
        raise SystemExit("accept_cpu: unknown contender %r (harness/lib/contenders.py)" % name)


def cpu_ns(pids):
    """CPU time of every thread of pids, in ns (sum_exec_runtime)."""
    total = 0
    for p in pids:
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue  # gone: its time is lost, and the run is flagged by the caller
        for t in tids:
            try:
                with open("/proc/%d/task/%s/schedstat" % (p, t)) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


def stat_json(build, stats):
    r = sh(os.path.join(build, "c1m-stat"), "--json", stats, check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


class Run:
    """One contender, one round; everything it starts is stopped in close()."""

    def __init__(self, a, spec, rnd):
        self.a, self.rnd = a, rnd
        self.name, self.kind, self.build, self.extra = spec
        self.ns = "c1m-acpu-%d-%d" % (os.getpid(), rnd)
        self.stats = "/dev/shm/c1m-acpu-%d.stats" % os.getpid()
        self.server = self.client = self.perf = None
        self.ns_made = False

    def in_ns(self, cmd):
        return ["ip", "netns", "exec", self.ns] + cmd

    def run(self):
        a = self.a
        sh("ip", "netns", "add", self.ns)
        self.ns_made = True
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")
        sh(*self.in_ns(["sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=10000 65535",
                        "net.core.somaxconn=65535", "net.ipv4.tcp_migrate_req=1"]))
        cmd = contender_cmd(self.kind, self.build, a.python,
                            ["--host", "0.0.0.0", "--port", str(PORT), "--max-conns",
                             str(a.conns), "--worker-conns", str(a.worker_conns), "--stats",
                             self.stats, "--quiet"] + self.extra)
        env = dict(os.environ, PYTHONPATH="%s:%s" % (REPO, os.path.join(self.build, "pyext")),
                   C1M_PYEXT_PATH=os.path.join(self.build, "pyext"))
        # stderr to a file: a pipe nobody reads would block the server once
        # 64 KiB of messages filled it
        self.log = os.path.join(a.log_dir, "%s-%d.server.log" % (self.name, self.rnd))
        with open(self.log, "wb") as log:
            self.server = subprocess.Popen(self.in_ns(cmd), cwd=REPO, env=env,
                                           stdout=subprocess.DEVNULL, stderr=log)
        stat = os.path.join(a.build, "c1m-stat")
        if sh(stat, "--wait-ready", "--timeout", str(READY_S), self.stats, check=False).returncode:
            raise RuntimeError("%s: not ready in %ds (server log: %s)"
                               % (self.name, READY_S, self.log))
        j = stat_json(a.build, self.stats)
        # ip netns exec execs the server: its pid is the server's parent's
        pids = sorted({p for p in [self.server.pid] + [w["pid"] for w in j["workers"]] if p > 0})
        if a.perf_record:
            out = os.path.join(a.perf_record, "%s-%d.data" % (self.name, self.rnd))
            self.perf = subprocess.Popen(["perf", "record", "-q", "-g", "-o", out, "-p",
                                          ",".join(map(str, pids))],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        c0 = cpu_ns(pids)
        t0 = time.monotonic()
        self.client = subprocess.Popen(self.in_ns([os.path.join(a.build, "c1m-client"),
                                                   "--connections", str(a.conns), "--port",
                                                   str(PORT), "--hold", "inf", "--quiet"]),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = sh(stat, "--wait", "open=%d" % a.conns, "--timeout", str(RAMP_S), self.stats,
               check=False)
        t1 = time.monotonic()
        c1 = cpu_ns(pids)
        if r.returncode:
            raise RuntimeError("%s: open=%d not reached in %ds (server log: %s)"
                               % (self.name, a.conns, RAMP_S, self.log))
        alive = all(os.path.exists("/proc/%d" % p) for p in pids)
        return {"contender": self.name, "round": self.rnd, "us_per_conn":
                (c1 - c0) / 1e3 / a.conns, "wall_s": t1 - t0, "pids": len(pids),
                "complete": alive}

    def close(self):
        # The stop signals are held (blocked, by what this starts too) until
        # everything is stopped, then delivered: a second ^C or SIGTERM in
        # here raised KeyboardInterrupt out of a wait and left the server, its
        # namespace and its counters file behind.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            for p, grace in ((self.perf, 30), (self.client, 30), (self.server, 60)):
                if p is None or p.poll() is not None:
                    continue
                p.send_signal(signal.SIGINT if p is self.perf else signal.SIGTERM)
                try:
                    p.wait(grace)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if self.ns_made:
                sh("ip", "netns", "del", self.ns, check=False)
            try:
                os.unlink(self.stats)
            except OSError:
                pass
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--contenders", default="floor,c,pyext")
    ap.add_argument("--conns", type=int, default=30000)
    ap.add_argument("--worker-conns", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--perf-record", metavar="DIR")
    ap.add_argument("--json", metavar="FILE", help="also write every run as JSON lines")
    ap.add_argument("--log-dir", metavar="DIR",
                    help="the servers' stderr, one file per run (default: the --perf-record "
                         "directory, else a new directory under /tmp)")
    a = ap.parse_args()
    if not (1 <= a.conns <= 2000000 and 1 <= a.worker_conns and 1 <= a.rounds <= 100):
        ap.error("--conns 1..2m, --worker-conns >= 1, --rounds 1..100")
    a.build = os.path.abspath(a.build)
    specs = []
    for item in (c for c in a.contenders.split(",") if c):
        item, _, extra = item.partition(":")      # the server flags, first: they may hold '='
        label, _, rest = item.partition("=")
        kind, _, build = (rest or label).partition("@")
        if not label.replace("-", "").replace("_", "").replace(".", "").isalnum():
            ap.error("--contenders: a label is letters, digits, '-', '_' and '.', not %r" % label)
        specs.append((label, kind, os.path.abspath(build) if build else a.build,
                      extra.split()))
    unknown = [s[1] for s in specs if s[1] not in contenders.LADDER]
    if unknown:
        ap.error("--contenders: unknown contender(s) %s (known: %s)"
                 % (", ".join(unknown), ", ".join(contenders.LADDER)))
    if not specs:
        ap.error("--contenders: names no contender")
    names = [s[0] for s in specs]
    if len(set(names)) != len(names):
        ap.error("--contenders: a label appears twice")
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces)")
    if a.perf_record:
        os.makedirs(a.perf_record, exist_ok=True)
    if a.log_dir:
        os.makedirs(a.log_dir, exist_ok=True)
    else:
        a.log_dir = a.perf_record or tempfile.mkdtemp(prefix="c1m-accept-cpu-")
    print("accept_cpu: server logs in %s" % a.log_dir, file=sys.stderr)
    # a stop signal ends the current run through its close() (KeyboardInterrupt)
    for s in STOP_SIGNALS[1:]:
        signal.signal(s, signal.default_int_handler)
    rows = []
    out = open(a.json, "a") if a.json else None
    try:
        for rnd in range(1, a.rounds + 1):
            for spec in (specs if rnd % 2 else specs[::-1]):  # alternate the order
                name = spec[0]
                run = Run(a, spec, rnd)
                try:
                    row = run.run()
                except RuntimeError as e:
                    print("accept_cpu: round %d: %s" % (rnd, e), file=sys.stderr)
                    continue
                finally:
                    run.close()
                rows.append(row)
                print("round %d %-8s %7.2f us/conn  wall %6.2f s%s" % (
                    rnd, name, row["us_per_conn"], row["wall_s"],
                    "" if row["complete"] else "  (a process exited: incomplete)"), flush=True)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
    except KeyboardInterrupt:
        print("accept_cpu: interrupted", file=sys.stderr)
        return 130
    finally:
        if out:
            out.close()
    print("\n%-8s %5s %9s %9s %9s %9s" % ("contender", "runs", "min_us", "median_us",
                                            "med_wall", "vs_" + names[0]))
    med = {}
    for name in names:
        us = [r["us_per_conn"] for r in rows if r["contender"] == name and r["complete"]]
        wall = [r["wall_s"] for r in rows if r["contender"] == name and r["complete"]]
        if not us:
            continue
        med[name] = statistics.median(us)
        base = med.get(names[0])
        print("%-8s %5d %9.2f %9.2f %9.2f %9s" % (name, len(us), min(us), med[name],
                                                  statistics.median(wall),
                                                  "%.3f" % (med[name] / base) if base else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
