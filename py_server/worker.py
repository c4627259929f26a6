"""One worker process: its loop, its SO_REUSEPORT listener with the
connection cap, its record in the counters file, and a clean stop.

States (stats.py): STARTING -> LISTENING <-> FULL -> STOPPING -> EXITED.
At `cap` open connections the worker closes its listening socket (FULL; with
net.ipv4.tcp_migrate_req=1 the kernel moves the connections queued on it to
the other workers) and re-creates it once fewer than cap - cap/10 are open, as
the C server's listener does. accept() running out of fds (EMFILE...) closes
it too, with a retry every 100 ms while below that mark.

Python loops accept in batches (asyncio: up to `backlog` accepts per wakeup,
uvloop/libuv: until EAGAIN) and report a connection to the protocol one loop
iteration later, so `open` can pass the cap by what one batch held; the fds
reserved below RLIMIT_NOFILE absorb that, and past them the loop's own EMFILE
handling applies (counted in accept_errors).
"""
import errno
import os
import signal
import sys
import time

from . import stats as st
from .loops import abort_protocols, make_backend, make_counters

PUBLISH_S = 0.05        # the counters file is refreshed at 20 Hz (c1m-server's rate)
EMFILE_RETRY_S = 0.1
STOP_GRACE_S = 2.0      # connections still open this long after SIGTERM are aborted
ABORT_S = 0.5           # then the loop runs this long at most, for their close to be counted
_RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


CLOSED, OPENING, OPEN = range(3)


def resume_mark(cap):
    """The open count below which a full worker listens again: 90% of the cap,
    one below it for small caps, but never 0 (a cap of 1 would stay full for
    good). The same rule as c_server/lib/listener.c."""
    r = cap - cap // 10
    return cap - 1 if r >= cap and cap > 1 else r


