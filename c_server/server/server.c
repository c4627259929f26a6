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
 *
 * The slow cutoff (slowcut.h): output over --max-pending that the socket
 * refuses holds the connection (it is read no more, EPOLLOUT only); a backlog
 * that has not shrunk for C1M_SLOW_GRACE_NS closes it as slow, one back
 * within the bound releases it. A peer whose ACK merely came late is no slow
 * peer (every contender judges so).
 *
 * Server push (--push BYTES, pushmsg.h): a second fd-indexed table, made only
 * with --push, holds each connection's sequence number and its messages not
 * sent yet (a count: a message is formatted when it is sent, stamped with the
 * time it goes to the kernel; only a message partly sent keeps its stamp).
 * Pending pushes and pongs together are the output the slow cutoff bounds.
 * Paced pushing (--push-every) walks the fd table with a cursor from a 10 ms
 * tick, so that each connection gets one message per interval and the sends
 * are spread over it; --push-burst sends each interval's messages at once;
 * SIGUSR1 sends one message to every connection now.
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
#include "loop_worker.h"
#include "pushmsg.h"
#include "slowcut.h"

#define READ_BUF 65536
#define PONG_BUF (C1M_PONG_LEN * 4096) /* 20 KiB of "pong\n" */
#define PUBLISH_MS 50.0
#define PUSH_TICK_MS 10.0

enum {
    CONN_OPEN = 1,
    CONN_EOF = 2, /* the peer half-closed: only sending what is queued remains */
    CONN_HELD = 4, /* over --max-pending within the grace: not read (slowcut.h) */
};

struct conn {                   /* 12 bytes, fd-indexed */
    struct c1m_line_state line; /* 6 */
    uint8_t flags;
    uint8_t out_off;            /* bytes of the first pending pong already sent */
    uint32_t out_pongs;         /* pongs not fully sent yet */
};
_Static_assert(sizeof(struct conn) <= 32, "per-connection state must stay small");

/* One connection's push state (fd-indexed; only with --push). */
struct pconn {                  /* 24 bytes */
    uint64_t usec;              /* USEC of the message partly sent (off > 0) */
    uint32_t seq;               /* SEQ of the last message whose sending began */
    uint32_t pending;           /* messages not fully sent (a partly sent one included) */
    uint16_t off;               /* bytes of the first pending message already sent */
};

_Static_assert(sizeof(struct pconn) <= 24, "push state per connection must stay small");

struct pusher {
    struct pconn *pc;           /* max_fds entries; NULL without --push */
    size_t bytes;               /* message size */
    uint32_t seq_max;
    uint64_t every_ns;          /* --push-every; 0: SIGUSR1 broadcasts only */
    uint64_t start_ns;          /* CLOCK_MONOTONIC start of the current interval */
    int cursor;                 /* paced: the next fd of this interval's sweep */
    char *buf;                  /* one message, formatted for its send() */
};

struct worker {
    struct c1m_loop_worker b;   /* loop, listener, counters (b.pub) */
    const struct c1m_server_opts *cfg;
    const struct server_push *push_cfg;
    struct conn *conns;         /* max_fds entries */
    int fd_hi;                  /* 1 + the highest fd a connection had: the push sweep's end */
    int conn_handler;
    struct pusher push;
    struct c1m_held_set held;   /* connections over --max-pending (slowcut.h) */
    char rbuf[READ_BUF];
    char pongs[PONG_BUF];
};

static void conn_close(struct worker *w, int fd)
{
    c1m_loop_del(w->b.loop, fd);
    close(fd); /* EINTR on close of a socket: the fd is gone anyway on Linux */
    if (w->conns[fd].flags & CONN_HELD)
        c1m_held_forget(&w->held, (uint64_t)fd);
    memset(&w->conns[fd], 0, sizeof(w->conns[fd]));
    if (w->push.pc)
        memset(&w->push.pc[fd], 0, sizeof(w->push.pc[fd]));
    w->b.pub.open--;
    w->b.pub.closed++;
    w->b.pub.dirty = 1;
    c1m_listener_conn_closed(&w->b.listener);
}

/* Output bytes waiting: pongs, then pushes. */
static size_t pending_bytes(const struct worker *w, int fd)
{
    const struct conn *c = &w->conns[fd];
    size_t n = (size_t)c->out_pongs * C1M_PONG_LEN - c->out_off;
    if (w->push.pc) {
        const struct pconn *p = &w->push.pc[fd];
        n += (size_t)p->pending * w->push.bytes - p->off;
    }
    return n;
}

static int has_output(const struct worker *w, int fd)
{
    return w->conns[fd].out_pongs || (w->push.pc && w->push.pc[fd].pending);
}

