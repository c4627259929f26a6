"""Server push for the Python contenders (--push BYTES, --push-every S,
--push-burst, SIGUSR1): the same messages and schedule as c1m-server, each API
in its own idiom.

Message (c_server/lib/pushmsg.h): b"push SEQ USEC " + b"." padding + b"\\n",
exactly BYTES bytes; SEQ counts a connection's messages from 1, USEC is
time.time_ns() // 1000 (CLOCK_REALTIME microseconds) when the message is
handed to the transport.

Schedule (one per worker): the connections that take pushes are kept in a
list; a 10 ms tick walks it with a cursor so that each connection gets one
message per interval and the sends are spread evenly over it (c1m-server
walks its fd table the same way); --push-burst sends each interval's messages
to all at once at the interval's end; SIGUSR1 sends one to all now.

Idioms (what each contender's own code would do):
- Protocol contenders (PushProtocol): transport.write(); a connection whose
  transport asked to pause_writing(), or whose backlog the slow rule is
  judging (reading paused: protocol.py), skips its pushes; a write that
  leaves more than --max-pending queued starts the slow rule, exactly as a
  pong does.
- Streams contenders (StreamPush): one task per connection, woken by the
  schedule, that writes and awaits drain(); a backlog over --max-pending is
  judged by the streams handler's slow rule first (backlog_drained: drain()
  alone waits without limit for a peer that stopped reading). A connection
  whose task is still busy with its last message skips the next.
- --push-flow ignore, the naive idiom of either API: every push is written
  whatever is queued (Protocol: transport.write() without pause_writing() or
  the slow rule; streams: write() without drain()). A peer that stops
  reading then makes the transport's buffer grow without limit: what the
  stall scenario shows with STALL_PUSH_FLOW=ignore (until its memory guard).
`pushed` counts messages handed to the transport and not dropped. A
connection whose pushes wait in its transport keeps a ledger of where they
end in its output (noted(): None when none waits, TAIL for one at the end of
the queue, else the bytes written since the front of the queue when it began
and each waiting push's end offset); a connection cut as slow (or aborted at
shutdown: loops.abort_protocols, streams.abort_handlers) takes the pushes the
ledger places in the dropped bytes out of `pushed` and the rest of those bytes
out of `pongs` (dropped(); a message or reply partly sent was not sent), so
neither counts what was thrown away, and a push already sent ahead of queued
pongs stays counted.
"""
import asyncio
import logging
import time
from array import array
from bisect import bisect_right

from . import cli_rules
from .protocol import PONG, LineProtocol, abort, after_next_send, backlog_drained

log = logging.getLogger("c1m.push")

TICK_S = 0.01
MIN_BYTES = 32
MAX_BYTES = 1025            # a line of 1024 bytes plus its newline
MIN_EVERY, MAX_EVERY = cli_rules.PUSH_EVERY_MIN, cli_rules.PUSH_EVERY_MAX
FLOWS = ("honour", "ignore")     # --push-flow
# The write buffer's high-water mark of asyncio's, uvloop's and c1m.Transport's
# transports: over it they pause_writing(), and the honouring idiom pushes no
# more. A --max-pending above it would never be passed by pushes, so a peer
# that stops reading would be held, never cut (c1m-server cuts it): the
# transport's mark is raised over the bound then (high_water()).
TRANSPORT_HIGH = 64 * 1024
_FIXED = 24                 # b"push " + b" " + 16-digit USEC + b" " + b"\n"


def high_water(max_pending, size, honour=True):
    """The write buffer high-water mark a push connection's transport needs
    for the slow rule to see its backlog pass max_pending (None: the
    transport's own will do; the naive idiom ignores the mark anyway)."""
    return max_pending + size if honour and max_pending + size > TRANSPORT_HIGH else None


def seq_max(size):
    """The largest SEQ a message of size bytes holds (c1m_push_seq_max)."""
    digits = size - _FIXED
    return (1 << 32) - 1 if digits >= 10 else 10 ** digits - 1


