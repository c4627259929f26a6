/* uring_worker.c - one c1m-uring worker: the c1m protocol on io_uring.
 *
 * One ring per worker. The listener has one multishot accept request; every
 * connection has one multishot receive request that takes its buffers from a
 * provided-buffer ring shared by the worker's connections. A buffer is lent
 * only for the time between the kernel filling it and this worker parsing it
 * (it goes back to the ring at once), so an idle connection holds no
 * userspace buffer: only its 16-byte struct uconn in an fd-indexed array, and
 * in the kernel one armed receive request instead of an epoll item.
 *
 * Replies are sent with send(2) straight from a shared buffer of repeated
 * "pong\n" (as c1m-server does); what the socket refuses waits for a one-shot
 * POLLOUT request. The rules are c1m-server's (c_server/server/server.c):
 * lines parsed by lineproto.h, `pongs` counted when handed to the kernel, a
 * half-close gets its queued replies, an oversized line closes after a
 * non-blocking write of the replies before it; at the --worker-conns cap the
 * listener is closed and re-created below the resume mark (listener.h).
 * Except the slow cutoff, which has a grace here (slowcut.h): the multishot
 * receive posts every chunk that arrived, so one batch of completions may
 * queue the replies to several reads of a peer before the kernel had a
 * chance to take the first; more than --max-pending refused bytes hold the
 * connection (its receive is cancelled: it is read no more) and close it as
 * slow only if the backlog has not shrunk for C1M_SLOW_GRACE_NS.
 *
 * Every request's user_data carries the operation, the fd and the fd's
 * generation, so a completion that arrives after its connection was closed
 * (and its fd number reused) is recognised and dropped; closing cancels the
 * connection's requests (an armed request holds the socket open otherwise).
 */
#include "uring_worker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <liburing.h>

#include "lineproto.h"
#include "listener.h" /* c1m_listener_resume_at */
#include "loop.h"     /* c1m_now_ns */
#include "net.h"
#include "slowcut.h"

/* Receive buffers: lent per completion, so a few per worker serve all of its
 * connections: 64 KiB in all, c1m-server's one read buffer (heartbeats cycle
 * through every buffer, so all of their pages end up touched: 128 x 2 KiB
 * measured 42 bytes per connection at 20k over 2 workers, c1m-server 19). A
 * ring that runs dry ends a multishot receive with ENOBUFS, which is re-armed
 * once buffers are back: slower under a burst, never wrong. */
#define BUF_COUNT 32 /* a power of two */
#define BUF_SIZE 2048
#define BGID 0
#define PONG_BUF (C1M_PONG_LEN * 4096)
#define PUBLISH_NS 50000000ull
#define EMFILE_RETRY_NS 100000000ull

enum op { OP_IGNORE = 0, OP_ACCEPT, OP_RECV, OP_POLLOUT, OP_SIGNAL };

static uint64_t ud_make(enum op op, uint32_t gen, int fd)
{
    return (uint64_t)op << 56 | (uint64_t)(gen & 0xffffff) << 32 | (uint32_t)fd;
}
static enum op ud_op(uint64_t ud) { return (enum op)(ud >> 56); }
static uint32_t ud_gen(uint64_t ud) { return (uint32_t)(ud >> 32) & 0xffffff; }
static int ud_fd(uint64_t ud) { return (int)(uint32_t)ud; }

enum {
    UC_OPEN = 1,
    UC_EOF = 2,        /* the peer half-closed: only sending what is queued remains */
    UC_RECV = 4,       /* a multishot receive is armed */
    UC_POLLOUT = 8,    /* a POLLOUT request is armed */
    UC_HELD = 16,      /* over --max-pending within the grace: not read (slowcut.h) */
};

struct uconn {                   /* 16 bytes, fd-indexed */
    struct c1m_line_state line;  /* 6 */
    uint8_t flags;
    uint8_t out_off;             /* bytes of the first pending pong already sent */
    uint32_t out_pongs;          /* pongs not fully sent yet */
    uint16_t gen;                /* bumped at each close: tells stale completions */
};
_Static_assert(sizeof(struct uconn) == 16, "per-connection state must stay small");

