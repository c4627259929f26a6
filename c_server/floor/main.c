/* main.c - c1m-floor: libc1m's server command line (server_main.h), the one
 * of c1m-server (the harness starts every contender with the same flags),
 * around the floor worker (floor.c). */
#include "floor.h"
#include "server_main.h"

static int worker_run(void *ud, const struct c1m_server_opts *o, struct c1m_stats *st, int i)
{
    (void)ud;
    return floor_worker_run(o, st, i);
}

int main(int argc, char **argv)
{
    static const struct c1m_server_prog prog = {
        .prog = "c1m-floor",
        .kind = "floor",
        .about = "The zero-state reference server: accepts TCP connections in N SO_REUSEPORT worker\n"
                 "processes, adds each to epoll (peer close only) and holds it. It never reads or\n"
                 "writes and keeps no per-connection state: the cost floor the other servers are\n"
                 "compared to (the harness's reference contender `floor`).",
        .max_pending_help = "  --max-pending B   accepted for the harness's common flags and ignored:\n"
                            "                    c1m-floor never writes\n",
        .stats_note = "                    (only state, open, accepted, closed and accept_errors are\n"
                      "                    counted)\n",
        .worker_run = worker_run,
    };
    /* kernel default buffers unless --sndbuf/--rcvbuf say otherwise */
    struct c1m_server_opts o = {.sndbuf = 0, .rcvbuf = 0, .max_pending = 4096};
    return c1m_server_main(&prog, &o, argc, argv);
}
