/* libuv_worker.c - one c1m-libuv worker: the c1m protocol written the way a
 * libuv user writes a TCP server.
 *
 * A uv_tcp_t per connection, malloc'd at accept and freed in its close
 * callback (struct uconn); uv_read_start with an alloc callback that hands
 * out the worker's one 64 KiB read buffer (the read callback consumes the
 * bytes before returning, so an idle connection holds no buffer); replies are
 * written with uv_try_write and, for what the socket does not take at once,
 * uv_write from a shared buffer of repeated "pong\n" with a write request
 * taken from a per-worker free list (so nothing is allocated per event once
 * the list has grown to the number of connections writing at the same time).
 *
 * The rules are c1m-server's (c_server/server/server.c): lines parsed by
 * lineproto.h; `pongs` counts replies handed to the kernel; more than
 * --max-pending reply bytes not taken after the kernel refused more hold the
 * connection (read no more) and close it as slow once that backlog has not
 * shrunk for C1M_SLOW_GRACE_NS (slowcut.h); a half-close gets its queued replies before the
 * close; an oversized line closes after writing, without waiting, the replies
 * before it. The listener is a SO_REUSEPORT socket made by libc1m (libuv 1.44
 * has no SO_REUSEPORT flag) handed to libuv with uv_tcp_open; at the
 * --worker-conns cap it is closed, and re-created below the resume mark
 * (listener.h), as c1m-server's listener does.
 */
#include "libuv_worker.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "lineproto.h"
#include "listener.h" /* c1m_listener_resume_at */
#include "loop.h"     /* c1m_now_ns */
#include "net.h"
#include "slowcut.h"
#include "workers.h" /* c1m_workers_stopping */

#define READ_BUF 65536
#define PONG_BUF (C1M_PONG_LEN * 4096) /* 20 KiB of "pong\n" */
#define PUBLISH_MS 50
#define EMFILE_RETRY_MS 100

enum {
    UC_EOF = 1,      /* the peer half-closed: only sending what is queued remains */
    UC_CLOSING = 2,  /* uv_close called; freed in on_conn_closed */
    UC_PAUSED = 4,   /* reading stopped until the end of this loop iteration */
    UC_HELD = 8,     /* over --max-pending within the grace: not read (slowcut.h) */
};

struct uconn {
    uv_tcp_t tcp;               /* first: a uv_handle_t* of it is the struct's address */
    struct c1m_line_state line; /* 6 */
    uint8_t flags;
    uint8_t out_off;            /* bytes of the first pending pong already sent */
    uint32_t out_pongs;         /* pongs not fully handed to the kernel */
    uint32_t inflight;          /* bytes of the uv_write in flight (0: none) */
};

/* A write request with the length it carries; free ones are chained. */
struct wslot {
    uv_write_t req;
    uint32_t len;
    struct wslot *next;
};
#define WSLOT_CHUNK 64
struct wchunk {
    struct wchunk *next;
    struct wslot slots[WSLOT_CHUNK];
};

enum { L_CLOSED, L_OPEN, L_CLOSING };

struct lworker {
    const struct c1m_server_opts *cfg;
    uv_loop_t loop;
    uv_tcp_t lsn;
    int lsn_state;
    long resume_at;
    int retry_armed;
    uv_timer_t retry, tick;
    uv_check_t after_io;
    uv_signal_t sigterm, sigint;
    int stopping;
    struct c1m_stats_pub pub;    /* state and counts (stats.h) */
    struct wslot *free_slots;
    struct wchunk *chunks;
    struct uconn **paused;      /* connections to read again after this iteration */
    size_t npaused, paused_cap;
    struct c1m_held_set held;   /* connections over --max-pending (slowcut.h) */
    char rbuf[READ_BUF];
    char pong_buf[PONG_BUF];
};

static struct lworker *worker_of(uv_handle_t *h) { return h->loop->data; }


/* ---- write requests ---- */

static struct wslot *slot_get(struct lworker *w)
{
    if (!w->free_slots) {
        struct wchunk *c = malloc(sizeof(*c));
        if (!c)
            return NULL;
        c->next = w->chunks;
        w->chunks = c;
        for (int i = 0; i < WSLOT_CHUNK; i++) {
            c->slots[i].next = w->free_slots;
            w->free_slots = &c->slots[i];
        }
    }
    struct wslot *s = w->free_slots;
    w->free_slots = s->next;
    return s;
}

static void slot_put(struct lworker *w, struct wslot *s)
{
    s->next = w->free_slots;
    w->free_slots = s;
}

/* ---- listener ---- */

static void listener_open(struct lworker *w);
static void on_connection(uv_stream_t *server, int status);

