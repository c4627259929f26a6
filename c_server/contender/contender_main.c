/* contender_main.c - see contender.h. The flags, their bounds and the worker
 * sizing are c1m-server's (c_server/server/main.c); messages name the
 * contender's own program. */
#include "contender.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "net.h"
#include "workers.h"

/* As c1m-server: fds a worker keeps for itself, the fill --workers auto plans
 * for, and the bound of --workers. */
#define FD_RESERVE 64
#define AUTO_FILL 0.95
#define MAX_WORKERS 4096

static void usage_line(const struct contender *k, char *buf, size_t len)
{
    snprintf(buf, len,
             "usage: %s [--host H] [--port P] [--backlog N] [--workers N|auto] [--max-conns N]\n"
             "       [--worker-conns N] [--sndbuf B] [--rcvbuf B] [--max-pending B]\n"
             "       [--stats PATH] [--quiet] [--check] [--help]\n", k->prog);
}

static void help(const struct contender *k, const char *usage)
{
    printf("%s\n%s\n\n", usage, k->about);
    printf(
        "Answers \"ping\\n\" with \"pong\\n\"; other lines are counted; a line over 1024 bytes\n"
        "closes the connection (oversized). Flags as c1m-server's:\n\n"
        "  --host H          address to listen on (default 0.0.0.0)\n"
        "  --port P          TCP port (default 9000)\n"
        "  --backlog N       listen() backlog per worker (default 65535)\n"
        "  --workers N|auto  worker processes (default auto: enough workers of\n"
        "                    --worker-conns each to hold --max-conns at %d%% fill)\n"
        "  --max-conns N     connections the server is sized for (default 10000; k/m suffixes)\n"
        "  --worker-conns N  per-worker cap: a worker at the cap closes its listener and\n"
        "                    re-opens it below 90%% (default RLIMIT_NOFILE - %d = %d here)\n"
        "  --sndbuf B        SO_SNDBUF per connection (default 4096; 0 = kernel default)\n"
        "  --rcvbuf B        SO_RCVBUF per connection (default 4096; 0 = kernel default)\n"
        "  --max-pending B   reply bytes a connection may have waiting before it is closed\n"
        "                    as slow (default 4096)\n"
        "  --stats PATH      live counters file (default /dev/shm/%s-PORT-PID.stats,\n"
        "                    removed when the server exits); read it with c1m-stat\n"
        "  --quiet           no start/stop messages\n"
        "  --check           only say whether this machine can run it (exit 0 or 3)\n"
        "  --help            this text\n\n"
        "Exit status: 0 after SIGTERM/SIGINT with every worker clean, 1 if a worker failed\n"
        "or died, 2 on a usage error, 3 if this machine cannot run it (the reason is printed).\n",
        (int)(AUTO_FILL * 100), FD_RESERVE, c1m_nofile_limit() - FD_RESERVE, k->prog);
}

enum { F_HELP, F_H, F_QUIET, F_CHECK, F_HOST, F_PORT, F_BACKLOG, F_WORKERS, F_MAX_CONNS, F_WORKER_CONNS,
       F_SNDBUF, F_RCVBUF, F_MAX_PENDING, F_STATS, F_NFLAGS };
static const struct c1m_cli_flag flags[F_NFLAGS] = {
    [F_HELP] = {"--help", 0}, [F_H] = {"-h", 0}, [F_QUIET] = {"--quiet", 0},
    [F_CHECK] = {"--check", 0}, [F_HOST] = {"--host", 1}, [F_PORT] = {"--port", 1}, [F_BACKLOG] = {"--backlog", 1},
    [F_WORKERS] = {"--workers", 1}, [F_MAX_CONNS] = {"--max-conns", 1},
    [F_WORKER_CONNS] = {"--worker-conns", 1}, [F_SNDBUF] = {"--sndbuf", 1},
    [F_RCVBUF] = {"--rcvbuf", 1}, [F_MAX_PENDING] = {"--max-pending", 1}, [F_STATS] = {"--stats", 1},
};

