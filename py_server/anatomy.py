"""Where a Python contender's per-connection bytes go.

    python3 -m py_server.anatomy --loop asyncio --api streams [--conns 2000] [--port 9700]
    python3 -m py_server.anatomy --loop gevent          (--api blocking: the only one)
    python3 -m py_server.anatomy --loop uvloop --json anatomy.json   (the figures as JSON too)
    python3 -m py_server.anatomy --loop uvloop --slots off   (the Protocol class without __slots__)

Runs one worker of the chosen contender in this process (no fork), opens
--conns idle connections to it with the C client (build/c1m-client, a separate
process, so none of its objects are counted here), and then compares this
process before and after: the Python objects the garbage collector tracks, by
type (count and sys.getsizeof bytes per connection), and RssAnon. The rest of
the RSS growth is memory no gc-tracked object accounts for: C-level
allocations (libuv handles, the c1m fd tables), untracked objects (bytes, str,
int: address strings, buffers) and allocator overhead.

It is a teaching tool, not a benchmark: the harness measures RSS per
connection at scale; this shows what it is made of. `make demo` draws its
figures (--json) beside the harness's.

Exit: 0 measured, 1 the connections did not all arrive, 2 usage, 3 the loop
cannot be imported by this interpreter (the message names one that can), 130
stopped by SIGINT or SIGTERM before it measured.
"""
import argparse
import collections
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from . import cli
from .loops import Unavailable, check_available
from .worker import Worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_anon_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def census():
    """{type name: (count, bytes)} over every object the gc tracks."""
    gc.collect()
    out = collections.defaultdict(lambda: [0, 0])
    for o in gc.get_objects():
        t = type(o)
        e = out["%s.%s" % (t.__module__, t.__qualname__) if t.__module__ != "builtins" else t.__qualname__]
        e[0] += 1
        e[1] += sys.getsizeof(o)
    return out


def figures(kind, n, before, after, rss0, rss1):
    """The per-connection figures: types by bytes, largest first."""
    rows = []
    for name, (c1, b1) in after.items():
        c0, b0 = before.get(name, (0, 0))
        if c1 - c0 > 0:
            rows.append({"type": name, "objects": (c1 - c0) / n, "bytes": (b1 - b0) / n})
    rows.sort(key=lambda r: -r["bytes"])
    tracked = sum(r["bytes"] for r in rows)
    rss = (rss1 - rss0) / n
    return {"kind": kind, "connections": n, "types": rows, "gc_tracked_bytes": tracked,
            "outside_gc_bytes": rss - tracked, "rss_anon_bytes": rss,
            "python": sys.executable, "python_version": sys.version.split()[0]}


def report(fig, top):
    # a type under one object in 200 connections is the run's own bookkeeping
    # (a lock, a Popen), not the connection's: counted in one line, not listed
    rows = [r for r in fig["types"] if round(r["objects"], 2) > 0]
    few = [r for r in fig["types"] if round(r["objects"], 2) == 0]
    print("%s: %d idle connections, per connection:" % (fig["kind"], fig["connections"]))
    print("  %-48s %8s %8s" % ("gc-tracked type", "objects", "bytes"))
    for r in rows[:top]:
        print("  %-48s %8.2f %8.0f" % (r["type"], r["objects"], r["bytes"]))
    rest = rows[top:] + few
    if rest:
        print("  %-48s %8s %8.0f" % ("(%d more types%s)" % (len(rest), ", under 0.01 each" if not rows[top:] else ""),
                                     "", sum(r["bytes"] for r in rest)))
    print("  %-48s %8s %8.0f" % ("= gc-tracked objects", "", fig["gc_tracked_bytes"]))
    print("  %-48s %8s %8.0f" % ("+ outside gc (C allocs, bytes/str, overhead)", "",
                                 fig["outside_gc_bytes"]))
    print("  %-48s %8s %8.0f" % ("= RssAnon growth", "", fig["rss_anon_bytes"]))
    if fig["outside_gc_bytes"] < 0:
        print("  (outside gc is negative: part of the objects went into memory that was resident\n"
              "   before the connections, pymalloc's arenas and freed pages; RssAnon counts pages,\n"
              "   the objects' sizes count bytes. More connections make the difference smaller.)")


# The module a loop needs beyond the standard library (c1m: the extension,
# which `make build` builds for one interpreter; its message says so).
LOOP_MODULES = {"uvloop": "uvloop", "gevent": "gevent"}


