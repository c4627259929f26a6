"""The line protocol of every c1m server, and the one asyncio.Protocol class
that the asyncio, uvloop and c1m (pyext) contenders share.

Wire rules (DEVELOPERS.md "Wire protocol", c_server/lib/lineproto.c): lines end
with b"\\n"; b"ping\\n" is answered b"pong\\n"; every complete line is counted
in `lines`, every reply in `pongs`; a line longer than MAX_LINE bytes (without
its newline) closes the connection (`oversized`), detected as soon as the
partial line passes the limit; more than `max_pending` reply bytes waiting in
the transport closes it too (`slow`).

Per connection the protocol keeps two slots: the transport and one small int
describing the current partial line (its length, plus NOT_PING when it can no
longer be "ping"). Only "ping" means anything, so nothing of a line is buffered.
"""
import asyncio
import socket

MAX_LINE = 1024
PING = b"ping"
PING_NL = b"ping\n"
PONG = b"pong\n"

# LineProtocol.n / feed() state: the partial line's length, | NOT_PING once the
# line is not a prefix of b"ping"; CLOSED once the connection was closed by us.
NOT_PING = 1 << 12
LEN_MASK = NOT_PING - 1
CLOSED = -1


def feed(data, n):
    """Scan received bytes.

    n is the state of the current partial line (see NOT_PING). Returns
    (n, lines, pings): the new state, the complete lines seen and how many of
    them were exactly b"ping". n is CLOSED when a line exceeded MAX_LINE; lines
    and pings then count the lines completed before it (as the C server does).
    """
    lines = pings = 0
    start = 0
    size = len(data)
    find = data.find
    while start < size:
        nl = find(b"\n", start)
        seg = (size if nl < 0 else nl) - start
        length = (n & LEN_MASK) + seg
        if length > MAX_LINE:
            return CLOSED, lines, pings
        if nl < 0:
            # partial line: remember its length and whether it can still be "ping"
            if n < NOT_PING and (length > 4 or not data.startswith(PING[n:length], start)):
                return length | NOT_PING, lines, pings
            return length | (n & NOT_PING), lines, pings
        lines += 1
        if length == 4 and n < NOT_PING and data.startswith(PING[n:], start):
            pings += 1
        n = 0
        start = nl + 1
    return n, lines, pings


class Counters:
    """A worker's counters as plain ints, plus its connection cap.

    The protocol (or the streams handler) updates them; the worker publishes
    them to the counters file from a timer. on_cap() is called when `open`
    reaches `cap`; on_low() when it falls below `resume_at` (which the worker
    sets only while its listener is closed, -1 otherwise)."""

    __slots__ = ("open", "accepted", "closed", "slow", "lines", "pongs", "oversized",
                 "accept_errors", "cap", "resume_at", "on_cap", "on_low")

    def __init__(self, cap=1 << 62):
        self.open = self.accepted = self.closed = self.slow = 0
        self.lines = self.pongs = self.oversized = self.accept_errors = 0
        self.cap = cap
        self.resume_at = -1
        self.on_cap = self.on_low = None

    def at_cap(self):
        if self.on_cap is not None:
            self.on_cap()

    def low(self):
        if self.on_low is not None:
            self.on_low()

    def as_dict(self):
        return {k: getattr(self, k) for k in ("open", "accepted", "closed", "slow", "lines",
                                              "pongs", "oversized", "accept_errors")}


def set_bufs(sock, sndbuf, rcvbuf):
    """SO_SNDBUF / SO_RCVBUF on an accepted socket (values > 0 only). A loop
    that does not expose the socket (None) is skipped; failures are not fatal."""
    if sock is None:
        return False
    try:
        if sndbuf > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        if rcvbuf > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    except (OSError, AttributeError):
        return False
    return True


def abort(transport):
    """Close now, dropping queued output (asyncio/uvloop abort()); a transport
    without abort() (the c1m subset) is closed."""
    a = getattr(transport, "abort", None)
    if a is not None:
        a()
    else:
        transport.close()


class LineProtocol(asyncio.Protocol):
    """One connection. Uses only the transport methods the c1m loop provides:
    write, close, is_closing, get_write_buffer_size, get_extra_info (and
    abort when the transport has it).

    Configuration is per process, on the class (the class itself is the
    protocol factory): see configure()."""

    __slots__ = ("t", "n")

    W = Counters()
    max_pending = 4096
    sndbuf = 4096
    rcvbuf = 4096
    bufs = True  # sndbuf > 0 or rcvbuf > 0

    @classmethod
    def configure(cls, counters, max_pending=4096, sndbuf=4096, rcvbuf=4096):
        cls.W = counters
        cls.max_pending = max_pending
        cls.sndbuf = sndbuf
        cls.rcvbuf = rcvbuf
        cls.bufs = sndbuf > 0 or rcvbuf > 0

    def connection_made(self, transport):
        self.t = transport
        self.n = 0
        w = self.W
        w.open += 1
        w.accepted += 1
        if self.bufs:
            set_bufs(transport.get_extra_info("socket"), self.sndbuf, self.rcvbuf)
        if w.open >= w.cap:
            w.at_cap()

    def data_received(self, data):
        n = self.n
        if n == 0 and data == PING_NL:  # the heartbeat: the common case
            lines = pings = 1
        elif n < 0:  # closed by us, or lost: ignore late data
            return
        else:
            n, lines, pings = feed(data, n)
            self.n = n
        w = self.W
        w.lines += lines
        if pings:
            w.pongs += pings
        if n < 0:
            w.oversized += 1
            self.t.close()
            return
        if pings:
            t = self.t
            t.write(PONG if pings == 1 else PONG * pings)
            if t.get_write_buffer_size() > self.max_pending:
                w.slow += 1
                self.n = CLOSED
                abort(t)

    def eof_received(self):
        # The peer is done: close (returning a false value makes asyncio and
        # uvloop close too; closing here does not depend on that).
        self.n = CLOSED
        t = self.t
        if t is not None:
            t.close()
        return False

    def connection_lost(self, exc):
        self.t = None
        self.n = CLOSED
        w = self.W
        w.open -= 1
        w.closed += 1
        if w.open < w.resume_at:
            w.low()