struct uworker {
    const struct c1m_server_opts *cfg;
    struct io_uring ring;
    int ring_ok;
    struct io_uring_buf_ring *br;
    size_t br_size;
    char *bufs;
    int buf_returns;             /* buffers given back since the last advance */
    struct uconn *conns;
    int max_fds;
    int lfd;                     /* -1 while closed */
    uint32_t lgen;               /* listener generation */
    int accept_armed;
    long resume_at;
    uint64_t retry_at;           /* 0: no EMFILE retry pending */
    int sfd;                     /* signalfd for SIGTERM/SIGINT */
    int stopping, fatal;
    struct c1m_stats_pub pub;    /* state and counts (stats.h) */
    struct c1m_held_set held;    /* connections over --max-pending (slowcut.h) */
    /* completions copied off the ring, to handle: the main loop's batch,
     * and what get_sqe takes off when the kernel refuses submissions with
     * EBUSY (completions it could not post are waiting) */
    struct io_uring_cqe *deferred;
    unsigned ndeferred;
    char pong_buf[PONG_BUF];
};


/* Move the completions waiting in the ring to w->deferred (not handled
 * here: the caller may be in the middle of handling one), as many as fit.
 * Returns how many. */
static unsigned defer_cqes(struct uworker *w)
{
    struct io_uring_cqe *cqe;
    unsigned n = 0;
    while (w->ndeferred < URING_CQ_ENTRIES && io_uring_peek_cqe(&w->ring, &cqe) == 0) {
        w->deferred[w->ndeferred++] = *cqe;
        io_uring_cqe_seen(&w->ring, cqe);
        n++;
    }
    return n;
}

/* A submission entry; when the queue is full, what it holds is submitted
 * first. The kernel refuses that with EBUSY while completions it could not
 * post wait (an overflowed completion queue, older kernels): then the
 * completions are set aside for the main loop and the submission retried.
 * NULL only if the kernel takes nothing (the worker then stops). */
static struct io_uring_sqe *get_sqe(struct uworker *w)
{
    for (int i = 0; i < 4; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
        if (sqe)
            return sqe;
        int rc = io_uring_submit(&w->ring);
        if (rc == -EBUSY && defer_cqes(w) > 0) {
            i--; /* progress: not one of the tries */
            continue;
        }
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
            break;
    }
    fprintf(stderr, "c1m-uring: submission queue full and not draining\n");
    w->fatal = 1;
    return NULL;
}

static void cancel(struct uworker *w, uint64_t ud)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe)
        return;
    io_uring_prep_cancel64(sqe, ud, 0);
    io_uring_sqe_set_data64(sqe, ud_make(OP_IGNORE, 0, 0));
}

/* ---- listener ---- */

static int arm_accept(struct uworker *w)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe)
        return -1;
    io_uring_prep_multishot_accept(sqe, w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, ud_make(OP_ACCEPT, w->lgen, w->lfd));
    w->accept_armed = 1;
    return 0;
}

static int listener_start(struct uworker *w)
{
    const struct c1m_server_opts *cfg = w->cfg;
    /* --sndbuf/--rcvbuf on the listening socket: every accepted socket
     * inherits them (no setsockopt() per connection) */
    const struct c1m_accept_opts opts = {.sndbuf = cfg->sndbuf, .rcvbuf = cfg->rcvbuf};
    int fd = c1m_listen_tcp_opts(cfg->host, cfg->port, cfg->backlog, 1, &opts);
    if (fd < 0)
        return -1;
    w->lfd = fd;
    w->lgen++;
    if (arm_accept(w) < 0) {
        close(fd);
        w->lfd = -1;
        errno = EBUSY;
        return -1;
    }
    return 0;
}

/* Close the listening socket (FULL); its accept request is cancelled (it
 * holds the socket otherwise, and the kernel would go on queueing on it). */
static void listener_pause(struct uworker *w)
{
    if (w->lfd < 0)
        return;
    if (w->accept_armed)
        cancel(w, ud_make(OP_ACCEPT, w->lgen, w->lfd));
    w->accept_armed = 0;
    close(w->lfd);
    w->lfd = -1;
    if (w->pub.state == C1M_ST_LISTENING && !w->stopping)
        c1m_stats_set_state(&w->pub, C1M_ST_FULL);
}

static void listener_maybe_resume(struct uworker *w)
{
    if (w->lfd >= 0 || w->stopping || w->retry_at || w->pub.open >= w->resume_at)
        return;
    if (listener_start(w) < 0) {
        w->pub.accept_errors++;
        w->pub.dirty = 1;
        w->retry_at = c1m_now_ns() + EMFILE_RETRY_NS;
        return;
    }
    if (w->pub.state == C1M_ST_FULL)
        c1m_stats_set_state(&w->pub, C1M_ST_LISTENING);
}