def interpreters_with(module):
    """Other python3 interpreters on this machine that import MODULE (Debian's
    sees apt's python3-uvloop; a pyenv python3 first on PATH does not)."""
    mine = os.path.realpath(sys.executable)
    found = []
    for cand in ("/usr/bin/python3", shutil.which("python3"), "/usr/local/bin/python3"):
        if not cand or not os.access(cand, os.X_OK) or os.path.realpath(cand) in \
                [mine] + [os.path.realpath(f) for f in found]:
            continue
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            ok = subprocess.run([cand, "-c", "import " + module], env=env, timeout=20,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            found.append(cand)
    return found


def unavailable(loop, why, argv):
    """The message for a loop this interpreter cannot import (exit 3)."""
    msg = "anatomy: --loop %s: %s" % (loop, why)
    module = LOOP_MODULES.get(loop)
    if module:
        others = interpreters_with(module)
        if others:
            msg += "\n  %s imports it: %s -m py_server.anatomy %s" % (
                others[0], others[0], " ".join(argv))
        else:
            msg += "\n  no python3 on this machine imports %s" % module
    return msg


def fd_room(conns):
    """The connections one worker may hold here, once the soft RLIMIT_NOFILE is
    raised (up to the hard one: any user may) to what CONNS of them need; the
    client this process starts inherits it. A login's soft limit is often 1024,
    which the default 2,000 connections did not fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = conns + cli.FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               (need if hard == resource.RLIM_INFINITY else min(need, hard), hard))
        except (ValueError, OSError):
            pass
    return cli.nofile_limit() - cli.FD_RESERVE


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m py_server.anatomy", description=__doc__.split("\n\n")[0])
    p.add_argument("--loop", choices=("asyncio", "uvloop", "c1m") + cli.BLOCKING_LOOPS,
                   default="asyncio")
    p.add_argument("--api", choices=("streams", "protocol", "blocking"), default=None,
                   help="default: blocking for gevent and threads, else protocol")
    p.add_argument("--conns", type=int, default=2000, help="idle connections (default 2000)")
    p.add_argument("--port", type=int, default=9700)
    p.add_argument("--slots", choices=cli.SLOTS, default="on",
                   help="--api protocol: off measures the Protocol class without __slots__ "
                        "(an instance __dict__ per connection; default on)")
    p.add_argument("--top", type=int, default=12, help="types listed (default 12)")
    p.add_argument("--client", default=os.path.join(ROOT, "build", "c1m-client"))
    p.add_argument("--json", metavar="FILE",
                   help="also write the figures to FILE as JSON (every type; make demo draws them)")
    argv = sys.argv[1:] if argv is None else argv
    a = p.parse_args(argv)
    if a.api is None:
        a.api = "blocking" if a.loop in cli.BLOCKING_LOOPS else "protocol"
    why = cli.api_error(a.loop, a.api)
    if why:
        p.error(why)
    room = fd_room(a.conns)
    if not 1 <= a.conns <= room:
        p.error("--conns %d: 1..%d (one worker; this process may open %d files: ulimit -Hn)"
                % (a.conns, room, cli.nofile_limit()))
    if not 1 <= a.port <= 65535:
        p.error("--port: 1..65535")
    if a.top < 1:
        p.error("--top: at least 1")
    if not os.access(a.client, os.X_OK):
        p.error("--client: %s is not executable (make build)" % a.client)
    try:
        check_available(a.loop)
    except Unavailable as e:
        print(unavailable(a.loop, e, argv), file=sys.stderr)
        return 3

    # The counters file lives in a directory removed on every way out, including a
    # Worker that fails to start (port in use): a leftover is never ours to explain.
    with tempfile.TemporaryDirectory(prefix="c1m-anatomy-") as statsdir:
        return _measure(a, statsdir)


def _measure(a, statsdir):
    cfg = cli.parse(["--loop", a.loop, "--api", a.api, "--host", "127.0.0.1", "--port", str(a.port),
                     "--workers", "1", "--quiet", "--stats", os.path.join(statsdir, "s"),
                     "--slots", a.slots])
    w = Worker(cfg, None, 0)
    state = {"client": None, "deadline": time.monotonic() + 60, "result": 1, "interrupted": False}
    worker_stop = w.on_stop_signal

    def on_stop_signal(*_):
        """The worker's handler of SIGINT and SIGTERM (it installs this
        attribute): the worker stops, and the measurement is not made."""
        state["interrupted"] = True
        worker_stop()
    w.on_stop_signal = on_stop_signal

    def stop():
        c = state["client"]
        if c is not None and c.poll() is None:
            c.terminate()
            c.wait(timeout=30)
        worker_stop()

    def wait_full():
        if w.c.open >= a.conns:
            time.sleep(0.5)     # let the last connection_made / handler run
            w.backend.call_later(0.2, measure)
        elif time.monotonic() > state["deadline"] or state["client"].poll() is not None:
            print("anatomy: only %d of %d connections arrived" % (w.c.open, a.conns), file=sys.stderr)
            stop()
        else:
            w.backend.call_later(0.05, wait_full)

    def measure():
        after, rss1 = census(), rss_anon_bytes()
        kind = cfg.kind + (" --slots off" if a.slots == "off" else "")
        fig = figures(kind, w.c.open, state["before"], after, state["rss0"], rss1)
        report(fig, a.top)
        state["result"] = 0
        if a.json:
            try:
                with open(a.json, "w") as f:
                    json.dump(fig, f, indent=1)
                    f.write("\n")
            except OSError as e:
                print("anatomy: cannot write %s: %s" % (a.json, e), file=sys.stderr)
                state["result"] = 1
        stop()

    def start_client():
        state["before"], state["rss0"] = census(), rss_anon_bytes()
        state["client"] = subprocess.Popen(
            [a.client, "--connections", str(a.conns), "--port", str(a.port), "--hold", "inf", "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        w.backend.call_later(0.05, wait_full)

    try:
        rc = w.run(on_ready=lambda: w.backend.call_later(0.3, start_client))
    finally:
        c = state["client"]
        if c is not None and c.poll() is None:
            c.kill()
            c.wait()
    if state["result"] and state["interrupted"]:
        print("anatomy: interrupted: nothing measured", file=sys.stderr)
        return 130
    return state["result"] or rc


if __name__ == "__main__":
    sys.exit(main())
