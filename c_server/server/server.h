/* server.h - one c1m-server worker process: an SO_REUSEPORT listener and the
 * idle connections it holds, on the c1m loop. */
#ifndef C1M_SERVER_H
#define C1M_SERVER_H

#include <stdint.h>
#include "server_main.h"
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

/* cfg's common fields from the command line (server_main.h); the push
 * fields stay. */
static inline void server_config_set(struct server_config *cfg, const struct c1m_server_opts *o)
{
    cfg->host = o->host;
    cfg->port = o->port;
    cfg->backlog = o->backlog;
    cfg->workers = o->workers;
    cfg->max_conns = o->max_conns;
    cfg->worker_conns = o->worker_conns;
    cfg->sndbuf = o->sndbuf;
    cfg->rcvbuf = o->rcvbuf;
    cfg->max_pending = o->max_pending;
    cfg->stats_path = o->stats_path;
    cfg->quiet = o->quiet;
}

/* Run worker `index` until SIGTERM/SIGINT; returns its exit status. Its
 * counters are published in st->w[index]. */
int server_worker_run(const struct server_config *cfg, struct c1m_stats *st, int index);

#endif
