/* options.c - c1m-client command line (the shared parser, cli.h), validated. */
#include "options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "net.h"
#include "reconnect.h"
#include "workers.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage_line[] =
    "usage: c1m-client --connections N [--host H] [--port P|LO-HI] [--workers N|auto] "
    "[--worker-conns N] [--src A-B] [--inflight N] [--rate R] [--connect-timeout S] "
    "[--hold S] [--heartbeat S] [--reconnect off|now|backoff] [--backoff-base MS] "
    "[--backoff-cap MS] [--stall F] [--stall-on-signal] [--min-available MiB] [--json FILE] "
    "[--quiet] [--help]\n";

static const char help_text[] =
    "Open, hold and optionally heartbeat N idle TCP connections to a c1m server.\n"
    "\n"
    "  --connections N      connections to open (required; k/m suffixes: 10k, 1m)\n"
    "  --host H             server address, IPv4/IPv6/name (default 127.0.0.1)\n"
    "  --port P|LO-HI       server port (default 9000), or a range of up to 1024 ports:\n"
    "                       a worker's connects take them in turn (one source address\n"
    "                       reaches one server port ~64k times; each port as many)\n"
    "  --workers N|auto     worker processes (default auto = ceil(N / worker cap))\n"
    "  --worker-conns N     per-worker connection cap (default and maximum:\n"
    "                       RLIMIT_NOFILE soft limit - 64)\n"
    "  --src A-B            IPv4 source addresses to bind, e.g. 127.0.0.2-127.0.0.20\n"
    "                       (or one address); the kernel picks the port at connect\n"
    "                       time. Default for a 127.x host: 127.0.0.2 upwards, one\n"
    "                       address per 20000 connections; other hosts: no bind\n"
    "  --inflight N         per-worker cap on connects in progress (default 1000)\n"
    "  --rate R             new connections/s over all workers, 0 = unlimited (default 0)\n"
    "  --connect-timeout S  fail a connect not done after S seconds (default 10)\n"
    "  --hold S             keep connections open S seconds after the ramp (default 0:\n"
    "                       close after the summary; negative or inf: until SIGINT/SIGTERM)\n"
    "  --heartbeat S        during the hold, send ping\\n on every connection once per\n"
    "                       S seconds and time the pong\\n replies (default 0 = off)\n"
    "  --reconnect P        what a connection closed or reset by the server during the\n"
    "                       hold does (default off):\n"
    "                         off      stays closed (counted in closed_by_peer)\n"
    "                         now      reconnects at once; a failed reconnect is retried\n"
    "                                  at once (the reconnect storm)\n"
    "                         backoff  reconnects after a delay drawn uniformly from\n"
    "                                  [0, min(cap, base * 2^attempt)] (full jitter),\n"
    "                                  attempt = the slot's consecutive failed reconnects\n"
    "                       A slot keeps trying until the client stops. Reconnects bind\n"
    "                       the same --src range, count against --inflight and time out\n"
    "                       after --connect-timeout (checked every 100 ms); --rate paces\n"
    "                       the ramp only. Connects that failed during the ramp are not\n"
    "                       retried\n"
    "  --backoff-base MS    base of the backoff delay, 1..3600000 ms (default 100)\n"
    "  --backoff-cap MS     cap of the backoff delay, base..3600000 ms (default 10000)\n"
    "  --stall F            a stalled reader: once the client holds all its connections\n"
    "                       (the hold), the fraction F (0..1, default 0) of each worker's\n"
    "                       open connections stops reading and sending (no pings); their\n"
    "                       sockets stay open, unwatched, until the client stops\n"
    "  --stall-on-signal    start the --stall on SIGUSR2 to c1m-client instead\n"
    "  --min-available MiB  stop opening connections when usable memory (MemAvailable\n"
    "                       less SReclaimable: open sockets' inodes and dentries count\n"
    "                       as reclaimable but are not) drops below MiB (default 0 = off)\n"
    "  --json FILE          also write the summary as JSON to FILE\n"
    "  --quiet              no progress line on stderr\n"
    "  --help               this text\n"
    "\n"
    "Server push: lines \"push SEQ USEC <padding>\\n\" from the server (its --push) are\n"
    "counted on every connection: delivery latency (CLOCK_REALTIME at receipt - USEC),\n"
    "lines, sequence gaps (missing), bytes. SIGUSR1 to c1m-client opens the push window:\n"
    "the summary then says how many connections got a line sent after that moment and\n"
    "when the last of them did; \"push window open from USEC\" and, once every reading\n"
    "connection was reached, \"push window reached all N ...\" are printed on stderr\n"
    "(also with --quiet), as is \"stalled N connections at USEC\" after a --stall.\n"
    "\n"
    "Exit status: 0 all connections established (and held to the end, no pings lost;\n"
    "with --reconnect now|backoff: all open again when the client stopped),\n"
    "1 some failed, were closed by the peer or lost pings, a worker died or --host does not\n"
    "resolve, 2 usage error.\n";