def message_maker(size):
    """make(seq) -> one message of size bytes stamped now."""
    dots = b"." * (size - 1) + b"\n"
    now = time.time_ns

    def make(seq):
        head = b"push %d %d " % (seq, now() // 1000)
        return head + dots[len(head):]
    return make


class _Tail:
    __slots__ = ()

    def __repr__(self):
        return "TAIL"


# A ledger that is one push at the very end of the queue, nothing written after
# it: the common case kept without an array (every push on uvloop, whose
# write() queues until the end of the loop's turn; a push behind a backlog).
TAIL = _Tail()


def noted(ledger, wrote, queued, push=False):
    """The ledger of a connection's pushes still queued in its transport,
    after `wrote` bytes went to the transport and left `queued` bytes there
    (push: those bytes were one message). None: no push is queued; TAIL: one,
    at the end of the queue.

    Else an array('Q', [out, end, end...]): out counts the bytes written
    since the origin (the front of the queue when the array began), each end
    is where a push not yet known to be sent ends, in order; the bytes before
    out - queued have been sent, so a push ending there is dropped from it.
    An array, not a list of ints: the naive idiom (--push-flow ignore) queues
    pushes without limit, and the ledger adds 8 bytes to each (32-1025)."""
    if not queued:
        return None
    if ledger is None:
        return TAIL if push else None
    if ledger is TAIL:
        # the push that was at the end now ends `wrote` bytes before it
        before = queued - wrote
        if before <= 0:
            return TAIL if push else None     # it has been sent
        return array("Q", (queued, before, queued) if push else (queued, before))
    out = ledger[0] + wrote
    ledger[0] = out
    if push:
        ledger.append(out)
    i = bisect_right(ledger, out - queued, 1)
    n = len(ledger)
    if i == n:
        return None
    if i == n - 1 and ledger[i] == out:
        return TAIL
    if i > 1:
        del ledger[1:i]
    return ledger


def dropped(queued, size, ledger):
    """(pushes, pongs) lost when the queued bytes of a connection whose
    ledger (noted()) is `ledger` are dropped: the pushes ending in them (a
    partly sent one, the first, was not sent), and the rest of the bytes as
    pongs (a partly sent one too)."""
    if not queued or ledger is None:
        pushes = in_pushes = 0
    elif ledger is TAIL:
        pushes, in_pushes = 1, min(size, queued)
    else:
        sent = ledger[0] - queued
        i = bisect_right(ledger, sent, 1)
        pushes = len(ledger) - i
        # only the first can be partly sent: each later one starts past its end
        in_pushes = min(size, ledger[i] - sent) + (pushes - 1) * size if pushes else 0
    rest = queued - in_pushes
    return pushes, (-(-rest // len(PONG)) if rest > 0 else 0)


def drop(t, w, size, ledger):
    """Abort t (a slow peer, or shutdown), taking what was dropped with its
    queued bytes out of w.pushed and w.pongs (dropped())."""
    pushes, pongs = dropped(t.get_write_buffer_size(), size, ledger)
    w.pushed -= pushes
    w.pongs -= pongs
    abort(t)


class Schedule:
    """One worker's push schedule over the connections registered with add().

    The list keeps [0, cursor) = the connections already sent to in this
    interval: remove() preserves that split, so a connection that closes does
    not make another miss its turn."""

    def __init__(self, loop, every, burst):
        self.loop = loop
        self.every = every
        self.burst = burst
        self.conns = []
        self.cursor = 0
        self.start_t = 0.0
        self.handle = None

    def add(self, c):
        c.i = len(self.conns)
        self.conns.append(c)

    def remove(self, c):
        i = c.i
        if i < 0:
            return
        c.i = -1
        conns = self.conns
        if i < self.cursor:
            j = self.cursor - 1     # the hole moves to the last swept slot
            if j != i:
                m = conns[j]
                conns[i] = m
                m.i = i
            self.cursor = j
            i = j
        last = conns.pop()
        if i < len(conns):
            conns[i] = last
            last.i = i

    def start(self):
        if self.every:
            self.start_t = self.loop.time()
            self.handle = self.loop.call_later(self.every if self.burst else 0, self.tick)

    def stop(self):
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    failed = False      # a push raised: logged once

    def push_one(self, c):
        """c.push(); an exception is logged (once) and does not stop the
        others' pushes."""
        try:
            c.push()
        except Exception:
            if not self.failed:
                self.failed = True
                log.exception("push failed (logged once)")

    def sweep(self, target):
        conns = self.conns
        while self.cursor < target and self.cursor < len(conns):
            c = conns[self.cursor]
            self.cursor += 1
            self.push_one(c)

    def tick(self):
        try:
            self.tick_sweep()
        finally:
            # re-armed whatever happened: a lost tick would stop the pushes
            self.handle = self.loop.call_later(self.delay(), self.tick)

    def delay(self):
        every = self.every
        if self.burst:
            return max(0.0, self.start_t + every - self.loop.time())
        return TICK_S if every > TICK_S else every

    def tick_sweep(self):
        now = self.loop.time()
        every = self.every
        if now - self.start_t >= every:
            self.sweep(len(self.conns))     # the rest of this interval (burst: all)
            self.start_t += every
            self.cursor = 0
            if now - self.start_t >= every:
                self.start_t = now          # a whole interval late: skip it
        if not self.burst:
            self.sweep(int(len(self.conns) * (now - self.start_t) / every))

    def broadcast(self, *_):
        """SIGUSR1: one message to every connection now."""
        for c in list(self.conns):
            self.push_one(c)


class PushProtocol(LineProtocol):
    """LineProtocol plus pushes (the Protocol idiom). f: WRITE_PAUSED;
    ledger: where the pushes still queued end in the output (noted())."""

    __slots__ = ("seq", "i", "f", "ledger")

    S = None            # the Schedule
    make = None         # message_maker(size)
    size = 0
    seq_max = 0
    honour = True       # --push-flow honour (False: ignore, the naive idiom)
    high = None         # high_water(): the transports' mark, when theirs is too low
    WRITE_PAUSED = 1

    @classmethod
    def configure_push(cls, schedule, size, flow="honour"):
        cls.S = schedule
        cls.make = staticmethod(message_maker(size))
        cls.size = size
        cls.seq_max = seq_max(size)
        cls.honour = flow == "honour"
        cls.high = high_water(cls.max_pending, size, cls.honour)

    @classmethod
    def configure(cls, counters, max_pending=4096, sndbuf=4096, rcvbuf=4096, loop=None):
        LineProtocol.configure.__func__(cls, counters, max_pending, sndbuf, rcvbuf, loop)
        cls.high = high_water(max_pending, cls.size, cls.honour)

    def connection_made(self, transport):
        self.seq = 0
        self.f = 0
        self.ledger = None
        self.i = -1
        LineProtocol.connection_made(self, transport)
        if self.high is not None:
            transport.set_write_buffer_limits(high=self.high)
        self.S.add(self)

    def connection_lost(self, exc):
        self.S.remove(self)
        LineProtocol.connection_lost(self, exc)

    def data_received(self, data):
        ledger = self.ledger
        if ledger is None:
            LineProtocol.data_received(self, data)
            return
        w = self.W
        pongs = w.pongs
        LineProtocol.data_received(self, data)
        t = self.t
        if t is not None:   # the pongs written, where the queued pushes end
            self.ledger = noted(ledger, (w.pongs - pongs) * len(PONG),
                                t.get_write_buffer_size())

    def pause_writing(self):
        self.f |= self.WRITE_PAUSED

    def resume_writing(self):
        self.f &= ~self.WRITE_PAUSED

    def push(self):
        t = self.t
        if t is None or self.n < 0:
            return      # closed
        honour = self.honour
        if honour and (self.f or not t.is_reading()):
            return      # paused by the transport, or its backlog is being judged
        seq = self.seq + 1 if self.seq < self.seq_max else 1
        self.seq = seq
        t.write(self.make(seq))
        self.W.pushed += 1
        queued = t.get_write_buffer_size()
        self.ledger = noted(self.ledger, self.size, queued, True)
        if honour and queued > self.max_pending:
            # the slow rule, as for pongs (protocol.py): no reading, no
            # pushes, until the backlog is judged
            t.pause_reading()
            after_next_send(self.loop, self.check_backlog, queued, False)

    def drop(self):
        drop(self.t, self.W, self.size, self.ledger)


class StreamPush:
    """One streams connection's pushes: a task that waits for its turn,
    writes and awaits drain(). judging: the handler or the task is judging
    the backlog (no pushes, and the handler writes no pongs, meanwhile);
    ledger: where the pushes still queued end in the output (noted(): the
    handler notes its pongs)."""

    __slots__ = ("writer", "seq", "i", "wake", "task", "judging", "ledger", "judged")

    def __init__(self, writer):
        self.writer = writer
        self.seq = 0
        self.i = -1
        self.wake = None
        self.task = None
        self.judging = False
        self.ledger = None
        self.judged = None  # while the task judges: done when it is over

    def push(self):
        wake = self.wake
        if wake is not None and not self.judging and not wake.done():
            wake.set_result(None)
        # else busy with its last message (or judged): this turn is skipped

    async def run(self, w, make, size, smax, max_pending, honour=True):
        writer = self.writer
        t = writer.transport
        loop = asyncio.get_running_loop()
        try:
            while True:
                self.wake = loop.create_future()
                await self.wake
                self.wake = None
                if t.is_closing():
                    return
                if self.judging:
                    continue  # the handler began judging while this woke: skip
                self.seq = seq = self.seq + 1 if self.seq < smax else 1
                writer.write(make(seq))
                w.pushed += 1
                queued = t.get_write_buffer_size()
                self.ledger = noted(self.ledger, size, queued, True)
                if not honour:
                    continue  # the naive idiom: no drain(), no judging
                if queued > max_pending:
                    self.judging = True  # the handler writes no pongs meanwhile
                    self.judged = judged = loop.create_future()
                    try:
                        drained = await backlog_drained(t, max_pending)
                    finally:
                        self.judging = False
                        self.judged = None
                        judged.set_result(None)
                    if not drained:
                        if not t.is_closing():  # the handler may have cut it meanwhile
                            w.slow += 1
                            drop(t, w, size, self.ledger)
                        return
                await writer.drain()
        except (ConnectionResetError, OSError):
            return  # the connection is gone: the handler counts the close
