"""asyncio-streams: seed 000's server, as written there, plus the line rules.

Seed 000 (the article this benchmark answers) served idle connections with

    async def handle_conn(reader, writer):
        try:
            while True:
                data = await reader.read(1024)
                if not data: break
        except ConnectionResetError: pass
        finally:
            writer.close(); await writer.wait_closed()

    server = await asyncio.start_server(handle_conn, "0.0.0.0", 9000)

handle_conn below is that loop; the additions are the counters, the per
connection buffer sizes, the pong replies with their output bound, and the
oversized-line rule, all shared with the Protocol contenders (protocol.py).

reader.read() returns at once while the reader holds data (a burst of pings
is up to 128 KiB there), so the loop writes reply after reply without the
transport getting a chance to send them. So when what is queued passes the
output bound, the handler stops reading and lets the transport send until
the backlog is back within the bound, or cuts the peer as slow: the rule of
the Protocol contenders (protocol.py docstring, backlog_drained).

With --push each connection also gets a task that writes its pushes and
awaits drain() (push.StreamPush), woken by the worker's push schedule.
"""
import asyncio
import gc

from .protocol import PING_NL, PONG, backlog_drained, discard, feed, set_bufs
from .push import StreamPush, drop, high_water, message_maker, noted, seq_max


def make_handler(w, max_pending=4096, sndbuf=4096, rcvbuf=4096, schedule=None, push_size=0,
                 push_flow="honour"):
    """The client_connected_cb for asyncio.start_server, counting into w
    (protocol.Counters); with a push schedule (push.Schedule), each
    connection's pushes of push_size bytes, in the idiom push_flow names
    (push.FLOWS)."""
    bufs = sndbuf > 0 or rcvbuf > 0
    _HANDLER[:] = [(w, push_size if schedule is not None else 0)]
    high = None
    if schedule is not None:
        make = message_maker(push_size)
        smax = seq_max(push_size)
        high = high_water(max_pending, push_size, push_flow == "honour")

    async def handle_conn(reader, writer):
        w.open += 1
        w.accepted += 1
        if bufs:
            set_bufs(writer.get_extra_info("socket"), sndbuf, rcvbuf)
        if w.open >= w.cap:
            w.at_cap()
        n = 0  # the partial line's state (protocol.feed)
        p = None
        if schedule is not None:
            p = StreamPush(writer)
            if high is not None:   # drain() would wait before the backlog passed --max-pending
                writer.transport.set_write_buffer_limits(high=high)
            schedule.add(p)
            p.task = asyncio.get_running_loop().create_task(
                p.run(w, make, push_size, smax, max_pending, push_flow == "honour"))
        try:
            while True:
                data = await reader.read(1024)
                if not data: break
                if p is not None and p.judged is not None:
                    await p.judged  # the push task judges the backlog: no pongs meanwhile
                    if writer.transport.is_closing():
                        break  # cut as slow by the push task
                if n == 0 and data == PING_NL:
                    lines = pings = 1
                else:
                    n, lines, pings = feed(data, n)
                w.lines += lines
                w.pongs += pings
                if pings:
                    writer.write(PONG if pings == 1 else PONG * pings)
                    if p is not None and p.ledger is not None:  # where the queued pushes end
                        p.ledger = noted(p.ledger, pings * len(PONG),
                                         writer.transport.get_write_buffer_size())
                if n < 0:
                    w.oversized += 1
                    break  # writer.close() below sends the replies written above first
                if pings and writer.transport.get_write_buffer_size() > max_pending:
                    if p is not None:
                        p.judging = True  # no pushes while the backlog is judged
                    drained = await backlog_drained(writer.transport, max_pending)
                    if p is not None:
                        p.judging = False
                    if not drained:
                        if not writer.transport.is_closing():  # not cut by the push task
                            w.slow += 1
                            if p is None:
                                discard(writer.transport, w)
                            else:  # as push.PushProtocol.drop
                                drop(writer.transport, w, push_size, p.ledger)
                        break
        except ConnectionResetError: pass
        except OSError: pass  # ETIMEDOUT, EPIPE...: the connection is gone all the same
        finally:
            if p is not None:
                schedule.remove(p)
                p.task.cancel()
            try:
                writer.close(); await writer.wait_closed()
            except OSError:
                pass  # the peer reset it: already closed
            finally:
                w.open -= 1
                w.closed += 1
                if w.open < w.resume_at:
                    w.low()

    return handle_conn


# this worker's handler's counters and push size (make_handler), for abort_handlers
_HANDLER = []


def abort_handlers():
    """Abort the connections the handlers' close() left open at the end of the
    stop's grace (a peer that does not read keeps their output queued), taking
    the output dropped out of the counters as the slow cut does (push.drop,
    protocol.discard); each handler's finally then counts its close. Found by
    type at shutdown (as loops.abort_protocols): no registry per connection."""
    if not _HANDLER:
        return
    w, size = _HANDLER[0]
    for obj in gc.get_objects():
        if size and type(obj) is StreamPush:
            t, ledger = obj.writer.transport, obj.ledger
        elif not size and type(obj) is asyncio.StreamWriter:
            t, ledger = obj.transport, None
        else:
            continue
        if t is None or not t.get_write_buffer_size():
            continue    # nothing queued: its close ends it
        if size:
            drop(t, w, size, ledger)
        else:
            discard(t, w)


async def start_server(handle_conn, sock, backlog):
    """Seed 000's call, with the backlog every contender gets, on the
    listening socket every contender gets (protocol.listen_socket:
    SO_REUSEPORT, the buffer sizes set before listen())."""
    return await asyncio.start_server(handle_conn, sock=sock, backlog=backlog)
