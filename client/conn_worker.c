/* conn_worker.c - see conn_worker.h.
 *
 * Per connection: 8 bytes in an fd-indexed array (state, start or ping time as
 * a wrapping uint32 microsecond offset, pong line matcher). Connect attempts
 * are also logged in start order (fd + start time), which makes the connect
 * timeout a look at the oldest pending attempt instead of a scan or a timer
 * per connection. Nothing allocates after start-up.
 *
 * --reconnect (reconnect.h): a connection the peer closes during the hold
 * queues its slot in a fixed-size min-heap on the due time; the loop starts
 * the due ones. A slot holds at most one fd at a time and a new socket takes
 * the lowest free fd, so reconnects reuse fds below the ramp's highest: the
 * heartbeat's fd range covers them. */
#include "conn_worker.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"
#include "net.h"
#include "reconnect.h"
#include "srcaddr.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define OPEN_BATCH 256      /* connects started per loop iteration */
#define IDLE_WAIT_MS 50     /* longest epoll wait: how fast control flags are seen */
#define BACKOFF_MS 100      /* after EMFILE/ENFILE/ENOBUFS/ENOMEM on socket() */
#define HB_TICK_MS 10
#define RECONNECT_SCAN_MS 100 /* how often reconnects in progress are checked for timeout */

enum { CS_FREE = 0, CS_CONNECTING, CS_OPEN };
enum { RX_OTHER = 5 };      /* matcher: 0..4 = bytes of "pong" seen, 5 = another line */

struct conn {
    uint32_t t_us;          /* connect start, then last ping sent */
    uint8_t state;
    uint8_t rx;
    uint8_t ping_out;       /* a ping waits for its pong */
    uint8_t retry;          /* a reconnect: its attempt + 1 (0: a ramp connect); set at each start */
};

struct attempt {
    int fd;
    uint32_t t_us;
};

struct worker {
    const struct c1m_opts *o;
    struct c1m_ctl *ctl;
    struct c1m_wstat *st;
    c1m_loop *loop;
    int handler;
    struct conn *conns;
    int max_fds;
    int maxfd_seen;
    struct attempt *att;    /* share entries, in start order */
    long share, started, head;
    long inflight, open;
    struct c1m_srcpick src;
    double rate;            /* per worker, 0 = unlimited */
    uint64_t t0;            /* ramp start (ns) */
    uint64_t backoff_until;
    uint32_t timeout_us;
    int quit;
    int ramp_done;
    int hb_started;
    uint64_t hb_start, hb_cursor, hb_period_ns;
    int hb_span;
    struct c1m_push_conn *push; /* per fd: server push receive state, --stall mark (push_rx.h) */
    int stall_done;
    struct c1m_rq rq;       /* --reconnect: slots waiting for their next connect */
    uint64_t rng;           /* the backoff's jitter */
    uint64_t base_us, cap_us, scan_at;
    unsigned port_turn;     /* --port LO-HI: the next connect's port, mod the count */
};

long c1m_worker_share(long total, int n, int i)
{
    return total / n + (i < total % n);
}

long c1m_worker_offset(long total, int n, int i)
{
    long r = total % n;
    return (long)i * (total / n) + (i < r ? i : r);
}

static uint32_t now_us(const struct worker *w, uint64_t now_ns)
{
    return (uint32_t)((now_ns - w->ctl->start_ns) / 1000);
}

/* Microseconds since the client's start, 64-bit: the reconnect queue's clock. */
static uint64_t now_us64(const struct worker *w, uint64_t now_ns)
{
    return (now_ns - w->ctl->start_ns) / 1000;
}

/* Slots not connected yet: queued, or connecting (after the ramp every connect
 * in progress is a reconnect). */
static void set_waiting(struct worker *w)
{
    C1M_STORE(w->st->reconnect_waiting, (uint64_t)(w->rq.n + w->inflight));
}

/* Queue a slot for its next connect: at once ("now") or after the backoff
 * delay of its attempt. */
