/* main.c - c1m-server: command line, worker sizing and supervision. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "net.h"
#include "pushmsg.h"
#include "server.h"
#include "stats.h"
#include "workers.h"

/* fds a worker keeps for itself: epoll, signalfd, listener, stdio, slack. */
#define FD_RESERVE 64
/* --workers auto plans for 95% fill: SO_REUSEPORT hashing is not perfectly
 * even, and a full worker hands its share to the others. */
#define AUTO_FILL 0.95
/* --workers at most, given or computed (auto) */
#define MAX_WORKERS 4096

static const char usage_line[] =
    "usage: c1m-server [--host H] [--port P] [--backlog N] [--workers N|auto] [--max-conns N]\n"
    "                  [--worker-conns N] [--sndbuf B] [--rcvbuf B] [--max-pending B]\n"
    "                  [--push BYTES [--push-every S [--push-burst]]]\n"
    "                  [--stats PATH] [--quiet] [--help]\n";

static void help(void)
{
    printf("%s", usage_line);
    printf(
        "\nHolds idle TCP connections with level-triggered epoll in N SO_REUSEPORT worker\n"
        "processes. Answers \"ping\\n\" with \"pong\\n\"; other lines are counted.\n\n"
        "  --host H          address to listen on (default 0.0.0.0)\n"
        "  --port P          TCP port (default 9000)\n"
        "  --backlog N       listen() backlog per worker (default 65535; the kernel caps it\n"
        "                    at net.core.somaxconn)\n"
        "  --workers N|auto  worker processes (default auto: enough workers of\n"
        "                    --worker-conns each to hold --max-conns at %d%% fill)\n"
        "  --max-conns N     connections the server is sized for (default 10000; k/m suffixes)\n"
        "  --worker-conns N  per-worker cap: a worker at the cap closes its listener and\n"
        "                    re-opens it below 90%% (default RLIMIT_NOFILE - %d = %d here).\n"
        "                    With net.ipv4.tcp_migrate_req=1 the connections queued on a\n"
        "                    closed listener move to the other workers instead of being reset.\n"
        "  --sndbuf B        SO_SNDBUF per connection (default 4096; 0 = kernel default)\n"
        "  --rcvbuf B        SO_RCVBUF per connection (default 4096; 0 = kernel default)\n"
        "  --max-pending B   reply bytes a connection may have waiting before it is closed\n"
        "                    as slow (default 4096)\n"
        "  --push BYTES      server push: messages of BYTES (%d-%d, newline included):\n"
        "                    \"push SEQ USEC \" + '.' padding + \"\\n\", SEQ from 1 per\n"
        "                    connection, USEC the CLOCK_REALTIME microseconds of the send.\n"
        "                    They count toward --max-pending like pongs. SIGUSR1 to a worker\n"
        "                    sends one to each of its connections at once (the parent\n"
        "                    ignores SIGUSR1); without --push-every only those are sent.\n"
        "  --push-every S    each connection gets one message every S seconds (0.001-86400),\n"
        "                    the connections' sends spread evenly over the interval\n"
        "  --push-burst      each interval's messages go to all connections at once\n"
        "  --stats PATH      live counters file (default /dev/shm/c1m-server-PORT-PID.stats,\n"
        "                    removed when the server exits); read it with c1m-stat\n"
        "  --quiet           no start/stop messages\n"
        "  --help            this text\n\n"
        "Exit status: 0 after SIGTERM/SIGINT with every worker clean, 1 if a worker failed\n"
        "or died, 2 on a usage error.\n",
        (int)(AUTO_FILL * 100), FD_RESERVE, c1m_nofile_limit() - FD_RESERVE, C1M_PUSH_MIN,
        C1M_PUSH_MAX);
}

struct failctx {
    struct c1m_stats *st;
    struct c1m_workers *ws;
};

static void on_worker_fail(int i, int status, void *ud)
{
    struct failctx *f = ud;
    if (WIFSIGNALED(status))
        fprintf(stderr, "c1m-server: worker %d (pid %d) killed by signal %d; stopping all workers\n",
                i, (int)f->st->w[i].pid, WTERMSIG(status));
    else
        fprintf(stderr, "c1m-server: worker %d (pid %d) exited with status %d; stopping all workers\n",
                i, (int)f->st->w[i].pid, WEXITSTATUS(status));
    c1m_stats_begin(&f->st->w[i]);
    f->st->w[i].state = C1M_ST_FAILED;
    c1m_stats_end(&f->st->w[i]);
}

struct runctx {
    struct server_config *cfg;
    struct c1m_stats *st;
};

static int worker_main(int i, void *ud)
{
    struct runctx *r = ud;
    r->st->w[i].pid = (uint64_t)getpid();
    return server_worker_run(r->cfg, r->st, i);
}

enum { F_HELP, F_H, F_QUIET, F_HOST, F_PORT, F_BACKLOG, F_WORKERS, F_MAX_CONNS, F_WORKER_CONNS,
       F_SNDBUF, F_RCVBUF, F_MAX_PENDING, F_STATS, F_PUSH, F_PUSH_EVERY, F_PUSH_BURST, F_NFLAGS };
