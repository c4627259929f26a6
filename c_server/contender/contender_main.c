/* contender_main.c - see contender.h: libc1m's server command line
 * (server_main.h) around the contender's worker. */
#include "contender.h"

#include <stdio.h>

static int worker_run(void *ud, const struct c1m_server_opts *o, struct c1m_stats *st, int i)
{
    const struct contender *k = ud;
    return k->worker_run(o, st, i);
}

int contender_main(const struct contender *k, int argc, char **argv)
{
    char about[1024];
    snprintf(about, sizeof(about),
             "%s\n\nAnswers \"ping\\n\" with \"pong\\n\"; other lines are counted; a line over 1024 "
             "bytes\ncloses the connection (oversized). Flags as c1m-server's:", k->about);
    const struct c1m_server_prog prog = {
        .prog = k->prog,
        .kind = k->kind,
        .about = about,
        .has_check = 1,
        .available = k->available,
        .worker_run = worker_run,
        .ud = (void *)k,
    };
    struct c1m_server_opts o = {.sndbuf = 4096, .rcvbuf = 4096, .max_pending = 4096};
    return c1m_server_main(&prog, &o, argc, argv);
}