static void queue_slot(struct worker *w, unsigned attempt, uint64_t now)
{
    uint64_t delay = 0;
    if (w->o->reconnect == C1M_RECONNECT_BACKOFF)
        delay = c1m_backoff_us(&w->rng, attempt, w->base_us, w->cap_us);
    c1m_hist_record(&w->st->backoff_us, delay);
    if (c1m_rq_push(&w->rq, now_us64(w, now) + delay, attempt) < 0) {
        /* cannot happen (a slot is queued at most once; the queue holds the
         * share): should it, the slot is given up and counted in the "other"
         * bucket (0), not as an errno the kernel never returned */
        C1M_ADD(w->st->reconnect_fail_errno[0], 1);
        C1M_ADD(w->st->reconnect_failures, 1);
    }
    set_waiting(w);
}

static void reconnect_failed(struct worker *w, int err, unsigned attempt, uint64_t now)
{
    int i = (err > 0 && err < C1M_NERRNO) ? err : 0;
    C1M_ADD(w->st->reconnect_fail_errno[i], 1);
    C1M_ADD(w->st->reconnect_failures, 1);
    queue_slot(w, attempt + 1, now);
}

static void count_failure(struct worker *w, int err)
{
    int i = (err > 0 && err < C1M_NERRNO) ? err : 0;
    C1M_ADD(w->st->fail_errno[i], 1);
    C1M_ADD(w->st->failed, 1);
}

static void drop(struct worker *w, int fd)
{
    if (c1m_loop_events(w->loop, fd))
        c1m_loop_del(w->loop, fd);
    close(fd);
    w->conns[fd].state = CS_FREE;
    w->conns[fd].retry = 0;
}

static void connect_failed(struct worker *w, int fd, int err)
{
    unsigned retry = w->conns[fd].retry;
    if (w->conns[fd].state == CS_CONNECTING) {
        w->inflight--;
        C1M_STORE(w->st->inflight, (uint64_t)w->inflight);
    }
    drop(w, fd);
    if (retry) {
        reconnect_failed(w, err, retry - 1, c1m_now_ns());
        return;
    }
    count_failure(w, err);
}

static void peer_closed(struct worker *w, int fd)
{
    drop(w, fd);
    w->open--;
    C1M_STORE(w->st->open, (uint64_t)w->open);
    C1M_ADD(w->st->closed_by_peer, 1);
    if (w->o->reconnect != C1M_RECONNECT_OFF && !w->quit &&
        C1M_LOAD(w->ctl->phase) == C1M_PH_HOLD) {
        uint64_t now = c1m_now_ns();
        if (!C1M_LOAD(w->st->first_close_ns))
            C1M_STORE(w->st->first_close_ns, now - w->ctl->start_ns + 1);
        queue_slot(w, 0, now);
    }
}

static void established(struct worker *w, int fd, uint64_t now)
{
    struct conn *c = &w->conns[fd];
    uint32_t t = now_us(w, now);
    if (c->state == CS_CONNECTING) {
        w->inflight--;
        C1M_STORE(w->st->inflight, (uint64_t)w->inflight);
    }
    c->state = CS_OPEN;
    c->rx = 0;
    c->ping_out = 0;
    c1m_push_conn_reset(&w->push[fd]);
    w->open++;
    C1M_STORE(w->st->open, (uint64_t)w->open);
    if (c->retry) {             /* a slot the peer closed is back */
        c->retry = 0;
        C1M_ADD(w->st->reconnects, 1);
        C1M_STORE(w->st->last_reconnect_ns, now - w->ctl->start_ns + 1);
        set_waiting(w);
        return;
    }
    c1m_hist_record(&w->st->connect_us, (uint32_t)(t - c->t_us));
    C1M_ADD(w->st->established, 1);
    C1M_STORE(w->st->last_est_ns, now - w->ctl->start_ns);
}

/* Bytes from the server: count "pong\n" lines answering our ping. */
static void on_data(struct worker *w, int fd, const char *buf, ssize_t n, uint64_t now)
{
    static const char pong[4] = {'p', 'o', 'n', 'g'};
    struct conn *c = &w->conns[fd];
    for (ssize_t i = 0; i < n; i++) {
        if (c->rx == RX_OTHER) { /* the rest of another line (a push: up to 1 KiB) */
            const char *nl = memchr(buf + i, '\n', (size_t)(n - i));
            if (!nl)
                return;
            i = nl - buf;
        }
        char ch = buf[i];
        if (ch == '\n') {
            if (c->rx == 4 && c->ping_out) {
                c->ping_out = 0;
                c1m_hist_record(&w->st->pong_us, (uint32_t)(now_us(w, now) - c->t_us));
                C1M_ADD(w->st->pongs, 1);
            }
            c->rx = 0;
        } else if (c->rx < 4 && ch == pong[c->rx]) {
            c->rx++;
        } else {
            c->rx = RX_OTHER;
        }
    }
}