void c1m_opts_usage(void)
{
    fputs(usage_line, stderr);
}

/* Report a usage error (exit status 2); the parser state is only used for
 * the program name and usage line. */
static struct c1m_cli cli;

static int bad(const char *flag, const char *value, const char *why)
{
    return c1m_cli_error(&cli, flag, value, why);
}

static int parse_src(const char *s, uint32_t *first, uint32_t *count)
{
    char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    const char *dash = strchr(s, '-');
    size_t la = dash ? (size_t)(dash - s) : strlen(s);
    if (la == 0 || la >= sizeof(a))
        return -1;
    memcpy(a, s, la);
    a[la] = 0;
    if (dash) {
        if (strlen(dash + 1) >= sizeof(b))
            return -1;
        strcpy(b, dash + 1);
    } else {
        strcpy(b, a);
    }
    struct in_addr ia, ib;
    if (inet_pton(AF_INET, a, &ia) != 1 || inet_pton(AF_INET, b, &ib) != 1)
        return -1;
    uint32_t x = ntohl(ia.s_addr), y = ntohl(ib.s_addr);
    if (y < x || y - x >= 65536)
        return -1;
    *first = x;
    *count = y - x + 1;
    return 0;
}

enum { F_CONN, F_HOST, F_PORT, F_WORKERS, F_WCONNS, F_SRC, F_INFLIGHT, F_RATE, F_CTIMEOUT,
       F_HOLD, F_HEARTBEAT, F_MINAVAIL, F_JSON, F_QUIET, F_HELP, F_RECONNECT, F_BACKOFF_BASE,
       F_BACKOFF_CAP, F_STALL, F_STALL_SIGNAL, F_COUNT };

static const struct c1m_cli_flag flags[F_COUNT] = {
    [F_CONN] = {"--connections", 1},     [F_HOST] = {"--host", 1},
    [F_PORT] = {"--port", 1},            [F_WORKERS] = {"--workers", 1},
    [F_WCONNS] = {"--worker-conns", 1},  [F_SRC] = {"--src", 1},
    [F_INFLIGHT] = {"--inflight", 1},    [F_RATE] = {"--rate", 1},
    [F_CTIMEOUT] = {"--connect-timeout", 1}, [F_HOLD] = {"--hold", 1},
    [F_HEARTBEAT] = {"--heartbeat", 1},  [F_MINAVAIL] = {"--min-available", 1},
    [F_JSON] = {"--json", 1},            [F_QUIET] = {"--quiet", 0},
    [F_HELP] = {"--help", 0},            [F_RECONNECT] = {"--reconnect", 1},
    [F_BACKOFF_BASE] = {"--backoff-base", 1}, [F_BACKOFF_CAP] = {"--backoff-cap", 1},
    [F_STALL] = {"--stall", 1},          [F_STALL_SIGNAL] = {"--stall-on-signal", 0},
};

