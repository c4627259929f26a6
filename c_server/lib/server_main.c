/* server_main.c - see server_main.h. */
#include "server_main.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"
#include "workers.h"

/* --workers auto plans for 95% fill: SO_REUSEPORT hashing is not perfectly
 * even, and a full worker hands its share to the others. */
#define AUTO_FILL 0.95
/* --workers at most, given or computed (auto) */
#define MAX_WORKERS 4096

enum { F_HELP, F_H, F_QUIET, F_CHECK, F_HOST, F_PORT, F_BACKLOG, F_WORKERS, F_MAX_CONNS,
       F_WORKER_CONNS, F_SNDBUF, F_RCVBUF, F_MAX_PENDING, F_STATS, F_NCOMMON };
static const struct c1m_cli_flag common_flags[F_NCOMMON] = {
    [F_HELP] = {"--help", 0}, [F_H] = {"-h", 0}, [F_QUIET] = {"--quiet", 0},
    [F_CHECK] = {"--check", 0}, [F_HOST] = {"--host", 1}, [F_PORT] = {"--port", 1},
    [F_BACKLOG] = {"--backlog", 1}, [F_WORKERS] = {"--workers", 1},
    [F_MAX_CONNS] = {"--max-conns", 1}, [F_WORKER_CONNS] = {"--worker-conns", 1},
    [F_SNDBUF] = {"--sndbuf", 1}, [F_RCVBUF] = {"--rcvbuf", 1},
    [F_MAX_PENDING] = {"--max-pending", 1}, [F_STATS] = {"--stats", 1},
};

static void make_usage(const struct c1m_server_prog *p, char *buf, size_t len)
{
    int pad = (int)strlen(p->prog) + 8; /* under the first flag: "usage: PROG " */
    int n = snprintf(buf, len,
                     "usage: %s [--host H] [--port P|LO-HI] [--backlog N] [--workers N|auto] [--max-conns N]\n"
                     "%*s[--worker-conns N] [--sndbuf B] [--rcvbuf B] [--max-pending B]\n",
                     p->prog, pad, "");
    if (p->flags_usage && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "%*s%s\n", pad, "", p->flags_usage);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%*s[--stats PATH] [--quiet]%s [--help]\n", pad, "",
                 p->has_check ? " [--check]" : "");
}

static void buf_help(const char *flag, const char *what, int dflt)
{
    if (dflt > 0)
        printf("  %-17s %s per connection (default %d; 0 = kernel default)\n", flag, what, dflt);
    else
        printf("  %-17s %s per connection (default 0 = kernel default)\n", flag, what);
}

static void help(const struct c1m_server_prog *p, const struct c1m_server_opts *o,
                 const char *usage)
{
    printf("%s\n%s\n\n", usage, p->about);
    printf(
        "  --host H          address to listen on (default 0.0.0.0)\n"
        "  --port P|LO-HI    TCP port (default 9000), or a range of up to %d ports: worker i\n"
        "                    listens on LO + i mod the range's size (the workers: a multiple\n"
        "                    of the ports; auto rounds up)\n"
        "  --backlog N       listen() backlog per worker (default 65535; the kernel caps it\n"
        "                    at net.core.somaxconn)\n"
        "  --workers N|auto  worker processes (default auto: enough workers of\n"
        "                    --worker-conns each to hold --max-conns at %d%% fill)\n"
        "  --max-conns N     connections the server is sized for (default 10000; k/m suffixes)\n"
        "  --worker-conns N  per-worker cap: a worker at the cap closes its listener and\n"
        "                    re-opens it below 90%% (default RLIMIT_NOFILE - %d = %d here).\n"
        "                    With net.ipv4.tcp_migrate_req=1 the connections queued on a\n"
        "                    closed listener move to the other workers instead of being reset.\n",
        C1M_PORTS_MAX, (int)(AUTO_FILL * 100), C1M_FD_RESERVE,
        c1m_nofile_limit() - C1M_FD_RESERVE);
    buf_help("--sndbuf B", "SO_SNDBUF", o->sndbuf);
    buf_help("--rcvbuf B", "SO_RCVBUF", o->rcvbuf);
    if (p->max_pending_help)
        printf("%s", p->max_pending_help);
    else
        printf("  --max-pending B   reply bytes a connection may have waiting; over it, it is read\n"
               "                    no more and closed as slow if the backlog does not shrink\n"
               "                    for 250 ms (default %ld)\n", o->max_pending);
    if (p->flags_help)
        printf("%s", p->flags_help);
    printf("  --stats PATH      live counters file (default /dev/shm/%s-PORT-PID.stats,\n"
           "                    removed when the server exits); read it with c1m-stat\n", p->prog);
    if (p->stats_note)
        printf("%s", p->stats_note);
    printf("  --quiet           no start/stop messages\n");
    if (p->has_check)
        printf("  --check           only say whether this machine can run it (exit 0 or 3)\n");
    printf("  --help            this text\n\n"
           "Exit status: 0 after SIGTERM/SIGINT with every worker clean, 1 if a worker failed\n"
           "or died, 2 on a usage error%s.\n",
           p->has_check ? ", 3 if this machine cannot run it (the reason is printed)" : "");
}

