"""push_reader.py - read server push messages on many connections and check
them (tests/push_server.bats, tests/py_netns/test_push_parity.py). Every wait is
bounded in time.

Each message must be exactly BYTES bytes, b"push SEQ USEC " + b"." padding +
b"\\n", with SEQ 1, 2, 3... on each connection (a gap or a repeat is counted)
and USEC (the server's CLOCK_REALTIME microseconds at the send) not after
its receipt. Lines "pong" (replies to --ping-every) are counted apart.
Stalled connections (--stall) get a small receive buffer and are never read:
at the end each is found closed by the server (EOF or reset after what it
holds) or still open.

usage: push_reader.py --port P --connections N --bytes B [--host H] [--stall K]
         [--min-each M] [--until-eof] [--status FILE] [--interval S]
         [--ping-every S] [--timeout S] [--json FILE]
  --min-each M   read until every reading connection holds >= M messages
                 (then "ready" goes to --status; without --until-eof: stop)
  --until-eof    after that, read on until the server closes every reading
                 connection (stop the server meanwhile: received == pushed)
  --interval S   also count, in 10 bins of (USEC mod S), where the sends fell
                 (paced sending fills them all, a burst one or two)
The summary (JSON) goes to --json or stdout; exit 0 unless the timeout hit.
"""
import argparse
import json
import os
import re
import selectors
import socket
import sys
import time

LINE = re.compile(rb"push ([0-9]+) ([0-9]+) \.*\n\Z")


def now_us():
    return time.time_ns() // 1000


class Conn:
    __slots__ = ("s", "buf", "seq", "count", "eof", "pongs", "pings")

    def __init__(self, s):
        self.s = s
        self.buf = b""
        self.seq = 0
        self.count = 0
        self.eof = False
        self.pongs = 0
        self.pings = 0