/* ---- connections ---- */

static void arm_recv(struct uworker *w, int fd)
{
    struct uconn *c = &w->conns[fd];
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe)
        return;
    io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BGID;
    io_uring_sqe_set_data64(sqe, ud_make(OP_RECV, c->gen, fd));
    c->flags |= UC_RECV;
}

static void arm_pollout(struct uworker *w, int fd)
{
    struct uconn *c = &w->conns[fd];
    if (c->flags & UC_POLLOUT)
        return;
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe)
        return;
    io_uring_prep_poll_add(sqe, fd, POLLOUT);
    io_uring_sqe_set_data64(sqe, ud_make(OP_POLLOUT, c->gen, fd));
    c->flags |= UC_POLLOUT;
}

static void conn_close(struct uworker *w, int fd)
{
    struct uconn *c = &w->conns[fd];
    /* while stopping no cancels: io_uring_queue_exit cancels every request,
     * and up to two per connection would overflow the completion queue
     * nobody reaps any more */
    if (w->stopping)
        c->flags &= (uint8_t)~(UC_RECV | UC_POLLOUT);
    if (c->flags & UC_RECV)
        cancel(w, ud_make(OP_RECV, c->gen, fd));
    if (c->flags & UC_POLLOUT)
        cancel(w, ud_make(OP_POLLOUT, c->gen, fd));
    close(fd); /* the socket goes once the cancelled requests release it */
    if (c->flags & UC_HELD)
        c1m_held_forget(&w->held, (uint64_t)fd);
    uint16_t gen = (uint16_t)(c->gen + 1);
    memset(c, 0, sizeof(*c));
    c->gen = gen;
    w->pub.open--;
    w->pub.closed++;
    w->pub.dirty = 1;
    listener_maybe_resume(w);
}

static size_t pending_bytes(const struct uconn *c)
{
    return (size_t)c->out_pongs * C1M_PONG_LEN - c->out_off;
}

