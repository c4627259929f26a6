/* push_watch.c - see push_watch.h. */
#include "push_watch.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

#include "push_rx.h"

__attribute__((format(printf, 2, 3)))
static void say(struct c1m_push_watch *pw, const char *fmt, ...)
{
    c1m_progress_break(pw->prog);
    va_list ap;
    va_start(ap, fmt);
    fputs("c1m-client: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

static void on_usr1(c1m_loop *loop, int signo, void *ud)
{
    (void)loop;
    (void)signo;
    struct c1m_push_watch *pw = ud;
    struct c1m_ctl *ctl = &pw->sh->ctl;
    uint64_t open_since = C1M_LOAD(ctl->push_window_us);
    if (open_since) {
        say(pw, "SIGUSR1: the push window is already open (from %llu us): ignored",
            (unsigned long long)open_since);
        return;
    }
    uint64_t t = c1m_realtime_us();
    __atomic_store_n(&ctl->push_window_us, t, __ATOMIC_RELEASE);
    say(pw, "SIGUSR1: push window open from %llu us", (unsigned long long)t);
}

static void start_stall(struct c1m_push_watch *pw)
{
    __atomic_store_n(&pw->sh->ctl.stall_now, 1, __ATOMIC_RELEASE);
}

static void on_usr2(c1m_loop *loop, int signo, void *ud)
{
    (void)loop;
    (void)signo;
    struct c1m_push_watch *pw = ud;
    if (!pw->o->stall_on_signal || pw->o->stall <= 0) {
        say(pw, "SIGUSR2: no --stall-on-signal with a --stall fraction above 0: ignored");
        return;
    }
    if (C1M_LOAD(pw->sh->ctl.stall_now)) {
        say(pw, "SIGUSR2: already stalled: ignored");
        return;
    }
    start_stall(pw);
}

int c1m_push_watch_init(struct c1m_push_watch *pw, c1m_loop *loop, const struct c1m_opts *o,
                        struct c1m_shared *sh, int nworkers, struct c1m_progress *prog)
{
    *pw = (struct c1m_push_watch){.o = o, .sh = sh, .nworkers = nworkers, .prog = prog};
    if (c1m_loop_signal(loop, SIGUSR1, on_usr1, pw) < 0 ||
        c1m_loop_signal(loop, SIGUSR2, on_usr2, pw) < 0)
        return -1;
    return 0;
}

/* Every worker stalled (or is gone): say how many, and when the last did. */
static void check_stall(struct c1m_push_watch *pw)
{
    uint64_t n = 0, at = 0;
    for (int i = 0; i < pw->nworkers; i++) {
        const struct c1m_wstat *w = &pw->sh->w[i];
        uint64_t t = C1M_LOAD(w->stall_at_us);
        if (!t && !C1M_LOAD(w->exited))
            return;
        n += C1M_LOAD(w->stalled);
        if (t > at)
            at = t;
    }
    pw->stall_done = 1;
    say(pw, "stalled %llu connections at %llu us", (unsigned long long)n, (unsigned long long)at);
}

/* Every reading connection got a line sent in the window. */
static void check_window(struct c1m_push_watch *pw)
{
    uint64_t reached = 0, reading = 0, last = 0;
    for (int i = 0; i < pw->nworkers; i++) {
        const struct c1m_wstat *w = &pw->sh->w[i];
        uint64_t r = C1M_LOAD(w->push.win_reached);
        uint64_t open = C1M_LOAD(w->open), stalled = C1M_LOAD(w->stalled);
        reached += r;
        reading += open > stalled ? open - stalled : 0;
        uint64_t t = C1M_LOAD(w->push.win_last_rx_us);
        if (t > last)
            last = t;
    }
    if (reading == 0 || reached < reading)
        return;
    pw->window_done = 1;
    say(pw, "push window reached all %llu reading connections, last at %llu us",
        (unsigned long long)reading, (unsigned long long)last);
}

void c1m_push_watch_tick(struct c1m_push_watch *pw, int phase)
{
    const struct c1m_opts *o = pw->o;
    if (phase >= C1M_PH_FINISH)
        return;
    if (o->stall > 0 && !o->stall_on_signal && phase == C1M_PH_HOLD &&
        !C1M_LOAD(pw->sh->ctl.stall_now))
        start_stall(pw);
    if (!pw->stall_done && C1M_LOAD(pw->sh->ctl.stall_now))
        check_stall(pw);
    if (!pw->window_done && C1M_LOAD(pw->sh->ctl.push_window_us))
        check_window(pw);
}
