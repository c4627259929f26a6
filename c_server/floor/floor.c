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

#include "loop_worker.h"
#include "pushmsg.h"

#define CONN_EVENTS EPOLLRDHUP
/* updated_ns refresh; counts are published after every loop iteration that
 * changed them, so the harness sees `open` as soon as the C server's would */
#define PUBLISH_MS 1000.0

struct worker {
    struct c1m_loop_worker b;   /* loop, listener, counters (b.pub: open, accepted, closed;
                                 * with --push, pushed and slow) */
    int conn_handler;
    int push_bytes;
    uint32_t push_seq, push_seq_max;
    char *push_buf;             /* one message, restamped per send */
};

static void conn_close(struct worker *w, int fd)
{
    c1m_loop_del(w->b.loop, fd);
    close(fd); /* EINTR on close of a socket: the fd is gone anyway on Linux */
    w->b.pub.open--;
    w->b.pub.closed++;
    w->b.pub.dirty = 1;
    c1m_listener_conn_closed(&w->b.listener);
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
    struct worker *w = ((struct c1m_loop_worker *)ud)->ud;
    if (fd >= w->b.max_fds || c1m_loop_add(w->b.loop, fd, CONN_EVENTS, w->conn_handler) < 0) {
        close(fd); /* beyond the loop's table (cannot happen below RLIMIT_NOFILE), or ENOMEM */
        w->b.listener.accept_errors++;
        w->b.pub.dirty = 1;
        return 0;
    }
    w->b.pub.open++;
    w->b.pub.accepted++;
    w->b.pub.dirty = 1;
    return 0;
}

/* SIGUSR1 with --push: one send() of one message to every connection. */
static void on_push_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)signo;
    struct worker *w = ud;
    size_t n = (size_t)w->push_bytes;
    w->push_seq = c1m_push_seq_next(w->push_seq, w->push_seq_max);
    for (int fd = 0; fd < w->b.max_fds; fd++) {
        if (c1m_loop_events(loop, fd) != CONN_EVENTS)
            continue;
        c1m_push_format(w->push_buf, n, w->push_seq, c1m_realtime_us());
        ssize_t k;
        do
            k = send(fd, w->push_buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        if (k == (ssize_t)n) {
            w->b.pub.pushed++;
            continue;
        }
        /* short or refused (EAGAIN: a full send queue; EPIPE, ECONNRESET: gone) */
        if (k >= 0 || errno == EAGAIN || errno == EWOULDBLOCK)
            w->b.pub.slow++;
        conn_close(w, fd);
    }
    w->b.pub.dirty = 1;
}

static void close_all(void *ud)
{
    struct worker *w = ud;
    for (int fd = 0; fd < w->b.max_fds && w->b.pub.open > 0; fd++)
        if (c1m_loop_events(w->b.loop, fd) == CONN_EVENTS)
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
    w->b = (struct c1m_loop_worker){.prog = "c1m-floor", .tick_ms = PUBLISH_MS,
                                    .close_all = close_all, .ud = w};
    if (c1m_loop_worker_begin(&w->b, st, index) < 0)
        goto out;
    w->conn_handler = c1m_loop_handler(w->b.loop, on_conn_io, w);
    if (w->conn_handler < 0) {
        perror("c1m-floor: loop handlers");
        goto out;
    }
    if (fc->push_bytes) {
        w->push_bytes = fc->push_bytes;
        w->push_seq_max = c1m_push_seq_max((size_t)fc->push_bytes);
        w->push_buf = malloc((size_t)fc->push_bytes);
        if (!w->push_buf || c1m_loop_signal(w->b.loop, SIGUSR1, on_push_signal, w) < 0) {
            perror("c1m-floor: push");
            goto out;
        }
        c1m_push_fill(w->push_buf, (size_t)fc->push_bytes, 1);
    }
    if (c1m_loop_worker_listen(&w->b, cfg, index, on_accept) == 0 &&
        c1m_loop_worker_serve(&w->b) == 0)
        rc = 0;
out:
    c1m_loop_worker_end(&w->b, rc);
    free(w->push_buf);
    free(w);
    return rc;
}
