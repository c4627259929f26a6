"""threads: a thread per connection with blocking sockets, the design the
asyncio ladder exists to avoid (socketserver.ThreadingTCPServer's model: one
acceptor, then each connection served by its own thread running
blocking.serve, shared with the gevent contender).

Every connection thread is started with the stack size set explicitly with
threading.stack_size (--thread-stack, default THREAD_STACK; the harness's
command line records it): what a thread costs is mostly its stack's touched
pages and the kernel's task, and where this contender stops (the thread or
pid limits, vm.max_map_count, the memory guard) is part of what it measures.
A thread that cannot be started (RuntimeError "can't start new thread") is
counted in accept_errors, its connection closed, and the listener paused and
retried like an fd shortage.

The worker's main thread is the acceptor and runs the worker's loop
interface (loops.py): a selector over the listening socket and a wake-up
pipe, timers, signals (Python runs handlers in the main thread; the wake-up
fd gets it out of select()). Connection threads touch the shared counters
under one lock and hand anything else (the listener's re-open below the
resume mark) to the main thread through the wake-up pipe.
"""
import collections
import errno
import heapq
import itertools
import os
import select
import selectors
import signal
import socket
import sys
import threading
import time

from . import blocking
from .protocol import set_bufs

# Default stack of a connection thread (glibc's default would be the 8 MiB
# of RLIMIT_STACK, of which only the touched pages cost memory).
THREAD_STACK = 256 * 1024
ACCEPT_BATCH = 64  # accepts per wake-up, as a loop's batch (asyncio: backlog; here bounded)
_RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _try_send(sock, data):
    return sock.send(data, socket.MSG_DONTWAIT)


class _Timer:
    __slots__ = ("cancelled",)

    def __init__(self):
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


class ThreadsBackend:
    """The worker's loop interface (loops.py) for a thread per connection."""

    def __init__(self, cfg, counters):
        self.cfg = cfg
        self.c = counters
        self.push = None  # --push is refused for this contender (cli.py)
        self.stack = getattr(cfg, "thread_stack", None) or THREAD_STACK
        threading.stack_size(self.stack)
        self.lock = threading.Lock()
        self.sel = selectors.DefaultSelector()
        self.rfd, self.wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.sel.register(self.rfd, selectors.EVENT_READ)
        signal.set_wakeup_fd(self.wfd, warn_on_full_buffer=False)
        self.posted = collections.deque()  # (fn, args) for the main thread
        self.timers = []                   # heap of (when, seq, timer, fn, args)
        self.seq = itertools.count()
        self.lsock = None
        self.conns = set()                 # open connection sockets (shutdown)
        self.running = False
        self.on_error = None
        self.bufs = cfg.sndbuf > 0 or cfg.rcvbuf > 0
        self.thread_failures = 0

    # -- connection threads ---------------------------------------------------
    def post(self, fn, *args):
        """Run fn(*args) in the main thread (callable from any thread)."""
        self.posted.append((fn, args))
        try:
            os.write(self.wfd, b"\0")
        except (BlockingIOError, OSError):
            pass  # the pipe is full: the main thread wakes up anyway

    def serve(self, sock):
        w = self.c
        try:
            blocking.serve(sock, w, self.cfg.max_pending, self.lock, _try_send, select.poll)
        finally:
            with self.lock:
                self.conns.discard(sock)
                w.open -= 1
                w.closed += 1
                low = w.open < w.resume_at
            if low:
                self.post(self._low)

    def _low(self):
        if self.c.open < self.c.resume_at:
            self.c.low()

    # -- accepting (main thread) ----------------------------------------------
    def _accept_batch(self):
        w = self.c
        for _ in range(ACCEPT_BATCH):
            ls = self.lsock
            if ls is None:
                return
            try:
                # the listener is non-blocking (this returns at once); the
                # accepted socket is blocking: accept4() without SOCK_NONBLOCK,
                # and socket.accept() gives it the default timeout (None)
                sock, _ = ls.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as e:
                with self.lock:
                    w.accept_errors += 1
                if e.errno in _RESOURCE_ERRNOS and self.on_error is not None:
                    self.on_error(None, {"message": "accept failed", "exception": e})
                return
            t = threading.Thread(target=self.serve, args=(sock,), daemon=True)
            with self.lock:
                self.conns.add(sock)
                w.open += 1
                w.accepted += 1
            try:
                t.start()
            except RuntimeError as e:  # can't start new thread: the limit of this design
                with self.lock:
                    self.conns.discard(sock)
                    w.open -= 1
                    w.accepted -= 1
                    w.accept_errors += 1
                sock.close()
                self.thread_failures += 1
                if self.thread_failures == 1 or self.thread_failures % 1000 == 0:
                    sys.stderr.write("py_server: threads: %s with %d connection threads of "
                                     "%d bytes of stack (%d failures so far)\n"
                                     % (e, w.open, self.stack, self.thread_failures))
                if self.on_error is not None:
                    # the worker pauses its listener and retries, as for EMFILE
                    self.on_error(None, {"message": "accept: can't start new thread",
                                         "exception": OSError(errno.ENOMEM, str(e))})
                return
            if w.open >= w.cap:
                w.at_cap()

    # -- loops.py interface ---------------------------------------------------
    def listen(self, cb):
        cfg = self.cfg
        try:
            family, stype, proto, _, addr = socket.getaddrinfo(
                cfg.host, cfg.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            ls = socket.socket(family, stype, proto)
            try:
                ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if self.bufs:  # inherited by every accepted socket
                    set_bufs(ls, cfg.sndbuf, cfg.rcvbuf)
                ls.bind(addr)
                ls.listen(cfg.backlog)
                ls.setblocking(False)
                self.sel.register(ls, selectors.EVENT_READ)
            except BaseException:
                ls.close()
                raise
        except OSError as e:
            cb(e)
            return
        self.lsock = ls
        cb(None)

    def close_server(self):
        ls, self.lsock = self.lsock, None
        if ls is not None:
            self.sel.unregister(ls)
            ls.close()

    def close_connections(self):
        # shutdown() wakes a thread blocked in recv/send/poll on the socket
        # (close() would not); the thread then closes it
        with self.lock:
            socks = list(self.conns)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def call_later(self, delay, fn, *args):
        t = _Timer()
        heapq.heappush(self.timers, (time.monotonic() + delay, next(self.seq), t, fn, args))
        return t

    def add_signal_handler(self, signum, fn, *args):
        # the handler runs in the main thread, possibly inside select(): run
        # fn from the loop, not from the handler
        signal.signal(signum, lambda *_: self.posted.append((fn, args)))

    def set_exception_handler(self, fn):
        self.on_error = fn

    def stop(self):
        self.running = False

    def run_forever(self):
        self.running = True
        while self.running:
            timeout = None
            if self.timers:
                timeout = max(0.0, self.timers[0][0] - time.monotonic())
            if self.posted:
                timeout = 0.0
            for key, _ in self.sel.select(timeout):
                if key.fileobj == self.rfd:
                    try:
                        while os.read(self.rfd, 4096):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                elif key.fileobj is self.lsock:
                    self._accept_batch()
            while self.posted and self.running:
                fn, args = self.posted.popleft()
                fn(*args)
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now and self.running:
                _, _, t, fn, args = heapq.heappop(self.timers)
                if not t.cancelled:
                    fn(*args)
        signal.set_wakeup_fd(-1)
