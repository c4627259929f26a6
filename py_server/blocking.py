"""The connection handler of the blocking-socket contenders: gevent (a greenlet
per connection, gevent_server.py) and threads (a thread per connection,
threads_server.py). One function, serve(), written as such servers are: a
loop that blocks in recv() and answers with send().

The line rules are protocol.py's (feed, the counters). The output rules are
c1m-server's, which a blocking loop can follow exactly: replies are sent with
non-blocking send() calls straight from a shared buffer of repeated b"pong\\n"
(`pongs` counts the replies whose last byte the kernel took); when the kernel
refuses more, within the bound the loop waits until the peer either makes
room or sends more (one poll() on this socket); over `max_pending` reply
bytes left, it reads no more and waits for room alone, and a backlog that has
not shrunk for STALL_S is a slow peer (closed, `slow`): the grace of
c_server/lib/slowcut.h, so a peer that never reads but keeps sending is cut
STALL_S after its replies pass the bound, as c1m-server cuts it. A
peer that half-closes gets every queued reply (blocking send()) before the
close; an oversized line closes after a non-blocking send of the replies
before it.

The loop counts into a protocol.Counters under `lock` (a threading.Lock for
threads, whose handlers run in parallel with the worker's main thread; a
no-op for gevent's greenlets); the backend counts `open` and `closed` around
it and wakes its listener.
"""
import errno
import select
import socket
import time

from .protocol import PING_NL, PONG, STALL_S, feed

# One recv() takes at most this much (what the kernel holds beyond it is read
# by the next one): a common size for such servers, and the line rule needs
# no more (a partial line lives in feed()'s state, not in a buffer).
RECV_SIZE = 4096
PONGS = memoryview(PONG * 4096)  # 20 KiB of replies, shared by every connection
PLEN = len(PONG)
READABLE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ETIMEDOUT, errno.ENOTCONN, errno.EBADF,
         errno.ECONNABORTED, errno.EHOSTUNREACH, errno.ENETUNREACH)


class _Out:
    """Replies owed to one peer: whole pongs not yet fully sent, and how many
    bytes of the first one were sent (c1m-server's out_pongs/out_off)."""
    __slots__ = ("owed", "off")

    def __init__(self):
        self.owed = 0
        self.off = 0

    def pending(self):
        return self.owed * PLEN - self.off

    def chunk(self):
        return PONGS[self.off:self.off + min(self.pending(), len(PONGS) - self.off)]

    def sent(self, n, w, lock):
        done = n + self.off
        whole = done // PLEN
        self.owed -= whole
        self.off = done % PLEN
        if whole:
            with lock:
                w.pongs += whole


def _send_now(sock, out, w, lock, try_send):
    """Send what is owed without blocking until done or the kernel refuses
    more (BlockingIOError). Raises OSError when the peer is gone."""
    while out.owed:
        try:
            n = try_send(sock, out.chunk())
        except BlockingIOError:
            return
        except InterruptedError:
            continue
        out.sent(n, w, lock)


def _held(sock, out, w, lock, try_send, poller, max_pending):
    """The slow cutoff's grace: more than max_pending bytes are owed and the
    kernel refuses more. Read no more; send as room comes. True once the
    backlog is back within the bound, False (a slow peer) once it has not
    shrunk for STALL_S. Raises OSError when the peer is gone."""
    least, since = out.pending(), time.monotonic()
    p = poller()
    p.register(sock.fileno(), select.POLLOUT)
    while out.pending() > max_pending:
        left = since + STALL_S - time.monotonic()
        if left <= 0:
            return False
        if p.poll(left * 1000):  # room, or an error that send() raises
            _send_now(sock, out, w, lock, try_send)
        if out.pending() < least:  # the peer took some: the grace starts again
            least, since = out.pending(), time.monotonic()
    return True


def serve(sock, w, max_pending, lock, try_send, poller):
    """Serve one accepted, blocking socket until the connection ends; closes it.

    try_send(sock, data): one send() that never blocks (BlockingIOError when
    the kernel takes nothing). poller(): a select.poll-like object whose poll()
    blocks only this connection (select.poll for a thread, gevent.select.poll
    for a greenlet)."""
    n = 0  # the partial line's state (protocol.feed)
    out = _Out()
    try:
        while True:
            if out.owed:
                # replies wait for room: wait for room or for more input
                p = poller()
                p.register(sock.fileno(), select.POLLIN | select.POLLOUT)
                events = 0
                for _, ev in p.poll():
                    events |= ev
                if events & select.POLLOUT:
                    _send_now(sock, out, w, lock, try_send)
                    continue  # the loop looks again: done, more room, or input
                if not events & READABLE:
                    continue
            data = sock.recv(RECV_SIZE)
            if not data:
                # the peer is done sending: deliver what is owed, then close
                while out.owed:
                    out.sent(sock.send(out.chunk()), w, lock)
                return
            if n == 0 and data == PING_NL:  # the heartbeat: the common case
                lines = pings = 1
            else:
                n, lines, pings = feed(data, n)
            out.owed += pings
            with lock:
                w.lines += lines
            if n < 0:
                # oversized: the replies before it, without waiting, then close
                try:
                    _send_now(sock, out, w, lock, try_send)
                except OSError:
                    pass
                with lock:
                    w.oversized += 1
                return
            if pings:
                _send_now(sock, out, w, lock, try_send)
                if out.pending() > max_pending and not _held(sock, out, w, lock, try_send,
                                                             poller, max_pending):
                    with lock:
                        w.slow += 1
                    return
    except OSError as e:
        if e.errno not in _GONE and not isinstance(e, (ConnectionError, socket.timeout)):
            raise
    finally:
        try:
            sock.close()
        except OSError:
            pass
