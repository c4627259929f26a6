/* floor.h - one c1m-floor worker: the zero-state reference server.
 *
 * What every contender must do per connection and nothing more: accept4, add
 * the fd to epoll, hold it. It never reads (a heartbeat's bytes stay in the
 * kernel's receive queue), never writes, keeps no per-connection state of its
 * own (the loop's 8-byte fd slot is the only one) and counts only connections.
 * The harness runs it as the reference contender `floor` (harness/lib/
 * contenders.sh): the CPU and time every other contender is compared to.
 *
 * With --push BYTES it is also the floor of a broadcast: SIGUSR1 to a worker
 * makes it send() one push message (pushmsg.h) to each of its connections,
 * one call each, nothing queued. SEQ is the worker's broadcast number (no
 * per-connection state: a connection accepted after a broadcast sees a gap
 * at the next one), USEC the time of that send(). A connection that does not
 * take the whole message at once is closed and counted slow: the floor cannot
 * queue, and half a line would break the stream.
 */
#ifndef C1M_FLOOR_H
#define C1M_FLOOR_H

#include "server_main.h" /* struct c1m_server_opts: the command line */
#include "stats.h"

/* c1m-floor's own flag: --push BYTES (0: no broadcast, SIGUSR1 ignored). */
struct floor_config {
    int push_bytes;
};

/* Run worker `index` until SIGTERM/SIGINT; returns its exit status. Its
 * counters (state, open, accepted, closed, accept_errors) are published in
 * st->w[index] (and pushed, slow with --push). --sndbuf/--rcvbuf are set on
 * the listener (accepted sockets inherit them); --max-pending is ignored (it
 * never queues). */
int floor_worker_run(const struct c1m_server_opts *cfg, const struct floor_config *fc,
                     struct c1m_stats *st, int index);

#endif