static void on_listener_closed(uv_handle_t *h)
{
    struct lworker *w = worker_of(h);
    w->lsn_state = L_CLOSED;
    /* connections may have closed meanwhile: re-open now if below the mark */
    if (!w->stopping && !w->retry_armed && w->pub.open < w->resume_at)
        listener_open(w);
}

/* Close the listening socket (FULL): with net.ipv4.tcp_migrate_req=1 the
 * connections queued on it move to the sibling workers' listeners. */
static void listener_pause(struct lworker *w)
{
    if (w->lsn_state == L_OPEN) {
        w->lsn_state = L_CLOSING;
        uv_close((uv_handle_t *)&w->lsn, on_listener_closed);
        if (w->pub.state == C1M_ST_LISTENING)
            c1m_stats_set_state(&w->pub, C1M_ST_FULL);
    }
}

static void on_retry(uv_timer_t *t)
{
    struct lworker *w = worker_of((uv_handle_t *)t);
    w->retry_armed = 0;
    if (w->lsn_state == L_CLOSED && !w->stopping && w->pub.open < w->resume_at)
        listener_open(w);
}

static void retry_later(struct lworker *w)
{
    if (!w->retry_armed && !w->stopping) {
        w->retry_armed = 1;
        uv_timer_start(&w->retry, on_retry, EMFILE_RETRY_MS, 0);
    }
}

/* Create the SO_REUSEPORT listener and hand it to libuv. A failure after the
 * start (EMFILE...) is retried on a timer; at the start it is fatal (the
 * caller reports it). Returns 0 or a negative errno / uv error. */
static int listener_start(struct lworker *w)
{
    const struct c1m_server_opts *cfg = w->cfg;
    /* --sndbuf/--rcvbuf on the listening socket: every accepted socket
     * inherits them (no setsockopt() per connection) */
    const struct c1m_accept_opts opts = {.sndbuf = cfg->sndbuf, .rcvbuf = cfg->rcvbuf};
    int fd = c1m_listen_tcp_opts(cfg->host, cfg->port, cfg->backlog, 1, &opts);
    if (fd < 0)
        return -errno;
    int rc = uv_tcp_init(&w->loop, &w->lsn);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    w->lsn_state = L_OPEN;
    if ((rc = uv_tcp_open(&w->lsn, fd)) < 0 ||
        (rc = uv_listen((uv_stream_t *)&w->lsn, cfg->backlog, on_connection)) < 0) {
        /* uv_tcp_open failing leaves fd ours; after it the handle owns it */
        if (uv_fileno((uv_handle_t *)&w->lsn, &(uv_os_fd_t){0}) != 0)
            close(fd);
        w->lsn_state = L_CLOSING;
        uv_close((uv_handle_t *)&w->lsn, on_listener_closed);
        return rc;
    }
    return 0;
}

static void listener_open(struct lworker *w)
{
    if (w->lsn_state != L_CLOSED || w->stopping)
        return;
    if (listener_start(w) < 0) {
        w->pub.accept_errors++;
        w->pub.dirty = 1;
        retry_later(w);
        return;
    }
    if (w->pub.state == C1M_ST_FULL)
        c1m_stats_set_state(&w->pub, C1M_ST_LISTENING);
}

/* ---- connections ---- */

static void on_conn_closed(uv_handle_t *h)
{
    free((struct uconn *)h);
}

static void conn_close(struct lworker *w, struct uconn *c)
{
    if (c->flags & UC_CLOSING)
        return;
    c->flags |= UC_CLOSING;
    if (c->flags & UC_HELD)
        c1m_held_forget(&w->held, (uint64_t)(uintptr_t)c);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    w->pub.open--;
    w->pub.closed++;
    w->pub.dirty = 1;
    if (w->lsn_state == L_CLOSED && !w->retry_armed && w->pub.open < w->resume_at)
        listener_open(w);
}

static size_t pending_bytes(const struct uconn *c)
{
    return (size_t)c->out_pongs * C1M_PONG_LEN - c->out_off;
}

/* n more bytes from the pending pongs reached the kernel. */
static void account(struct lworker *w, struct uconn *c, size_t n)
{
    size_t done = n + c->out_off;
    uint32_t sent = (uint32_t)(done / C1M_PONG_LEN);
    c->out_pongs -= sent;
    c->out_off = (uint8_t)(done % C1M_PONG_LEN);
    w->pub.pongs += sent;
    w->pub.dirty = 1;
}

/* uv_try_write the pending pongs until done or the socket is full. 0, or
 * -1 on a write error (the caller closes). */
