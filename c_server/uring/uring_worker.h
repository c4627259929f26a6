/* uring_worker.h - one c1m-uring worker process (uring_worker.c), and the
 * check that this kernel has what it needs (uring_probe.c). */
#ifndef C1M_URING_WORKER_H
#define C1M_URING_WORKER_H

#include <stddef.h>

#include "server_main.h"
#include "stats.h"

/* Each worker's ring (and the probe's, so that a kernel refusing its size
 * is found before any worker starts). */
#define URING_SQ_ENTRIES 1024
#define URING_CQ_ENTRIES 16384

/* Run worker `index` until SIGTERM/SIGINT; its counters go to st->w[index].
 * Returns its exit status. */
int uring_worker_run(const struct c1m_server_opts *cfg, struct c1m_stats *st, int index);

/* 0 when io_uring is usable here as a worker uses it: a ring of the
 * worker's size, a provided-buffer ring, one multishot accept on a listening
 * socket and one multishot receive; else -1 and the reason in why[len]. Sets
 * nothing up that outlives the call. */
int uring_probe(char *why, size_t len);

#endif
