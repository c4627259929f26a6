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

#include "stats.h"

struct floor_config {
    const char *host;
    int port;
    int backlog;
    int workers;
    long max_conns;      /* the target (sizes --workers auto) */
    long worker_conns;   /* per-worker cap: the listener closes there */
    const char *stats_path;
    int quiet;
};

/* Run worker `index` until SIGTERM/SIGINT; returns its exit status. Its
 * counters (state, open, accepted, closed, accept_errors) are published in
 * st->w[index]. */
int floor_worker_run(const struct floor_config *cfg, struct c1m_stats *st, int index);

#endif