static int conn_try_send(struct lworker *w, struct uconn *c)
{
    while (c->out_pongs) {
        size_t want = pending_bytes(c), room = PONG_BUF - c->out_off;
        uv_buf_t b = uv_buf_init(w->pong_buf + c->out_off, (unsigned)(want < room ? want : room));
        int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (n == UV_EAGAIN)
            return 0;
        if (n < 0)
            return -1; /* EPIPE, ECONNRESET... */
        account(w, c, (size_t)n);
    }
    return 0;
}

static void on_write(uv_write_t *req, int status);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* The kernel refused output: read this peer no more in this loop iteration.
 * libuv reads a readable stream up to 32 times in a row, where c1m-server
 * reads once per wake-up; without the pause, the next reads of a peer that
 * reads all along would queue replies before the kernel had a chance to take
 * the first ones (its ACKs come back between iterations) and the slow cutoff
 * would judge a peer that reads. Reading resumes in the check phase
 * (on_after_io), so the next iteration reads it as c1m-server would. */
static void pause_reading(struct lworker *w, struct uconn *c)
{
    if (c->flags & (UC_PAUSED | UC_EOF))
        return;
    if (w->npaused == w->paused_cap) { /* grows to the most paused at once, then reused */
        size_t cap = w->paused_cap ? w->paused_cap * 2 : 256;
        struct uconn **p = realloc(w->paused, cap * sizeof(*p));
        if (!p)
            return; /* keep reading: only the pause is lost */
        w->paused = p;
        w->paused_cap = cap;
    }
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->flags |= UC_PAUSED;
    w->paused[w->npaused++] = c;
}

static void resume_paused(struct lworker *w)
{
    for (size_t i = 0; i < w->npaused; i++) {
        struct uconn *c = w->paused[i]; /* closing ones are freed only after this phase */
        c->flags &= (uint8_t)~UC_PAUSED;
        if (!(c->flags & (UC_CLOSING | UC_EOF | UC_HELD)) &&
            uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
            conn_close(w, c);
    }
    w->npaused = 0;
}

/* One uv_write of the pending pongs (as many as the shared buffer holds),
 * for what the socket did not take at once; reading pauses for this
 * iteration (pause_reading). */
static void start_write(struct lworker *w, struct uconn *c)
{
    struct wslot *s = slot_get(w);
    if (!s) {
        conn_close(w, c); /* out of memory: drop this peer, not the worker */
        return;
    }
    size_t want = pending_bytes(c), room = PONG_BUF - c->out_off;
    s->len = (uint32_t)(want < room ? want : room);
    uv_buf_t b = uv_buf_init(w->pong_buf + c->out_off, s->len);
    if (uv_write(&s->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) < 0) {
        slot_put(w, s);
        conn_close(w, c);
        return;
    }
    c->inflight = s->len;
    pause_reading(w, c);
}

/* Send what is pending: directly while the socket takes it, then with one
 * uv_write in flight. Applies the slow cutoff (held, released or slow) to
 * what the kernel refused and finishes a half-closed connection whose
 * replies are all sent. */
static void conn_flush(struct lworker *w, struct uconn *c)
{
    if (!c->inflight && conn_try_send(w, c) < 0) {
        conn_close(w, c);
        return;
    }
    /* unsent: what the write in flight still holds, and what waits behind it */
    size_t backlog = c->inflight ? uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) +
                                       (pending_bytes(c) - c->inflight)
                                 : pending_bytes(c);
    if (backlog > (size_t)w->cfg->max_pending || (c->flags & UC_HELD)) {
        switch (c1m_held_judge(&w->held, (uint64_t)(uintptr_t)c, backlog,
                               (size_t)w->cfg->max_pending, c1m_now_ns())) {
        case C1M_BACKLOG_SLOW:
            w->pub.slow++;
            conn_close(w, c);
            return;
        case C1M_BACKLOG_HELD:
            if (!(c->flags & UC_HELD)) {
                c->flags |= UC_HELD; /* read no more: on_write or the grace's end decides */
                if (!(c->flags & (UC_EOF | UC_PAUSED)))
                    uv_read_stop((uv_stream_t *)&c->tcp);
            }
            if (!c->inflight)
                start_write(w, c);
            return;
        case C1M_BACKLOG_OK: /* released: read again (a paused one at the iteration's end) */
            c->flags &= (uint8_t)~UC_HELD;
            if (!(c->flags & (UC_EOF | UC_PAUSED)) &&
                uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
                conn_close(w, c);
                return;
            }
            break;
        }
    }
    if (c->inflight)
        return; /* a write is waiting for room already */
    if (!c->out_pongs) {
        if (c->flags & UC_EOF)
            conn_close(w, c); /* everything queued was delivered */
        return;
    }
    start_write(w, c);
}

