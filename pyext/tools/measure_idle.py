"""measure_idle.py - userspace memory per idle connection of a one-process
Python server: RssAnon growth (/proc/PID/status) from listening to holding N
connections opened by build/c1m-client, divided by N.

    PYTHONPATH=build/pyext /usr/bin/python3 pyext/tools/measure_idle.py \
        [--connections 15000] [--port 9350] [--hold 10] [--client build/c1m-client] \
        [--cases c1m-slots,c1m-plain,asyncio-slots,asyncio-plain,uvloop-slots]

The protocol keeps the transport and two ints (`__slots__` or a plain class);
every case runs in a fresh server process. Needs RLIMIT_NOFILE > N + 100 in
both processes (the client splits over workers by itself).
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The server counts its own connections (OPEN) and writes the count to a file
# every 100 ms: listing /proc/PID/fd of a process holding thousands of sockets
# would create kernel objects and cost seconds.
PROTOCOLS = {
    "slots": """
        OPEN = [0]
        class P:
            __slots__ = ("transport", "a", "b")
            def connection_made(self, t):
                self.transport = t; self.a = 0; self.b = 0; OPEN[0] += 1
            def data_received(self, data): pass
            def eof_received(self): return False
            def connection_lost(self, exc): self.transport = None; OPEN[0] -= 1
    """,
    "plain": """
        OPEN = [0]
        class P:
            def connection_made(self, t):
                self.transport = t; self.a = 0; self.b = 0; OPEN[0] += 1
            def data_received(self, data): pass
            def eof_received(self): return False
            def connection_lost(self, exc): self.transport = None; OPEN[0] -= 1
    """,
}

SERVERS = {
    "c1m": """
        import c1m, signal, sys
        loop = c1m.Loop()
        srv = loop.create_server(P, "127.0.0.1", PORT, backlog=4096)
        loop.add_signal_handler(signal.SIGTERM, loop.stop)
        def report():
            with open(COUNT_FILE + ".tmp", "w") as f:
                f.write(str(OPEN[0]))
            os.replace(COUNT_FILE + ".tmp", COUNT_FILE)
            loop.call_later(0.1, report)
        loop.call_soon(report)
        loop.call_soon(lambda: (print("ready", flush=True)))
        loop.run_forever()
        loop.close()
    """,
    "asyncio": """
        import asyncio, signal
        loop = asyncio.new_event_loop()
        srv = loop.run_until_complete(loop.create_server(P, "127.0.0.1", PORT, backlog=4096))
        loop.add_signal_handler(signal.SIGTERM, loop.stop)
        def report():
            with open(COUNT_FILE + ".tmp", "w") as f:
                f.write(str(OPEN[0]))
            os.replace(COUNT_FILE + ".tmp", COUNT_FILE)
            loop.call_later(0.1, report)
        loop.call_soon(report)
        loop.call_soon(lambda: (print("ready", flush=True)))
        loop.run_forever()
    """,
    "uvloop": """
        import uvloop, signal
        loop = uvloop.new_event_loop()
        srv = loop.run_until_complete(loop.create_server(P, "127.0.0.1", PORT, backlog=4096))
        loop.add_signal_handler(signal.SIGTERM, loop.stop)
        def report():
            with open(COUNT_FILE + ".tmp", "w") as f:
                f.write(str(OPEN[0]))
            os.replace(COUNT_FILE + ".tmp", COUNT_FILE)
            loop.call_later(0.1, report)
        loop.call_soon(report)
        loop.call_soon(lambda: (print("ready", flush=True)))
        loop.run_forever()
    """,
}


def rss_anon(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon for %d" % pid)


def server_count(path):
    """The server's own count of open connections (0 until it first reports)."""
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


def measure(case, args):
    loop_name, proto = case.split("-")
    count_dir = tempfile.mkdtemp(prefix="c1m-measure-")
    count_file = os.path.join(count_dir, "open")
    code = ("import os\n" + textwrap.dedent(PROTOCOLS[proto]) + textwrap.dedent(SERVERS[loop_name])
            ).replace("PORT", str(args.port)).replace("COUNT_FILE", repr(count_file))
    server = subprocess.Popen([args.python, "-c", code], stdout=subprocess.PIPE, text=True)
    client = None
    try:
        if server.stdout.readline().strip() != "ready":
            raise RuntimeError("%s: server did not start" % case)
        time.sleep(0.5)
        rss0 = rss_anon(server.pid)
        client = subprocess.Popen([args.client, "--connections", str(args.connections),
                                   "--port", str(args.port), "--hold", str(args.hold),
                                   "--quiet"], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + args.hold + 60
        while server_count(count_file) < args.connections:
            if time.monotonic() > deadline or client.poll() is not None:
                raise RuntimeError("%s: only %d connections" % (case, server_count(count_file)))
            time.sleep(0.1)
        time.sleep(1.0)   # let the last callbacks run
        rss1 = rss_anon(server.pid)
        held = server_count(count_file)
        client.wait(args.hold + 120)
        rc = client.returncode
    finally:
        if client is not None and client.poll() is None:
            client.terminate()
            client.wait(10)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()
        for f in (count_file, count_file + ".tmp"):
            if os.path.exists(f):
                os.unlink(f)
        os.rmdir(count_dir)
    return {"case": case, "connections": held, "rss_before": rss0, "rss_after": rss1,
            "per_conn": (rss1 - rss0) / held, "client_rc": rc}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connections", type=int, default=15000)
    ap.add_argument("--port", type=int, default=9350)
    ap.add_argument("--hold", type=float, default=10)
    ap.add_argument("--client", default=os.path.join(REPO, "build", "c1m-client"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cases", default="c1m-slots,c1m-plain")
    args = ap.parse_args()
    print("%-15s %11s %12s %12s %10s" % ("case", "connections", "RssAnon0", "RssAnon1",
                                         "bytes/conn"))
    for case in args.cases.split(","):
        r = measure(case, args)
        print("%-15s %11d %12d %12d %10.0f%s" % (
            r["case"], r["connections"], r["rss_before"], r["rss_after"], r["per_conn"],
            "" if r["client_rc"] == 0 else "  (client exit %d)" % r["client_rc"]), flush=True)


if __name__ == "__main__":
    main()
