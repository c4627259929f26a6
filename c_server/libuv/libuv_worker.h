/* libuv_worker.h - one c1m-libuv worker process (libuv_worker.c). */
#ifndef C1M_LIBUV_WORKER_H
#define C1M_LIBUV_WORKER_H

#include "server_main.h"
#include "stats.h"

/* Run worker `index` until SIGTERM/SIGINT; its counters go to st->w[index].
 * Returns its exit status. */
int libuv_worker_run(const struct c1m_server_opts *cfg, struct c1m_stats *st, int index);

#endif
