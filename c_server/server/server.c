/* server.c - the c1m-server worker: accept, hold, answer ping, close cleanly.
 *
 * Per connection the worker keeps one 12-byte struct conn in an array indexed
 * by fd (plus the loop's 8-byte slot): no allocation per connection or event.
 * Replies are always "pong\n", so pending output is a count of pongs, written
 * from one shared buffer of repeated pongs; no per-connection output buffer.
 *
 * Replies are counted (`pongs`) when handed to the kernel, not when queued.
 * A peer that half-closes (EOF) still gets every queued reply: the connection
 * stops reading and stays open until the replies are sent, the peer resets or
 * the slow cutoff fires. A line over 1 KiB closes the connection after a
 * best-effort (non-blocking) write of the replies to the lines before it.
 */
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lineproto.h"
#include "listener.h"
#include "loop.h"
#include "net.h"

#define READ_BUF 65536
#define PONG_BUF (C1M_PONG_LEN * 4096) /* 20 KiB of "pong\n" */
#define PUBLISH_MS 50.0

enum {
    CONN_OPEN = 1,
    CONN_EOF = 2, /* the peer half-closed: only sending what is queued remains */
};

struct conn {                   /* 12 bytes, fd-indexed */
    struct c1m_line_state line; /* 6 */
    uint8_t flags;
    uint8_t out_off;            /* bytes of the first pending pong already sent */
    uint32_t out_pongs;         /* pongs not fully sent yet */
};
_Static_assert(sizeof(struct conn) <= 32, "per-connection state must stay small");

struct counters {
    long open;
    uint64_t accepted, closed, slow, lines, pongs, oversized;
};

struct worker {
    const struct server_config *cfg;
    c1m_loop *loop;
    struct conn *conns;         /* max_fds entries */
    int max_fds;
    int conn_handler;
    struct c1m_listener listener;
    struct counters c;
    int dirty;
    uint64_t state;
    struct c1m_stats_worker *rec;
    char rbuf[READ_BUF];
    char pongs[PONG_BUF];
};

static void publish(struct worker *w)
{
    struct c1m_stats_worker *r = w->rec;
    c1m_stats_begin(r);
    r->state = w->state;
    r->open = (uint64_t)w->c.open;
    r->accepted = w->c.accepted;
    r->closed = w->c.closed;
    r->slow = w->c.slow;
    r->lines = w->c.lines;
    r->pongs = w->c.pongs;
    r->oversized = w->c.oversized;
    r->accept_errors = w->listener.accept_errors;
    r->updated_ns = c1m_now_ns();
    c1m_stats_end(r);
    w->dirty = 0;
}

static void conn_close(struct worker *w, int fd)
{
    c1m_loop_del(w->loop, fd);
    close(fd); /* EINTR on close of a socket: the fd is gone anyway on Linux */
    memset(&w->conns[fd], 0, sizeof(w->conns[fd]));
    w->c.open--;
    w->c.closed++;
    w->dirty = 1;
    c1m_listener_conn_closed(&w->listener);
}

static size_t pending_bytes(const struct conn *c)
{
    return (size_t)c->out_pongs * C1M_PONG_LEN - c->out_off;
}

/* Send pending pongs until done or EAGAIN, counting each pong once its last
 * byte is handed to the kernel. Returns -1 on a send error (EPIPE,
 * ECONNRESET...; the caller closes), else 0. */
static int conn_send(struct worker *w, int fd)
{
    struct conn *c = &w->conns[fd];
    while (c->out_pongs) {
        size_t want = pending_bytes(c);
        size_t room = PONG_BUF - c->out_off;
        ssize_t n = send(fd, w->pongs + c->out_off, want < room ? want : room, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return -1;
        }
        size_t done = (size_t)n + c->out_off;
        uint32_t sent = (uint32_t)(done / C1M_PONG_LEN);
        c->out_pongs -= sent;
        c->out_off = (uint8_t)(done % C1M_PONG_LEN);
        w->c.pongs += sent;
        w->dirty = 1;
    }
    return 0;
}

/* Send what is pending, then apply the slow cutoff, finish a half-closed
 * connection whose replies are all sent, and watch EPOLLOUT only while output
 * waits. Returns -1 if the connection was closed. */
static int conn_flush(struct worker *w, int fd)
{
    struct conn *c = &w->conns[fd];
    if (conn_send(w, fd) < 0) {
        conn_close(w, fd);
        return -1;
    }
    if (c->out_pongs && pending_bytes(c) > (size_t)w->cfg->max_pending) {
        w->c.slow++;
        conn_close(w, fd);
        return -1;
    }
    if ((c->flags & CONN_EOF) && !c->out_pongs) {
        conn_close(w, fd); /* everything queued was delivered */
        return -1;
    }
    uint32_t ev = c->flags & CONN_EOF ? EPOLLOUT
                                      : EPOLLIN | EPOLLRDHUP | (c->out_pongs ? EPOLLOUT : 0);
    if (c1m_loop_mod(w->loop, fd, ev) < 0) { /* no-op when the mask is unchanged */
        conn_close(w, fd);
        return -1;
    }
    return 0;
}

