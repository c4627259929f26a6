"""Where a Python contender's per-connection bytes go.

    python3 -m py_server.anatomy --loop asyncio --api streams [--conns 2000] [--port 9700]
    python3 -m py_server.anatomy --loop gevent          (--api blocking: the only one)

Runs one worker of the chosen contender in this process (no fork), opens
--conns idle connections to it with the C client (build/c1m-client, a separate
process, so none of its objects are counted here), and then compares this
process before and after: the Python objects the garbage collector tracks, by
type (count and sys.getsizeof bytes per connection), and RssAnon. The rest of
the RSS growth is memory no gc-tracked object accounts for: C-level
allocations (libuv handles, the c1m fd tables), untracked objects (bytes, str,
int: address strings, buffers) and allocator overhead.

It is a teaching tool, not a benchmark: the harness measures RSS per
connection at scale; this shows what it is made of.
"""
import argparse
import collections
import gc
import os
import subprocess
import sys
import tempfile
import time

from . import cli
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


def report(kind, n, before, after, rss0, rss1, top):
    rows = []
    for name, (c1, b1) in after.items():
        c0, b0 = before.get(name, (0, 0))
        if c1 - c0 > 0:
            rows.append((name, (c1 - c0) / n, (b1 - b0) / n))
    rows.sort(key=lambda r: -r[2])
    tracked = sum(r[2] for r in rows)
    rss = (rss1 - rss0) / n
    print("%s: %d idle connections, per connection:" % (kind, n))
    print("  %-48s %8s %8s" % ("gc-tracked type", "objects", "bytes"))
    for name, objs, b in rows[:top]:
        print("  %-48s %8.2f %8.0f" % (name, objs, b))
    if len(rows) > top:
        print("  %-48s %8s %8.0f" % ("(%d more types)" % (len(rows) - top), "",
                                     sum(r[2] for r in rows[top:])))
    print("  %-48s %8s %8.0f" % ("= gc-tracked objects", "", tracked))
    print("  %-48s %8s %8.0f" % ("+ outside gc (C allocs, bytes/str, overhead)", "", rss - tracked))
    print("  %-48s %8s %8.0f" % ("= RssAnon growth", "", rss))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m py_server.anatomy", description=__doc__.split("\n\n")[0])
    p.add_argument("--loop", choices=("asyncio", "uvloop", "c1m") + cli.BLOCKING_LOOPS,
                   default="asyncio")
    p.add_argument("--api", choices=("streams", "protocol", "blocking"), default=None,
                   help="default: blocking for gevent and threads, else protocol")
    p.add_argument("--conns", type=int, default=2000, help="idle connections (default 2000)")
    p.add_argument("--port", type=int, default=9700)
    p.add_argument("--top", type=int, default=12, help="types listed (default 12)")
    p.add_argument("--client", default=os.path.join(ROOT, "build", "c1m-client"))
    a = p.parse_args(argv)
    if a.api is None:
        a.api = "blocking" if a.loop in cli.BLOCKING_LOOPS else "protocol"
    if not 1 <= a.conns <= cli.nofile_limit() - cli.FD_RESERVE:
        p.error("--conns: 1..%d (one worker)" % (cli.nofile_limit() - cli.FD_RESERVE))
    if not os.access(a.client, os.X_OK):
        p.error("--client: %s is not executable (make build)" % a.client)

    # The counters file lives in a directory removed on every way out, including a
    # Worker that fails to start (port in use): a leftover is never ours to explain.
    with tempfile.TemporaryDirectory(prefix="c1m-anatomy-") as statsdir:
        return _measure(a, statsdir)


def _measure(a, statsdir):
    cfg = cli.parse(["--loop", a.loop, "--api", a.api, "--host", "127.0.0.1", "--port", str(a.port),
                     "--workers", "1", "--quiet", "--stats", os.path.join(statsdir, "s")])
    w = Worker(cfg, None, 0)
    state = {"client": None, "deadline": time.monotonic() + 60, "result": 1}

    def stop():
        c = state["client"]
        if c is not None and c.poll() is None:
            c.terminate()
            c.wait(timeout=30)
        w.on_stop_signal()

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
        report(cfg.kind, w.c.open, state["before"], after, state["rss0"], rss1, a.top)
        state["result"] = 0
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
    return state["result"] or rc


if __name__ == "__main__":
    sys.exit(main())
