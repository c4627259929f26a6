"""The line protocol of every c1m server, and the one asyncio.Protocol class
that the asyncio, uvloop and c1m (pyext) contenders share.

Wire rules (DEVELOPERS.md "Wire protocol", c_server/lib/lineproto.c): lines end
with b"\\n"; b"ping\\n" is answered b"pong\\n"; every complete line is counted
in `lines`, every reply in `pongs`; a line longer than MAX_LINE bytes (without
its newline) closes the connection (`oversized`), detected as soon as the
partial line passes the limit, after the replies to the lines before it were
written (close() sends them before closing).

The slow cutoff: more than `max_pending` reply bytes that the peer has not
taken after the server tried to send them close the connection (`slow`).
The C server calls send() until EAGAIN and judges what is left. A Python
transport sends once per write() or EPOLLOUT (uvloop: at the end of the
iteration) and keeps the rest, so what is queued right after a write says
little: one write may be larger than one send() takes while the peer reads
all along. So once a write leaves more than `max_pending` queued, the server
stops reading from that peer and looks at the backlog each time the
transport has had its next chance to send (after_next_send, next_send):
back within the bound, it reads again; smaller than at the last look, the
peer is taking it; not smaller, the kernel took nothing. A socket can refuse
for a while although the peer reads (its ACK comes late: delayed ACK, up to
200 ms), where the C server's send() would have found room when the peer's
next data brought the ACK: so one more look after STALL_S, and a backlog that
still did not shrink is a slow peer (backlog_verdict).

`pongs` counts the replies handed to the transport and not discarded
(discard()), as the C server counts the replies handed to the kernel.
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

# backlog_verdict()
DRAINED, DRAINING, STALLED, SLOW = range(4)
STALL_S = 0.25  # > the 200 ms minimum delayed ACK / retransmission timeout


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


class CounterHooks:
    """The connection cap's callbacks, for Counters and for the extension's
    native counters (loops.native_counters_type): on_cap() is called when
    `open` reaches `cap`; on_low() when it falls below `resume_at` (which the
    worker sets only while its listener is closed, -1 otherwise)."""

    __slots__ = ()
    CAP_SLOTS = ("cap", "resume_at", "on_cap", "on_low")
    FIELDS = ("open", "accepted", "closed", "slow", "lines", "pongs", "oversized",
              "accept_errors", "pushed")

    def init_cap(self, cap):
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
        return {k: getattr(self, k) for k in self.FIELDS}


class Counters(CounterHooks):
    """A worker's counters as plain ints, plus its connection cap.

    The protocol (or the streams handler) updates them; the worker publishes
    them to the counters file from a timer (worker.py)."""

    __slots__ = CounterHooks.FIELDS + CounterHooks.CAP_SLOTS

    def __init__(self, cap=1 << 62):
        self.open = self.accepted = self.closed = self.slow = 0
        self.lines = self.pongs = self.oversized = self.accept_errors = self.pushed = 0
        self.init_cap(cap)


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


def listen_socket(host, port, sndbuf, rcvbuf):
    """The listening socket asyncio's create_server would make (the first
    address host resolves to, SO_REUSEADDR, SO_REUSEPORT, IPv6 only on an IPv6
    address), bound, with SO_SNDBUF / SO_RCVBUF set before listen(): accepted
    sockets inherit them, and the window scale a handshake negotiates follows
    the receive buffer the listener has then (set after the handshake, a
    small buffer keeps the default buffer's scale: a peer sending a burst
    waited 11-12 s for its pong). The caller hands it to create_server or
    start_server (sock=), which listen()s."""
    af, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                  flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(af, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if af == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        set_bufs(sock, sndbuf, rcvbuf)
        sock.bind(addr)
    except BaseException:
        sock.close()
        raise
    return sock


def abort(transport):
    """Close now, dropping queued output (asyncio/uvloop abort()); a transport
    without abort() (the c1m subset) is closed."""
    a = getattr(transport, "abort", None)
    if a is not None:
        a()
    else:
        transport.close()


def after_next_send(loop, fn, *args):
    """Call fn(*args) once the transports have had their next chance to send
    what they hold: two hops through the loop's ready queue. Every loop runs
    the callbacks queued before an iteration's poll ahead of that poll's I/O
    callbacks (asyncio and c1m run them first in the iteration, uvloop in its
    idle phase; a transport retries sending on the poll's EPOLLOUT, uvloop
    also sends queued writes at the end of the iteration): the first hop runs
    before the next poll, the second after it."""
    loop.call_soon(loop.call_soon, fn, *args)


async def next_send():
    """after_next_send for a coroutine: two hops (sleep(0) reschedules the
    task through the ready queue)."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def backlog_verdict(queued, before, stalled, max_pending):
    """The slow cutoff on a backlog of `queued` bytes that was `before` bytes
    at the last look, nothing having been written since, the transport having
    had its chance to send in between; `stalled`: the last look said STALLED.
    DRAINED: within the bound (read again). DRAINING: over it, the peer took
    some (look again after the next chance: after_next_send / next_send).
    STALLED: over it, nothing taken (look again after STALL_S). SLOW: over
    it, nothing taken in STALL_S either."""
    if queued <= max_pending:
        return DRAINED
    if queued < before:
        return DRAINING
    return SLOW if stalled else STALLED


