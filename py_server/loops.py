"""Choose and make the event loop, create the server on it, run and stop it.

Three loops behind one small interface (what the worker needs):

    b = make_backend(cfg, counters)
    b.listen(cb)              # create the server; cb(None) on success, cb(exc)
    b.close_server()          # close the listening socket (FULL, or stopping)
    b.close_connections()     # close every connection (shutdown)
    b.call_later(s, fn)  b.add_signal_handler(sig, fn)  b.run_forever()  b.stop()
    b.push                    # the push schedule (push.Schedule), None without --push

asyncio and uvloop: loop.create_server / asyncio.start_server (coroutines;
listen() runs them to completion before the loop runs, as a task after).
c1m: the extension's synchronous Loop.create_server, using only the subset of
the asyncio API the extension documents.
"""
import asyncio
import gc
import glob
import os
import sys

from . import streams
from .protocol import CounterHooks, Counters, LineProtocol, LineProtocolNoSlots, listen_socket
from .push import PushProtocol, Schedule
from .unavailable import Unavailable

# the protocol classes a worker serves with (shutdown finds them by type)
PROTOCOLS = (LineProtocol, PushProtocol, LineProtocolNoSlots)


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_uvloop():
    try:
        import uvloop
    except Exception as e:  # ImportError, or a broken build
        raise Unavailable("uvloop unavailable: %s: %s (python %s; Debian: apt-get install "
                          "python3-uvloop)" % (type(e).__name__, e, sys.executable)) from None
    return uvloop


def c1m_search_dirs():
    """Where `make pyext` may leave the extension, after $C1M_PYEXT_PATH."""
    dirs = [d for d in os.environ.get("C1M_PYEXT_PATH", "").split(os.pathsep) if d]
    for sub in ("build/pyext", "build", "pyext", "pyext/build"):
        dirs.append(os.path.join(REPO, sub))
    dirs.extend(sorted(glob.glob(os.path.join(REPO, "pyext", "build", "lib*"))))
    return dirs


def import_c1m():
    try:
        import c1m
        return c1m
    except ModuleNotFoundError as e:
        first = e  # not on sys.path: look where the build puts it
    except ImportError as e:  # there, but broken: say so, do not look further
        raise Unavailable("c1m extension unavailable: %s (build it with `make pyext`)" % e) \
            from None
    for d in c1m_search_dirs():
        if glob.glob(os.path.join(d, "c1m*.so")) and d not in sys.path:
            sys.path.insert(0, d)
            try:
                import c1m
                return c1m
            except ImportError as e:
                first = e
                sys.path.remove(d)
    raise Unavailable("c1m extension unavailable: %s (build it with `make pyext`; searched "
                      "sys.path and %s)" % (first, ", ".join(c1m_search_dirs())))


def check_available(loop_name):
    """Import the loop's module in the parent, before forking: fail once, clearly."""
    if loop_name == "uvloop":
        import_uvloop()
    elif loop_name == "c1m":
        import_c1m()
    elif loop_name == "gevent":
        from .gevent_server import import_gevent
        import_gevent()


class _LoopCalls:
    """The loop calls a worker makes, identical on every backend's self.loop."""

    def _setup_push(self, cfg):
        """The push schedule and the protocol class (LineProtocol without
        --push: its instances stay as small as without the feature; without
        its __slots__ under --slots off)."""
        push_on = getattr(cfg, "push", 0)
        self.push = Schedule(self.loop, cfg.push_every, cfg.push_burst) if push_on else None
        if self.push is not None:
            PushProtocol.configure_push(self.push, cfg.push, getattr(cfg, "push_flow", "honour"))
            return PushProtocol
        return LineProtocolNoSlots if getattr(cfg, "slots", "on") == "off" else LineProtocol

    def call_later(self, delay, fn, *args):
        return self.loop.call_later(delay, fn, *args)

    def add_signal_handler(self, signum, fn, *args):
        self.loop.add_signal_handler(signum, fn, *args)

    def run_forever(self):
        self.loop.run_forever()

    def stop(self):
        self.loop.stop()


