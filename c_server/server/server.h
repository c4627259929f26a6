/* server.h - one c1m-server worker process: an SO_REUSEPORT listener and the
 * idle connections it holds, on the c1m loop. */
#ifndef C1M_SERVER_H
#define C1M_SERVER_H

#include <stdint.h>
#include "server_main.h"
#include "stats.h"

/* c1m-server's own flags (main.c); the common ones are c1m_server_opts. */
struct server_push {
    int bytes;           /* --push: message size, 0 = no push */
    double every;        /* --push-every seconds, 0 = SIGUSR1 broadcasts only */
    int burst;           /* --push-burst: each interval's messages all at once */
};

/* Run worker `index` until SIGTERM/SIGINT; returns its exit status. Its
 * counters are published in st->w[index]. */
int server_worker_run(const struct c1m_server_opts *cfg, const struct server_push *push,
                      struct c1m_stats *st, int index);

#endif
