/* server_main.h - the one command line and process model of the C servers
 * (c1m-server, c1m-floor, c1m-libuv, c1m-uring).
 *
 * The common flags --host --port --backlog --workers --max-conns
 * --worker-conns --sndbuf --rcvbuf --max-pending --stats --quiet --help (and
 * --check for a program that can be unavailable) with c1m-server's bounds and
 * messages, parsed with cli.h; --workers auto sizing; an early listen probe;
 * the counters file (stats.h, removed at exit when it is the default one);
 * the workers forked and supervised (workers.h). A program adds its own flags
 * through a table and a callback, and gives the worker body.
 *
 * --port LO-HI (issue 11: one client address reaches one server port at most
 * ~64k times) gives the workers the ports in turn: worker i listens on
 * LO + i mod the range's size, and sees that port alone in its options
 * (o->port, port_count 1), so a worker body knows nothing of ranges.
 * Every port gets as many workers (the client spreads its connects evenly):
 * --workers auto rounds up to a multiple of the ports, and a --workers that
 * is not one is a usage error.
 */
#ifndef C1M_SERVER_MAIN_H
#define C1M_SERVER_MAIN_H

#include <stddef.h>

#include "cli.h"
#include "stats.h"

/* Exit status of a program the machine cannot run (harness: `unavailable`). */
#define C1M_EXIT_UNAVAILABLE 3
/* At most this many program flags (c1m_server_prog.flags; more are not
 * recognized). */
#define C1M_SERVER_MAX_EXTRA 8

/* The common flags' values. Set the defaults of sndbuf, rcvbuf and
 * max_pending before c1m_server_main (--help prints them); the rest are
 * c1m-server's defaults, set by c1m_server_main. */
struct c1m_server_opts {
    const char *host;
    int port;            /* a worker's own port (--port LO-HI: LO in the parent) */
    int port_count;      /* --port LO-HI: HI - LO + 1 ports, 1 for a single port */
    int backlog;
    int workers;
    long max_conns;      /* the target (sizes --workers auto) */
    long worker_conns;   /* per-worker cap */
    int sndbuf, rcvbuf;  /* on the listener: accepted sockets inherit them */
    long max_pending;    /* reply bytes allowed to wait before "slow" */
    const char *stats_path;
    int quiet;
};

struct c1m_server_prog {
    const char *prog;         /* "c1m-server": messages, usage, default stats file */
    const char *kind;         /* the counters file's kind: "c" */
    const char *about;        /* --help's paragraph after the usage line */
    const char *stats_note;   /* optional: more about --stats (help), NULL */
    const char *max_pending_help; /* optional: --max-pending's help, NULL: c1m-server's */
    /* Optional program flags: usage fragment ("[--push BYTES ...]"), help
     * lines, the table, and the callback for each one met (index into
     * flags[], c->flag and c->value set): -1 to go on, or an exit status
     * (return c1m_cli_error(c, ...) for a usage error). */
    const char *flags_usage;
    const char *flags_help;
    const struct c1m_cli_flag *flags;
    int nflags;
    int (*on_flag)(void *ud, struct c1m_cli *c, int index);
    /* Optional, after every flag (the common ones in o): -1 to go on, or an
     * exit status. Runs before any worker is forked. */
    int (*after_parse)(void *ud, const struct c1m_server_opts *o, struct c1m_cli *c);
    /* Accept --check, exit 3 when available() says no. */
    int has_check;
    /* Optional: can this machine run the program? 0, or -1 with a reason in
     * why[len] (then "PROG: unavailable: WHY", exit 3, before creating
     * anything). */
    int (*available)(char *why, size_t len);
    /* Optional: in the parent once the workers run (messages, signals). */
    void (*started)(void *ud, const struct c1m_server_opts *o);
    /* One worker until SIGTERM/SIGINT: publishes into st->w[index], returns
     * its exit status (0 clean, 1 failure). */
    int (*worker_run)(void *ud, const struct c1m_server_opts *o, struct c1m_stats *st, int index);
    void *ud;
};

/* The whole program: returns the exit status (0, 1 runtime failure, 2 usage,
 * 3 unavailable). o holds the defaults of sndbuf, rcvbuf and max_pending. */
int c1m_server_main(const struct c1m_server_prog *p, struct c1m_server_opts *o, int argc,
                    char **argv);

#endif