enum out_kind { OUT_PONGS, OUT_PUSH_REST, OUT_PUSH_NEW };

/* Send pending output until done or EAGAIN: the rest of a push partly sent,
 * then pongs, then new pushes (the stream stays whole lines). A pong is
 * counted once its last byte is handed to the kernel, and so is a push;
 * pushes are formatted here and stamped with the time of their send().
 * no_new: finish a partly sent push and send pongs but start no new push
 * (a connection about to be closed: a new one could reach the peer cut off).
 * Returns -1 on a send error (EPIPE, ECONNRESET...; the caller closes),
 * else 0. */
static int conn_send(struct worker *w, int fd, int no_new)
{
    struct conn *c = &w->conns[fd];
    struct pusher *ps = &w->push;
    struct pconn *p = ps->pc ? &ps->pc[fd] : NULL;
    for (;;) {
        const char *buf;
        size_t len;
        enum out_kind kind;
        uint64_t usec = 0;
        if (p && p->off) {
            c1m_push_format(ps->buf, ps->bytes, p->seq, p->usec);
            buf = ps->buf + p->off;
            len = ps->bytes - p->off;
            kind = OUT_PUSH_REST;
        } else if (c->out_pongs) {
            size_t want = (size_t)c->out_pongs * C1M_PONG_LEN - c->out_off;
            size_t room = PONG_BUF - c->out_off;
            buf = w->pongs + c->out_off;
            len = want < room ? want : room;
            kind = OUT_PONGS;
        } else if (p && p->pending && !no_new) {
            /* One message per send(), even with several waiting: with
             * MSG_EOR each is then a packet of its own, and the kernel's
             * SO_SNDBUF check sees every one. Several in one send() would
             * share one packet unchecked: a held connection's pushes, sent
             * together when ACKs made room, pinned 28 KB against an 8 KB
             * buffer (tests/push_stall.bats). Only a backlogged connection
             * ever has more than one waiting. */
            usec = c1m_realtime_us();
            c1m_push_format(ps->buf, ps->bytes, c1m_push_seq_next(p->seq, ps->seq_max), usec);
            buf = ps->buf;
            len = ps->bytes;
            kind = OUT_PUSH_NEW;
        } else {
            return 0;
        }
        /* MSG_EOR: this send ends a record, so the kernel appends no later
         * write to its packet. Without it, writes behind a peer that stopped
         * reading are appended to the queue's last unsent packet unchecked
         * against SO_SNDBUF, up to its 17 page fragments: a stalled peer
         * pinned 17 pushes (17 KiB of 1 KiB ones) against an 8 KiB send
         * buffer. With it, a write past SO_SNDBUF meets EAGAIN and waits in
         * our own count, which --max-pending bounds (harness/sendq-probe
         * --eor 0,1 shows both). A reading peer's writes leave at once, each
         * in its own packet either way. */
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_EOR);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return -1;
        }
        w->b.pub.dirty = 1;
        if (kind == OUT_PONGS) {
            size_t done = (size_t)n + c->out_off;
            uint32_t sent = (uint32_t)(done / C1M_PONG_LEN);
            c->out_pongs -= sent;
            c->out_off = (uint8_t)(done % C1M_PONG_LEN);
            w->b.pub.pongs += sent;
        } else if (kind == OUT_PUSH_REST) {
            p->off = (uint16_t)(p->off + (size_t)n);
            if (p->off == ps->bytes) {
                p->off = 0;
                p->pending--;
                w->b.pub.pushed++;
            }
        } else { /* n > 0: this message's sequence number is spent */
            p->seq = c1m_push_seq_next(p->seq, ps->seq_max);
            if ((size_t)n == ps->bytes) {
                p->pending--;
                w->b.pub.pushed++;
            } else { /* the rest of it goes first next time, same stamp */
                p->off = (uint16_t)n;
                p->usec = usec;
            }
        }
    }
}

/* Send what is pending, then apply the slow cutoff, finish a half-closed
 * connection whose replies are all sent, and watch EPOLLOUT only while output
 * waits. Returns -1 if the connection was closed. */
