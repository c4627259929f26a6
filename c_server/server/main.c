/* main.c - c1m-server: command line, worker sizing and supervision. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"
#include "server.h"
#include "stats.h"
#include "workers.h"

/* fds a worker keeps for itself: epoll, signalfd, listener, stdio, slack. */
#define FD_RESERVE 64
/* --workers auto plans for 95% fill: SO_REUSEPORT hashing is not perfectly
 * even, and a full worker hands its share to the others. */
#define AUTO_FILL 0.95

static const char usage_line[] =
    "usage: c1m-server [--host H] [--port P] [--backlog N] [--workers N|auto] [--max-conns N]\n"
    "                  [--worker-conns N] [--sndbuf B] [--rcvbuf B] [--max-pending B]\n"
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
        "  --stats PATH      live counters file (default /dev/shm/c1m-server-PORT.stats);\n"
        "                    read it with c1m-stat\n"
        "  --quiet           no start/stop messages\n"
        "  --help            this text\n\n"
        "Exit status: 0 after SIGTERM/SIGINT with every worker clean, 1 if a worker failed\n"
        "or died, 2 on a usage error.\n",
        (int)(AUTO_FILL * 100), FD_RESERVE, c1m_nofile_limit() - FD_RESERVE);
}

static int usage_error(const char *flag, const char *why)
{
    fprintf(stderr, "c1m-server: %s: %s\n%s", flag, why, usage_line);
    return 2;
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

int main(int argc, char **argv)
{
    int nofile = c1m_nofile_limit();
    struct server_config cfg = {
        .host = "0.0.0.0", .port = 9000, .backlog = 65535, .workers = 0,
        .max_conns = 10000, .worker_conns = nofile - FD_RESERVE,
        .sndbuf = 4096, .rcvbuf = 4096, .max_pending = 4096,
    };
    char default_stats[128];
    int workers_auto = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            return 0;
        }
        if (!strcmp(a, "--quiet")) {
            cfg.quiet = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return usage_error(a, "unexpected argument");
        static const char *const known[] = {"--host", "--port", "--backlog", "--workers",
            "--max-conns", "--worker-conns", "--sndbuf", "--rcvbuf", "--max-pending", "--stats"};
        int found = 0;
        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
            found |= !strcmp(a, known[k]);
        if (!found)
            return usage_error(a, "unknown flag");
        if (i + 1 >= argc)
            return usage_error(a, "needs a value");
        const char *v = argv[++i];
        long x;
        if (!strcmp(a, "--host")) {
            if (!*v)
                return usage_error(a, "empty host");
            cfg.host = v;
        } else if (!strcmp(a, "--stats")) {
            if (!*v)
                return usage_error(a, "empty path");
            cfg.stats_path = v;
        } else if (!strcmp(a, "--workers")) {
            if (!strcmp(v, "auto")) {
                workers_auto = 1;
            } else if (c1m_parse_long(v, 1, 4096, 0, &x) == 0) {
                workers_auto = 0;
                cfg.workers = (int)x;
            } else {
                return usage_error(a, "expects a number 1-4096 or 'auto'");
            }
        } else if (!strcmp(a, "--port")) {
            if (c1m_parse_long(v, 0, 65535, 0, &x) < 0)
                return usage_error(a, "expects a port 0-65535");
            cfg.port = (int)x;
        } else if (!strcmp(a, "--backlog")) {
            if (c1m_parse_long(v, 1, 1 << 20, 1, &x) < 0)
                return usage_error(a, "expects a number 1-1048576");
            cfg.backlog = (int)x;
        } else if (!strcmp(a, "--max-conns")) {
            if (c1m_parse_long(v, 1, 100000000, 1, &x) < 0)
                return usage_error(a, "expects a number 1-100m (k/m suffixes allowed)");
            cfg.max_conns = x;
        } else if (!strcmp(a, "--worker-conns")) {
            if (c1m_parse_long(v, 1, 100000000, 1, &x) < 0)
                return usage_error(a, "expects a positive number");
            if (x > nofile - FD_RESERVE) {
                char why[160];
                snprintf(why, sizeof(why), "%ld exceeds RLIMIT_NOFILE %d minus %d reserved fds",
                         x, nofile, FD_RESERVE);
                return usage_error(a, why);
            }
            cfg.worker_conns = x;
        } else if (!strcmp(a, "--sndbuf") || !strcmp(a, "--rcvbuf")) {
            if (c1m_parse_long(v, 0, 1 << 28, 1, &x) < 0)
                return usage_error(a, "expects bytes 0-268435456 (0 = kernel default)");
            *(!strcmp(a, "--sndbuf") ? &cfg.sndbuf : &cfg.rcvbuf) = (int)x;
        } else if (!strcmp(a, "--max-pending")) {
            if (c1m_parse_long(v, 1, 1 << 30, 1, &x) < 0)
                return usage_error(a, "expects bytes 1-1073741824");
            cfg.max_pending = x;
        }
    }
    if (cfg.worker_conns < 1)
        return usage_error("--worker-conns", "RLIMIT_NOFILE is too low to hold any connection");
    if (workers_auto)
        cfg.workers = c1m_workers_auto(cfg.max_conns, (long)(cfg.worker_conns * AUTO_FILL) > 0
                                                          ? (long)(cfg.worker_conns * AUTO_FILL) : 1);
    if (!cfg.stats_path) {
        snprintf(default_stats, sizeof(default_stats), "/dev/shm/c1m-server-%d.stats", cfg.port);
        cfg.stats_path = default_stats;
    }
    if (cfg.port == 0 && cfg.workers > 1)
        return usage_error("--port", "port 0 needs --workers 1 (workers must share one port)");

    /* Fail early and clearly if the address cannot be bound. */
    int probe = c1m_listen_tcp(cfg.host, cfg.port, 1, 1);
    if (probe < 0) {
        fprintf(stderr, "c1m-server: cannot listen on %s:%d: %s\n", cfg.host, cfg.port, strerror(errno));
        return 1;
    }
    close(probe);

    struct c1m_stats st;
    if (c1m_stats_create(&st, cfg.stats_path, (uint32_t)cfg.workers, (uint64_t)cfg.max_conns, "c") < 0) {
        fprintf(stderr, "c1m-server: --stats %s: %s\n", cfg.stats_path, strerror(errno));
        return 1;
    }
    if (!cfg.quiet)
        fprintf(stderr, "c1m-server: %d workers x %ld connections on %s:%d (sndbuf %d, rcvbuf %d); "
                        "stats %s; pid %d\n", cfg.workers, cfg.worker_conns, cfg.host, cfg.port,
                cfg.sndbuf, cfg.rcvbuf, cfg.stats_path, (int)getpid());

    struct runctx rc = {&cfg, &st};
    struct c1m_workers ws;
    if (c1m_workers_start(&ws, cfg.workers, worker_main, &rc) < 0) {
        fprintf(stderr, "c1m-server: fork: %s\n", strerror(errno));
        c1m_stats_close(&st);
        return 1;
    }
    struct failctx fc = {&st, &ws};
    int status = c1m_workers_wait(&ws, on_worker_fail, &fc);
    if (!cfg.quiet)
        fprintf(stderr, "c1m-server: %s\n", status == 0 ? "all workers exited cleanly"
                                                        : "stopped after a worker failure");
    c1m_workers_free(&ws);
    c1m_stats_close(&st);
    return status;
}