class AsyncioBackend(_LoopCalls):
    """asyncio's default (selector) loop or uvloop's; streams or protocol API."""

    def __init__(self, cfg, counters):
        self.cfg = cfg
        self.counters = counters
        self.selector = cfg.loop != "uvloop"
        if self.selector:
            self.loop = asyncio.new_event_loop()
        else:
            self.loop = import_uvloop().new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.server = None
        self.protocol = self._setup_push(cfg)
        # sndbuf/rcvbuf 0: the listener carries them (_create) and every accepted
        # socket inherits them; set again per accept, they cost two setsockopt()
        # on the accept path for nothing
        if cfg.api == "streams":
            self.handler = streams.make_handler(counters, cfg.max_pending, 0, 0,
                                                self.push, getattr(cfg, "push", 0),
                                                getattr(cfg, "push_flow", "honour"))
        else:
            self.protocol.configure(counters, cfg.max_pending, 0, 0, self.loop)

    async def _create(self):
        cfg = self.cfg
        # --sndbuf/--rcvbuf on the listener before listen(), as every contender
        # (the window scale is negotiated for the buffer the listener has)
        sock = listen_socket(cfg.host, cfg.port, cfg.sndbuf, cfg.rcvbuf)
        try:
            if cfg.api == "streams":
                return await streams.start_server(self.handler, sock, cfg.backlog)
            return await self.loop.create_server(self.protocol, sock=sock, backlog=cfg.backlog)
        except BaseException:
            sock.close()
            raise

    def listen(self, cb):
        if not self.loop.is_running():
            try:
                self.server = self.loop.run_until_complete(self._create())
            except OSError as e:
                cb(e)
                return
            cb(None)
            return

        def done(task):
            exc = asyncio.CancelledError() if task.cancelled() else task.exception()
            if exc is None:
                self.server = task.result()
            cb(exc)

        self.loop.create_task(self._create()).add_done_callback(done)

    def close_server(self):
        s, self.server = self.server, None
        if s is None:
            return
        if not self.selector:
            s.close()  # uvloop: transports are made at accept time, nothing is pending
            return
        # asyncio (3.11) sets an accepted connection up in a task one or two
        # loop iterations after accept(), and Server._attach() asserts that
        # the server is not closed: Server.close() under a pending set-up fails
        # that connection and leaks its socket. And at EMFILE its accept batch
        # loop goes on calling accept() up to `backlog` times unless the
        # listening socket is gone. So close the listening sockets themselves,
        # now (remove the reader, detach, close the fd: the kernel resets or,
        # with tcp_migrate_req=1, migrates its queue), and leave the Server
        # object open for the set-ups still pending; it is dropped after.
        raw = getattr(s, "_sockets", None)
        if not isinstance(raw, list):
            s.close()  # not the asyncio this was written against: the plain way
            return
        for sock in raw:
            fd = sock.fileno()
            if fd < 0:
                continue
            try:
                self.loop.remove_reader(fd)
            except (OSError, ValueError):
                pass
            os.close(sock.detach())

    def close_connections(self):
        if self.cfg.api == "streams":
            # Cancel every handler: each closes its writer in its `finally`.
            for task in asyncio.all_tasks(self.loop):
                if getattr(task.get_coro(), "__name__", "") == "handle_conn":
                    task.cancel()
        else:
            close_protocols()

    def set_exception_handler(self, fn):
        self.loop.set_exception_handler(fn)