/* send() the pending pongs until done or EAGAIN. -1 on a send error. */
static int conn_send(struct uworker *w, int fd)
{
    struct uconn *c = &w->conns[fd];
    while (c->out_pongs) {
        size_t want = pending_bytes(c), room = PONG_BUF - c->out_off;
        ssize_t n = send(fd, w->pong_buf + c->out_off, want < room ? want : room,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
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
        w->pub.pongs += sent;
        w->pub.dirty = 1;
    }
    return 0;
}

/* Send what is pending, apply the slow cutoff (held, released or slow),
 * finish a half-closed connection whose replies are all sent, wait for
 * POLLOUT for the rest. */
static void conn_flush(struct uworker *w, int fd)
{
    struct uconn *c = &w->conns[fd];
    if (conn_send(w, fd) < 0) {
        conn_close(w, fd);
        return;
    }
    size_t backlog = c->out_pongs ? pending_bytes(c) : 0;
    if (backlog > (size_t)w->cfg->max_pending || (c->flags & UC_HELD)) {
        switch (c1m_held_judge(&w->held, (uint64_t)fd, backlog, (size_t)w->cfg->max_pending,
                               c1m_now_ns())) {
        case C1M_BACKLOG_SLOW:
            w->pub.slow++;
            conn_close(w, fd);
            return;
        case C1M_BACKLOG_HELD:
            if (!(c->flags & UC_HELD)) {
                c->flags |= UC_HELD;
                if (c->flags & UC_RECV) /* read no more: its final completion clears UC_RECV */
                    cancel(w, ud_make(OP_RECV, c->gen, fd));
            }
            arm_pollout(w, fd);
            return;
        case C1M_BACKLOG_OK: /* released: read again */
            c->flags &= (uint8_t)~UC_HELD;
            if (!(c->flags & (UC_RECV | UC_EOF)))
                arm_recv(w, fd);
            break;
        }
    }
    if (!c->out_pongs) {
        if (c->flags & UC_EOF)
            conn_close(w, fd); /* everything queued was delivered */
        return;
    }
    arm_pollout(w, fd);
}

static void give_back(struct uworker *w, uint32_t cqe_flags)
{
    if (!(cqe_flags & IORING_CQE_F_BUFFER))
        return;
    unsigned bid = cqe_flags >> IORING_CQE_BUFFER_SHIFT;
    io_uring_buf_ring_add(w->br, w->bufs + (size_t)bid * BUF_SIZE, BUF_SIZE, (unsigned short)bid,
                          io_uring_buf_ring_mask(BUF_COUNT), w->buf_returns++);
}

static void on_recv(struct uworker *w, int fd, int res, uint32_t flags)
{
    struct uconn *c = &w->conns[fd];
    if (!(flags & IORING_CQE_F_MORE))
        c->flags &= (uint8_t)~UC_RECV;
    if (res == 0) { /* orderly EOF: the peer sends no more */
        if (!c->out_pongs) {
            conn_close(w, fd);
            return;
        }
        c->flags |= UC_EOF; /* deliver the queued replies first */
        conn_flush(w, fd);
        return;
    }
    if (res < 0) {
        if (res == -ENOBUFS || res == -EINTR || res == -EAGAIN || res == -ECANCELED) {
            /* buffers are back by now: read on; cancelled: held (read again
             * when released) */
            if (!(c->flags & (UC_RECV | UC_HELD | UC_EOF)))
                arm_recv(w, fd);
            return;
        }
        conn_close(w, fd); /* ECONNRESET, ETIMEDOUT... */
        return;
    }
    struct c1m_line_result r = {0, 0};
    unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
    int rc = c1m_line_feed(&c->line, w->bufs + (size_t)bid * BUF_SIZE, (size_t)res, &r);
    w->pub.lines += r.lines;
    w->pub.dirty = 1;
    uint64_t p = (uint64_t)c->out_pongs + r.pings; /* saturate; the slow check closes first */
    c->out_pongs = p > UINT32_MAX ? UINT32_MAX : (uint32_t)p;
    if (rc < 0) {
        conn_send(w, fd); /* the replies before it, without waiting */
        w->pub.oversized++;
        conn_close(w, fd);
        return;
    }
    if (r.pings) {
        conn_flush(w, fd);
        if (!(c->flags & UC_OPEN))
            return;
    }
    if (!(c->flags & (UC_RECV | UC_EOF | UC_HELD)))
        arm_recv(w, fd); /* the multishot ended (CQ overflow...): re-arm */
}

static void on_accept(struct uworker *w, uint64_t ud, int res, uint32_t flags)
{
    int current = ud_gen(ud) == (w->lgen & 0xffffff) && w->lfd >= 0;
    if (current && !(flags & IORING_CQE_F_MORE))
        w->accept_armed = 0;
    if (res >= 0) {
        int fd = res;
        if (fd >= w->max_fds) { /* cannot happen below RLIMIT_NOFILE; be safe */
            close(fd);
            return;
        }
        struct uconn *c = &w->conns[fd];
        c->flags = UC_OPEN;
        w->pub.open++;
        w->pub.accepted++;
        w->pub.dirty = 1;
        arm_recv(w, fd);
        if (w->cfg->worker_conns > 0 && w->pub.open >= w->cfg->worker_conns)
            listener_pause(w);
    } else if (res != -ECANCELED && current) {
        w->pub.accept_errors++;
        w->pub.dirty = 1;
        if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
            /* out of fds or memory: stop listening, retry on a timer */
            listener_pause(w);
            w->retry_at = c1m_now_ns() + EMFILE_RETRY_NS;
            return;
        }
        if (res == -EINVAL && !w->pub.accepted) {
            fprintf(stderr, "c1m-uring: multishot accept refused (EINVAL): this kernel lacks it\n");
            w->fatal = 1;
            return;
        }
    }
    if (current && !w->accept_armed && !w->stopping)
        arm_accept(w);
}

static void on_signal(struct uworker *w)
{
    struct signalfd_siginfo si;
    ssize_t n = read(w->sfd, &si, sizeof(si));
    if (n == (ssize_t)sizeof(si) && (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)) {
        w->stopping = 1;
        return;
    }
    struct io_uring_sqe *sqe = get_sqe(w); /* EAGAIN/EINTR: wait again */
    if (sqe) {
        io_uring_prep_poll_add(sqe, w->sfd, POLLIN);
        io_uring_sqe_set_data64(sqe, ud_make(OP_SIGNAL, 0, w->sfd));
    }
}