static int conn_flush(struct worker *w, int fd)
{
    struct conn *c = &w->conns[fd];
    if (conn_send(w, fd, 0) < 0) {
        conn_close(w, fd);
        return -1;
    }
    int out = has_output(w, fd);
    size_t backlog = out ? pending_bytes(w, fd) : 0;
    if (backlog > (size_t)w->cfg->max_pending || (c->flags & CONN_HELD)) {
        switch (c1m_held_judge(&w->held, (uint64_t)fd, backlog, (size_t)w->cfg->max_pending,
                               c1m_now_ns())) {
        case C1M_BACKLOG_SLOW:
            w->b.pub.slow++;
            conn_close(w, fd);
            return -1;
        case C1M_BACKLOG_HELD:
            c->flags |= CONN_HELD; /* read no more: room or the grace's end decides */
            if (c1m_loop_mod(w->b.loop, fd, EPOLLOUT) < 0) {
                conn_close(w, fd);
                return -1;
            }
            return 0;
        case C1M_BACKLOG_OK: /* released: read again */
            c->flags &= (uint8_t)~CONN_HELD;
            break;
        }
    }
    if ((c->flags & CONN_EOF) && !out) {
        conn_close(w, fd); /* everything queued was delivered */
        return -1;
    }
    uint32_t ev = c->flags & CONN_EOF ? EPOLLOUT
                                      : EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0);
    if (c1m_loop_mod(w->b.loop, fd, ev) < 0) { /* no-op when the mask is unchanged */
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
        if (!has_output(w, fd)) {
            conn_close(w, fd);
            return;
        }
        c->flags |= CONN_EOF; /* deliver the queued replies first */
        conn_flush(w, fd);
        return;
    }
    struct c1m_line_result r = {0, 0};
    int rc = c1m_line_feed(&c->line, w->rbuf, (size_t)n, &r);
    w->b.pub.lines += r.lines;
    w->b.pub.dirty = 1;
    /* saturate rather than wrap; the slow check closes long before */
    uint64_t p = (uint64_t)c->out_pongs + r.pings;
    c->out_pongs = p > UINT32_MAX ? UINT32_MAX : (uint32_t)p;
    if (rc < 0) {
        /* Replies to the complete lines before the oversized one: write what
         * the socket takes now (never wait), then close; no new push, which
         * could reach the peer cut off. */
        conn_send(w, fd, 1);
        w->b.pub.oversized++;
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
    if (w->conns[fd].flags & CONN_HELD) {
        if (events & EPOLLHUP) /* gone both ways: nothing will take the backlog */
            conn_close(w, fd);
        return;
    }
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
    struct worker *w = ((struct c1m_loop_worker *)ud)->ud;
    if (fd >= w->b.max_fds) { /* cannot happen below RLIMIT_NOFILE; be safe */
        close(fd);
        return 0;
    }
    if (c1m_loop_add(w->b.loop, fd, EPOLLIN | EPOLLRDHUP, w->conn_handler) < 0) {
        close(fd);
        w->b.listener.accept_errors++;
        return 0;
    }
    w->conns[fd].flags = CONN_OPEN;
    if (fd >= w->fd_hi)
        w->fd_hi = fd + 1;
    w->b.pub.open++;
    w->b.pub.accepted++;
    w->b.pub.dirty = 1;
    return 0;
}

/* The held connections whose grace is over: EPOLLOUT did not fire since (or
 * it would have judged them), so slow unless the backlog shrank meanwhile.
 * A few per tick (PUBLISH_MS), the rest at the next. */
static void judge_held(struct worker *w)
{
    uint64_t due[64];
    int k = c1m_held_due(&w->held, c1m_now_ns(), due, (int)(sizeof(due) / sizeof(due[0])));
    for (int i = 0; i < k; i++) {
        int fd = (int)due[i];
        if (w->conns[fd].flags & CONN_HELD)
            conn_flush(w, fd);
        else
            c1m_held_forget(&w->held, due[i]); /* not expected: conn_close forgets */
    }
}

/* Each publish tick (loop_worker.h), before the publish. */
static void on_tick(void *ud)
{
    struct worker *w = ud;
    if (w->held.n)
        judge_held(w);
}

/* One more push message for each open connection in fds [from, to) that
 * has not half-closed: queued behind what waits, sent now if the socket
 * takes it; a backlog over --max-pending closes it as slow (conn_flush). */
static void push_range(struct worker *w, int from, int to)
{
    for (int fd = from; fd < to; fd++) {
        struct conn *c = &w->conns[fd];
        if ((c->flags & (CONN_OPEN | CONN_EOF)) != CONN_OPEN)
            continue;
        struct pconn *p = &w->push.pc[fd];
        if (p->pending == UINT32_MAX) /* unreachable: --max-pending closes long before */
            continue;
        p->pending++;
        conn_flush(w, fd);
    }
}

/* Paced: each tick sends to the fds due since the last one, so the sweep
 * over [0, fd_hi) ends with the interval. Burst: the tick fires at each
 * interval's end and sends to all. A loop late by a whole interval skips it
 * (a connection never gets two messages at once from the schedule). */
