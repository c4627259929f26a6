/* progress.c - see progress.h. */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

void c1m_progress_init(struct c1m_progress *p, uint64_t start_ns)
{
    p->tty = isatty(STDERR_FILENO);
    p->on_screen = 0;
    p->last_ns = start_ns;
    p->last_est = 0;
}

void c1m_progress_line(struct c1m_progress *p, const struct c1m_counts *c, long target,
                       uint64_t now_ns, double elapsed_s, int holding, double hold_el,
                       double hold_total)
{
    double dt = (double)(now_ns - p->last_ns) / 1e9;
    double rate = dt > 0 ? (double)(c->established - p->last_est) / dt : 0;
    p->last_ns = now_ns;
    p->last_est = c->established;
    char hold[160] = "";
    if (holding) {
        char total[32] = "inf";
        if (hold_total >= 0)
            snprintf(total, sizeof(total), "%gs", hold_total);
        snprintf(hold, sizeof(hold), "  hold %.1f/%s  open %llu  closed %llu", hold_el, total,
                 (unsigned long long)c->open, (unsigned long long)c->closed_by_peer);
        if (c->pings) {
            size_t len = 0;
            while (hold[len])
                len++;
            snprintf(hold + len, sizeof(hold) - len, "  pongs %llu/%llu lost %llu",
                     (unsigned long long)c->pongs, (unsigned long long)c->pings,
                     (unsigned long long)c->lost);
        }
    }
    fprintf(stderr, "%s[%7.1fs] established %llu/%ld  failed %llu  inflight %llu  rate %.0f/s%s%s",
            p->tty ? "\r" : "", elapsed_s, (unsigned long long)c->established, target,
            (unsigned long long)c->failed, (unsigned long long)c->inflight, rate, hold,
            p->tty ? "\033[K" : "\n");
    fflush(stderr);
    p->on_screen = p->tty;
}

void c1m_progress_break(struct c1m_progress *p)
{
    if (p->on_screen) {
        fputc('\n', stderr);
        p->on_screen = 0;
    }
}
