/* contender.h - the command line and process model shared by the C contenders
 * built on another event library (c1m-libuv, c1m-uring).
 *
 * Each takes c1m-server's flags with c1m-server's meaning and bounds (--host
 * --port --backlog --workers --max-conns --worker-conns --sndbuf --rcvbuf
 * --max-pending --stats --quiet --help), parsed with libc1m's option parser
 * (cli.h); forks its workers with libc1m's workers.h (one SO_REUSEPORT
 * listener each) and publishes the same counters file (stats.h) under its own
 * `kind`. Only the worker body differs: it is the contender.
 */
#ifndef C1M_CONTENDER_H
#define C1M_CONTENDER_H

#include <stddef.h>

#include "server.h" /* struct server_config: the same configuration as c1m-server */
#include "stats.h"

struct contender {
    const char *prog;   /* "c1m-libuv": messages and usage */
    const char *kind;   /* the counters file's kind: "libuv" */
    const char *about;  /* the first paragraph of --help */
    /* Optional: can this machine run the contender? 0, or -1 with a reason in
     * why[len] (the program then exits 3, "unavailable", before creating
     * anything). Runs in the parent, before the workers are forked. */
    int (*available)(char *why, size_t len);
    /* One worker until SIGTERM/SIGINT: publishes into st->w[index], returns
     * its exit status (0 clean, 1 failure). */
    int (*worker_run)(const struct server_config *cfg, struct c1m_stats *st, int index);
};

/* Exit status of a contender the machine cannot run (harness: `unavailable`). */
#define C1M_EXIT_UNAVAILABLE 3

/* The whole program: returns the exit status (0, 1 runtime failure, 2 usage,
 * 3 unavailable). */
int contender_main(const struct contender *k, int argc, char **argv);

#endif