static void on_push_tick(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)id;
    struct worker *w = ud;
    struct pusher *ps = &w->push;
    uint64_t now = c1m_now_ns();
    if (now - ps->start_ns >= ps->every_ns) {
        push_range(w, ps->cursor, w->fd_hi); /* the rest of the interval (burst: all) */
        ps->start_ns += ps->every_ns;
        ps->cursor = 0;
        if (now - ps->start_ns >= ps->every_ns)
            ps->start_ns = now;
    }
    uint64_t e = now - ps->start_ns;
    double next_ms;
    if (w->push_cfg->burst) {
        next_ms = (double)(ps->every_ns - e) / 1e6;
    } else {
        int target = (int)((double)w->fd_hi * (double)e / (double)ps->every_ns);
        if (target > w->fd_hi)
            target = w->fd_hi;
        if (target > ps->cursor) {
            int from = ps->cursor;
            ps->cursor = target;
            push_range(w, from, target);
        }
        next_ms = (double)ps->every_ns / 1e6;
        if (next_ms > PUSH_TICK_MS)
            next_ms = PUSH_TICK_MS;
    }
    if (!c1m_loop_timer(loop, next_ms, on_push_tick, w))
        perror("c1m-server: push timer"); /* ENOMEM: pushing stops, the rest goes on */
}

/* SIGUSR1: one message to every connection now (the paced sweep goes on). */
static void on_push_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)loop;
    (void)signo;
    struct worker *w = ud;
    push_range(w, 0, w->fd_hi);
}

static int push_setup(struct worker *w)
{
    const struct server_push *cfg = w->push_cfg;
    struct pusher *ps = &w->push;
    ps->bytes = (size_t)cfg->bytes;
    ps->seq_max = c1m_push_seq_max(ps->bytes);
    ps->every_ns = (uint64_t)(cfg->every * 1e9);
    ps->pc = calloc((size_t)w->b.max_fds, sizeof(*ps->pc));
    ps->buf = malloc(ps->bytes);
    if (!ps->pc || !ps->buf) {
        perror("c1m-server: push tables");
        return -1;
    }
    c1m_push_fill(ps->buf, ps->bytes, 1);
    if (c1m_loop_signal(w->b.loop, SIGUSR1, on_push_signal, w) < 0) {
        perror("c1m-server: signalfd (SIGUSR1)");
        return -1;
    }
    return 0;
}

static void push_start(struct worker *w)
{
    struct pusher *ps = &w->push;
    if (!ps->pc || !ps->every_ns)
        return;
    ps->start_ns = c1m_now_ns();
    double first = w->push_cfg->burst ? (double)ps->every_ns / 1e6 : 0;
    if (!c1m_loop_timer(w->b.loop, first, on_push_tick, w))
        perror("c1m-server: push timer");
}

static void close_all(void *ud)
{
    struct worker *w = ud;
    for (int fd = 0; fd < w->b.max_fds && w->b.pub.open > 0; fd++)
        if (w->conns[fd].flags & CONN_OPEN)
            conn_close(w, fd);
}

int server_worker_run(const struct c1m_server_opts *cfg, const struct server_push *push,
                      struct c1m_stats *st, int index)
{
    int rc = 1;
    struct worker *w = calloc(1, sizeof(*w));
    if (!w) {
        perror("c1m-server: worker state");
        return 1;
    }
    w->cfg = cfg;
    w->push_cfg = push;
    c1m_pong_fill(w->pongs, PONG_BUF);
    w->b = (struct c1m_loop_worker){.prog = "c1m-server", .tick_ms = PUBLISH_MS, .tick = on_tick,
                                    .close_all = close_all, .ud = w};
    if (c1m_loop_worker_begin(&w->b, st, index) < 0)
        goto out;
    /* calloc'd table: its pages are touched only as fd numbers are used. */
    w->conns = calloc((size_t)w->b.max_fds, sizeof(*w->conns));
    if (!w->conns || c1m_held_init(&w->held, C1M_HELD_MAX) < 0) {
        perror("c1m-server: worker tables");
        goto out;
    }
    w->conn_handler = c1m_loop_handler(w->b.loop, on_conn_io, w);
    if (push->bytes && push_setup(w) < 0)
        goto out;
    if (c1m_loop_worker_listen(&w->b, cfg, index, on_accept) < 0)
        goto out;
    push_start(w);
    if (c1m_loop_worker_serve(&w->b) == 0)
        rc = 0;
out:
    c1m_loop_worker_end(&w->b, rc);
    free(w->conns);
    c1m_held_free(&w->held);
    free(w->push.pc);
    free(w->push.buf);
    free(w);
    return rc;
}
