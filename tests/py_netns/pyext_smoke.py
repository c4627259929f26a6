"""pyext_smoke.py - a quick tour of every code path of the c1m extension, for
an ASan/UBSan build (a few seconds; exits 0 and prints "pyext smoke: OK").

    C1M_SANITIZE=1 pyext/build.sh build-san          # or: make pyext SANITIZE=1
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
        PYTHONPATH=build-san/pyext /usr/bin/python3 tests/py_netns/pyext_smoke.py

(detect_leaks=0: CPython itself does not free everything at exit; the
extension's own leaks are what tests/py_netns/test_pyext_api.py TestLeaks checks.)
Also runs on the normal build: PYTHONPATH=build/pyext. Port: argv[1] or 9390.
"""
import functools
import gc
import os
import signal
import socket
import struct
import sys
import threading
import time

import c1m

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 9390
HOST = "127.0.0.1"
BLOCKED = {signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM}


def check(cond, what):
    if not cond:
        print("pyext smoke: FAILED:", what, file=sys.stderr)
        sys.exit(1)


def run(loop, timeout=20.0):
    h = loop.call_later(timeout, lambda: (print("watchdog", file=sys.stderr), sys.exit(1)))
    loop.run_forever()
    h.cancel()


def client_thread(loop, fn):
    def body():
        signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)   # signals go to the loop thread
        try:
            fn()
        except BaseException as e:  # noqa: B902
            box.append(e)
        loop.call_soon_threadsafe(loop.stop)
    box = []
    th = threading.Thread(target=body)
    th.start()
    run(loop)
    th.join()
    if box:
        raise box[0]


def connect():
    s = socket.create_connection((HOST, PORT), timeout=5)
    s.settimeout(5)
    return s


def read_all(s):
    out = []
    try:
        while True:
            c = s.recv(1 << 20)
            if not c:
                break
            out.append(c)
    except ConnectionResetError:
        pass
    return b"".join(out)


class Proto:
    __slots__ = ("t", "n")
    loop = None
    log = []
    big = b"z" * (3 << 20)

    def connection_made(self, t):
        self.t = t
        self.n = 0
        t.get_extra_info("peername")
        t.get_extra_info("sockname")

    def data_received(self, data):
        self.n += len(data)
        cmd = data.strip()
        t = self.t
        if cmd == b"ping":
            t.write(b"pong\n")
        elif cmd == b"big":
            t.set_write_buffer_limits(high=1 << 16)
            t.write(self.big)
            t.close()
            t.write(b"ignored")
        elif cmd == b"abort":
            t.write(self.big)
            t.abort()
        elif cmd == b"boom":
            raise ValueError("boom")
        elif cmd == b"pause":
            t.pause_reading()
            t.get_write_buffer_size()
            t.resume_reading()
        elif cmd == b"eof":
            t.write_eof()
        else:
            t.writelines([b"echo:", data])

    def eof_received(self):
        # keep the write side open (n even), then close it ourselves
        self.t.write(b"bye\n")
        if self.n % 2 == 0:
            self.loop.call_later(0.01, self.t.close)
            return True
        return False

    def pause_writing(self):
        self.log.append("pause")

    def resume_writing(self):
        self.log.append("resume")

    def connection_lost(self, exc):
        self.log.append(type(exc).__name__)
        self.t = None


