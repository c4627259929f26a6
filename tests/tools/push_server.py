"""push_server.py - a small server-push peer for the client's tests
(tests/push_stall.bats): it speaks the push line format of DEVELOPERS.md
"Server push" and can break it on purpose, which the real servers never do.

usage: push_server.py PORT STATE_FILE --bytes B [--every S] [--gap SEQ] [--split] [--bad]

  Listens on 127.0.0.1:PORT, answers "ping\\n" with "pong\\n", and pushes
  "push SEQ USEC <dots>\\n" lines of exactly B bytes (32..1025; SEQ from 1 per
  connection, USEC = CLOCK_REALTIME microseconds at the write):
    --every S  one line per connection every S seconds, each connection at its
               own offset in the interval (paced); without it, only on SIGUSR1
    SIGUSR1    one line to every connection now (a broadcast)
    --gap SEQ  skip that sequence number on every connection (a gap of one)
    --split    write each line in three pieces (inside "push", inside SEQ,
               inside USEC), 20 ms apart, TCP_NODELAY: lines split across reads
    --bad      send "push x 1 .\\n" (a malformed push line) before the first line
  A connection whose transport is paused (the peer does not read) is skipped
  and its SEQ not used. STATE_FILE gets "conns=N pushed=M broadcasts=K busy=B"
  (B: --split lines still being written),
  rewritten every 50 ms while it changes. SIGTERM: exit 0. Every run is bounded
  by the caller (the bats test stops it by PID).
"""
import asyncio
import os
import random
import signal
import socket
import sys
import time


class Peer(asyncio.Protocol):
    def __init__(self, srv):
        self.srv = srv
        self.transport = None
        self.seq = 0
        self.paused = False
        self.rbuf = b""
        self.bad_sent = False
        self.lock = asyncio.Lock()  # --split: one line's pieces at a time, in order

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.srv.peers.add(self)
        if self.srv.every:
            loop = asyncio.get_running_loop()
            self.task = loop.create_task(self.paced(random.uniform(0, self.srv.every)))

    def connection_lost(self, exc):
        self.srv.peers.discard(self)
        task = getattr(self, "task", None)
        if task:
            task.cancel()

    def pause_writing(self):
        self.paused = True

    def resume_writing(self):
        self.paused = False

    def data_received(self, data):
        self.rbuf += data
        while b"\n" in self.rbuf:
            line, self.rbuf = self.rbuf.split(b"\n", 1)
            if line == b"ping":
                self.transport.write(b"pong\n")
        if len(self.rbuf) > 4096:
            self.transport.close()

    def line(self):
        self.seq += 1
        if self.seq == self.srv.gap:
            self.seq += 1
        head = f"push {self.seq} {time.time_ns() // 1000} ".encode()
        return head + b"." * (self.srv.size - len(head) - 1) + b"\n"

    def push(self):
        """One line now (or skipped: closing or paused). True when written."""
        if self.transport is None or self.transport.is_closing() or self.paused:
            return False
        if self.srv.bad and not self.bad_sent:
            self.bad_sent = True
            self.transport.write(b"push x 1 .\n")
        if self.srv.split:
            self.srv.busy += 1     # counted from now: the task may start later
            t = asyncio.get_running_loop().create_task(self.split_write())
            self.srv.tasks.add(t)  # a task nobody references may be collected
            t.add_done_callback(self.srv.tasks.discard)
        else:
            self.transport.write(self.line())
        self.srv.pushed += 1
        return True

    async def split_write(self):
        try:
            await self.split_pieces()
        finally:
            self.srv.busy -= 1

    async def split_pieces(self):
        async with self.lock:
            data = self.line()
            seq_end = data.index(b" ", 5)
            cuts = [2, seq_end - 1 if seq_end > 6 else 6, seq_end + 4]
            start = 0
            for cut in cuts + [len(data)]:
                if self.transport.is_closing():
                    return
                self.transport.write(data[start:cut])
                start = cut
                await asyncio.sleep(0.02)

    async def paced(self, offset):
        await asyncio.sleep(offset)
        while True:
            self.push()
            await asyncio.sleep(self.srv.every)


class Server:
    def __init__(self, size, every, gap, split, bad):
        self.size, self.every, self.gap, self.split, self.bad = size, every, gap, split, bad
        self.peers = set()
        self.pushed = 0
        self.broadcasts = 0
        self.busy = 0       # --split lines still being written
        self.tasks = set()

    def broadcast(self):
        self.broadcasts += 1
        for p in list(self.peers):
            p.push()


async def write_state(srv, path, stop):
    last = None
    while not stop.is_set():
        state = (f"conns={len(srv.peers)} pushed={srv.pushed} broadcasts={srv.broadcasts} "
                 f"busy={srv.busy}\n")
        if state != last:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(state)
            os.replace(tmp, path)
            last = state
        try:
            await asyncio.wait_for(stop.wait(), 0.05)
        except asyncio.TimeoutError:
            pass


def usage(msg):
    print(f"push_server.py: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def parse(argv):
    if len(argv) < 2:
        usage("needs PORT and STATE_FILE")
    port, state = argv[0], argv[1]
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        usage(f"PORT: expected 1..65535: {port!r}")
    opts = {"bytes": None, "every": 0.0, "gap": 0, "split": False, "bad": False}
    rest = argv[2:]
    while rest:
        a = rest.pop(0)
        if a in ("--split", "--bad"):
            opts[a[2:]] = True
        elif a in ("--bytes", "--every", "--gap"):
            if not rest:
                usage(f"{a}: needs a value")
            v = rest.pop(0)
            try:
                opts[a[2:]] = float(v) if a == "--every" else int(v)
            except ValueError:
                usage(f"{a}: not a number: {v!r}")
        else:
            usage(f"unknown argument: {a!r}")
    if opts["bytes"] is None or not 32 <= opts["bytes"] <= 1025:
        usage("--bytes: expected 32..1025")
    if opts["every"] < 0 or opts["gap"] < 0:
        usage("--every/--gap: expected >= 0")
    return int(port), state, opts


async def main(argv):
    port, state, o = parse(argv)
    srv = Server(o["bytes"], o["every"], o["gap"], o["split"], o["bad"])
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, srv.broadcast)
    server = await loop.create_server(lambda: Peer(srv), "127.0.0.1", port, backlog=4096,
                                      reuse_address=True)
    writer = loop.create_task(write_state(srv, state, stop))
    await stop.wait()
    await writer
    server.close()
    for p in list(srv.peers):
        p.transport.abort()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