static void on_readable(struct worker *w, int fd)
{
    char buf[4096];
    uint64_t now = c1m_now_ns();
    uint64_t rt_us = 0, window = C1M_LOAD(w->ctl->push_window_us);
    for (int round = 0; round < 16; round++) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            on_data(w, fd, buf, n, now);
            c1m_push_feed(&w->push[fd], &w->st->push, buf, (size_t)n, &rt_us, window);
            if ((size_t)n < sizeof(buf))
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        peer_closed(w, fd); /* 0 = EOF; ECONNRESET, ETIMEDOUT...: the connection is gone */
        return;
    }
}

static void on_conn(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)loop;
    struct worker *w = ud;
    struct conn *c = &w->conns[fd];
    if (c->state == CS_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (!err && !(events & EPOLLOUT))
            err = (events & (EPOLLHUP | EPOLLERR)) ? ECONNRESET : 0;
        if (!err && !(events & EPOLLOUT))
            return;
        if (err) {
            connect_failed(w, fd, err);
            return;
        }
        established(w, fd, c1m_now_ns());
        if (c1m_loop_mod(w->loop, fd, EPOLLIN | EPOLLRDHUP) < 0)
            peer_closed(w, fd); /* cannot watch it: cannot hold it either */
        return;
    }
    if (c->state == CS_OPEN)
        on_readable(w, fd);
}

/* Start one connect: socket, source address, connect, watch. Returns its fd
 * (CS_CONNECTING, or already handled when it connected at once), -1 with *err
 * when it failed (nothing left open), or -2 with *err when socket() itself
 * failed for lack of resources (stop opening for now). `retry` goes to the
 * connection (0 for a ramp connect). */
static int start_connect(struct worker *w, uint64_t now, unsigned retry, int *err)
{
    const struct c1m_opts *o = w->o;
    int fd = socket(o->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = errno;
        return (*err == EMFILE || *err == ENFILE || *err == ENOBUFS || *err == ENOMEM) ? -2 : -1;
    }
    if (fd >= w->max_fds) {     /* cannot happen below the rlimit; never index past the table */
        close(fd);
        *err = EMFILE;
        return -2;
    }
    if (fd > w->maxfd_seen)
        w->maxfd_seen = fd;
    struct conn *c = &w->conns[fd];
    c->state = CS_FREE;
    c->retry = (uint8_t)retry;
    c->t_us = now_us(w, now);
    if (w->src.n) {
        int one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl(c1m_srcpick_next(&w->src))};
        if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            *err = errno;
            close(fd);
            return -1;
        }
    }
    int rc;
    if (o->port_count > 1) {    /* --port LO-HI: the ports in turn */
        struct sockaddr_storage d = o->dst;
        uint16_t port = htons((uint16_t)(o->port + (int)(w->port_turn++ % (unsigned)o->port_count)));
        if (d.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&d)->sin6_port = port;
        else
            ((struct sockaddr_in *)&d)->sin_port = port;
        rc = connect(fd, (const struct sockaddr *)&d, o->dstlen);
    } else {
        rc = connect(fd, (const struct sockaddr *)&o->dst, o->dstlen);
    }
    /* EINTR on a non-blocking connect: it goes on asynchronously, like EINPROGRESS */
    if (rc < 0 && errno != EINPROGRESS && errno != EINTR) {
        *err = errno;
        close(fd);
        return -1;
    }
    if (rc == 0) {
        established(w, fd, now);
        if (c1m_loop_add(w->loop, fd, EPOLLIN | EPOLLRDHUP, w->handler) < 0)
            peer_closed(w, fd);
        return fd;
    }
    if (c1m_loop_add(w->loop, fd, EPOLLOUT, w->handler) < 0) {
        *err = errno;
        close(fd);
        return -1;
    }
    c->state = CS_CONNECTING;
    w->inflight++;
    C1M_STORE(w->st->inflight, (uint64_t)w->inflight);
    return fd;
}

