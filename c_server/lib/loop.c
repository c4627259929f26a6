/* loop.c - see loop.h. Modelled on redis ae.c/ae_epoll.c and picoev.
 *
 * Invariants are checked with assert() (libuv uv__io_poll style): the normal
 * build is -DNDEBUG, the SANITIZE=1 build keeps them. */
#include "loop.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define EVENT_BATCH 1024
#define MAX_SIGNALS 65

struct fd_slot {            /* 8 bytes per possible fd */
    uint32_t events;        /* 0 = not watched */
    int32_t handler;
};

struct handler {
    c1m_io_fn *fn;
    void *ud;
};

struct timer {
    uint64_t deadline_ns;
    uint64_t id;
    c1m_timer_fn *fn;
    void *ud;
};

struct sig_entry {
    c1m_signal_fn *fn;
    void *ud;
};

struct c1m_loop {
    int epfd;
    int max_fds;
    int nwatched;
    int stop;
    struct fd_slot *slots;              /* max_fds entries */
    struct handler *handlers;           /* grows in c1m_loop_handler */
    int nhandlers, cap_handlers;
    c1m_wait_fn *before_wait, *after_wait;
    void *wait_ud;
    struct timer *heap;                 /* min-heap on deadline */
    int ntimers, cap_timers;
    uint64_t next_timer_id;
    int sigfd;                          /* -1 until a signal is registered */
    int sig_handler;
    sigset_t sigmask;
    struct sig_entry sigs[MAX_SIGNALS];
    /* The batch being dispatched: events[next..nevents) are still to run.
     * nevents is 0 outside c1m_loop_run_once's dispatch. */
    int next, nevents;
    struct epoll_event events[EVENT_BATCH];
};

uint64_t c1m_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

c1m_loop *c1m_loop_new(int max_fds)
{
    if (max_fds <= 0) {
        errno = EINVAL;
        return NULL;
    }
    c1m_loop *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    /* calloc: pages of the table are only backed once an fd that high is used */
    l->slots = calloc((size_t)max_fds, sizeof(*l->slots));
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!l->slots || l->epfd < 0) {
        int e = errno;
        free(l->slots);
        if (l->epfd >= 0)
            close(l->epfd);
        free(l);
        errno = e;
        return NULL;
    }
    l->max_fds = max_fds;
    l->sigfd = -1;
    l->sig_handler = -1;
    l->next_timer_id = 1;
    sigemptyset(&l->sigmask);
    return l;
}

/* Discard the instances of the signals in `set` that arrived while blocked
 * and were not read from the signalfd yet: unblocking would deliver them
 * with their default action (death, for most). asyncio likewise ignores a
 * signal whose handler was removed before it ran. */
static void discard_pending(const sigset_t *set)
{
    const struct timespec zero = {0, 0};
    int r;
    do
        r = sigtimedwait(set, NULL, &zero);
    while (r > 0 || (r < 0 && errno == EINTR));
}

void c1m_loop_free(c1m_loop *l)
{
    if (!l)
        return;
    if (l->sigfd >= 0) {
        discard_pending(&l->sigmask);
        sigprocmask(SIG_UNBLOCK, &l->sigmask, NULL);
        close(l->sigfd);
    }
    close(l->epfd);
    free(l->handlers);
    free(l->heap);
    free(l->slots);
    free(l);
}

int c1m_loop_max_fds(const c1m_loop *l) { return l->max_fds; }
int c1m_loop_nwatched(const c1m_loop *l) { return l->nwatched; }
int c1m_loop_ntimers(const c1m_loop *l) { return l->ntimers; }
void c1m_loop_stop(c1m_loop *l) { l->stop = 1; }
int c1m_loop_stopping(const c1m_loop *l) { return l->stop; }

int c1m_loop_handler(c1m_loop *l, c1m_io_fn *fn, void *ud)
{
    if (!fn) {
        errno = EINVAL;
        return -1;
    }
    int id = 0;
    while (id < l->nhandlers && l->handlers[id].fn) /* reuse a released slot */
        id++;
    if (id == l->cap_handlers) {
        /* may move the table: a callback can register a handler (open a
         * listener), so run_once never keeps a pointer into it across a call */
        int cap = l->cap_handlers ? l->cap_handlers * 2 : 16;
        struct handler *h = realloc(l->handlers, (size_t)cap * sizeof(*h));
        if (!h) {
            errno = ENOMEM;
            return -1;
        }
        l->handlers = h;
        l->cap_handlers = cap;
    }
    l->handlers[id].fn = fn;
    l->handlers[id].ud = ud;
    if (id == l->nhandlers)
        l->nhandlers++;
    return id;
}

void c1m_loop_handler_release(c1m_loop *l, int id)
{
    if (id >= 0 && id < l->nhandlers) {
        l->handlers[id].fn = NULL;
        l->handlers[id].ud = NULL;
    }
}

