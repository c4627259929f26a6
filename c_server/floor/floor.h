/* floor.h - one c1m-floor worker: the zero-state reference server.
 *
 * What every contender must do per connection and nothing more: accept4, add
 * the fd to epoll, hold it. It never reads (a heartbeat's bytes stay in the
 * kernel's receive queue), never writes, keeps no per-connection state of its
 * own (the loop's 8-byte fd slot is the only one) and counts only connections.
 * The harness runs it as the reference contender `floor` (harness/lib/
 * contenders.sh): the CPU and time every other contender is compared to.
 */
#ifndef C1M_FLOOR_H
#define C1M_FLOOR_H

#include "server_main.h" /* struct c1m_server_opts: the command line */
#include "stats.h"

/* Run worker `index` until SIGTERM/SIGINT; returns its exit status. Its
 * counters (state, open, accepted, closed, accept_errors) are published in
 * st->w[index]. --sndbuf/--rcvbuf are set on the listener (accepted sockets
 * inherit them); --max-pending is ignored (it never writes). */
int floor_worker_run(const struct c1m_server_opts *cfg, struct c1m_stats *st, int index);

#endif
