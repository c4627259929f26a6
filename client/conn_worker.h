/* conn_worker.h - one worker process: opens its share of the connections with
 * non-blocking connects on an epoll loop, holds them, heartbeats them, and
 * publishes its counters in its record of the shared region. */
#ifndef C1M_CLIENT_CONN_WORKER_H
#define C1M_CLIENT_CONN_WORKER_H

#include <sys/types.h>

#include "options.h"
#include "shared.h"

struct c1m_wconf {
    const struct c1m_opts *o;
    struct c1m_shared *sh;
};

/* Connections worker i of n opens: N split as evenly as possible. */
long c1m_worker_share(long total, int n, int i);
long c1m_worker_offset(long total, int n, int i);

/* The worker body (a c1m_worker_fn): ud is a struct c1m_wconf. Returns 0 after
 * a clean stop (phase FINISH, SIGINT/SIGTERM), 1 on a fatal error. */
int c1m_conn_worker(int index, void *ud);

#endif