class Worker:
    def __init__(self, cfg, statsfile, index, log=None):
        self.cfg = cfg
        self.sf = statsfile
        self.index = index
        self.pid = os.getpid()
        self.c = make_counters(cfg, cfg.worker_conns)
        self.c.on_cap = self.on_cap
        self.c.on_low = self.on_low
        # On the c1m loop the counters are c1m.Counters that the loop publishes
        # from a C timer (pyext/counters_type.c says why); elsewhere tick()
        # publishes them from Python.
        self.native = statsfile is not None and hasattr(self.c, "attach")
        if self.native:
            statsfile.attach(index, self.c)
            self.c.pid = self.pid
        self.state = st.STARTING
        self.backend = None
        self.ls = CLOSED
        self.want_open = False
        self.stopping = False
        self.aborted = False
        self.stop_deadline = 0.0
        self.retry = None
        self.startup_error = None
        self.errors_shown = 0
        self.log = log or (lambda msg: sys.stderr.write("py_server: %s\n" % msg))

    # -- counters file ----------------------------------------------------
    def publish(self):
        if self.native:
            self.c.state = self.state
            self.c.publish()
        elif self.sf is not None:
            self.sf.publish(self.index, self.pid, self.state, self.c)

    def set_state(self, state):
        self.state = state
        self.publish()

    def tick(self):
        """The Python timer: publishes (unless the loop does it in C) and,
        once stopping, ends the loop when every connection is gone or the
        grace period is over."""
        if not self.native:
            self.publish()
        if self.stopping:
            if self.c.open <= 0:
                self.backend.stop()
                return
            if time.monotonic() >= self.stop_deadline:
                if self.aborted:
                    self.backend.stop()
                    return
                # the connections' connection_lost() (and a streams handler's
                # close) come a few loop passes after the abort: the loop runs
                # on a little, until they are all counted closed or ABORT_S
                abort_protocols()
                self.aborted = True
                self.stop_deadline = time.monotonic() + ABORT_S
        self.backend.call_later(PUBLISH_S, self.tick)

    # -- listener and cap -------------------------------------------------
    # self.ls: CLOSED, OPENING (asyncio: create_server task pending) or OPEN;
    # self.want_open: what the worker wants once an OPENING settles.
    def start_listening(self):
        self.want_open = True
        self.c.resume_at = -1
        if self.ls == CLOSED:
            self.ls = OPENING
            self.backend.listen(self.on_listening)

    def on_listening(self, exc):
        if self.stopping:
            if exc is None:
                self.backend.close_server()
            self.ls = CLOSED
            return
        if exc is not None:
            self.ls = CLOSED
            if self.state == st.STARTING:
                self.startup_error = exc
                return
            # Re-opening failed (EMFILE...): the next close or the timer retries.
            self.c.accept_errors += 1
            self.pause(retry=True)
            return
        if not self.want_open:
            self.backend.close_server()
            self.ls = CLOSED
            return
        self.ls = OPEN
        self.set_state(st.LISTENING)
        if self.c.open >= self.c.cap:
            self.on_cap()

    def close_listener(self):
        self.want_open = False
        if self.ls == OPEN:
            self.backend.close_server()
            self.ls = CLOSED
        # OPENING: on_listening closes it when it lands

    def pause(self, retry=False):
        """Close the listener (FULL) until open < the resume mark (or a retry)."""
        self.close_listener()
        self.c.resume_at = resume_mark(self.c.cap)
        if self.state in (st.LISTENING, st.FULL):
            self.set_state(st.FULL)
        if retry and self.retry is None and self.c.open < self.c.resume_at:
            self.retry = self.backend.call_later(EMFILE_RETRY_S, self.on_retry)

    def on_cap(self):
        if self.ls == OPEN and not self.stopping:
            self.pause()

    def on_low(self):
        if not self.want_open and not self.stopping:
            self.start_listening()

    def on_retry(self):
        self.retry = None
        if not self.want_open and not self.stopping and self.c.open < resume_mark(self.c.cap):
            self.start_listening()

    def on_loop_exception(self, loop, ctx):
        exc = ctx.get("exception")
        msg = ctx.get("message", "")
        if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRNOS and (
                "accept" in msg or "listen" in msg):
            # asyncio: "socket.accept() out of system resource"; uvloop: an
            # error status in the listen callback. Stop accepting, retry later.
            self.c.accept_errors += 1
            self.pause(retry=True)
            return
        if self.ls != OPEN and isinstance(exc, (OSError, ValueError)):
            h = ctx.get("handle")
            cb = getattr(getattr(h, "_callback", None), "__name__", "")
            if h is not None and (h.cancelled() or cb in ("_accept_connection", "_start_serving")):
                # asyncio's accept batch running on after the pause above shut
                # its listener down (EINVAL), or its 1 s EMFILE retry firing on
                # the closed socket (fd -1): expected, nothing to do.
                return
        self.errors_shown += 1
        if self.errors_shown <= 10 or self.errors_shown % 1000 == 0:
            self.log("worker %d: %s: %r (%d so far)" % (self.index, msg, exc, self.errors_shown))

    # -- stop -------------------------------------------------------------
    def on_stop_signal(self, *_):
        if self.stopping:
            return
        self.stopping = True
        self.c.cap = 1 << 62
        self.c.resume_at = -1
        self.set_state(st.STOPPING)
        if self.backend.push is not None:
            self.backend.push.stop()
        self.close_listener()
        self.stop_deadline = time.monotonic() + STOP_GRACE_S
        self.backend.close_connections()
        # tick() stops the loop once every connection_lost has run
        if self.native:  # (else it is running already)
            self.backend.call_later(PUBLISH_S, self.tick)

    # -- body -------------------------------------------------------------
    def run(self, early_stop=None, on_ready=None):
        """Returns the exit status. early_stop() tells whether a stop signal
        arrived before the loop's handlers were installed; on_ready() runs once
        the worker listens, before the loop starts (py_server.anatomy uses it)."""
        try:
            return self._run(early_stop, on_ready)
        finally:
            if self.native:  # (the loop's C timer then writes nothing)
                self.c.detach()  # no exported buffer: the counters file can close

    def _run(self, early_stop, on_ready):
        self.publish()
        self.startup_error = None
        self.backend = b = make_backend(self.cfg, self.c)
        b.set_exception_handler(self.on_loop_exception)
        for sig in (signal.SIGTERM, signal.SIGINT):
            b.add_signal_handler(sig, self.on_stop_signal)
        if b.push is not None:
            b.add_signal_handler(signal.SIGUSR1, b.push.broadcast)  # one push to all now
        self.start_listening()
        if self.startup_error is not None:
            e = self.startup_error
            self.log("worker %d: listen on %s:%d: %s" % (
                self.index, self.cfg.host, self.cfg.port, e.strerror or e))
            self.set_state(st.FAILED)
            return 1
        if self.native:
            b.loop.publish_counters(self.c, PUBLISH_S)
        else:
            b.call_later(PUBLISH_S, self.tick)
        if b.push is not None:
            b.push.start()
        if on_ready is not None:
            on_ready()
        if early_stop is not None and early_stop():
            self.on_stop_signal()
        b.run_forever()
        self.set_state(st.EXITED)
        return 0