static void handle(struct uworker *w, const struct io_uring_cqe *cqe)
{
    uint64_t ud = io_uring_cqe_get_data64(cqe);
    int fd = ud_fd(ud), res = cqe->res;
    uint32_t flags = cqe->flags;
    switch (ud_op(ud)) {
    case OP_ACCEPT:
        on_accept(w, ud, res, flags);
        break;
    case OP_RECV:
        if (fd >= 0 && fd < w->max_fds && (w->conns[fd].flags & UC_OPEN) &&
            w->conns[fd].gen == ud_gen(ud))
            on_recv(w, fd, res, flags);
        give_back(w, flags); /* even for a stale completion */
        break;
    case OP_POLLOUT:
        if (fd >= 0 && fd < w->max_fds && (w->conns[fd].flags & UC_OPEN) &&
            w->conns[fd].gen == ud_gen(ud)) {
            w->conns[fd].flags &= (uint8_t)~UC_POLLOUT;
            conn_flush(w, fd); /* an error or hang-up shows in send() */
        }
        break;
    case OP_SIGNAL:
        on_signal(w);
        break;
    case OP_IGNORE:
        break;
    }
}

/* The held connections whose grace is over: the socket had room for nothing
 * since (else POLLOUT would have judged them): slow, unless the backlog
 * shrank meanwhile. A few per wake-up, the rest at the next (<= PUBLISH_NS). */
static void judge_held(struct uworker *w, uint64_t now)
{
    uint64_t due[64];
    int k = c1m_held_due(&w->held, now, due, (int)(sizeof(due) / sizeof(due[0])));
    for (int i = 0; i < k; i++) {
        int fd = (int)due[i];
        if ((w->conns[fd].flags & (UC_OPEN | UC_HELD)) == (UC_OPEN | UC_HELD))
            conn_flush(w, fd);
        else
            c1m_held_forget(&w->held, (uint64_t)fd); /* not expected: conn_close forgets */
    }
}

/* At exit (w->stopping): conn_close queues no cancels then. */
static void close_all(struct uworker *w)
{
    for (int fd = 0; fd < w->max_fds && w->pub.open > 0; fd++)
        if (w->conns[fd].flags & UC_OPEN)
            conn_close(w, fd);
}

static int setup(struct uworker *w, int index)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = URING_CQ_ENTRIES;
    int rc = io_uring_queue_init_params(URING_SQ_ENTRIES, &w->ring, &p);
    if (rc < 0) {
        fprintf(stderr, "c1m-uring: worker %d: io_uring_setup: %s\n", index, strerror(-rc));
        return -1;
    }
    w->ring_ok = 1;
    w->br_size = BUF_COUNT * sizeof(struct io_uring_buf);
    void *m = mmap(NULL, w->br_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* the buffers' pages are touched only as the kernel fills them */
    void *b = mmap(NULL, (size_t)BUF_COUNT * BUF_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || b == MAP_FAILED) {
        perror("c1m-uring: buffer ring");
        if (m != MAP_FAILED)
            munmap(m, w->br_size);
        if (b != MAP_FAILED)
            munmap(b, (size_t)BUF_COUNT * BUF_SIZE);
        return -1;
    }
    w->br = m; /* a fresh mapping is zeroed: the ring's tail starts at 0 */
    w->bufs = b;
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof(reg));
    reg.ring_addr = (unsigned long)w->br;
    reg.ring_entries = BUF_COUNT;
    reg.bgid = BGID;
    if ((rc = io_uring_register_buf_ring(&w->ring, &reg, 0)) < 0) {
        fprintf(stderr, "c1m-uring: worker %d: register buffer ring: %s\n", index, strerror(-rc));
        return -1;
    }
    for (int i = 0; i < BUF_COUNT; i++)
        io_uring_buf_ring_add(w->br, w->bufs + (size_t)i * BUF_SIZE, BUF_SIZE, (unsigned short)i,
                              io_uring_buf_ring_mask(BUF_COUNT), i);
    io_uring_buf_ring_advance(w->br, BUF_COUNT);

    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0 ||
        (w->sfd = signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        perror("c1m-uring: signalfd");
        return -1;
    }
    struct io_uring_sqe *sqe = get_sqe(w);
    if (!sqe)
        return -1;
    io_uring_prep_poll_add(sqe, w->sfd, POLLIN);
    io_uring_sqe_set_data64(sqe, ud_make(OP_SIGNAL, 0, w->sfd));
    return 0;
}

