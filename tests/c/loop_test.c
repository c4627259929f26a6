/* loop_test.c - unit tests of the event loop (c_server/lib/loop.c) that need
 * no network: socketpairs only. Run by tests/check/c_unit.bats.
 *
 *   loop_test CASE      exit 0 when CASE passes, 1 (with a message) when not
 *
 * CHECK, not assert(): the normal build is -DNDEBUG.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"

#include "check_exit.h"

#define MAX_FDS 64

/* Three readable socketpairs a, b, c (read ends watched). The first callback
 * that runs for a or b stops watching and closes the other one, whose event is
 * then still pending in the same epoll_wait batch. With `reuse`, it next
 * creates a socketpair, whose first fd takes the closed number, and watches it
 * with a handler that must not run (nothing was written to it). */
struct scene {
    int a[2], b[2], c[2];
    int reuse;
    int closed_fd;       /* the read end closed from a callback, -1 before */
    int reused[2];       /* the socketpair that took its number */
    int calls[MAX_FDS];  /* per fd: callbacks of the original handler */
    int reused_calls;    /* callbacks of the reused fd's handler */
    int reused_handler;
};

static void on_reused(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)loop;
    (void)fd;
    (void)events;
    struct scene *s = ud;
    s->reused_calls++;
}

static void on_readable(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    struct scene *s = ud;
    CHECK(fd >= 0 && fd < MAX_FDS && (events & EPOLLIN));
    s->calls[fd]++;
    if (s->closed_fd >= 0 || (fd != s->a[0] && fd != s->b[0]))
        return;
    int other = fd == s->a[0] ? s->b[0] : s->a[0];
    CHECK(c1m_loop_del(loop, other) == 0);
    CHECK(close(other) == 0);
    s->closed_fd = other;
    if (!s->reuse)
        return;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, s->reused) == 0);
    CHECK(s->reused[0] == other); /* the lowest free number: the one just closed */
    CHECK(c1m_loop_add(loop, s->reused[0], EPOLLIN, s->reused_handler) == 0);
}

static void make_readable_pair(int sv[2])
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    CHECK(sv[1] < MAX_FDS);
    CHECK(write(sv[1], "x", 1) == 1);
}

static int closed_in_batch(int reuse)
{
    struct scene s;
    memset(&s, 0, sizeof(s));
    s.reuse = reuse;
    s.closed_fd = -1;
    s.reused[0] = s.reused[1] = -1;
    c1m_loop *loop = c1m_loop_new(MAX_FDS);
    CHECK(loop);
    int h = c1m_loop_handler(loop, on_readable, &s);
    s.reused_handler = c1m_loop_handler(loop, on_reused, &s);
    CHECK(h >= 0 && s.reused_handler >= 0);
    make_readable_pair(s.a);
    make_readable_pair(s.b);
    make_readable_pair(s.c);
    CHECK(c1m_loop_add(loop, s.a[0], EPOLLIN, h) == 0);
    CHECK(c1m_loop_add(loop, s.b[0], EPOLLIN, h) == 0);
    CHECK(c1m_loop_add(loop, s.c[0], EPOLLIN, h) == 0);

    /* all three are ready before the wait: one batch of three events */
    CHECK(c1m_loop_run_once(loop, 1000) == 3);
    CHECK(s.closed_fd >= 0);
    /* the closed fd's pending event was discarded... */
    CHECK(s.calls[s.a[0]] + s.calls[s.b[0]] == 1);
    /* ...and only its own: the untouched fd still got its event */
    CHECK(s.calls[s.c[0]] == 1);
    if (reuse) {
        /* the new file that took the number never saw the old one's event */
        CHECK(s.reused_calls == 0);
        /* and it is watched normally: data written now is delivered */
        CHECK(write(s.reused[1], "y", 1) == 1);
        CHECK(c1m_loop_run_once(loop, 1000) >= 1);
        CHECK(s.reused_calls == 1);
        CHECK(c1m_loop_del(loop, s.reused[0]) == 0);
        close(s.reused[0]);
        close(s.reused[1]);
    }
    int kept = s.closed_fd == s.a[0] ? s.b[0] : s.a[0];
    CHECK(c1m_loop_del(loop, kept) == 0);
    CHECK(c1m_loop_del(loop, s.c[0]) == 0);
    CHECK(c1m_loop_nwatched(loop) == 0);
    close(kept);
    close(s.a[1]);
    close(s.b[1]);
    close(s.c[0]);
    close(s.c[1]);
    c1m_loop_free(loop);
    return 0;
}

/* A callback registers many handlers, so the table moves (realloc) in the
 * middle of a batch; the rest of the batch must still dispatch correctly
 * (under ASan a stale pointer into the old table is a use-after-free). */
struct grow {
    int calls, registered;
};

static void on_grow_noop(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)loop;
    (void)fd;
    (void)events;
    (void)ud;
}

static void on_grow(c1m_loop *loop, int fd, uint32_t events, void *ud)
{
    (void)fd;
    (void)events;
    struct grow *g = ud;
    g->calls++;
    if (g->registered)
        return;
    for (int i = 0; i < 200; i++)
        CHECK(c1m_loop_handler(loop, on_grow_noop, NULL) >= 0);
    g->registered = 1;
}

static int handlers_grow(void)
{
    struct grow g = {0, 0};
    c1m_loop *loop = c1m_loop_new(MAX_FDS);
    CHECK(loop);
    int h = c1m_loop_handler(loop, on_grow, &g);
    CHECK(h >= 0);
    int a[2], b[2];
    make_readable_pair(a);
    make_readable_pair(b);
    CHECK(c1m_loop_add(loop, a[0], EPOLLIN, h) == 0);
    CHECK(c1m_loop_add(loop, b[0], EPOLLIN, h) == 0);
    CHECK(c1m_loop_run_once(loop, 1000) == 2);
    CHECK(g.registered && g.calls == 2);
    for (int i = 0; i < 2; i++) {
        int *p = i ? b : a;
        CHECK(c1m_loop_del(loop, p[0]) == 0);
        close(p[0]);
        close(p[1]);
    }
    c1m_loop_free(loop);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: loop_test closed-in-batch|reused-in-batch|handlers-grow|asserts\n");
        return 2;
    }
    if (strcmp(argv[1], "closed-in-batch") == 0)
        return closed_in_batch(0);
    if (strcmp(argv[1], "reused-in-batch") == 0)
        return closed_in_batch(1);
    if (strcmp(argv[1], "handlers-grow") == 0)
        return handlers_grow();
    if (strcmp(argv[1], "asserts") == 0) {
        /* how the library was built (the same flags compiled this file) */
#ifdef NDEBUG
        puts("asserts off");
#else
        puts("asserts on");
#endif
        return 0;
    }
    fprintf(stderr, "loop_test: unknown case %s\n", argv[1]);
    return 2;
}
