/* push_report.c - see push_report.h. */
#include "push_report.h"

#include <string.h>

static void min_into(uint64_t *dst, uint64_t v)
{
    if (v && (!*dst || v < *dst))
        *dst = v;
}

static void max_into(uint64_t *dst, uint64_t v)
{
    if (v > *dst)
        *dst = v;
}

void c1m_push_summary_collect(struct c1m_push_summary *s, const struct c1m_shared *sh, int n,
                              double stall)
{
    memset(s, 0, sizeof(*s));
    s->window_us = C1M_LOAD(sh->ctl.push_window_us);
    s->stall_asked = stall > 0;
    struct c1m_push_stats *p = &s->push;
    for (int i = 0; i < n; i++) {
        const struct c1m_wstat *w = &sh->w[i];
        const struct c1m_push_stats *q = &w->push;
        p->received += C1M_LOAD(q->received);
        p->missing += C1M_LOAD(q->missing);
        p->bytes += C1M_LOAD(q->bytes);
        p->bad += C1M_LOAD(q->bad);
        p->win_reached += C1M_LOAD(q->win_reached);
        min_into(&p->first_send_us, C1M_LOAD(q->first_send_us));
        max_into(&p->last_rx_us, C1M_LOAD(q->last_rx_us));
        min_into(&p->win_first_send_us, C1M_LOAD(q->win_first_send_us));
        min_into(&p->win_first_rx_us, C1M_LOAD(q->win_first_rx_us));
        max_into(&p->win_last_rx_us, C1M_LOAD(q->win_last_rx_us));
        c1m_hist_merge(&p->latency_us, &q->latency_us);
        s->stalled += C1M_LOAD(w->stalled);
        max_into(&s->stall_at_us, C1M_LOAD(w->stall_at_us));
    }
}

void c1m_push_report_text(FILE *f, const struct c1m_push_summary *s)
{
    const struct c1m_push_stats *p = &s->push;
    if (p->received || p->bad) {
        fprintf(f, "  %-22s received %llu  missing %llu  bytes %llu  bad %llu\n", "push",
                (unsigned long long)p->received, (unsigned long long)p->missing,
                (unsigned long long)p->bytes, (unsigned long long)p->bad);
        const struct c1m_hist *h = &p->latency_us;
        if (h->count)
            fprintf(f, "  %-22s p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", "push latency ms",
                    (double)c1m_hist_percentile(h, 50) / 1e3,
                    (double)c1m_hist_percentile(h, 99) / 1e3,
                    (double)c1m_hist_percentile(h, 99.9) / 1e3, (double)h->max / 1e3);
    }
    if (s->window_us)
        fprintf(f, "  %-22s reached %llu connections, last %.3f ms after the window opened\n",
                "push window", (unsigned long long)p->win_reached,
                p->win_last_rx_us > s->window_us
                    ? (double)(p->win_last_rx_us - s->window_us) / 1e3 : 0.0);
    if (s->stall_asked)
        fprintf(f, "  %-22s %llu\n", "stalled", (unsigned long long)s->stalled);
}

/* A CLOCK_REALTIME microsecond, or null for none. */
static void json_us(FILE *f, const char *key, uint64_t v, const char *end)
{
    if (v)
        fprintf(f, "\"%s\": %llu%s", key, (unsigned long long)v, end);
    else
        fprintf(f, "\"%s\": null%s", key, end);
}

void c1m_push_report_json(FILE *f, const struct c1m_push_summary *s)
{
    const struct c1m_push_stats *p = &s->push;
    const struct c1m_hist *h = &p->latency_us;
    fprintf(f, "  \"push_received\": %llu,\n  \"push_missing\": %llu,\n  \"push_bytes\": %llu,\n"
               "  \"push_bad\": %llu,\n  \"push_latency_us\": ",
            (unsigned long long)p->received, (unsigned long long)p->missing,
            (unsigned long long)p->bytes, (unsigned long long)p->bad);
    if (h->count)
        fprintf(f, "{\"p50\": %llu, \"p90\": %llu, \"p99\": %llu, \"p999\": %llu, \"max\": %llu},\n",
                (unsigned long long)c1m_hist_percentile(h, 50),
                (unsigned long long)c1m_hist_percentile(h, 90),
                (unsigned long long)c1m_hist_percentile(h, 99),
                (unsigned long long)c1m_hist_percentile(h, 99.9), (unsigned long long)h->max);
    else
        fputs("{\"p50\": null, \"p90\": null, \"p99\": null, \"p999\": null, \"max\": null},\n", f);
    fputs("  ", f);
    json_us(f, "push_first_send_us", p->first_send_us, ",\n  ");
    json_us(f, "push_last_rx_us", p->last_rx_us, ",\n  \"push_window\": {");
    json_us(f, "start_us", s->window_us, ", ");
    fprintf(f, "\"reached\": %llu, ", (unsigned long long)p->win_reached);
    json_us(f, "first_send_us", p->win_first_send_us, ", ");
    json_us(f, "first_rx_us", p->win_first_rx_us, ", ");
    json_us(f, "last_rx_us", p->win_last_rx_us, "},\n");
    fprintf(f, "  \"stalled\": %llu,\n  ", (unsigned long long)s->stalled);
    json_us(f, "stall_at_us", s->stall_at_us, ",\n");
}