static void teardown(struct uworker *w)
{
    if (w->ring_ok)
        io_uring_queue_exit(&w->ring); /* cancels what is still armed */
    if (w->br)
        munmap(w->br, w->br_size);
    if (w->bufs)
        munmap(w->bufs, (size_t)BUF_COUNT * BUF_SIZE);
    if (w->sfd >= 0)
        close(w->sfd);
}

int uring_worker_run(const struct c1m_server_opts *cfg, struct c1m_stats *st, int index)
{
    int rc = 1;
    struct uworker *w = calloc(1, sizeof(*w));
    if (!w) {
        perror("c1m-uring: worker state");
        return 1;
    }
    w->cfg = cfg;
    w->pub.rec = &st->w[index];
    w->lfd = w->sfd = -1;
    w->max_fds = c1m_nofile_limit();
    w->resume_at = c1m_listener_resume_at(cfg->worker_conns);
    c1m_pong_fill(w->pong_buf, PONG_BUF);
    c1m_stats_set_state(&w->pub, C1M_ST_STARTING);
    w->conns = calloc((size_t)w->max_fds, sizeof(*w->conns)); /* pages touched as fds are used */
    w->deferred = malloc(URING_CQ_ENTRIES * sizeof(*w->deferred)); /* pages touched as used */
    if (!w->conns || !w->deferred || c1m_held_init(&w->held, C1M_HELD_MAX) < 0) {
        perror("c1m-uring: worker tables");
        goto out;
    }
    if (setup(w, index) < 0)
        goto out;
    if (listener_start(w) < 0) {
        fprintf(stderr, "c1m-uring: worker %d: listen on %s:%d: %s\n", index, cfg->host,
                cfg->port, strerror(errno));
        goto out;
    }
    c1m_stats_set_state(&w->pub, C1M_ST_LISTENING);
    uint64_t next_tick = c1m_now_ns() + PUBLISH_NS;
    while (!w->stopping && !w->fatal) {
        uint64_t now = c1m_now_ns(), due = next_tick;
        if (w->retry_at && w->retry_at < due)
            due = w->retry_at;
        uint64_t wait_ns = due > now ? due - now : 0;
        struct __kernel_timespec ts = {.tv_sec = (long long)(wait_ns / 1000000000ull),
                                       .tv_nsec = (long long)(wait_ns % 1000000000ull)};
        struct io_uring_cqe *first;
        int r = io_uring_submit_and_wait_timeout(&w->ring, &first, 1, &ts, NULL);
        if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
            fprintf(stderr, "c1m-uring: worker %d: io_uring_enter: %s\n", index, strerror(-r));
            goto out;
        }
        /* Every completion is copied off the ring before it is handled: a
         * handler's get_sqe may take the rest off too (EBUSY), and they then
         * stay in order. Bounded: a few rounds, the rest next time. */
        for (int round = 0; round < 16 && (defer_cqes(w) > 0 || w->ndeferred); round++) {
            for (unsigned i = 0; i < w->ndeferred; i++) { /* handle() may append */
                struct io_uring_cqe cqe = w->deferred[i];
                handle(w, &cqe);
            }
            w->ndeferred = 0;
            if (w->buf_returns) {
                io_uring_buf_ring_advance(w->br, w->buf_returns);
                w->buf_returns = 0;
            }
        }
        now = c1m_now_ns();
        if (w->held.n)
            judge_held(w, now);
        if (w->retry_at && now >= w->retry_at) {
            w->retry_at = 0;
            listener_maybe_resume(w);
        }
        if (now >= next_tick) {
            next_tick = now + PUBLISH_NS;
            c1m_stats_publish(&w->pub); /* also refreshes updated_ns: readers see the worker is alive */
        } else if (w->pub.dirty) {
            c1m_stats_publish(&w->pub);
        }
    }
    if (w->fatal)
        goto out;
    c1m_stats_set_state(&w->pub, C1M_ST_STOPPING);
    rc = 0;
out:
    w->stopping = 1;
    if (w->ring_ok) {
        listener_pause(w);
        close_all(w);
    }
    teardown(w);
    c1m_stats_set_state(&w->pub, rc == 0 ? C1M_ST_EXITED : C1M_ST_FAILED);
    free(w->conns);
    free(w->deferred);
    c1m_held_free(&w->held);
    free(w);
    return rc;
}
