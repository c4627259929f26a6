/* contender.h - the C contenders built on another event library (c1m-libuv,
 * c1m-uring): libc1m's server command line and process model
 * (server_main.h: c1m-server's flags, bounds and messages, plus --check)
 * around the contender's worker body. Each publishes the same counters file
 * (stats.h) under its own `kind`. Only the worker body differs: it is the
 * contender.
 */
#ifndef C1M_CONTENDER_H
#define C1M_CONTENDER_H

#include <stddef.h>

#include "server_main.h" /* struct c1m_server_opts: c1m-server's command line */
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
    int (*worker_run)(const struct c1m_server_opts *cfg, struct c1m_stats *st, int index);
};

/* The whole program: returns the exit status (0, 1 runtime failure, 2 usage,
 * 3 unavailable). */
int contender_main(const struct contender *k, int argc, char **argv);

#endif