/* Start one ramp connect. Returns 0, or -1 when socket() itself failed for
 * lack of resources (stop opening for now). */
static int open_one(struct worker *w, uint64_t now)
{
    int err = 0;
    w->att[w->started] = (struct attempt){-1, 0};
    w->started++;
    C1M_STORE(w->st->started, (uint64_t)w->started);
    int fd = start_connect(w, now, 0, &err);
    if (fd < 0) {
        count_failure(w, err);
        if (fd == -2) {
            w->backoff_until = now + BACKOFF_MS * 1000000ull;
            return -1;
        }
        return 0;
    }
    if (w->conns[fd].state == CS_CONNECTING)
        w->att[w->started - 1] = (struct attempt){fd, w->conns[fd].t_us};
    return 0;
}

/* Start the next connect of a queued slot (a failure queues it again).
 * Returns 0, or -1 when socket() lacked resources (stop opening for now). */
static int reopen_one(struct worker *w, unsigned attempt, uint64_t now)
{
    int err = 0;
    C1M_ADD(w->st->reconnect_attempts, 1);
    int fd = start_connect(w, now, attempt + 1, &err);
    if (fd < 0)
        reconnect_failed(w, err, attempt, now);
    set_waiting(w);
    if (fd == -2) {
        w->backoff_until = now + BACKOFF_MS * 1000000ull;
        return -1;
    }
    return 0;
}

/* Start the queued reconnects that are due, within the --inflight cap and a
 * batch per loop iteration. Returns the ms until it should run again, or -1
 * when nothing waits or only an event (a connect finishing) can make room. */
static int reconnect_due(struct worker *w, uint64_t now)
{
    if (w->rq.n == 0 || C1M_LOAD(w->ctl->stop_new))
        return -1;
    if (now < w->backoff_until)
        return (int)((w->backoff_until - now) / 1000000 + 1);
    uint64_t t = now_us64(w, now);
    for (int i = 0; i < OPEN_BATCH; i++) {
        if (w->rq.n == 0 || w->inflight >= w->o->inflight)
            return -1;
        uint64_t due = c1m_rq_next_due(&w->rq);
        if (due > t) /* at most the cap (1 h): fits an int of ms */
            return (int)((due - t) / 1000 + 1);
        if (reopen_one(w, c1m_rq_pop(&w->rq), now) < 0)
            return BACKOFF_MS;
    }
    return 0;
}

/* Fail reconnects older than --connect-timeout. Instead of the ramp's log of
 * attempts (sized for one pass over the share; a slot may retry many times),
 * the fd table - at most the share plus a few fds - is scanned every
 * RECONNECT_SCAN_MS while any connect is in progress. */
static void expire_reconnects(struct worker *w, uint64_t now)
{
    if (w->inflight == 0 || now < w->scan_at)
        return;
    w->scan_at = now + RECONNECT_SCAN_MS * 1000000ull;
    uint32_t t = now_us(w, now);
    for (int fd = 0; fd <= w->maxfd_seen; fd++) {
        const struct conn *c = &w->conns[fd];
        if (c->state == CS_CONNECTING && c->retry && (uint32_t)(t - c->t_us) >= w->timeout_us)
            connect_failed(w, fd, ETIMEDOUT);
    }
}

/* Fail connects older than --connect-timeout: attempts are in start order, so
 * only the oldest still-pending ones are looked at. */
static void expire_connects(struct worker *w, uint64_t now)
{
    uint32_t t = now_us(w, now);
    while (w->head < w->started) {
        struct attempt a = w->att[w->head];
        struct conn *c = a.fd >= 0 ? &w->conns[a.fd] : NULL;
        if (c && c->state == CS_CONNECTING && c->t_us == a.t_us) {
            if ((uint32_t)(t - a.t_us) < w->timeout_us)
                return;
            connect_failed(w, a.fd, ETIMEDOUT);
        }
        w->head++;
    }
}

/* Open what the caps and the pacing allow. Returns the ms until it should run
 * again, or -1 when only an event (a connect finishing) can make room. */
