/* main.c - c1m-floor: command line, worker sizing and supervision.
 *
 * The flags, sizing and exit statuses are c1m-server's (the harness starts
 * every contender with the same ones); the work per connection is floor.c's. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "floor.h"
#include "net.h"
#include "stats.h"
#include "workers.h"

/* fds a worker keeps for itself: epoll, signalfd, listener, stdio, slack
 * (c1m-server's reserve, so both hold the same connections per worker) */
#define FD_RESERVE 64
/* --workers auto plans for 95% fill, as c1m-server does */
#define AUTO_FILL 0.95
#define MAX_WORKERS 4096

static const char usage_line[] =
    "usage: c1m-floor [--host H] [--port P] [--backlog N] [--workers N|auto] [--max-conns N]\n"
    "                 [--worker-conns N] [--stats PATH] [--quiet] [--help]\n";

static void help(void)
{
    printf("%s", usage_line);
    printf(
        "\nThe zero-state reference server: accepts TCP connections in N SO_REUSEPORT worker\n"
        "processes, adds each to epoll (peer close only) and holds it. It never reads or\n"
        "writes and keeps no per-connection state: the cost floor the other servers are\n"
        "compared to (the harness's reference contender `floor`).\n\n"
        "  --host H          address to listen on (default 0.0.0.0)\n"
        "  --port P          TCP port (default 9000)\n"
        "  --backlog N       listen() backlog per worker (default 65535)\n"
        "  --workers N|auto  worker processes (default auto: enough workers of\n"
        "                    --worker-conns each to hold --max-conns at %d%% fill)\n"
        "  --max-conns N     connections the server is sized for (default 10000; k/m suffixes)\n"
        "  --worker-conns N  per-worker cap: a worker at the cap closes its listener and\n"
        "                    re-opens it below 90%% (default RLIMIT_NOFILE - %d = %d here)\n"
        "  --stats PATH      live counters file (default /dev/shm/c1m-floor-PORT-PID.stats,\n"
        "                    removed when the server exits); read it with c1m-stat. Only\n"
        "                    state, open, accepted, closed and accept_errors are counted.\n"
        "  --quiet           no start/stop messages\n"
        "  --help            this text\n\n"
        "Exit status: 0 after SIGTERM/SIGINT with every worker clean, 1 if a worker failed\n"
        "or died, 2 on a usage error.\n",
        (int)(AUTO_FILL * 100), FD_RESERVE, c1m_nofile_limit() - FD_RESERVE);
}

struct failctx {
    struct c1m_stats *st;
};

static void on_worker_fail(int i, int status, void *ud)
{
    struct failctx *f = ud;
    if (WIFSIGNALED(status))
        fprintf(stderr, "c1m-floor: worker %d (pid %d) killed by signal %d; stopping all workers\n",
                i, (int)f->st->w[i].pid, WTERMSIG(status));
    else
        fprintf(stderr, "c1m-floor: worker %d (pid %d) exited with status %d; stopping all workers\n",
                i, (int)f->st->w[i].pid, WEXITSTATUS(status));
    c1m_stats_begin(&f->st->w[i]);
    f->st->w[i].state = C1M_ST_FAILED;
    c1m_stats_end(&f->st->w[i]);
}

struct runctx {
    struct floor_config *cfg;
    struct c1m_stats *st;
};

static int worker_main(int i, void *ud)
{
    struct runctx *r = ud;
    r->st->w[i].pid = (uint64_t)getpid();
    /* A parent killed with SIGKILL cannot stop its workers: the kernel sends
     * them SIGTERM instead, so no worker is left holding sockets. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
        perror("c1m-floor: prctl(PR_SET_PDEATHSIG)");
    if ((uint64_t)getppid() != r->st->hdr->parent_pid)
        return 1; /* the parent died before the prctl: nobody to serve for */
    return floor_worker_run(r->cfg, r->st, i);
}

enum { F_HELP, F_H, F_QUIET, F_HOST, F_PORT, F_BACKLOG, F_WORKERS, F_MAX_CONNS, F_WORKER_CONNS,
       F_STATS, F_NFLAGS };