static void conn_read(struct worker *w, int fd)
{
    struct conn *c = &w->conns[fd];
    ssize_t n;
    do
        n = recv(fd, w->rbuf, sizeof(w->rbuf), 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN)
            conn_close(w, fd); /* ECONNRESET, ETIMEDOUT... */
        return;
    }
    if (n == 0) { /* orderly EOF: the peer sends no more */
        if (!c->out_pongs) {
            conn_close(w, fd);
            return;
        }
        c->flags |= CONN_EOF; /* deliver the queued replies first */
        conn_flush(w, fd);
        return;
    }
    struct c1m_line_result r = {0, 0};
    int rc = c1m_line_feed(&c->line, w->rbuf, (size_t)n, &r);
    w->c.lines += r.lines;
    w->dirty = 1;
    /* saturate rather than wrap; the slow check closes long before */
    uint64_t p = (uint64_t)c->out_pongs + r.pings;
    c->out_pongs = p > UINT32_MAX ? UINT32_MAX : (uint32_t)p;
    if (rc < 0) {
        /* Replies to the complete lines before the oversized one: write what
         * the socket takes now (never wait), then close. */
        conn_send(w, fd);
        w->c.oversized++;
        conn_close(w, fd);
        return;
    }
    if (r.pings)
        conn_flush(w, fd);
}

static void on_conn_io(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)loop;
    struct worker *w = ud;
    if (events & EPOLLERR) {
        conn_close(w, fd);
        return;
    }
    if ((events & EPOLLOUT) && conn_flush(w, fd) < 0)
        return;
    if (w->conns[fd].flags & CONN_EOF) {
        /* draining after the peer's EOF: HUP means it is gone altogether */
        if (events & EPOLLHUP)
            conn_close(w, fd);
        return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
        conn_read(w, fd); /* reads data, then 0 (EOF) or an error */
}

static int on_accept(void *ud, int fd)
{
    struct worker *w = ud;
    if (fd >= w->max_fds) { /* cannot happen below RLIMIT_NOFILE; be safe */
        close(fd);
        return 0;
    }
    /* Failure to shrink the buffers is not fatal: the connection still works. */
    c1m_set_bufs(fd, w->cfg->sndbuf, w->cfg->rcvbuf);
    if (c1m_loop_add(w->loop, fd, EPOLLIN | EPOLLRDHUP, w->conn_handler) < 0) {
        close(fd);
        w->listener.accept_errors++;
        return 0;
    }
    w->conns[fd].flags = CONN_OPEN;
    w->c.open++;
    w->c.accepted++;
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

static void on_publish_tick(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)id;
    struct worker *w = ud;
    publish(w); /* also refreshes updated_ns: readers see the worker is alive */
    c1m_loop_timer(loop, PUBLISH_MS, on_publish_tick, w);
}

static void close_all(struct worker *w)
{
    for (int fd = 0; fd < w->max_fds && w->c.open > 0; fd++)
        if (w->conns[fd].flags & CONN_OPEN)
            conn_close(w, fd);
}

int server_worker_run(const struct server_config *cfg, struct c1m_stats *st, int index)
{
    int rc = 1;
    struct worker *w = calloc(1, sizeof(*w));
    if (!w) {
        perror("c1m-server: worker state");
        return 1;
    }
    w->cfg = cfg;
    w->rec = &st->w[index];
    w->state = C1M_ST_STARTING;
    w->listener.fd = -1;
    w->max_fds = c1m_nofile_limit();
    for (size_t i = 0; i < PONG_BUF; i += C1M_PONG_LEN)
        memcpy(w->pongs + i, C1M_PONG, C1M_PONG_LEN);
    publish(w);

    /* calloc'd table: its pages are touched only as fd numbers are used. */
    w->conns = calloc((size_t)w->max_fds, sizeof(*w->conns));
    w->loop = c1m_loop_new(w->max_fds);
    if (!w->conns || !w->loop) {
        perror("c1m-server: worker tables");
        goto out;
    }
    w->conn_handler = c1m_loop_handler(w->loop, on_conn_io, w);
    if (c1m_loop_signal(w->loop, SIGTERM, on_stop_signal, w) < 0 ||
        c1m_loop_signal(w->loop, SIGINT, on_stop_signal, w) < 0) {
        perror("c1m-server: signalfd");
        goto out;
    }
    if (c1m_listener_open(&w->listener, w->loop, cfg->host, cfg->port, cfg->backlog, 1,
                          cfg->worker_conns, &w->c.open, on_accept, on_listen_state, w) < 0) {
        fprintf(stderr, "c1m-server: worker %d: listen on %s:%d: %s\n", index, cfg->host,
                cfg->port, strerror(errno));
        goto out;
    }
    w->state = C1M_ST_LISTENING;
    publish(w);
    c1m_loop_timer(w->loop, PUBLISH_MS, on_publish_tick, w);

    while (!c1m_loop_stopping(w->loop)) {
        if (c1m_loop_run_once(w->loop, -1) < 0) {
            perror("c1m-server: epoll_wait");
            goto out;
        }
        if (w->dirty)
            publish(w);
    }
    w->state = C1M_ST_STOPPING;
    publish(w);
    rc = 0;
out:
    if (w->loop) {
        c1m_listener_close(&w->listener);
        close_all(w);
        c1m_loop_free(w->loop);
    }
    w->state = rc == 0 ? C1M_ST_EXITED : C1M_ST_FAILED;
    publish(w);
    free(w->conns);
    free(w);
    return rc;
}