static const struct c1m_cli_flag flags[F_NFLAGS] = {
    [F_HELP] = {"--help", 0}, [F_H] = {"-h", 0}, [F_QUIET] = {"--quiet", 0},
    [F_HOST] = {"--host", 1}, [F_PORT] = {"--port", 1}, [F_BACKLOG] = {"--backlog", 1},
    [F_WORKERS] = {"--workers", 1}, [F_MAX_CONNS] = {"--max-conns", 1},
    [F_WORKER_CONNS] = {"--worker-conns", 1}, [F_SNDBUF] = {"--sndbuf", 1},
    [F_RCVBUF] = {"--rcvbuf", 1}, [F_MAX_PENDING] = {"--max-pending", 1}, [F_STATS] = {"--stats", 1},
    [F_PUSH] = {"--push", 1}, [F_PUSH_EVERY] = {"--push-every", 1}, [F_PUSH_BURST] = {"--push-burst", 0},
};

/* Parse argv into cfg. -1 to go on, else the exit status (0 after --help). */
static int parse(int argc, char **argv, struct server_config *cfg, int nofile)
{
    int workers_auto = 1;
    struct c1m_cli c;
    c1m_cli_init(&c, "c1m-server", usage_line, flags, F_NFLAGS, argc, argv);
    int f;
    long x;
    while ((f = c1m_cli_next(&c)) != C1M_CLI_END) {
        const char *v = c.value, *a = c.flag;
        switch (f) {
        case C1M_CLI_ERROR:
            return 2;
        case C1M_CLI_POSITIONAL:
            return c1m_cli_error(&c, v, NULL, "unexpected argument");
        case F_HELP: case F_H:
            help();
            return 0;
        case F_QUIET:
            cfg->quiet = 1;
            break;
        case F_HOST:
            if (c1m_parse_host(v) < 0)
                return c1m_cli_error(&c, a, v, "expects a host name or address of 1-63 bytes");
            cfg->host = v;
            break;
        case F_STATS:
            if (!*v)
                return c1m_cli_error(&c, a, v, "empty path");
            cfg->stats_path = v;
            break;
        case F_WORKERS:
            if (!strcmp(v, "auto")) {
                workers_auto = 1;
            } else if (c1m_parse_long(v, 1, MAX_WORKERS, 0, &x) == 0) {
                workers_auto = 0;
                cfg->workers = (int)x;
            } else {
                return c1m_cli_error(&c, a, v, "expects a number 1-4096 or 'auto'");
            }
            break;
        case F_PORT:
            /* not 0: a kernel-chosen port is reported nowhere, and the
             * listener's re-open after the fd-cap back-off would get another */
            if (c1m_parse_long(v, 1, 65535, 0, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a port 1-65535");
            cfg->port = (int)x;
            break;
        case F_BACKLOG:
            if (c1m_parse_long(v, 1, 1 << 20, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a number 1-1048576");
            cfg->backlog = (int)x;
            break;
        case F_MAX_CONNS:
            if (c1m_parse_long(v, 1, 100000000, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a number 1-100m (k/m suffixes allowed)");
            cfg->max_conns = x;
            break;
        case F_WORKER_CONNS:
            if (c1m_parse_long(v, 1, 100000000, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects a positive number");
            if (x > nofile - FD_RESERVE) {
                char why[160];
                snprintf(why, sizeof(why), "%ld exceeds RLIMIT_NOFILE %d minus %d reserved fds",
                         x, nofile, FD_RESERVE);
                return c1m_cli_error(&c, a, v, why);
            }
            cfg->worker_conns = x;
            break;
        case F_SNDBUF: case F_RCVBUF:
            if (c1m_parse_long(v, 0, 1 << 28, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects bytes 0-268435456 (0 = kernel default)");
            *(f == F_SNDBUF ? &cfg->sndbuf : &cfg->rcvbuf) = (int)x;
            break;
        case F_MAX_PENDING:
            if (c1m_parse_long(v, 1, 1 << 30, 1, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects bytes 1-1073741824");
            cfg->max_pending = x;
            break;
        case F_PUSH:
            if (c1m_parse_long(v, C1M_PUSH_MIN, C1M_PUSH_MAX, 0, &x) < 0)
                return c1m_cli_error(&c, a, v, "expects bytes 32-1025 (one line of at most "
                                               "1024 bytes plus its newline)");
            cfg->push_bytes = (int)x;
            break;
        case F_PUSH_EVERY:
            if (c1m_parse_seconds(v, 0.001, 86400, 0, &cfg->push_every) < 0)
                return c1m_cli_error(&c, a, v, "expects seconds 0.001-86400 (e.g. 30 or 0.5)");
            break;
        case F_PUSH_BURST:
            cfg->push_burst = 1;
            break;
        }
    }
    if (cfg->push_every > 0 && !cfg->push_bytes)
        return c1m_cli_error(&c, "--push-every", NULL, "needs --push BYTES");
    if (cfg->push_burst && !cfg->push_bytes)
        return c1m_cli_error(&c, "--push-burst", NULL, "needs --push BYTES and --push-every S");
    if (cfg->push_burst && !(cfg->push_every > 0))
        return c1m_cli_error(&c, "--push-burst", NULL, "needs --push-every S");
    if (cfg->worker_conns < 1)
        return c1m_cli_error(&c, "--worker-conns", NULL,
                             "RLIMIT_NOFILE is too low to hold any connection");
    if (workers_auto) {
        long per = (long)(cfg->worker_conns * AUTO_FILL);
        cfg->workers = c1m_workers_auto(cfg->max_conns, per > 0 ? per : 1);
        /* the bound of --workers holds for auto too (100m connections would
         * otherwise fork 5,000+ processes) */
        if (cfg->workers > MAX_WORKERS) {
            char why[160];
            snprintf(why, sizeof(why), "%ld connections need more than %d workers of %ld",
                     cfg->max_conns, MAX_WORKERS, per > 0 ? per : 1);
            return c1m_cli_error(&c, "--max-conns", NULL, why);
        }
    }
    return -1;
}

/* Fail early and clearly if the address cannot be used: the resolver's own
 * error for a bad name; a bind without SO_REUSEPORT, so that a port another
 * process listens on (even with SO_REUSEPORT) is refused instead of joined. */
static int check_listen(const struct server_config *cfg)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int gai = c1m_resolve(cfg->host, cfg->port, &ss, &len);
    if (gai != 0) {
        fprintf(stderr, "c1m-server: cannot resolve --host %s: %s\n", cfg->host,
                gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return -1;
    }
    int probe = c1m_listen_tcp(cfg->host, cfg->port, 1, 0);
    if (probe < 0) {
        fprintf(stderr, "c1m-server: cannot listen on %s:%d: %s\n", cfg->host, cfg->port,
                errno == EADDRINUSE ? "address in use" : strerror(errno));
        return -1;
    }
    close(probe);
    return 0;
}

int main(int argc, char **argv)
{
    int nofile = c1m_nofile_limit();
    struct server_config cfg = {
        .host = "0.0.0.0", .port = 9000, .backlog = 65535, .workers = 0,
        .max_conns = 10000, .worker_conns = nofile - FD_RESERVE,
        .sndbuf = 4096, .rcvbuf = 4096, .max_pending = 4096,
    };
    char default_stats[128];
    int prc = parse(argc, argv, &cfg, nofile);
    if (prc >= 0)
        return prc;
    /* The default file is this process's own (the pid makes it unique across
     * network namespaces and runs) and is removed when the server exits. */
    int own_default = !cfg.stats_path;
    if (own_default) {
        snprintf(default_stats, sizeof(default_stats), "/dev/shm/c1m-server-%d-%d.stats",
                 cfg.port, (int)getpid());
        cfg.stats_path = default_stats;
    }
    if (check_listen(&cfg) < 0)
        return 1;

    struct c1m_stats st;
    if (c1m_stats_create(&st, cfg.stats_path, (uint32_t)cfg.workers, (uint64_t)cfg.max_conns, "c") < 0) {
        fprintf(stderr, "c1m-server: --stats %s: %s\n", cfg.stats_path, c1m_stats_strerror(errno));
        return 1;
    }
    if (!cfg.quiet)
        fprintf(stderr, "c1m-server: %d workers x %ld connections on %s:%d (sndbuf %d, rcvbuf %d); "
                        "stats %s; pid %d\n", cfg.workers, cfg.worker_conns, cfg.host, cfg.port,
                cfg.sndbuf, cfg.rcvbuf, cfg.stats_path, (int)getpid());
    if (!cfg.quiet && cfg.push_bytes)
    {
        if (cfg.push_every > 0)
            fprintf(stderr, "c1m-server: push %d bytes every %g s (%s) and on SIGUSR1\n",
                    cfg.push_bytes, cfg.push_every, cfg.push_burst ? "burst" : "paced");
        else
            fprintf(stderr, "c1m-server: push %d bytes on SIGUSR1\n", cfg.push_bytes);
    }

    struct runctx rc = {&cfg, &st};
    struct c1m_workers ws;
    int status = 1;
    if (c1m_workers_start(&ws, cfg.workers, worker_main, &rc) < 0) {
        fprintf(stderr, "c1m-server: fork: %s\n", strerror(errno));
    } else {
        /* SIGUSR1 (push broadcast) is the workers'; one sent to the parent
         * must not end the server */
        if (cfg.push_bytes)
            signal(SIGUSR1, SIG_IGN);
        struct failctx fc = {&st, &ws};
        status = c1m_workers_wait(&ws, on_worker_fail, &fc);
        if (!cfg.quiet)
            fprintf(stderr, "c1m-server: %s\n", status == 0 ? "all workers exited cleanly"
                                                            : "stopped after a worker failure");
        c1m_workers_free(&ws);
    }
    c1m_stats_close(&st);
    if (own_default)
        unlink(cfg.stats_path);
    return status;
}