/* Parse argv into o. -1 to go on, else the exit status (0 after --help). */
static int parse(const struct c1m_server_prog *p, const char *usage, int argc, char **argv,
                 struct c1m_server_opts *o, int nofile, int *check)
{
    struct c1m_cli_flag flags[F_NCOMMON + C1M_SERVER_MAX_EXTRA];
    int nflags = F_NCOMMON;
    memcpy(flags, common_flags, sizeof(common_flags));
    /* The indexes stay those of the enum: without has_check, --check's slot
     * repeats "-h", which F_H matches first, so --check is an unknown flag. */
    if (!p->has_check)
        flags[F_CHECK].name = "-h";
    for (int i = 0; i < p->nflags && i < C1M_SERVER_MAX_EXTRA; i++)
        flags[nflags++] = p->flags[i];
    int workers_auto = 1;
    struct c1m_cli c;
    c1m_cli_init(&c, p->prog, usage, flags, nflags, argc, argv);
    int f, rc;
    long x;
    while ((f = c1m_cli_next(&c)) != C1M_CLI_END) {
        const char *v = c.value, *a = c.flag;
        switch (f) {
        case C1M_CLI_ERROR:
            return 2;
        case C1M_CLI_POSITIONAL:
            return c1m_cli_error(&c, v, NULL, "unexpected argument");
        case F_HELP: case F_H:
            help(p, o, usage);
            return 0;
        case F_QUIET:
            o->quiet = 1;
            break;
        case F_CHECK:
            *check = 1;
            break;
        case F_HOST:
            if (c1m_parse_host(v) < 0)
                return c1m_cli_error(&c, a, v, "expects a host name or address of 1-63 bytes");
            o->host = v;
            break;
        case F_STATS:
            if (!*v)
                return c1m_cli_error(&c, a, v, "empty path");
            o->stats_path = v;
            break;
        case F_WORKERS:
            if (!strcmp(v, "auto")) {
                workers_auto = 1;
            } else if (c1m_parse_long(v, 1, MAX_WORKERS, 0, &x) == 0) {
                workers_auto = 0;
                o->workers = (int)x;
            } else {
                return c1m_cli_error(&c, a, v, "expects a number 1-4096 or 'auto'");
            }
            break;
        case F_PORT:
            /* not 0: a kernel-chosen port is reported nowhere, and the
             * listener's re-open after the fd-cap back-off would get another */
            if (c1m_parse_ports(v, &o->port, &o->port_count) < 0)
                return c1m_cli_error(&c, a, v, "expects a port 1-65535 or a range LO-HI "
                                               "(LO <= HI, at most 1024 ports)");
            break;
        case F_BACKLOG:
            if (c1m_parse_long(v, 1, 1 << 20, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a number 1-1048576");
            o->backlog = (int)x;
            break;
        case F_MAX_CONNS:
            if (c1m_parse_long(v, 1, 100000000, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a number 1-100m (k/m suffixes allowed)");
            o->max_conns = x;
            break;
        case F_WORKER_CONNS:
            if (c1m_parse_long(v, 1, 100000000, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a positive number");
            if (x > nofile - C1M_FD_RESERVE) {
                char why[160];
                snprintf(why, sizeof(why), "%ld exceeds RLIMIT_NOFILE %d minus %d reserved fds",
                         x, nofile, C1M_FD_RESERVE);
                return c1m_cli_error(&c, a, v, why);
            }
            o->worker_conns = x;
            break;
        case F_SNDBUF: case F_RCVBUF:
            if (c1m_parse_long(v, 0, 1 << 28, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects bytes 0-268435456 (0 = kernel default)");
            *(f == F_SNDBUF ? &o->sndbuf : &o->rcvbuf) = (int)x;
            break;
        case F_MAX_PENDING:
            if (c1m_parse_long(v, 1, 1 << 30, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects bytes 1-1073741824");
            o->max_pending = x;
            break;
        default: /* a program flag: its index in p->flags */
            if (p->on_flag && (rc = p->on_flag(p->ud, &c, f - F_NCOMMON)) >= 0)
                return rc;
            break;
        }
    }
    if (p->after_parse && (rc = p->after_parse(p->ud, o, &c)) >= 0)
        return rc;
    if (o->worker_conns < 1)
        return c1m_cli_error(&c, "--worker-conns", NULL,
                             "RLIMIT_NOFILE is too low to hold any connection");
    if (workers_auto) {
        long per = (long)(o->worker_conns * AUTO_FILL);
        o->workers = c1m_workers_auto(o->max_conns, per > 0 ? per : 1);
        /* the bound of --workers holds for auto too (100m connections would
         * otherwise fork 5,000+ processes) */
        if (o->workers > MAX_WORKERS) {
            char why[160];
            snprintf(why, sizeof(why), "%ld connections need more than %d workers of %ld",
                     o->max_conns, MAX_WORKERS, per > 0 ? per : 1);
            return c1m_cli_error(&c, "--max-conns", NULL, why);
        }
        /* every port gets as many workers: the client spreads its connects
         * evenly over the ports, so each port must hold its share */
        o->workers = (o->workers + o->port_count - 1) / o->port_count * o->port_count;
        if (o->workers > MAX_WORKERS)
            return c1m_cli_error(&c, "--max-conns", NULL, "too many workers for the ports");
    } else if (o->workers % o->port_count) {
        char why[128];
        snprintf(why, sizeof(why), "%d workers over %d ports: a multiple of %d (each port gets as "
                 "many workers; the client spreads evenly)", o->workers, o->port_count,
                 o->port_count);
        return c1m_cli_error(&c, "--workers", NULL, why);
    }
    return -1;
}

/* Fail early and clearly if the address cannot be used: the resolver's own
 * error for a bad name; a bind without SO_REUSEPORT, so that a port another
 * process listens on (even with SO_REUSEPORT) is refused instead of joined. */
static int check_listen(const char *prog, const struct c1m_server_opts *o)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int gai = c1m_resolve(o->host, o->port, &ss, &len);
    if (gai != 0) {
        fprintf(stderr, "%s: cannot resolve --host %s: %s\n", prog, o->host,
                gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return -1;
    }
    for (int port = o->port; port < o->port + o->port_count; port++) {
        int probe = c1m_listen_tcp(o->host, port, 1, 0);
        if (probe < 0) {
            fprintf(stderr, "%s: cannot listen on %s:%d: %s\n", prog, o->host, port,
                    errno == EADDRINUSE ? "address in use" : strerror(errno));
            return -1;
        }
        close(probe);
    }
    return 0;
}

struct runctx {
    const struct c1m_server_prog *p;
    const struct c1m_server_opts *o;
    struct c1m_stats *st;
};

static void on_worker_fail(int i, int status, void *ud)
{
    struct runctx *r = ud;
    if (WIFSIGNALED(status))
        fprintf(stderr, "%s: worker %d (pid %d) killed by signal %d; stopping all workers\n",
                r->p->prog, i, (int)r->st->w[i].pid, WTERMSIG(status));
    else
        fprintf(stderr, "%s: worker %d (pid %d) exited with status %d; stopping all workers\n",
                r->p->prog, i, (int)r->st->w[i].pid, WEXITSTATUS(status));
    c1m_stats_begin(&r->st->w[i]);
    r->st->w[i].state = C1M_ST_FAILED;
    c1m_stats_end(&r->st->w[i]);
}

static int worker_main(int i, void *ud)
{
    struct runctx *r = ud;
    r->st->w[i].pid = (uint64_t)getpid();
    /* this worker's port of a --port range, as if it had been given alone */
    struct c1m_server_opts mine = *r->o;
    mine.port = r->o->port + i % r->o->port_count;
    mine.port_count = 1;
    return r->p->worker_run(r->p->ud, &mine, r->st, i);
}

int c1m_server_main(const struct c1m_server_prog *p, struct c1m_server_opts *o, int argc,
                    char **argv)
{
    int nofile = c1m_nofile_limit();
    o->host = "0.0.0.0";
    o->port = 9000;
    o->port_count = 1;
    o->backlog = 65535;
    o->workers = 0;
    o->max_conns = 10000;
    o->worker_conns = nofile - C1M_FD_RESERVE;
    o->stats_path = NULL;
    o->quiet = 0;
    char usage[512], default_stats[160], why[256];
    int check = 0;
    make_usage(p, usage, sizeof(usage));
    int prc = parse(p, usage, argc, argv, o, nofile, &check);
    if (prc >= 0)
        return prc;
    if (p->available && p->available(why, sizeof(why)) < 0) {
        fprintf(stderr, "%s: unavailable: %s\n", p->prog, why);
        return C1M_EXIT_UNAVAILABLE;
    }
    if (check) {
        printf("%s: available\n", p->prog);
        return 0;
    }
    /* The default file is this process's own (the pid makes it unique across
     * network namespaces and runs) and is removed when the server exits. */
    int own_default = !o->stats_path;
    if (own_default) {
        snprintf(default_stats, sizeof(default_stats), "/dev/shm/%s-%d-%d.stats", p->prog,
                 o->port, (int)getpid());
        o->stats_path = default_stats;
    }
    if (check_listen(p->prog, o) < 0)
        return 1;

    struct c1m_stats st;
    if (c1m_stats_create(&st, o->stats_path, (uint32_t)o->workers, (uint64_t)o->max_conns,
                         p->kind) < 0) {
        fprintf(stderr, "%s: --stats %s: %s\n", p->prog, o->stats_path, c1m_stats_strerror(errno));
        return 1;
    }
    if (!o->quiet) {
        char ports[16];
        if (o->port_count > 1)
            snprintf(ports, sizeof(ports), "%d-%d", o->port, o->port + o->port_count - 1);
        else
            snprintf(ports, sizeof(ports), "%d", o->port);
        fprintf(stderr, "%s: %d workers x %ld connections on %s:%s (sndbuf %d, rcvbuf %d); "
                        "stats %s; pid %d\n", p->prog, o->workers, o->worker_conns, o->host,
                ports, o->sndbuf, o->rcvbuf, o->stats_path, (int)getpid());
    }

    struct runctx rc = {p, o, &st};
    struct c1m_workers ws;
    int status = 1;
    if (c1m_workers_start(&ws, o->workers, worker_main, &rc) < 0) {
        fprintf(stderr, "%s: fork: %s\n", p->prog, strerror(errno));
    } else {
        if (p->started)
            p->started(p->ud, o);
        status = c1m_workers_wait(&ws, on_worker_fail, &rc);
        if (!o->quiet)
            fprintf(stderr, "%s: %s\n", p->prog, status == 0 ? "all workers exited cleanly"
                                                             : "stopped after a worker failure");
        c1m_workers_free(&ws);
    }
    c1m_stats_close(&st);
    if (own_default)
        unlink(o->stats_path);
    return status;
}