int c1m_opts_parse(int argc, char **argv, struct c1m_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->host = "127.0.0.1";
    o->port = 9000;
    o->port_count = 1;
    o->inflight = 1000;
    o->connect_timeout = 10;
    o->backoff_base_ms = 100;
    o->backoff_cap_ms = 10000;
    const char *workers_arg = NULL, *src_arg = NULL;
    int backoff_given = 0;
    long cap_max = (long)c1m_nofile_limit() - C1M_FD_RESERVE;
    long v;

    c1m_cli_init(&cli, "c1m-client", usage_line, flags, F_COUNT, argc, argv);
    int f;
    while ((f = c1m_cli_next(&cli)) != C1M_CLI_END) {
        const char *name = cli.flag, *val = cli.value;
        if (f == C1M_CLI_ERROR)
            return 2;
        if (f == C1M_CLI_POSITIONAL)
            return bad(val, NULL, "unknown argument");
        switch (f) {
        case F_CONN:
            if (c1m_parse_long(val, 1, 100000000, 1, &o->connections) < 0)
                return bad(name, val, "expected 1..100m");
            break;
        case F_HOST:
            if (c1m_parse_host(val) < 0)
                return bad(name, val, "expects a host name or address of 1-63 bytes");
            o->host = val;
            break;
        case F_PORT:
            if (c1m_parse_ports(val, &o->port, &o->port_count) < 0)
                return bad(name, val, "expected a port 1..65535 or a range LO-HI (LO <= HI, "
                                      "at most 1024 ports)");
            break;
        case F_WORKERS:
            if (strcmp(val, "auto") == 0) {
                workers_arg = NULL;
                o->workers = 0;
            } else if (c1m_parse_long(val, 1, 1024, 0, &v) < 0) {
                return bad(name, val, "expected 1..1024 or auto");
            } else {
                workers_arg = val;
                o->workers = (int)v;
            }
            break;
        case F_WCONNS:
            if (cap_max < 1 || c1m_parse_long(val, 1, cap_max, 1, &o->worker_conns) < 0) {
                char why[80];
                snprintf(why, sizeof(why), "expected 1..%ld (RLIMIT_NOFILE - %d)", cap_max, C1M_FD_RESERVE);
                return bad(name, val, why);
            }
            break;
        case F_SRC:
            if (parse_src(val, &o->src_first, &o->src_count) < 0)
                return bad(name, val, "expected IPv4 A-B (A <= B, at most 65536) or one address");
            src_arg = val;
            break;
        case F_INFLIGHT:
            if (c1m_parse_long(val, 1, 1000000, 1, &o->inflight) < 0)
                return bad(name, val, "expected 1..1m");
            break;
        case F_RATE:
            if (c1m_parse_long(val, 0, 1000000000, 1, &o->rate) < 0)
                return bad(name, val, "expected a rate >= 0 (0 = unlimited)");
            break;
        case F_CTIMEOUT:
            if (c1m_parse_seconds(val, 0.001, 3600, 0, &o->connect_timeout) < 0)
                return bad(name, val, "expected seconds in 0.001..3600");
            break;
        case F_HOLD:
            if (c1m_parse_seconds(val, -1e300, 1e9, 1, &o->hold) < 0)
                return bad(name, val, "expected seconds: 0 = no hold, negative (not -0) or inf = "
                                      "until a signal");
            if (o->hold < 0 || isinf(o->hold))
                o->hold = -1;
            break;
        case F_HEARTBEAT:
            if (c1m_parse_seconds(val, 0, 86400, 0, &o->heartbeat) < 0 ||
                (o->heartbeat > 0 && o->heartbeat < 0.01))
                return bad(name, val, "expected seconds: 0 (off) or 0.01..86400");
            break;
        case F_MINAVAIL:
            if (c1m_parse_long(val, 0, 1L << 40, 1, &o->min_available_mib) < 0)
                return bad(name, val, "expected MiB >= 0");
            break;
        case F_JSON:
            if (!*val)
                return bad(name, val, "empty file name");
            o->json = val;
            break;
        case F_QUIET:
            o->quiet = 1;
            break;
        case F_RECONNECT:
            if (c1m_reconnect_parse(val, &o->reconnect) < 0)
                return bad(name, val, "expected off, now or backoff");
            break;
        case F_BACKOFF_BASE:
        case F_BACKOFF_CAP:
            if (c1m_parse_long(val, 1, 3600000, 0, &v) < 0)
                return bad(name, val, "expected milliseconds 1..3600000");
            *(f == F_BACKOFF_BASE ? &o->backoff_base_ms : &o->backoff_cap_ms) = v;
            backoff_given = 1;
            break;
        case F_STALL:
            if (c1m_parse_seconds(val, 0, 1, 0, &o->stall) < 0)
                return bad(name, val, "expected a fraction 0..1 (e.g. 0.01)");
            break;
        case F_STALL_SIGNAL:
            o->stall_on_signal = 1;
            break;
        case F_HELP:
            fputs(usage_line, stdout);
            fputs(help_text, stdout);
            return 0;
        }
    }
    if (o->connections == 0)
        return bad("--connections", NULL, "required");
    if (o->backoff_cap_ms < o->backoff_base_ms) {
        char why[120];
        snprintf(why, sizeof(why), "%ld ms is below --backoff-base %ld ms", o->backoff_cap_ms,
                 o->backoff_base_ms);
        return bad("--backoff-cap", NULL, why);
    }

    /* A name that does not resolve is a runtime failure (exit 1, the
     * resolver's own error), as in c1m-server: the resolver may be down. */
    int rc = c1m_resolve(o->host, o->port, &o->dst, &o->dstlen);
    if (rc != 0) {
        fprintf(stderr, "c1m-client: cannot resolve --host %s: %s\n", o->host,
                rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return 1;
    }
    int v6 = o->dst.ss_family == AF_INET6;

    if (cap_max < 1)
        return bad("--worker-conns", NULL, "RLIMIT_NOFILE is too low (needs > " STR(C1M_FD_RESERVE) ")");
    if (o->worker_conns == 0)
        o->worker_conns = cap_max;
    if (o->workers == 0) {
        o->workers = c1m_workers_auto(o->connections, o->worker_conns);
        if (o->workers > 1024) {
            char why[120];
            snprintf(why, sizeof(why), "%ld connections need more than 1024 workers of %ld",
                     o->connections, o->worker_conns);
            return bad("--workers", NULL, why);
        }
    }
    long share = (o->connections + o->workers - 1) / o->workers;
    if (share > o->worker_conns) {
        char why[200];
        snprintf(why, sizeof(why),
                 "%d worker(s) would hold %ld connections each, above the per-worker cap %ld: "
                 "use --workers %d or more (or --workers auto)",
                 o->workers, share, o->worker_conns,
                 c1m_workers_auto(o->connections, o->worker_conns));
        return bad(workers_arg ? "--workers" : "--worker-conns", NULL, why);
    }

    if (src_arg && v6)
        return bad("--src", src_arg, "IPv4 source addresses but --host is IPv6");
    if (!src_arg && !v6) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&o->dst;
        if ((ntohl(s4->sin_addr.s_addr) >> 24) == 127) {
            o->src_first = (127u << 24) | 2u;
            o->src_count = (uint32_t)((o->connections + C1M_CONNS_PER_SRC - 1) / C1M_CONNS_PER_SRC);
        }
    }
    if (o->heartbeat > 0 && o->hold == 0)
        fprintf(stderr, "c1m-client: warning: --heartbeat has no effect without --hold\n");
    if (o->reconnect != C1M_RECONNECT_OFF && o->hold == 0)
        fprintf(stderr, "c1m-client: warning: --reconnect has no effect without --hold\n");
    if (o->stall > 0 && o->hold == 0)
        fprintf(stderr, "c1m-client: warning: --stall has no effect without --hold\n");
    if (o->stall_on_signal && o->stall <= 0)
        fprintf(stderr, "c1m-client: warning: --stall-on-signal has no effect without --stall\n");
    if (backoff_given && o->reconnect != C1M_RECONNECT_BACKOFF)
        fprintf(stderr, "c1m-client: warning: --backoff-base/--backoff-cap have no effect "
                        "without --reconnect backoff\n");
    return -1;
}