static void on_write(uv_write_t *req, int status)
{
    struct wslot *s = (struct wslot *)req;
    struct uconn *c = (struct uconn *)req->handle;
    struct lworker *w = worker_of((uv_handle_t *)req->handle);
    uint32_t len = s->len;
    slot_put(w, s);
    c->inflight = 0;
    if (status == 0)
        account(w, c, len); /* all of it reached the kernel (even if closing since) */
    if (c->flags & UC_CLOSING)
        return; /* status UV_ECANCELED: closed with the write pending, not sent */
    if (status < 0) {
        conn_close(w, c);
        return;
    }
    conn_flush(w, c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct lworker *w = worker_of(h);
    *buf = uv_buf_init(w->rbuf, sizeof(w->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    struct uconn *c = (struct uconn *)s;
    struct lworker *w = worker_of((uv_handle_t *)s);
    if (nread == 0 || (c->flags & UC_CLOSING))
        return; /* EAGAIN */
    if (nread == UV_EOF) { /* the peer sends no more */
        if (!c->out_pongs) {
            conn_close(w, c);
            return;
        }
        c->flags |= UC_EOF; /* deliver the queued replies first */
        uv_read_stop(s);
        conn_flush(w, c);
        return;
    }
    if (nread < 0) { /* ECONNRESET, ETIMEDOUT... */
        conn_close(w, c);
        return;
    }
    struct c1m_line_result r = {0, 0};
    int rc = c1m_line_feed(&c->line, w->rbuf, (size_t)nread, &r);
    w->pub.lines += r.lines;
    w->pub.dirty = 1;
    /* saturate rather than wrap; the slow check closes long before */
    uint64_t p = (uint64_t)c->out_pongs + r.pings;
    c->out_pongs = p > UINT32_MAX ? UINT32_MAX : (uint32_t)p;
    if (rc < 0) {
        /* the replies to the complete lines before it: what the socket takes
         * now (never wait), then close */
        if (!c->inflight)
            conn_try_send(w, c);
        w->pub.oversized++;
        conn_close(w, c);
        return;
    }
    if (r.pings)
        conn_flush(w, c);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct lworker *w = worker_of((uv_handle_t *)server);
    if (status < 0) {
        w->pub.accept_errors++;
        w->pub.dirty = 1;
        if (status == UV_EMFILE || status == UV_ENFILE || status == UV_ENOBUFS ||
            status == UV_ENOMEM) {
            /* out of fds or memory: stop listening, retry on a timer */
            listener_pause(w);
            retry_later(w);
        }
        return;
    }
    struct uconn *c = calloc(1, sizeof(*c));
    if (!c || uv_tcp_init(&w->loop, &c->tcp) < 0) {
        free(c);
        w->pub.accept_errors++;
        w->pub.dirty = 1;
        listener_pause(w); /* the queued connection stays queued: retry later */
        retry_later(w);
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        c->flags |= UC_CLOSING;
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
        w->pub.accept_errors++;
        w->pub.dirty = 1;
        return;
    }
    w->pub.open++;
    w->pub.accepted++;
    w->pub.dirty = 1;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
        conn_close(w, c);
    if (w->cfg->worker_conns > 0 && w->pub.open >= w->cfg->worker_conns)
        listener_pause(w);
}

/* ---- timers, signals, stop ---- */

/* The held connections whose grace is over: their write did not complete
 * since (or on_write would have judged them), so slow unless the backlog
 * shrank meanwhile. A few per tick (PUBLISH_MS), the rest at the next. */
static void judge_held(struct lworker *w)
{
    uint64_t due[64];
    int k = c1m_held_due(&w->held, c1m_now_ns(), due, (int)(sizeof(due) / sizeof(due[0])));
    for (int i = 0; i < k; i++) {
        struct uconn *c = (struct uconn *)(uintptr_t)due[i];
        if ((c->flags & (UC_HELD | UC_CLOSING)) == UC_HELD)
            conn_flush(w, c);
        else
            c1m_held_forget(&w->held, due[i]); /* not expected: conn_close forgets */
    }
}

static void on_tick(uv_timer_t *t)
{
    struct lworker *w = worker_of((uv_handle_t *)t);
    if (w->held.n)
        judge_held(w);
    c1m_stats_publish(&w->pub); /* refreshes updated_ns: alive */
}

static void on_after_io(uv_check_t *h)
{
    struct lworker *w = worker_of((uv_handle_t *)h);
    resume_paused(w);
    if (w->pub.dirty)
        c1m_stats_publish(&w->pub);
}

static void close_any(uv_handle_t *h, void *arg)
{
    struct lworker *w = arg;
    if (uv_is_closing(h))
        return;
    if (h->type == UV_TCP && h != (uv_handle_t *)&w->lsn)
        conn_close(w, (struct uconn *)h);
    else
        uv_close(h, NULL);
}

static void on_stop_signal(uv_signal_t *sig, int signo)
{
    (void)signo;
    struct lworker *w = worker_of((uv_handle_t *)sig);
    if (w->stopping)
        return;
    w->stopping = 1;
    c1m_workers_stopping(); /* closing the signal handles puts back SIG_DFL */
    c1m_stats_set_state(&w->pub, C1M_ST_STOPPING);
    if (w->lsn_state == L_OPEN)
        w->lsn_state = L_CLOSING; /* closed by the walk below, not re-opened */
    /* every handle: the connections (counted closed), the listener, the
     * timers, the check and the signals; uv_run returns once all are closed */
    uv_walk(&w->loop, close_any, w);
}

int libuv_worker_run(const struct c1m_server_opts *cfg, struct c1m_stats *st, int index)
{
    int rc = 1, loop_ok = 0;
    struct lworker *w = calloc(1, sizeof(*w));
    if (!w) {
        perror("c1m-libuv: worker state");
        return 1;
    }
    w->cfg = cfg;
    w->pub.rec = &st->w[index];
    w->resume_at = c1m_listener_resume_at(cfg->worker_conns);
    c1m_pong_fill(w->pong_buf, PONG_BUF);
    c1m_stats_set_state(&w->pub, C1M_ST_STARTING);
    /* libuv writes with write(2)/writev(2): a peer gone makes SIGPIPE, which
     * libuv leaves to the application (as every libuv program does) */
    signal(SIGPIPE, SIG_IGN);
    if (c1m_held_init(&w->held, C1M_HELD_MAX) < 0) {
        perror("c1m-libuv: worker tables");
        goto out;
    }

    int e = uv_loop_init(&w->loop);
    if (e < 0) {
        fprintf(stderr, "c1m-libuv: worker %d: uv_loop_init: %s\n", index, uv_strerror(e));
        goto out;
    }
    loop_ok = 1;
    w->loop.data = w;
    if ((e = uv_signal_init(&w->loop, &w->sigterm)) < 0 ||
        (e = uv_signal_start(&w->sigterm, on_stop_signal, SIGTERM)) < 0 ||
        (e = uv_signal_init(&w->loop, &w->sigint)) < 0 ||
        (e = uv_signal_start(&w->sigint, on_stop_signal, SIGINT)) < 0 ||
        (e = uv_timer_init(&w->loop, &w->retry)) < 0 ||
        (e = uv_timer_init(&w->loop, &w->tick)) < 0 ||
        (e = uv_timer_start(&w->tick, on_tick, PUBLISH_MS, PUBLISH_MS)) < 0 ||
        (e = uv_check_init(&w->loop, &w->after_io)) < 0 ||
        (e = uv_check_start(&w->after_io, on_after_io)) < 0) {
        fprintf(stderr, "c1m-libuv: worker %d: loop set-up: %s\n", index, uv_strerror(e));
        goto out;
    }
    if ((e = listener_start(w)) < 0) {
        fprintf(stderr, "c1m-libuv: worker %d: listen on %s:%d: %s\n", index, cfg->host,
                cfg->port, uv_strerror(e));
        goto out;
    }
    c1m_stats_set_state(&w->pub, C1M_ST_LISTENING);
    if ((e = uv_run(&w->loop, UV_RUN_DEFAULT)) != 0 && !w->stopping) {
        fprintf(stderr, "c1m-libuv: worker %d: uv_run returned with handles active\n", index);
        goto out;
    }
    rc = 0;
out:
    if (loop_ok) {
        if (!w->stopping) { /* failure: close what is open, then let the closes run */
            w->stopping = 1;
            uv_walk(&w->loop, close_any, w);
        }
        uv_run(&w->loop, UV_RUN_DEFAULT);
        if (uv_loop_close(&w->loop) != 0 && rc == 0) {
            fprintf(stderr, "c1m-libuv: worker %d: handles left open at exit\n", index);
            rc = 1;
        }
    }
    c1m_stats_set_state(&w->pub, rc == 0 ? C1M_ST_EXITED : C1M_ST_FAILED);
    free(w->paused);
    c1m_held_free(&w->held);
    while (w->chunks) {
        struct wchunk *c = w->chunks;
        w->chunks = c->next;
        free(c);
    }
    free(w);
    return rc;
}
