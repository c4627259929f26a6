/* server.h - one c1m-server worker process: an SO_REUSEPORT listener and the
 * idle connections it holds, on the c1m loop. */
#ifndef C1M_SERVER_H
#define C1M_SERVER_H

#include <stdint.h>
#include "stats.h"

struct server_config {
    const char *host;
    int port;
    int backlog;
    int workers;
    long max_conns;      /* the target (sizes --workers auto) */
    long worker_conns;   /* per-worker cap */
    int sndbuf, rcvbuf;
    long max_pending;    /* reply bytes allowed to wait before "slow" */
    const char *stats_path;
    int quiet;
    int push_bytes;      /* --push: message size, 0 = no push */
    double push_every;   /* --push-every seconds, 0 = SIGUSR1 broadcasts only */
    int push_burst;      /* --push-burst: each interval's messages all at once */
};

/* Run worker `index` until SIGTERM/SIGINT; returns its exit status. Its
 * counters are published in st->w[index]. */
int server_worker_run(const struct server_config *cfg, struct c1m_stats *st, int index);

#endif
