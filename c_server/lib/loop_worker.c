/* loop_worker.c - see loop_worker.h. */
#include "loop_worker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "net.h"
#include "workers.h" /* c1m_workers_stopping */

void c1m_loop_worker_publish(struct c1m_loop_worker *b)
{
    b->pub.accept_errors = b->listener.accept_errors;
    c1m_stats_publish(&b->pub);
}

static void on_stop_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)signo;
    (void)ud;
    c1m_loop_stop(loop);
}

int c1m_loop_worker_begin(struct c1m_loop_worker *b, struct c1m_stats *st, int index)
{
    b->pub.rec = &st->w[index];
    b->pub.state = C1M_ST_STARTING;
    b->listener.fd = -1;
    b->max_fds = c1m_nofile_limit();
    c1m_loop_worker_publish(b);
    b->loop = c1m_loop_new(b->max_fds);
    if (!b->loop) {
        fprintf(stderr, "%s: event loop: %s\n", b->prog, strerror(errno));
        return -1;
    }
    if (c1m_loop_signal(b->loop, SIGTERM, on_stop_signal, b) < 0 ||
        c1m_loop_signal(b->loop, SIGINT, on_stop_signal, b) < 0) {
        fprintf(stderr, "%s: signalfd: %s\n", b->prog, strerror(errno));
        return -1;
    }
    return 0;
}

static void on_listen_state(void *ud, int paused)
{
    struct c1m_loop_worker *b = ud;
    if (b->pub.state == C1M_ST_LISTENING || b->pub.state == C1M_ST_FULL)
        b->pub.state = paused ? C1M_ST_FULL : C1M_ST_LISTENING;
    c1m_loop_worker_publish(b);
}

int c1m_loop_worker_listen(struct c1m_loop_worker *b, const struct c1m_server_opts *o,
                           int index, c1m_accept_fn *on_accept)
{
    const struct c1m_accept_opts opts = {.sndbuf = o->sndbuf, .rcvbuf = o->rcvbuf};
    if (c1m_listener_open_opts(&b->listener, b->loop, o->host, o->port, o->backlog, 1, &opts,
                               o->worker_conns, &b->pub.open, on_accept, on_listen_state,
                               b) < 0) {
        fprintf(stderr, "%s: worker %d: listen on %s:%d: %s\n", b->prog, index, o->host,
                o->port, strerror(errno));
        return -1;
    }
    return 0;
}

static void on_publish_tick(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)id;
    struct c1m_loop_worker *b = ud;
    if (b->tick)
        b->tick(b->ud);
    c1m_loop_worker_publish(b); /* also refreshes updated_ns: readers see the worker is alive */
    if (!c1m_loop_timer(loop, b->tick_ms, on_publish_tick, b)) {
        /* without the tick the worker would look hung: it fails instead */
        fprintf(stderr, "%s: publish timer: %s\n", b->prog, strerror(errno));
        b->failed = 1;
        c1m_loop_stop(loop);
    }
}

int c1m_loop_worker_serve(struct c1m_loop_worker *b)
{
    b->pub.state = C1M_ST_LISTENING;
    c1m_loop_worker_publish(b);
    if (!c1m_loop_timer(b->loop, b->tick_ms, on_publish_tick, b)) {
        fprintf(stderr, "%s: publish timer: %s\n", b->prog, strerror(errno));
        return -1;
    }
    while (!c1m_loop_stopping(b->loop)) {
        if (c1m_loop_run_once(b->loop, -1) < 0) {
            fprintf(stderr, "%s: epoll_wait: %s\n", b->prog, strerror(errno));
            return -1;
        }
        if (b->pub.dirty)
            c1m_loop_worker_publish(b);
    }
    if (b->failed)
        return -1;
    b->pub.state = C1M_ST_STOPPING;
    c1m_loop_worker_publish(b);
    return 0;
}

int c1m_loop_worker_end(struct c1m_loop_worker *b, int rc)
{
    c1m_workers_stopping(); /* before c1m_loop_free unblocks them */
    if (b->loop) {
        c1m_listener_close(&b->listener);
        b->close_all(b->ud);
        c1m_loop_free(b->loop);
        b->loop = NULL;
    }
    b->pub.state = rc == 0 ? C1M_ST_EXITED : C1M_ST_FAILED;
    c1m_loop_worker_publish(b);
    return rc;
}