def main():
    loop = c1m.Loop()
    contexts = []
    loop.set_exception_handler(lambda lp, ctx: contexts.append(ctx["message"]))

    # signals first, before any thread exists
    got = []
    loop.add_signal_handler(signal.SIGUSR1, got.append, 1)
    loop.add_signal_handler(signal.SIGUSR2, lambda: 1 / 0)
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    loop.call_later(0.01, os.kill, os.getpid(), signal.SIGUSR1)
    loop.call_later(0.02, os.kill, os.getpid(), signal.SIGUSR2)
    loop.call_later(0.03, os.kill, os.getpid(), signal.SIGTERM)
    run(loop)
    check(got == [1], "signal handler")
    check(loop.remove_signal_handler(signal.SIGUSR2), "remove_signal_handler")

    # timers
    order = []
    for d in (0.03, 0.01, 0.02):
        loop.call_later(d, order.append, d)
    loop.call_later(0.015, order.append, "x").cancel()
    loop.call_soon(order.append, 0)
    loop.call_later(0.005, lambda: [][0])
    loop.call_later(0.05, loop.stop)
    run(loop)
    check(order == [0, 0.01, 0.02, 0.03], "timer order %r" % order)

    # issue 8: handles cancelled by their own callback (args only in the
    # handle), asyncio's past times, more servers than the old 16-slot table
    box = {}

    def cancel_self(key):
        return lambda a, b: (box[key].cancel(), a + b)[1]
    box["soon"] = loop.call_soon(functools.reduce, cancel_self("soon"), [1, 2, 3])
    box["late"] = loop.call_later(-1, functools.reduce, cancel_self("late"), [4, 5, 6])
    many = [loop.create_server(Proto, HOST, 0) for _ in range(20)]
    loop.call_later(0.02, loop.stop)
    run(loop)
    check(box["soon"].cancelled() and box["late"].cancelled(), "cancelled from own callback")
    check(all(s.is_serving() for s in many), "20 servers")
    for s in many:
        s.close()
    box.clear()

    # KeyboardInterrupt out of a callback
    loop.call_soon(lambda: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        run(loop)
        check(False, "KeyboardInterrupt not raised")
    except KeyboardInterrupt:
        pass

    Proto.loop = loop
    srv = loop.create_server(Proto, HOST, PORT, backlog=512, max_conns=50, sndbuf=65536,
                             rcvbuf=65536)
    states = []
    srv.set_state_callback(states.append)

    def scenarios():
        s = connect()
        s.sendall(b"ping\n")
        check(s.recv(5) == b"pong\n", "pong")
        s.sendall(b"pause\n")
        s.sendall(b"hello")
        check(s.recv(100).startswith(b"echo:"), "echo")
        s.close()

        s = connect()
        s.sendall(b"big\n")
        time.sleep(0.1)
        check(len(read_all(s)) == len(Proto.big), "big write then close")
        s.close()

        s = connect()
        s.sendall(b"abort\n")
        read_all(s)
        s.close()

        s = connect()
        s.sendall(b"boom\n")
        check(read_all(s) == b"", "boom closes")
        s.close()

        s = connect()          # eof_received: n even (0) -> keep open
        s.shutdown(socket.SHUT_WR)
        check(s.recv(4) == b"bye\n", "bye")
        s.close()

        s = connect()
        s.sendall(b"eof\n")
        check(read_all(s) == b"", "write_eof")
        s.close()

        s = connect()          # reset
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(b"x")
        s.close()

        # the cap: 50 connections pause the listener
        deadline = time.monotonic() + 5
        while loop.connections and time.monotonic() < deadline:
            time.sleep(0.01)
        check(loop.connections == 0, "%d connections left open" % loop.connections)
        socks = [connect() for _ in range(50)]
        deadline = time.monotonic() + 5
        while not srv.paused and time.monotonic() < deadline:
            time.sleep(0.01)
        check(srv.paused, "paused at max_conns")
        for s in socks:
            s.close()
        deadline = time.monotonic() + 5
        while srv.paused and time.monotonic() < deadline:
            time.sleep(0.01)
        check(not srv.paused, "resumed")

        # connect/close cycles; refused while the cap has the listener closed
        refused = 0
        for i in range(2000):
            while True:
                s = socket.socket()
                s.bind(("127.0.0.%d" % (2 + i % 50), 0))
                try:
                    s.connect((HOST, PORT))
                    break
                except (ConnectionRefusedError, ConnectionResetError):
                    # refused while closed; reset if queued when it closed
                    s.close()
                    refused += 1
                    check(refused < 10000, "listener never re-opened")
                    time.sleep(0.001)
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        time.sleep(0.2)

    client_thread(loop, scenarios)
    loop.call_later(0.1, loop.stop)
    run(loop)
    check(states[:2] == [True, False], "state callback %r" % states)
    check("ValueError" in Proto.log and "ConnectionResetError" in Proto.log, Proto.log)
    check("pause" in Proto.log and "resume" in Proto.log, "pause/resume_writing")
    check(any("data_received" in m for m in contexts), contexts)

    # close with live connections and pending output; then use after close
    held = []

    def hold():
        for _ in range(20):
            s = connect()
            s.sendall(b"big\n" if len(held) % 2 else b"ping\n")
            held.append(s)
        time.sleep(0.2)
    client_thread(loop, hold)
    check(loop.connections > 0, "connections held")
    t = next(o for o in gc.get_objects() if type(o) is c1m.Transport)
    loop.close()
    t.write(b"x")
    t.close()
    check(t.is_closing(), "closed by loop.close")
    for s in held:
        s.close()
    for fn in (loop.run_forever, lambda: loop.call_later(1, print)):
        try:
            fn()
            check(False, "use after close")
        except RuntimeError:
            pass
    Proto.loop = None
    t = loop = srv = None
    gc.collect()

    # a loop left to the garbage collector
    lp = c1m.Loop()
    lp.call_later(10, lp.stop)
    lp.create_server(Proto, HOST, PORT)
    del lp
    gc.collect()
    check(not [o for o in gc.get_objects() if type(o) is c1m.Loop], "loop collected")
    print("pyext smoke: OK")


if __name__ == "__main__":
    main()
