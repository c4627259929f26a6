/* main.c - c1m-floor: libc1m's server command line (server_main.h), the one
 * of c1m-server (the harness starts every contender with the same flags),
 * with c1m-server's --push (a SIGUSR1 broadcast only), around the floor
 * worker (floor.c). */
#include <signal.h>

#include "floor.h"
#include "pushmsg.h"
#include "server_main.h"

enum { F_PUSH, F_PUSH_EVERY, F_PUSH_BURST, F_NFLAGS };
static const struct c1m_cli_flag push_flags[F_NFLAGS] = {
    [F_PUSH] = {"--push", 1}, [F_PUSH_EVERY] = {"--push-every", 1}, [F_PUSH_BURST] = {"--push-burst", 0},
};

static int on_flag(void *ud, struct c1m_cli *c, int f)
{
    struct floor_config *fc = ud;
    long x;
    if (f != F_PUSH) /* known, so the message says why rather than "unknown flag" */
        return c1m_cli_error(c, c->flag, NULL, "c1m-floor only broadcasts on SIGUSR1 "
                                               "(--push BYTES): it keeps no schedule");
    if (c1m_parse_long(c->value, C1M_PUSH_MIN, C1M_PUSH_MAX, 0, &x) < 0)
        return c1m_cli_error(c, c->flag, c->value, "expects bytes 32-1025 (one line of at most "
                                                   "1024 bytes plus its newline)");
    fc->push_bytes = (int)x;
    return -1;
}

static int after_parse(void *ud, const struct c1m_server_opts *o, struct c1m_cli *c)
{
    (void)o;
    (void)c;
    /* SIGUSR1 is the workers' (as in c1m-server): ignored from before the fork */
    if (((struct floor_config *)ud)->push_bytes)
        signal(SIGUSR1, SIG_IGN);
    return -1;
}

static int worker_run(void *ud, const struct c1m_server_opts *o, struct c1m_stats *st, int i)
{
    return floor_worker_run(o, ud, st, i);
}

int main(int argc, char **argv)
{
    static struct floor_config fc;
    static const struct c1m_server_prog prog = {
        .prog = "c1m-floor",
        .kind = "floor",
        .about = "The zero-state reference server: accepts TCP connections in N SO_REUSEPORT worker\n"
                 "processes, adds each to epoll (peer close only) and holds it. It never reads and\n"
                 "keeps no per-connection state: the cost floor the other servers are compared to\n"
                 "(the harness's reference contender `floor`).",
        .max_pending_help = "  --max-pending B   accepted for the harness's common flags and ignored:\n"
                            "                    c1m-floor never queues output\n",
        .stats_note = "                    (only state, open, accepted, closed, accept_errors and,\n"
                      "                    with --push, pushed and slow are counted)\n",
        .flags_usage = "[--push BYTES]",
        .flags_help = "  --push BYTES      on SIGUSR1 to a worker, one send() of one push message of\n"
                      "                    BYTES (32-1025) to each of its connections: c1m-server's\n"
                      "                    \"push SEQ USEC \" line, SEQ the worker's broadcast number,\n"
                      "                    USEC the send's CLOCK_REALTIME microseconds; a connection\n"
                      "                    that does not take it whole is closed (slow). The floor\n"
                      "                    of a broadcast; no --push-every (the parent ignores SIGUSR1)\n",
        .flags = push_flags,
        .nflags = F_NFLAGS,
        .on_flag = on_flag,
        .after_parse = after_parse,
        .worker_run = worker_run,
        .ud = &fc,
    };
    /* kernel default buffers unless --sndbuf/--rcvbuf say otherwise */
    struct c1m_server_opts o = {.sndbuf = 0, .rcvbuf = 0, .max_pending = 4096};
    return c1m_server_main(&prog, &o, argc, argv);
}
