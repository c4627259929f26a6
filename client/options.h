/* options.h - the command line of c1m-client, validated, plus what follows
 * from it (worker count, per-worker shares, source addresses). */
#ifndef C1M_CLIENT_OPTIONS_H
#define C1M_CLIENT_OPTIONS_H

#include <stdint.h>
#include <sys/socket.h>

struct c1m_opts {
    long connections;
    const char *host;
    int port;               /* --port P, or LO of --port LO-HI */
    int port_count;         /* ports from port on: connects take them in turn */
    int workers;            /* resolved: --workers or auto */
    long worker_conns;      /* per-worker cap */
    long inflight;
    long rate;              /* connections/s over all workers, 0 = unlimited */
    double connect_timeout; /* seconds */
    double hold;            /* seconds; < 0 = until SIGINT/SIGTERM */
    double heartbeat;       /* seconds, 0 = off */
    long min_available_mib; /* 0 = off */
    const char *json;
    int quiet;
    double stall;           /* --stall: fraction of each worker's connections, 0 = none */
    int stall_on_signal;    /* the stall begins on SIGUSR2, not at the hold */
    int reconnect;          /* enum c1m_reconnect (reconnect.h) */
    long backoff_base_ms;   /* --reconnect backoff: base and cap of the delay */
    long backoff_cap_ms;
    /* derived */
    struct sockaddr_storage dst;
    socklen_t dstlen;
    uint32_t src_first;     /* IPv4, host order; src_count 0 = do not bind */
    uint32_t src_count;
};

/* Parse argv into *o. Returns -1 to go on, or an exit status: 0 after --help,
 * 2 after a usage error (a message naming the flag and the usage line are
 * printed on stderr), 1 when --host does not resolve (the resolver's error). */
int c1m_opts_parse(int argc, char **argv, struct c1m_opts *o);
/* The one-line usage, for usage errors found after parsing. */
void c1m_opts_usage(void);

/* Connections per source address when not given. Well below the 64k port
 * space on purpose: connect() searches for a free ephemeral port, and as a
 * source address fills up that search dominates (100k connections over two
 * addresses took 59 s here; over five, 2 s). */
#define C1M_CONNS_PER_SRC 20000

#endif
