/* contender_main.c - see contender.h: libc1m's server command line
 * (server_main.h) around the contender's worker. */
#include "contender.h"

#include <stdio.h>

struct ctx {
    const struct contender *k;
    struct server_config cfg;
};

static int worker_run(void *ud, const struct c1m_server_opts *o, struct c1m_stats *st, int i)
{
    struct ctx *x = ud;
    server_config_set(&x->cfg, o);
    return x->k->worker_run(&x->cfg, st, i);
}

int contender_main(const struct contender *k, int argc, char **argv)
{
    char about[1024];
    snprintf(about, sizeof(about),
             "%s\n\nAnswers \"ping\\n\" with \"pong\\n\"; other lines are counted; a line over 1024 "
             "bytes\ncloses the connection (oversized). Flags as c1m-server's:", k->about);
    struct ctx x = {.k = k};
    const struct c1m_server_prog prog = {
        .prog = k->prog,
        .kind = k->kind,
        .about = about,
        .has_check = 1,
        .available = k->available,
        .worker_run = worker_run,
        .ud = &x,
    };
    struct c1m_server_opts o = {.sndbuf = 4096, .rcvbuf = 4096, .max_pending = 4096};
    return c1m_server_main(&prog, &o, argc, argv);
}