async def backlog_drained(t, max_pending):
    """The slow cutoff for a coroutine whose write left more than max_pending
    bytes queued in t, and which reads nothing meanwhile: look at the backlog
    after each next chance to send (backlog_verdict). True once back within
    the bound, False when the peer is slow."""
    queued = t.get_write_buffer_size()
    verdict = DRAINING
    while verdict == DRAINING or verdict == STALLED:
        if verdict == DRAINING:
            await next_send()
        else:
            await asyncio.sleep(STALL_S)
        before, queued = queued, t.get_write_buffer_size()
        verdict = backlog_verdict(queued, before, verdict == STALLED, max_pending)
    return verdict == DRAINED


def discard(t, w):
    """Abort t, dropping its queued output, and take the replies dropped out
    of w.pongs (a reply partly sent was not sent)."""
    w.pongs -= (t.get_write_buffer_size() + len(PONG) - 1) // len(PONG)
    abort(t)


# The hot paths' copy of the configuration (LineProtocol.configure() writes
# both): CPython 3.11 specializes a global's load (LOAD_GLOBAL_MODULE) but not
# that of a class attribute through an instance with __slots__ (`self.W` takes
# the generic lookup): 230 of the ~3,100 instructions the c1m loop spent per
# accepted connection, 110 per connection_lost (callgrind; pyext/README.md).
_W = Counters()
_BUFS = True
_MAX_PENDING = 4096


class LineProtocol(asyncio.Protocol):
    """One connection. Uses only the transport methods the c1m loop provides:
    write, close, is_closing, get_write_buffer_size, get_extra_info,
    pause_reading, resume_reading (and abort when the transport has it).

    Configuration is per process, on the class (the class itself is the
    protocol factory): see configure()."""

    __slots__ = ("t", "n")

    W = _W
    loop = None  # for after_next_send
    max_pending = 4096
    sndbuf = 4096
    rcvbuf = 4096
    bufs = True  # sndbuf > 0 or rcvbuf > 0

    @classmethod
    def configure(cls, counters, max_pending=4096, sndbuf=4096, rcvbuf=4096, loop=None):
        cls.W = counters
        cls.max_pending = max_pending
        cls.sndbuf = sndbuf
        cls.rcvbuf = rcvbuf
        cls.bufs = sndbuf > 0 or rcvbuf > 0
        cls.loop = loop
        global _W, _BUFS, _MAX_PENDING
        _W, _BUFS, _MAX_PENDING = counters, cls.bufs, max_pending

    def connection_made(self, transport):
        self.t = transport
        self.n = 0
        w = _W
        w.open += 1
        w.accepted += 1
        if _BUFS:
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
        w = _W
        w.lines += lines
        if pings:
            w.pongs += pings
            t = self.t
            t.write(PONG if pings == 1 else PONG * pings)
            if n >= 0:
                queued = t.get_write_buffer_size()
                if queued > _MAX_PENDING:
                    # the slow cutoff (module docstring): no more reading
                    # until the backlog is judged
                    t.pause_reading()
                    after_next_send(self.loop, self.check_backlog, queued, False)
        if n < 0:
            # oversized: close() sends the replies written above first
            w.oversized += 1
            self.t.close()

    def check_backlog(self, before, stalled):
        t = self.t
        if self.n < 0 or t is None:
            return  # closed meanwhile
        queued = t.get_write_buffer_size()
        verdict = backlog_verdict(queued, before, stalled, self.max_pending)
        if verdict == DRAINED:
            t.resume_reading()
        elif verdict == DRAINING:
            after_next_send(self.loop, self.check_backlog, queued, False)
        elif verdict == STALLED:
            self.loop.call_later(STALL_S, self.check_backlog, queued, True)
        else:
            self.W.slow += 1
            self.n = CLOSED
            self.drop()

    def drop(self):
        """Abort, dropping the queued output out of the counters (a slow
        peer; shutdown's abort). push.PushProtocol drops pushes."""
        discard(self.t, self.W)

    def eof_received(self):
        # The peer is done: close once the replies are sent (returning a
        # false value makes asyncio and uvloop close too; closing here does
        # not depend on that).
        self.n = CLOSED
        t = self.t
        if t is not None:
            t.close()
        return False

    def connection_lost(self, exc):
        self.t = None
        self.n = CLOSED
        w = _W
        w.open -= 1
        w.closed += 1
        if w.open < w.resume_at:
            w.low()


def without_slots(cls):
    """CLS as a user writes it without __slots__: the same body, each instance
    keeping its attributes in an instance __dict__ (--slots off: what
    __slots__ saves per connection, shown by py_server.anatomy --slots off)."""
    drop = ("__slots__",) + tuple(cls.__slots__)
    body = {k: v for k, v in vars(cls).items() if k not in drop}
    return type(cls.__name__ + "NoSlots", cls.__bases__, body)


LineProtocolNoSlots = without_slots(LineProtocol)