static int fd_ok(const c1m_loop *l, int fd)
{
    if (fd < 0 || fd >= l->max_fds) {
        errno = EBADF;
        return 0;
    }
    return 1;
}

int c1m_loop_add(c1m_loop *l, int fd, uint32_t events, int handler)
{
    if (!fd_ok(l, fd))
        return -1;
    if (handler < 0 || handler >= l->nhandlers || !l->handlers[handler].fn || events == 0 ||
        l->slots[fd].events) {
        errno = l->slots[fd].events ? EEXIST : EINVAL;
        return -1;
    }
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -1;
    l->slots[fd].events = events;
    l->slots[fd].handler = handler;
    l->nwatched++;
    assert(l->nwatched <= l->max_fds);
    return 0;
}

int c1m_loop_mod(c1m_loop *l, int fd, uint32_t events)
{
    if (!fd_ok(l, fd))
        return -1;
    if (!l->slots[fd].events || events == 0) {
        errno = l->slots[fd].events ? EINVAL : ENOENT;
        return -1;
    }
    if (l->slots[fd].events == events)
        return 0;
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        return -1;
    l->slots[fd].events = events;
    return 0;
}

/* fd stops being watched while a batch is dispatched: drop its events still
 * waiting in the batch (libuv uv__platform_invalidate_fd). The caller is about
 * to close fd, and a callback later in the batch may accept a connection that
 * reuses the number: that new fd must not receive the old one's events. */
static void invalidate_pending(c1m_loop *l, int fd)
{
    for (int i = l->next; i < l->nevents; i++)
        if (l->events[i].data.fd == fd)
            l->events[i].data.fd = -1;
}

int c1m_loop_del(c1m_loop *l, int fd)
{
    if (!fd_ok(l, fd))
        return -1;
    if (!l->slots[fd].events) {
        errno = ENOENT;
        return -1;
    }
    assert(l->nwatched > 0);
    l->slots[fd].events = 0;
    l->nwatched--;
    invalidate_pending(l, fd);
    /* If fd was already closed the kernel dropped it from the set: not an error. */
    if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 && errno != EBADF && errno != ENOENT)
        return -1;
    return 0;
}

uint32_t c1m_loop_events(const c1m_loop *l, int fd)
{
    return (fd >= 0 && fd < l->max_fds) ? l->slots[fd].events : 0;
}

/* ---- timers: binary min-heap ------------------------------------------ */

static void heap_swap(struct timer *h, int a, int b)
{
    struct timer t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static void heap_up(struct timer *h, int i)
{
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h[p].deadline_ns <= h[i].deadline_ns)
            break;
        heap_swap(h, p, i);
        i = p;
    }
}

static void heap_down(struct timer *h, int n, int i)
{
    for (;;) {
        int m = i, a = 2 * i + 1, b = a + 1;
        if (a < n && h[a].deadline_ns < h[m].deadline_ns)
            m = a;
        if (b < n && h[b].deadline_ns < h[m].deadline_ns)
            m = b;
        if (m == i)
            return;
        heap_swap(h, m, i);
        i = m;
    }
}

static void heap_remove(c1m_loop *l, int i)
{
    assert(i >= 0 && i < l->ntimers);
    l->ntimers--;
    if (i == l->ntimers)
        return;
    l->heap[i] = l->heap[l->ntimers];
    heap_up(l->heap, i);
    heap_down(l->heap, l->ntimers, i);
}

uint64_t c1m_loop_timer(c1m_loop *l, double ms, c1m_timer_fn *fn, void *ud)
{
    if (!fn || !(ms >= 0) || ms > 1e12) {   /* !(ms >= 0) also rejects NaN */
        errno = EINVAL;
        return 0;
    }
    if (l->ntimers == l->cap_timers) {
        int cap = l->cap_timers ? l->cap_timers * 2 : 16;
        struct timer *h = realloc(l->heap, (size_t)cap * sizeof(*h));
        if (!h) {
            errno = ENOMEM;
            return 0;
        }
        l->heap = h;
        l->cap_timers = cap;
    }
    assert(l->ntimers < l->cap_timers);
    struct timer *t = &l->heap[l->ntimers];
    t->deadline_ns = c1m_now_ns() + (uint64_t)(ms * 1e6);
    t->id = l->next_timer_id++;
    t->fn = fn;
    t->ud = ud;
    uint64_t id = t->id; /* heap_up may move the entry */
    heap_up(l->heap, l->ntimers++);
    return id;
}

int c1m_loop_timer_cancel(c1m_loop *l, uint64_t id)
{
    /* Linear scan: timers are few (periodic ticks, Python call_later). */
    for (int i = 0; i < l->ntimers; i++) {
        if (l->heap[i].id == id) {
            heap_remove(l, i);
            return 1;
        }
    }
    return 0;
}

static int next_timeout_ms(const c1m_loop *l, int timeout_ms)
{
    if (l->ntimers == 0)
        return timeout_ms;
    uint64_t now = c1m_now_ns(), dl = l->heap[0].deadline_ns;
    int64_t ms = dl <= now ? 0 : (int64_t)((dl - now + 999999) / 1000000);
    if (timeout_ms >= 0 && ms > timeout_ms)
        ms = timeout_ms;
    return ms > 1000000 ? 1000000 : (int)ms;
}

