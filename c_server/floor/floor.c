/* floor.c - the c1m-floor worker (see floor.h): accept, add to epoll, hold.
 *
 * A connection is watched for EPOLLRDHUP only: the worker wakes when the peer
 * closes (then it closes its end) and never for data, which it never reads.
 * That mask is also how the worker finds its connections at shutdown: no fd
 * table of its own, only the loop's slots (the listener and the signalfd are
 * watched for EPOLLIN).
 */
#include "floor.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listener.h"
#include "loop.h"
#include "net.h"
#include "workers.h" /* c1m_workers_stopping */
#include "pushmsg.h"

#define CONN_EVENTS EPOLLRDHUP
/* updated_ns refresh; counts are published after every loop iteration that
 * changed them, so the harness sees `open` as soon as the C server's would */
#define PUBLISH_MS 1000.0

struct worker {
    c1m_loop *loop;
    int max_fds;
    int conn_handler;
    struct c1m_listener listener;
    long open;                  /* the listener's open_count */
    uint64_t accepted;
    uint64_t pushed, slow;      /* --push: messages sent whole, connections cut */
    int push_bytes;
    uint32_t push_seq, push_seq_max;
    char *push_buf;             /* one message, restamped per send */
    int dirty;
    uint64_t state;
    struct c1m_stats_worker *rec;
};

static void publish(struct worker *w)
{
    struct c1m_stats_worker *r = w->rec;
    c1m_stats_begin(r);
    r->state = w->state;
    r->open = (uint64_t)w->open;
    r->accepted = w->accepted;
    r->closed = w->accepted - (uint64_t)w->open;
    r->accept_errors = w->listener.accept_errors;
    r->pushed = w->pushed;
    r->slow = w->slow;
    r->updated_ns = c1m_now_ns();
    c1m_stats_end(r);
    w->dirty = 0;
}

static void conn_close(struct worker *w, int fd)
{
    c1m_loop_del(w->loop, fd);
    close(fd); /* EINTR on close of a socket: the fd is gone anyway on Linux */
    w->open--;
    w->dirty = 1;
    c1m_listener_conn_closed(&w->listener);
}

/* EPOLLRDHUP (the peer closed or shut down its side), EPOLLHUP or EPOLLERR:
 * the connection is over. */
static void on_conn_io(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)loop;
    (void)events;
    conn_close(ud, fd);
}

static int on_accept(void *ud, int fd)
{
    struct worker *w = ud;
    if (fd >= w->max_fds || c1m_loop_add(w->loop, fd, CONN_EVENTS, w->conn_handler) < 0) {
        close(fd); /* beyond the loop's table (cannot happen below RLIMIT_NOFILE), or ENOMEM */
        w->listener.accept_errors++;
        w->dirty = 1;
        return 0;
    }
    w->open++;
    w->accepted++;
    w->dirty = 1;
    return 0;
}

static void on_listen_state(void *ud, int paused)
{
    struct worker *w = ud;
    if (w->state == C1M_ST_LISTENING || w->state == C1M_ST_FULL)
        w->state = paused ? C1M_ST_FULL : C1M_ST_LISTENING;
    publish(w);
}

static void on_stop_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)signo;
    (void)ud;
    c1m_loop_stop(loop);
}

/* SIGUSR1 with --push: one send() of one message to every connection. */
static void on_push_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)signo;
    struct worker *w = ud;
    size_t n = (size_t)w->push_bytes;
    w->push_seq = c1m_push_seq_next(w->push_seq, w->push_seq_max);
    for (int fd = 0; fd < w->max_fds; fd++) {
        if (c1m_loop_events(loop, fd) != CONN_EVENTS)
            continue;
        c1m_push_format(w->push_buf, n, w->push_seq, c1m_realtime_us());
        ssize_t k;
        do
            k = send(fd, w->push_buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        if (k == (ssize_t)n) {
            w->pushed++;
            continue;
        }
        /* short or refused (EAGAIN: a full send queue; EPIPE, ECONNRESET: gone) */
        if (k >= 0 || errno == EAGAIN || errno == EWOULDBLOCK)
            w->slow++;
        conn_close(w, fd);
    }
    w->dirty = 1;
}

static void on_publish_tick(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)id;
    publish(ud);
    c1m_loop_timer(loop, PUBLISH_MS, on_publish_tick, ud);
}

static void close_all(struct worker *w)
{
    for (int fd = 0; fd < w->max_fds && w->open > 0; fd++)
        if (c1m_loop_events(w->loop, fd) == CONN_EVENTS)
            conn_close(w, fd);
}

int floor_worker_run(const struct c1m_server_opts *cfg, const struct floor_config *fc,
                     struct c1m_stats *st, int index)
{
    int rc = 1;
    struct worker *w = calloc(1, sizeof(*w));
    if (!w) {
        perror("c1m-floor: worker state");
        return 1;
    }
    w->rec = &st->w[index];
    w->state = C1M_ST_STARTING;
    w->listener.fd = -1;
    w->max_fds = c1m_nofile_limit();
    publish(w);

    w->loop = c1m_loop_new(w->max_fds);
    if (!w->loop) {
        perror("c1m-floor: event loop");
        goto out;
    }
    w->conn_handler = c1m_loop_handler(w->loop, on_conn_io, w);
    if (w->conn_handler < 0 || c1m_loop_signal(w->loop, SIGTERM, on_stop_signal, w) < 0 ||
        c1m_loop_signal(w->loop, SIGINT, on_stop_signal, w) < 0) {
        perror("c1m-floor: loop handlers");
        goto out;
    }
    if (fc->push_bytes) {
        w->push_bytes = fc->push_bytes;
        w->push_seq_max = c1m_push_seq_max((size_t)fc->push_bytes);
        w->push_buf = malloc((size_t)fc->push_bytes);
        if (!w->push_buf || c1m_loop_signal(w->loop, SIGUSR1, on_push_signal, w) < 0) {
            perror("c1m-floor: push");
            goto out;
        }
        c1m_push_fill(w->push_buf, (size_t)fc->push_bytes, 1);
    }
    /* on the listening socket: accepted sockets inherit them, no per-accept cost */
    const struct c1m_accept_opts opts = {.sndbuf = cfg->sndbuf, .rcvbuf = cfg->rcvbuf};
    if (c1m_listener_open_opts(&w->listener, w->loop, cfg->host, cfg->port, cfg->backlog, 1,
                               &opts, cfg->worker_conns, &w->open, on_accept, on_listen_state,
                               w) < 0) {
        fprintf(stderr, "c1m-floor: worker %d: listen on %s:%d: %s\n", index, cfg->host,
                cfg->port, strerror(errno));
        goto out;
    }
    w->state = C1M_ST_LISTENING;
    publish(w);
    if (!c1m_loop_timer(w->loop, PUBLISH_MS, on_publish_tick, w)) {
        perror("c1m-floor: timer");
        goto out;
    }

    while (!c1m_loop_stopping(w->loop)) {
        if (c1m_loop_run_once(w->loop, -1) < 0) {
            perror("c1m-floor: epoll_wait");
            goto out;
        }
        if (w->dirty)
            publish(w);
    }
    w->state = C1M_ST_STOPPING;
    publish(w);
    rc = 0;
out:
    c1m_workers_stopping(); /* before c1m_loop_free unblocks them */
    if (w->loop) {
        c1m_listener_close(&w->listener);
        close_all(w);
        c1m_loop_free(w->loop);
    }
    w->state = rc == 0 ? C1M_ST_EXITED : C1M_ST_FAILED;
    publish(w);
    free(w->push_buf);
    free(w);
    return rc;
}