static const struct c1m_cli_flag flags[F_NFLAGS] = {
    [F_HELP] = {"--help", 0}, [F_H] = {"-h", 0}, [F_QUIET] = {"--quiet", 0},
    [F_HOST] = {"--host", 1}, [F_PORT] = {"--port", 1}, [F_BACKLOG] = {"--backlog", 1},
    [F_WORKERS] = {"--workers", 1}, [F_MAX_CONNS] = {"--max-conns", 1},
    [F_WORKER_CONNS] = {"--worker-conns", 1}, [F_STATS] = {"--stats", 1},
};

/* Parse argv into cfg. -1 to go on, else the exit status (0 after --help). */
static int parse(int argc, char **argv, struct floor_config *cfg, int nofile)
{
    int workers_auto = 1;
    struct c1m_cli c;
    c1m_cli_init(&c, "c1m-floor", usage_line, flags, F_NFLAGS, argc, argv);
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
            /* not 0: the listener's re-open after the cap back-off needs the same port */
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
        }
    }
    if (cfg->worker_conns < 1)
        return c1m_cli_error(&c, "--worker-conns", NULL,
                             "RLIMIT_NOFILE is too low to hold any connection");
    if (workers_auto) {
        long per = (long)(cfg->worker_conns * AUTO_FILL);
        cfg->workers = c1m_workers_auto(cfg->max_conns, per > 0 ? per : 1);
        if (cfg->workers > MAX_WORKERS) {
            char why[160];
            snprintf(why, sizeof(why), "%ld connections need more than %d workers of %ld",
                     cfg->max_conns, MAX_WORKERS, per > 0 ? per : 1);
            return c1m_cli_error(&c, "--max-conns", NULL, why);
        }
    }
    return -1;
}

/* Fail early and clearly: the resolver's error for a bad name; a bind without
 * SO_REUSEPORT, so a port another process listens on is refused, not joined. */
static int check_listen(const struct floor_config *cfg)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int gai = c1m_resolve(cfg->host, cfg->port, &ss, &len);
    if (gai != 0) {
        fprintf(stderr, "c1m-floor: cannot resolve --host %s: %s\n", cfg->host,
                gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return -1;
    }
    int probe = c1m_listen_tcp(cfg->host, cfg->port, 1, 0);
    if (probe < 0) {
        fprintf(stderr, "c1m-floor: cannot listen on %s:%d: %s\n", cfg->host, cfg->port,
                errno == EADDRINUSE ? "address in use" : strerror(errno));
        return -1;
    }
    close(probe);
    return 0;
}

int main(int argc, char **argv)
{
    int nofile = c1m_nofile_limit();
    struct floor_config cfg = {
        .host = "0.0.0.0", .port = 9000, .backlog = 65535, .workers = 0,
        .max_conns = 10000, .worker_conns = nofile - FD_RESERVE,
    };
    char default_stats[128];
    int prc = parse(argc, argv, &cfg, nofile);
    if (prc >= 0)
        return prc;
    int own_default = !cfg.stats_path;
    if (own_default) {
        snprintf(default_stats, sizeof(default_stats), "/dev/shm/c1m-floor-%d-%d.stats",
                 cfg.port, (int)getpid());
        cfg.stats_path = default_stats;
    }
    if (check_listen(&cfg) < 0)
        return 1;

    struct c1m_stats st;
    if (c1m_stats_create(&st, cfg.stats_path, (uint32_t)cfg.workers, (uint64_t)cfg.max_conns,
                         "floor") < 0) {
        fprintf(stderr, "c1m-floor: --stats %s: %s\n", cfg.stats_path, c1m_stats_strerror(errno));
        return 1;
    }
    if (!cfg.quiet)
        fprintf(stderr, "c1m-floor: %d workers x %ld connections on %s:%d; stats %s; pid %d\n",
                cfg.workers, cfg.worker_conns, cfg.host, cfg.port, cfg.stats_path, (int)getpid());

    struct runctx rc = {&cfg, &st};
    struct c1m_workers ws;
    int status = 1;
    if (c1m_workers_start(&ws, cfg.workers, worker_main, &rc) < 0) {
        fprintf(stderr, "c1m-floor: fork: %s\n", strerror(errno));
    } else {
        struct failctx fc = {&st};
        status = c1m_workers_wait(&ws, on_worker_fail, &fc);
        if (!cfg.quiet)
            fprintf(stderr, "c1m-floor: %s\n", status == 0 ? "all workers exited cleanly"
                                                           : "stopped after a worker failure");
        c1m_workers_free(&ws);
    }
    c1m_stats_close(&st);
    if (own_default)
        unlink(cfg.stats_path);
    return status;
}