static int fill(struct worker *w, uint64_t now)
{
    if (w->started >= w->share || C1M_LOAD(w->ctl->stop_new))
        return -1;
    if (now < w->backoff_until)
        return (int)((w->backoff_until - now) / 1000000 + 1);
    long n = w->share - w->started;
    if (n > w->o->inflight - w->inflight)
        n = w->o->inflight - w->inflight;
    int wait = -1;
    if (w->rate > 0) {
        double el = (double)(now - w->t0) / 1e9;
        long allowed = (long)(el * w->rate) + 1 - w->started;
        if (allowed < n) {
            n = allowed;
            double next = (double)w->started / w->rate - el; /* s until the next token */
            wait = next <= 0 ? 0 : (int)(next * 1000) + 1;
        }
    }
    if (n > OPEN_BATCH) {
        n = OPEN_BATCH;
        wait = 0;
    }
    for (long i = 0; i < n; i++)
        if (open_one(w, now) < 0)
            return BACKOFF_MS;
    return wait;
}

static void send_ping(struct worker *w, int fd, uint64_t now)
{
    struct conn *c = &w->conns[fd];
    if (c->ping_out)
        C1M_ADD(w->st->lost, 1);
    ssize_t n;
    do
        n = send(fd, "ping\n", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            peer_closed(w, fd);
        c->ping_out = 0; /* not sent: nothing to wait for */
        return;
    }
    c->ping_out = 1;
    c->t_us = now_us(w, now);
    C1M_ADD(w->st->pings, 1);
}

/* Every HB_TICK_MS: ping the next slice of the fd range, so each connection
 * gets one ping per period and the pings are spread evenly over it. */
static void hb_tick(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)id;
    struct worker *w = ud;
    if (w->quit)
        return;
    uint64_t now = c1m_now_ns();
    uint64_t el = now > w->hb_start ? now - w->hb_start : 0;
    uint64_t target = (uint64_t)((double)el / (double)w->hb_period_ns * w->hb_span);
    if (target - w->hb_cursor > (uint64_t)w->hb_span) /* after a stall: one round at most */
        w->hb_cursor = target - (uint64_t)w->hb_span;
    for (; w->hb_cursor < target; w->hb_cursor++) {
        int fd = (int)(w->hb_cursor % (uint64_t)w->hb_span);
        if (w->conns[fd].state == CS_OPEN && !(w->push[fd].flags & C1M_PUSH_STALLED))
            send_ping(w, fd, now);
    }
    if (!c1m_loop_timer(loop, HB_TICK_MS, hb_tick, w)) {
        fprintf(stderr, "c1m-client: worker: heartbeat timer: %s\n", strerror(errno));
        w->quit = 1;
    }
}

static void on_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)loop;
    (void)signo;
    ((struct worker *)ud)->quit = 1;
}

static void close_all(struct worker *w)
{
    for (int fd = 0; fd <= w->maxfd_seen; fd++)
        if (w->conns[fd].state != CS_FREE)
            drop(w, fd);
}

/* --stall: the fraction of this worker's open connections that stop reading
 * and sending from now on, spread evenly over its fds. They are unwatched
 * (what the server sends piles up in the kernel's queues; the client never
 * looks at them again, not even for a close) and skipped by the heartbeat. */
static void stall(struct worker *w)
{
    w->stall_done = 1;
    long open = 0, i = 0, n = 0;
    for (int fd = 0; fd <= w->maxfd_seen; fd++)
        open += w->conns[fd].state == CS_OPEN;
    long k = (long)(w->o->stall * (double)open + 0.5);
    for (int fd = 0; fd <= w->maxfd_seen && n < k; fd++) {
        if (w->conns[fd].state != CS_OPEN)
            continue;
        /* the i-th open connection where floor(i * k / open) steps up */
        if ((i + 1) * k / open > i * k / open &&
            (!c1m_loop_events(w->loop, fd) || c1m_loop_del(w->loop, fd) == 0)) {
            w->push[fd].flags |= C1M_PUSH_STALLED;
            n++;
        }
        i++;
    }
    C1M_STORE(w->st->stalled, (uint64_t)n);
    C1M_STORE(w->st->stall_at_us, c1m_realtime_us());
}

