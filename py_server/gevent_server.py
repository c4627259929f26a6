"""gevent: gevent.server.StreamServer with a greenlet per connection, the way
gevent users write a TCP server (no monkey-patching: the handler gets
gevent's cooperative socket, and blocks in recv() and send() only its own
greenlet). The handler is blocking.serve, shared with the threads contender.

The backend gives the worker (worker.py) the loop calls it needs on gevent's
hub: timers (gevent.spawn_later), signals (gevent.signal_handler),
run_forever/stop (an Event the main greenlet waits on). The listening socket
is made here (SO_REUSEPORT: every worker has its own) and handed to a new
StreamServer each time the worker (re-)opens it; the connection greenlets
live in one gevent.pool.Group per worker, which is how a gevent server stops
its handlers at shutdown (Group.kill).
"""
import contextlib
import errno
import socket
import sys

from . import blocking
from .protocol import set_bufs
from .unavailable import Unavailable


def import_gevent():
    """gevent's modules, or Unavailable (exit status 3) with the reason."""
    try:
        import gevent
        import gevent.event
        import gevent.pool
        import gevent.select
        import gevent.server
    except Exception as e:  # ImportError, or a broken build
        raise Unavailable("gevent unavailable: %s: %s (python %s; Debian: apt-get install "
                          "python3-gevent)" % (type(e).__name__, e, sys.executable)) from None
    return gevent


_RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _try_send(sock, data):
    # gevent's send() waits for room unless its timeout is 0: then it raises
    # BlockingIOError like a non-blocking socket's
    return sock.send(data, 0, 0.0)


class GeventBackend:
    """The worker's loop interface (loops.py) on gevent's hub."""

    def __init__(self, cfg, counters):
        self.gevent = g = import_gevent()
        self.cfg = cfg
        self.c = counters
        self.push = None  # --push is refused for this contender (cli.py)
        self.group = g.pool.Pool()  # unbounded; StreamServer needs a Pool (a Group lacks its semaphore)
        self.server = None
        self.stopped = g.event.Event()
        self.on_error = None
        self.signals = []
        self.bufs = cfg.sndbuf > 0 or cfg.rcvbuf > 0
        self.nolock = contextlib.nullcontext()
        backend = self

        class Server(g.server.StreamServer):
            def do_read(self):
                # Counted at accept time, not when the handler's greenlet first
                # runs: StreamServer accepts up to max_accept connections per
                # wake-up before any handler runs, and the cap must hold.
                c = backend.c
                if c.open >= c.cap:
                    return None  # full: the worker closes the listener (below)
                try:
                    args = super().do_read()
                except OSError as e:
                    # gevent retries a failed accept() itself (with a growing
                    # delay); the worker counts it, and pauses at EMFILE & co.
                    c.accept_errors += 1
                    if e.errno in _RESOURCE_ERRNOS and backend.on_error is not None:
                        self.loop.run_callback(backend.on_error, None,
                                               {"message": "accept failed", "exception": e})
                        return None
                    raise
                if args:
                    c.open += 1
                    c.accepted += 1
                    if c.open >= c.cap:
                        # not from inside the accept loop: close() drops what
                        # the loop uses next
                        self.loop.run_callback(backend.at_cap)
                return args

            def do_handle(self, sock, address):
                # StreamServer's own do_handle closes the socket in the
                # handler's finally, which a handler killed before it
                # started never runs; a link callback always does
                try:
                    g = self._spawn(backend.handle, sock, address)
                except BaseException:
                    backend.handle_done(sock)
                    raise
                g.link(lambda _g: backend.handle_done(sock))

        self.Server = Server

    # -- the connection handler ---------------------------------------------
    def at_cap(self):
        if self.c.open >= self.c.cap:
            self.c.at_cap()

    def handle(self, sock, address):
        # open and accepted were counted at accept (Server.do_read); the
        # count goes down in handle_done
        blocking.serve(sock, self.c, self.cfg.max_pending, self.nolock, _try_send,
                       self.gevent.select.poll)

    def handle_done(self, sock):
        # A link callback, not a finally in handle: Pool.kill at shutdown
        # stops handlers that have not started yet, whose code never runs.
        sock.close()  # already closed when the handler ran
        w = self.c
        w.open -= 1
        w.closed += 1
        if w.open < w.resume_at:
            w.low()

    # -- loops.py interface ---------------------------------------------------
    def listen(self, cb):
        cfg = self.cfg
        try:
            family, stype, proto, _, addr = socket.getaddrinfo(
                cfg.host, cfg.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            lsock = socket.socket(family, stype, proto)
            try:
                lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if self.bufs:  # inherited by every accepted socket
                    set_bufs(lsock, cfg.sndbuf, cfg.rcvbuf)
                lsock.bind(addr)
                lsock.listen(cfg.backlog)
                lsock.setblocking(False)
                server = self.Server(lsock, self.handle, spawn=self.group)
                server.start()
            except BaseException:
                lsock.close()
                raise
        except OSError as e:
            cb(e)
            return
        self.server = server
        cb(None)

    def close_server(self):
        s, self.server = self.server, None
        if s is not None:
            s.close()  # stops accepting and closes the listening socket

    def close_connections(self):
        self.group.kill(block=False)  # GreenletExit in each handler: it closes its socket

    def call_later(self, delay, fn, *args):
        return self.gevent.spawn_later(delay, fn, *args)

    def add_signal_handler(self, signum, fn, *args):
        self.signals.append(self.gevent.signal_handler(signum, fn, *args))

    def run_forever(self):
        self.stopped.wait()

    def stop(self):
        self.stopped.set()

    def set_exception_handler(self, fn):
        self.on_error = fn