/* Parse argv into cfg. -1 to go on, else the exit status (0 after --help). */
static int parse(const struct contender *k, const char *usage, int argc, char **argv,
                 struct server_config *cfg, int nofile, int *check)
{
    int workers_auto = 1;
    struct c1m_cli c;
    c1m_cli_init(&c, k->prog, usage, flags, F_NFLAGS, argc, argv);
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
            help(k, usage);
            return 0;
        case F_QUIET:
            cfg->quiet = 1;
            break;
        case F_CHECK:
            *check = 1;
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
        case F_PORT: /* not 0: the listener re-opens after a pause on the same port */
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

/* As c1m-server: the resolver's own error for a bad name; a bind without
 * SO_REUSEPORT, so that a port another process listens on is refused. */
static int check_listen(const struct contender *k, const struct server_config *cfg)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int gai = c1m_resolve(cfg->host, cfg->port, &ss, &len);
    if (gai != 0) {
        fprintf(stderr, "%s: cannot resolve --host %s: %s\n", k->prog, cfg->host,
                gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
        return -1;
    }
    int probe = c1m_listen_tcp(cfg->host, cfg->port, 1, 0);
    if (probe < 0) {
        fprintf(stderr, "%s: cannot listen on %s:%d: %s\n", k->prog, cfg->host, cfg->port,
                errno == EADDRINUSE ? "address in use" : strerror(errno));
        return -1;
    }
    close(probe);
    return 0;
}

struct runctx {
    const struct contender *k;
    struct server_config *cfg;
    struct c1m_stats *st;
};

static void on_worker_fail(int i, int status, void *ud)
{
    struct runctx *r = ud;
    if (WIFSIGNALED(status))
        fprintf(stderr, "%s: worker %d (pid %d) killed by signal %d; stopping all workers\n",
                r->k->prog, i, (int)r->st->w[i].pid, WTERMSIG(status));
    else
        fprintf(stderr, "%s: worker %d (pid %d) exited with status %d; stopping all workers\n",
                r->k->prog, i, (int)r->st->w[i].pid, WEXITSTATUS(status));
    c1m_stats_begin(&r->st->w[i]);
    r->st->w[i].state = C1M_ST_FAILED;
    c1m_stats_end(&r->st->w[i]);
}

static int worker_main(int i, void *ud)
{
    struct runctx *r = ud;
    r->st->w[i].pid = (uint64_t)getpid();
    return r->k->worker_run(r->cfg, r->st, i);
}

int contender_main(const struct contender *k, int argc, char **argv)
{
    int nofile = c1m_nofile_limit();
    struct server_config cfg = {
        .host = "0.0.0.0", .port = 9000, .backlog = 65535, .workers = 0,
        .max_conns = 10000, .worker_conns = nofile - FD_RESERVE,
        .sndbuf = 4096, .rcvbuf = 4096, .max_pending = 4096,
    };
    char usage[400], default_stats[160], why[256];
    int check = 0;
    usage_line(k, usage, sizeof(usage));
    int prc = parse(k, usage, argc, argv, &cfg, nofile, &check);
    if (prc >= 0)
        return prc;
    if (k->available && k->available(why, sizeof(why)) < 0) {
        fprintf(stderr, "%s: unavailable: %s\n", k->prog, why);
        return C1M_EXIT_UNAVAILABLE;
    }
    if (check) {
        printf("%s: available\n", k->prog);
        return 0;
    }
    int own_default = !cfg.stats_path;
    if (own_default) {
        snprintf(default_stats, sizeof(default_stats), "/dev/shm/%s-%d-%d.stats", k->prog,
                 cfg.port, (int)getpid());
        cfg.stats_path = default_stats;
    }
    if (check_listen(k, &cfg) < 0)
        return 1;

    struct c1m_stats st;
    if (c1m_stats_create(&st, cfg.stats_path, (uint32_t)cfg.workers, (uint64_t)cfg.max_conns,
                         k->kind) < 0) {
        fprintf(stderr, "%s: --stats %s: %s\n", k->prog, cfg.stats_path, c1m_stats_strerror(errno));
        return 1;
    }
    if (!cfg.quiet)
        fprintf(stderr, "%s: %d workers x %ld connections on %s:%d (sndbuf %d, rcvbuf %d); "
                        "stats %s; pid %d\n", k->prog, cfg.workers, cfg.worker_conns, cfg.host,
                cfg.port, cfg.sndbuf, cfg.rcvbuf, cfg.stats_path, (int)getpid());

    struct runctx rc = {k, &cfg, &st};
    struct c1m_workers ws;
    int status = 1;
    if (c1m_workers_start(&ws, cfg.workers, worker_main, &rc) < 0) {
        fprintf(stderr, "%s: fork: %s\n", k->prog, strerror(errno));
    } else {
        status = c1m_workers_wait(&ws, on_worker_fail, &rc);
        if (!cfg.quiet)
            fprintf(stderr, "%s: %s\n", k->prog, status == 0 ? "all workers exited cleanly"
                                                             : "stopped after a worker failure");
        c1m_workers_free(&ws);
    }
    c1m_stats_close(&st);
    if (own_default)
        unlink(cfg.stats_path);
    return status;
}