class C1mBackend(_LoopCalls):
    """The CPython extension's loop (pyext/): c1m.Loop().

    Its transports expose no socket object (get_extra_info("socket") is None),
    so per-connection SO_SNDBUF/SO_RCVBUF are handed to create_server, which
    sets them on each accepted fd in C as c1m-server does, when the extension
    takes those keywords; otherwise (the documented minimal subset) they are
    left at the kernel defaults and a note is printed."""

    def __init__(self, cfg, counters):
        self.cfg = cfg
        self.counters = counters
        self.loop = import_c1m().Loop()
        self.server = None
        self.bufs_kw = cfg.sndbuf > 0 or cfg.rcvbuf > 0
        self.protocol = self._setup_push(cfg)
        # The protocol's own get_extra_info("socket") path would find None.
        self.protocol.configure(counters, cfg.max_pending, 0, 0, self.loop)

    def _create(self):
        cfg = self.cfg
        if self.bufs_kw:
            try:
                return self.loop.create_server(self.protocol, cfg.host, cfg.port,
                                               backlog=cfg.backlog, reuse_port=True,
                                               sndbuf=cfg.sndbuf, rcvbuf=cfg.rcvbuf)
            except TypeError:
                self.bufs_kw = False
                sys.stderr.write("py_server: note: c1m.Loop.create_server takes no sndbuf/"
                                 "rcvbuf: connections keep the kernel's buffer sizes\n")
        return self.loop.create_server(self.protocol, cfg.host, cfg.port, backlog=cfg.backlog,
                                       reuse_port=True)

    def listen(self, cb):
        try:
            self.server = self._create()
        except OSError as e:
            cb(e)
            return
        cb(None)

    def close_server(self):
        s, self.server = self.server, None
        if s is not None:
            s.close()

    def close_connections(self):
        close_protocols()

    def set_exception_handler(self, fn):
        seh = getattr(self.loop, "set_exception_handler", None)
        if seh is not None:
            seh(fn)



def close_protocols():
    """Close the transport of every live LineProtocol. The protocols are found
    through the garbage collector's list of tracked objects, so that no
    per-connection registry (a set entry per connection) is paid for the one
    moment it is needed: shutdown."""
    n = 0
    for obj in gc.get_objects():
        if type(obj) in PROTOCOLS:
            t = getattr(obj, "t", None)
            if t is not None and not t.is_closing():
                t.close()
                n += 1
    return n


def abort_protocols():
    """Abort what close() left open (peers that do not read keep output
    queued); the replies dropped leave the pongs (pushed) counter. The
    streams handlers' connections too (streams.abort_handlers)."""
    for obj in gc.get_objects():
        if type(obj) in PROTOCOLS:
            if getattr(obj, "t", None) is not None:
                obj.drop()
    streams.abort_handlers()


_native_counters = []


def native_counters_type():
    """Counters on the extension's c1m.Counters (ints the loop's C timer
    publishes, worker.py), or None when the extension lacks it."""
    if not _native_counters:
        try:
            base = getattr(import_c1m(), "Counters", None)
        except Unavailable:
            return None  # make_backend says why
        _native_counters.append(None if base is None else type(
            "NativeCounters", (base, CounterHooks),
            {"__slots__": CounterHooks.CAP_SLOTS, "__init__": CounterHooks.init_cap,
             "__doc__": "protocol.Counters on c1m.Counters."}))
    return _native_counters[0]


def make_counters(cfg, cap):
    """The counters a worker's protocols update: c1m.Counters on the c1m loop
    (published from C), plain Python ints elsewhere."""
    cls = native_counters_type() if cfg.loop == "c1m" else None
    return (cls or Counters)(cap)


def make_backend(cfg, counters):
    if cfg.loop == "c1m":
        return C1mBackend(cfg, counters)
    if cfg.loop == "gevent":  # a greenlet per connection (gevent_server.py)
        from .gevent_server import GeventBackend
        return GeventBackend(cfg, counters)
    if cfg.loop == "threads":  # a thread per connection (threads_server.py)
        from .threads_server import ThreadsBackend
        return ThreadsBackend(cfg, counters)
    return AsyncioBackend(cfg, counters)
