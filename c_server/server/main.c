/* main.c - c1m-server: libc1m's server command line (server_main.h) with the
 * push flags, around the epoll worker (server.c). */
#include <signal.h>
#include <stdio.h>

#include "pushmsg.h"
#include "server.h"
#include "server_main.h"

enum { F_PUSH, F_PUSH_EVERY, F_PUSH_BURST, F_NFLAGS };
static const struct c1m_cli_flag push_flags[F_NFLAGS] = {
    [F_PUSH] = {"--push", 1}, [F_PUSH_EVERY] = {"--push-every", 1}, [F_PUSH_BURST] = {"--push-burst", 0},
};

static int on_push_flag(void *ud, struct c1m_cli *c, int f)
{
    struct server_push *cfg = ud;
    const char *v = c->value, *a = c->flag;
    long x;
    switch (f) {
    case F_PUSH:
        if (c1m_parse_long(v, C1M_PUSH_MIN, C1M_PUSH_MAX, 0, &x) < 0)
            return c1m_cli_error(c, a, v, "expects bytes 32-1025 (one line of at most "
                                          "1024 bytes plus its newline)");
        cfg->bytes = (int)x;
        break;
    case F_PUSH_EVERY:
        if (c1m_parse_seconds(v, 0.001, 86400, 0, &cfg->every) < 0)
            return c1m_cli_error(c, a, v, "expects seconds 0.001-86400 (e.g. 30 or 0.5)");
        break;
    case F_PUSH_BURST:
        cfg->burst = 1;
        break;
    }
    return -1;
}

static int check_push(void *ud, const struct c1m_server_opts *o, struct c1m_cli *c)
{
    const struct server_push *cfg = ud;
    if (cfg->every > 0 && !cfg->bytes)
        return c1m_cli_error(c, "--push-every", NULL, "needs --push BYTES");
    if (cfg->burst && !cfg->bytes)
        return c1m_cli_error(c, "--push-burst", NULL, "needs --push BYTES and --push-every S");
    if (cfg->burst && !(cfg->every > 0))
        return c1m_cli_error(c, "--push-burst", NULL, "needs --push-every S");
    /* a partly sent message counts toward the bound: below one message, a
     * peer that reads would be cut as slow */
    if (cfg->bytes && o->max_pending < cfg->bytes)
        return c1m_cli_error(c, "--max-pending", NULL, "must be at least --push BYTES");
    /* SIGUSR1 (push broadcast) is the workers'. Ignored from before the fork:
     * a worker inherits the ignore until its loop blocks the signal (a blocked
     * signal is queued even when ignored, so its signalfd still reads it), and
     * one sent to the parent, or to a worker starting or stopping, ends nothing. */
    if (cfg->bytes)
        signal(SIGUSR1, SIG_IGN);
    return -1;
}

static void started(void *ud, const struct c1m_server_opts *o)
{
    const struct server_push *cfg = ud;
    if (!cfg->bytes || o->quiet)
        return;
    if (cfg->every > 0)
        fprintf(stderr, "c1m-server: push %d bytes every %g s (%s) and on SIGUSR1\n",
                cfg->bytes, cfg->every, cfg->burst ? "burst" : "paced");
    else
        fprintf(stderr, "c1m-server: push %d bytes on SIGUSR1\n", cfg->bytes);
}

static int worker_run(void *ud, const struct c1m_server_opts *o, struct c1m_stats *st, int i)
{
    return server_worker_run(o, ud, st, i);
}

int main(int argc, char **argv)
{
    static char push_help[1024];
    snprintf(push_help, sizeof(push_help),
        "  --push BYTES      server push: messages of BYTES (%d-%d, newline included):\n"
        "                    \"push SEQ USEC \" + '.' padding + \"\\n\", SEQ from 1 per\n"
        "                    connection, USEC the CLOCK_REALTIME microseconds of the send.\n"
        "                    They count toward --max-pending like pongs. SIGUSR1 to a worker\n"
        "                    sends one to each of its connections at once (the parent\n"
        "                    ignores SIGUSR1); without --push-every only those are sent.\n"
        "  --push-every S    each connection gets one message every S seconds (0.001-86400),\n"
        "                    the connections' sends spread evenly over the interval\n"
        "  --push-burst      each interval's messages go to all connections at once\n",
        C1M_PUSH_MIN, C1M_PUSH_MAX);
    struct server_push cfg = {0};
    const struct c1m_server_prog prog = {
        .prog = "c1m-server",
        .kind = "c",
        .about = "Holds idle TCP connections with level-triggered epoll in N SO_REUSEPORT worker\n"
                 "processes. Answers \"ping\\n\" with \"pong\\n\"; other lines are counted.",
        .flags_usage = "[--push BYTES [--push-every S [--push-burst]]]",
        .flags_help = push_help,
        .flags = push_flags,
        .nflags = F_NFLAGS,
        .on_flag = on_push_flag,
        .after_parse = check_push,
        .started = started,
        .worker_run = worker_run,
        .ud = &cfg,
    };
    struct c1m_server_opts o = {.sndbuf = 4096, .rcvbuf = 4096, .max_pending = 4096};
    return c1m_server_main(&prog, &o, argc, argv);
}