static void run_timers(c1m_loop *l)
{
    uint64_t now = c1m_now_ns();
    /* Only timers due at entry run: one that re-arms itself with 0 ms runs in
     * the next iteration, so I/O is never starved. */
    uint64_t max_id = l->next_timer_id;
    while (l->ntimers > 0 && l->heap[0].deadline_ns <= now && l->heap[0].id < max_id && !l->stop) {
        struct timer t = l->heap[0];
        heap_remove(l, 0);
        t.fn(l, t.id, t.ud);
    }
}

/* ---- signals via signalfd ---------------------------------------------- */

static void on_signalfd(c1m_loop *l, int fd, uint32_t events, void *ud)
{
    (void)events;
    (void)ud;
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(fd, &si, sizeof(si));
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(si))
            return; /* EAGAIN: drained */
        int s = (int)si.ssi_signo;
        if (s > 0 && s < MAX_SIGNALS && l->sigs[s].fn)
            l->sigs[s].fn(l, s, l->sigs[s].ud);
    }
}

int c1m_loop_signal(c1m_loop *l, int signo, c1m_signal_fn *fn, void *ud)
{
    if (signo <= 0 || signo >= MAX_SIGNALS || signo == SIGKILL || signo == SIGSTOP) {
        errno = EINVAL;
        return -1;
    }
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, signo);
    if (!fn) {
        if (sigismember(&l->sigmask, signo) == 1)
            discard_pending(&one);
        l->sigs[signo].fn = NULL;
        sigdelset(&l->sigmask, signo);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        if (l->sigfd >= 0 && signalfd(l->sigfd, &l->sigmask, SFD_NONBLOCK | SFD_CLOEXEC) < 0)
            return -1;
        return 0;
    }
    sigset_t next = l->sigmask;
    sigaddset(&next, signo);
    int fd = signalfd(l->sigfd, &next, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (l->sigfd < 0) {
        if (l->sig_handler < 0)
            l->sig_handler = c1m_loop_handler(l, on_signalfd, NULL);
        if (l->sig_handler < 0 || c1m_loop_add(l, fd, EPOLLIN, l->sig_handler) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        l->sigfd = fd;
    }
    sigprocmask(SIG_BLOCK, &one, NULL);
    l->sigmask = next;
    l->sigs[signo].fn = fn;
    l->sigs[signo].ud = ud;
    return 0;
}

/* ---- running ----------------------------------------------------------- */

void c1m_loop_set_wait_hooks(c1m_loop *l, c1m_wait_fn *before, c1m_wait_fn *after, void *ud)
{
    l->before_wait = before;
    l->after_wait = after;
    l->wait_ud = ud;
}

int c1m_loop_run_once(c1m_loop *l, int timeout_ms)
{
    assert(timeout_ms >= -1);
    assert(l->nevents == 0); /* not re-entered from a callback */
    assert(l->nwatched >= 0 && l->nwatched <= l->max_fds);
    int wait_ms = next_timeout_ms(l, timeout_ms);
    if (l->before_wait)
        l->before_wait(l, wait_ms, l->wait_ud);
    int n = epoll_wait(l->epfd, l->events, EVENT_BATCH, wait_ms);
    if (l->after_wait) {
        int e = errno;
        l->after_wait(l, wait_ms, l->wait_ud);
        errno = e;
    }
    if (n < 0) {
        if (errno == EINTR)
            n = 0;
        else
            return -1;
    }
    assert(n <= EVENT_BATCH);
    l->nevents = n;
    for (l->next = 0; l->next < n && !l->stop;) {
        const struct epoll_event *e = &l->events[l->next++];
        int fd = e->data.fd;
        /* -1: an earlier callback of this batch stopped watching fd (see
         * invalidate_pending), so the event belongs to a closed file. */
        if (fd < 0)
            continue;
        assert(fd < l->max_fds);
        /* Dispatch only the events fd still asks for (plus errors): an
         * earlier callback may have changed its mask. */
        uint32_t want = l->slots[fd].events;
        if (!want) /* only if a caller broke the del-before-close rule */
            continue;
        uint32_t ev = e->events & (want | EPOLLHUP | EPOLLERR);
        if (!ev)
            continue;
        int hid = l->slots[fd].handler;
        assert(hid >= 0 && hid < l->nhandlers && l->handlers[hid].fn);
        struct handler *h = &l->handlers[hid];
        h->fn(l, fd, ev, h->ud);
    }
    l->next = l->nevents = 0;
    run_timers(l);
    return n;
}

int c1m_loop_run(c1m_loop *l)
{
    l->stop = 0;
    while (!l->stop) {
        if (c1m_loop_run_once(l, -1) < 0)
            return -1;
    }
    return 0;
}