static int run(struct worker *w)
{
    while (!w->quit) {
        uint64_t phase = C1M_LOAD(w->ctl->phase);
        if (phase == C1M_PH_FINISH)
            break;
        uint64_t now = c1m_now_ns();
        if (phase == C1M_PH_HOLD && w->o->heartbeat > 0 && !w->hb_started) {
            w->hb_started = 1;
            w->hb_start = now;
            w->hb_span = w->maxfd_seen + 1;
            if (!c1m_loop_timer(w->loop, 0, hb_tick, w)) {
                fprintf(stderr, "c1m-client: worker: heartbeat timer: %s\n", strerror(errno));
                return 1;
            }
        }
        if (!w->stall_done && C1M_LOAD(w->ctl->stall_now))
            stall(w);
        expire_connects(w, now);
        int wait = w->ramp_done ? -1 : fill(w, now);
        if (!w->ramp_done && w->inflight == 0 &&
            (w->started >= w->share || C1M_LOAD(w->ctl->stop_new))) {
            w->ramp_done = 1;
            C1M_STORE(w->st->ramp_done_ns, now - w->ctl->start_ns + 1);
        }
        if (w->ramp_done && w->o->reconnect != C1M_RECONNECT_OFF) {
            expire_reconnects(w, now);
            int rw = reconnect_due(w, now);
            if (rw >= 0 && (wait < 0 || rw < wait))
                wait = rw;
        }
        if (wait < 0 || wait > IDLE_WAIT_MS)
            wait = IDLE_WAIT_MS;
        if (c1m_loop_run_once(w->loop, wait) < 0) {
            fprintf(stderr, "c1m-client: worker: epoll_wait: %s\n", strerror(errno));
            return 1;
        }
    }
    return 0;
}

int c1m_conn_worker(int index, void *ud)
{
    const struct c1m_wconf *cf = ud;
    const struct c1m_opts *o = cf->o;
    struct worker w = {.o = o, .ctl = &cf->sh->ctl, .st = &cf->sh->w[index], .maxfd_seen = -1};
    int rc = 1;

    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, SIG_IGN); /* the parent's signals (push_watch.h), should a group get them */
    signal(SIGUSR2, SIG_IGN);
    w.loop = c1m_loop_new(c1m_nofile_limit());
    if (!w.loop || c1m_loop_signal(w.loop, SIGINT, on_signal, &w) < 0 ||
        c1m_loop_signal(w.loop, SIGTERM, on_signal, &w) < 0) {
        fprintf(stderr, "c1m-client: worker %d: event loop: %s\n", index, strerror(errno));
        goto out;
    }
    w.max_fds = c1m_loop_max_fds(w.loop);
    w.handler = c1m_loop_handler(w.loop, on_conn, &w);
    w.share = c1m_worker_share(o->connections, o->workers, index);
    w.conns = calloc((size_t)w.max_fds, sizeof(*w.conns));
    w.push = calloc((size_t)w.max_fds, sizeof(*w.push));
    w.att = calloc((size_t)(w.share > 0 ? w.share : 1), sizeof(*w.att));
    if (w.handler < 0 || !w.conns || !w.push || !w.att ||
        c1m_rq_init(&w.rq, o->reconnect != C1M_RECONNECT_OFF ? w.share : 0) < 0 ||
        c1m_srcpick_init(&w.src, o->src_first, o->src_count, o->connections,
                         c1m_worker_offset(o->connections, o->workers, index), w.share) < 0) {
        fprintf(stderr, "c1m-client: worker %d: out of memory\n", index);
        goto out;
    }
    w.rate = o->rate > 0 ? (double)o->rate / o->workers : 0;
    w.timeout_us = (uint32_t)(o->connect_timeout * 1e6);
    w.hb_period_ns = (uint64_t)(o->heartbeat * 1e9);
    w.base_us = (uint64_t)o->backoff_base_ms * 1000;
    w.cap_us = (uint64_t)o->backoff_cap_ms * 1000;
    w.rng = c1m_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)index;
    w.t0 = c1m_now_ns();
    rc = run(&w);
    C1M_STORE(w.st->open_at_stop, (uint64_t)w.open + 1);
    close_all(&w);
out:
    C1M_STORE(w.st->exited, 1);
    c1m_srcpick_free(&w.src);
    c1m_rq_free(&w.rq);
    free(w.att);
    free(w.conns);
    free(w.push);
    c1m_loop_free(w.loop);
    return rc;
}
