/* listener.c - see listener.h. */
#include "listener.h"
#include "net.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define EMFILE_RETRY_MS 100.0

static void on_listen_io(c1m_loop *loop, int fd, uint32_t events, void *ud);

static int at_cap(const struct c1m_listener *l)
{
    return l->cap > 0 && *l->open_count >= l->cap;
}

/* Close the listening socket (connections queued on it migrate to sibling
 * listeners when tcp_migrate_req=1; otherwise the kernel resets them). */
static void pause_listener(struct c1m_listener *l)
{
    if (l->fd < 0)
        return;
    c1m_loop_del(l->loop, l->fd);
    close(l->fd);
    l->fd = -1;
    if (l->on_state)
        l->on_state(l->ud, 1);
}

static int start_listener(struct c1m_listener *l)
{
    int fd = c1m_listen_tcp_opts(l->host, l->port, l->backlog, l->reuse_port, &l->opts);
    if (fd < 0)
        return -1;
    if (c1m_loop_add(l->loop, fd, EPOLLIN, l->handler) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    l->fd = fd;
    return 0;
}

static void try_resume(struct c1m_listener *l)
{
    if (l->stopped || l->fd >= 0 || l->retry_timer || *l->open_count >= l->resume_at)
        return;
    if (start_listener(l) == 0) {
        if (l->on_state)
            l->on_state(l->ud, 0);
        on_listen_io(l->loop, l->fd, EPOLLIN, l); /* drain what is queued */
    }
    /* else: EMFILE and friends: the next close retries */
}

static void on_retry(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)loop;
    (void)id;
    struct c1m_listener *l = ud;
    l->retry_timer = 0;
    try_resume(l);
    if (l->fd < 0 && !l->stopped && *l->open_count < l->resume_at)
        l->retry_timer = c1m_loop_timer(l->loop, EMFILE_RETRY_MS, on_retry, l);
}

static void on_listen_io(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)loop;
    (void)events;
    struct c1m_listener *l = ud;
    while (l->fd == fd) {
        if (at_cap(l)) {
            pause_listener(l);
            return;
        }
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            switch (errno) {
            case EAGAIN:
                return;
            case EINTR:
            case ECONNABORTED: /* peer gave up while queued: next one */
            case EPROTO:
                continue;
            case EMFILE:
            case ENFILE:
            case ENOBUFS:
            case ENOMEM:
                /* Out of fds or memory: stop listening and retry on a timer
                 * (or on the next close) instead of spinning on EPOLLIN. */
                l->accept_errors++;
                pause_listener(l);
                if (!l->retry_timer)
                    l->retry_timer = c1m_loop_timer(l->loop, EMFILE_RETRY_MS, on_retry, l);
                return;
            default:
                l->accept_errors++;
                return;
            }
        }
        if (l->on_accept(l->ud, cfd) < 0)
            return;
    }
}

int c1m_listener_open(struct c1m_listener *l, c1m_loop *loop, const char *host, int port,
                      int backlog, int reuse_port, long cap, long *open_count,
                      c1m_accept_fn *on_accept, c1m_listen_state_fn *on_state, void *ud)
{
    return c1m_listener_open_opts(l, loop, host, port, backlog, reuse_port, NULL, cap,
                                  open_count, on_accept, on_state, ud);
}

int c1m_listener_open_opts(struct c1m_listener *l, c1m_loop *loop, const char *host, int port,
                           int backlog, int reuse_port, const struct c1m_accept_opts *opts,
                           long cap, long *open_count, c1m_accept_fn *on_accept,
                           c1m_listen_state_fn *on_state, void *ud)
{
    memset(l, 0, sizeof(*l));
    if (opts)
        l->opts = *opts;
    if (strlen(host) >= sizeof(l->host)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(l->host, sizeof(l->host), "%s", host);
    l->loop = loop;
    l->port = port;
    l->backlog = backlog;
    l->reuse_port = reuse_port;
    l->fd = -1;
    l->cap = cap;
    l->resume_at = c1m_listener_resume_at(cap);
    l->open_count = open_count;
    l->on_accept = on_accept;
    l->on_state = on_state;
    l->ud = ud;
    l->handler = c1m_loop_handler(loop, on_listen_io, l);
    if (l->handler < 0)
        return -1;
    if (start_listener(l) < 0) {
        int e = errno;
        c1m_loop_handler_release(loop, l->handler);
        l->handler = -1;
        errno = e;
        return -1;
    }
    return 0;
}

long c1m_listener_resume_at(long cap)
{
    long r = cap > 0 ? cap - cap / 10 : 0;
    /* below 10 the 10% margin is 0: re-open one below the cap, but never
     * at 0 (a cap of 1 would then stay closed for good: open < 0 never holds) */
    if (cap > 1 && r >= cap)
        r = cap - 1;
    return r;
}

void c1m_listener_conn_closed(struct c1m_listener *l)
{
    if (l->fd < 0)
        try_resume(l);
}

void c1m_listener_close(struct c1m_listener *l)
{
    l->stopped = 1;
    if (!l->loop) /* never opened */
        return;
    if (l->retry_timer) {
        c1m_loop_timer_cancel(l->loop, l->retry_timer);
        l->retry_timer = 0;
    }
    if (l->fd >= 0) {
        c1m_loop_del(l->loop, l->fd);
        close(l->fd);
        l->fd = -1;
    }
    if (l->handler >= 0) {
        c1m_loop_handler_release(l->loop, l->handler);
        l->handler = -1;
    }
}

int c1m_listener_paused(const struct c1m_listener *l)
{
    return !l->stopped && l->fd < 0;
}