class PushReader:
    def __init__(self, host, port, size, interval=0.0):
        self.host = host
        self.port = port
        self.size = size
        self.interval_us = int(interval * 1e6)
        self.sel = selectors.EpollSelector()
        self.conns = []
        self.stalled = []
        self.received = self.bytes = self.gaps = self.bad = self.not_from_1 = 0
        self.raw = 0            # every byte recv() returned (pushes, pongs, bad lines)
        self.chunk = 262144     # bytes asked per recv()
        self.future = 0         # USEC later than the receipt (+1 ms slack)
        self.min_usec = self.max_usec = 0
        self.max_latency_us = 0
        self.bins = [0] * 10
        self.t0_us = now_us()

    # -- connections ------------------------------------------------------
    def connect(self, n, rcvbuf=0):
        for _ in range(n):
            s = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
            if rcvbuf:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.settimeout(10)
            s.connect((self.host, self.port))
            s.setblocking(False)
            c = Conn(s)
            self.conns.append(c)
            self.sel.register(s, selectors.EVENT_READ, c)

    def stall(self, k, rcvbuf=1024):
        for _ in range(k):
            s = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.settimeout(10)
            s.connect((self.host, self.port))
            self.stalled.append(s)

    def close(self):
        self.sel.close()
        for c in self.conns:
            c.s.close()
        for s in self.stalled:
            s.close()
        self.conns, self.stalled = [], []

    # -- reading ----------------------------------------------------------
    def _line(self, c, line, rx_us):
        if line == b"pong\n":
            c.pongs += 1
            return
        m = LINE.match(line)
        if len(line) != self.size or m is None:
            self.bad += 1
            return
        seq, usec = int(m.group(1)), int(m.group(2))
        if c.seq == 0 and seq != 1:
            self.not_from_1 += 1
        elif c.seq and seq != c.seq + 1:
            self.gaps += 1
        c.seq = seq
        c.count += 1
        self.received += 1
        self.bytes += len(line)
        if usec > rx_us + 1000:
            self.future += 1
        self.max_latency_us = max(self.max_latency_us, rx_us - usec)
        self.min_usec = usec if not self.min_usec else min(self.min_usec, usec)
        self.max_usec = max(self.max_usec, usec)
        if self.interval_us:
            self.bins[(usec % self.interval_us) * 10 // self.interval_us] += 1

    def _read(self, c):
        try:
            data = c.s.recv(self.chunk)
        except BlockingIOError:
            return 0
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            c.eof = True
            self.sel.unregister(c.s)
            return 0
        self.raw += len(data)
        rx = now_us()
        buf = c.buf + data
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            self._line(c, buf[start:nl + 1], rx)
            start = nl + 1
        c.buf = buf[start:]
        if len(c.buf) > 2048:
            self.bad += 1       # a "line" longer than any message
            c.buf = b""
        return len(data)

    def read_burst(self, c, limit):
        """Read c until EAGAIN or limit bytes; the bytes read."""
        got = 0
        while got < limit and not c.eof:
            n = self._read(c)
            if not n:
                break
            got += n
        return got

    def poll(self, timeout):
        for key, _ in self.sel.select(timeout):
            self._read(key.data)

    def ping_all(self):
        for c in self.conns:
            if not c.eof:
                try:
                    c.s.send(b"ping\n")
                    c.pings += 1
                except (BlockingIOError, ConnectionError):
                    pass

    def run(self, done, timeout, ping_every=0.0):
        """Read until done() or timeout; True when done() held."""
        deadline = time.monotonic() + timeout
        next_ping = time.monotonic() + ping_every if ping_every else None
        while not done():
            t = time.monotonic()
            if t >= deadline:
                return False
            if next_ping is not None and t >= next_ping:
                self.ping_all()
                next_ping = t + ping_every
            self.poll(0.05)
        return True

    def min_each(self):
        live = [c.count for c in self.conns]
        return min(live) if live else 0

    def all_eof(self):
        return all(c.eof for c in self.conns)

    def stalled_closed(self, quiet_s=2.0, limit_s=20.0):
        """Stalled connections the server closed: read what each holds (the
        server's kernel sends the rest once the window opens), then EOF or a
        reset means closed; nothing for quiet_s means open."""
        closed = 0
        for s in self.stalled:
            s.settimeout(quiet_s)
            deadline = time.monotonic() + limit_s
            try:
                while time.monotonic() < deadline:
                    if not s.recv(262144):
                        closed += 1
                        break
            except socket.timeout:
                pass
            except (ConnectionResetError, BrokenPipeError):
                closed += 1
        return closed

    def pongs_done(self):
        return all(c.pongs >= c.pings or c.eof for c in self.conns)

    def summary(self):
        counts = [c.count for c in self.conns]
        return {
            "connections": len(self.conns), "stalled": len(self.stalled),
            "received": self.received, "bytes": self.bytes, "gaps": self.gaps,
            # raw_bytes = bytes + 5 * pongs + tail_bytes unless a line was bad or lost
            "raw_bytes": self.raw, "tail_bytes": sum(len(c.buf) for c in self.conns),
            "bad": self.bad, "not_from_1": self.not_from_1, "future_usec": self.future,
            "min_each": min(counts) if counts else 0, "max_each": max(counts) if counts else 0,
            "eof": sum(c.eof for c in self.conns),
            "pings": sum(c.pings for c in self.conns), "pongs": sum(c.pongs for c in self.conns),
            "min_usec": self.min_usec, "max_usec": self.max_usec,
            "usec_before_start": int(bool(self.min_usec) and self.min_usec < self.t0_us - 1000000),
            "max_latency_us": self.max_latency_us,
            "bins_used": sum(1 for b in self.bins if b), "bins": self.bins,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--connections", type=int, required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--stall", type=int, default=0)
    ap.add_argument("--min-each", type=int, default=1)
    ap.add_argument("--until-eof", action="store_true")
    ap.add_argument("--status", default=None)
    ap.add_argument("--interval", type=float, default=0.0)
    ap.add_argument("--ping-every", type=float, default=0.0)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    def status(word):
        if a.status:
            with open(a.status, "a") as f:
                f.write(word + "\n")

    r = PushReader(a.host, a.port, a.bytes, a.interval)
    ok = True
    try:
        r.connect(a.connections)
        r.stall(a.stall)
        status("connected")
        ok = r.run(lambda: r.min_each() >= a.min_each, a.timeout, a.ping_every)
        if ok and a.ping_every:
            ok = r.run(r.pongs_done, 10.0)  # the replies to the last pings
        if ok:
            status("ready")
            if a.until_eof:
                ok = r.run(r.all_eof, a.timeout)
        out = r.summary()
        out["stalled_closed"] = r.stalled_closed()
        out["timed_out"] = not ok
    finally:
        r.close()
    text = json.dumps(out, sort_keys=True)
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            f.write(text + "\n")
        os.rename(a.json + ".tmp", a.json)
    else:
        print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
