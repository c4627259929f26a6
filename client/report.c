/* report.c - see report.h. */
#include "report.h"

#include <errno.h>
#include <string.h>

#include "net.h"
#include "reconnect.h"

static const char *errno_label(int i)
{
    return i == 0 ? "EOTHER" : c1m_errno_name(i);
}

void c1m_counts_collect(struct c1m_counts *c, const struct c1m_shared *sh, int n)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < n; i++) {
        const struct c1m_wstat *w = &sh->w[i];
        c->started += C1M_LOAD(w->started);
        c->established += C1M_LOAD(w->established);
        c->failed += C1M_LOAD(w->failed);
        c->inflight += C1M_LOAD(w->inflight);
        c->open += C1M_LOAD(w->open);
        c->closed_by_peer += C1M_LOAD(w->closed_by_peer);
        c->pings += C1M_LOAD(w->pings);
        c->pongs += C1M_LOAD(w->pongs);
        c->lost += C1M_LOAD(w->lost);
        uint64_t t = C1M_LOAD(w->last_est_ns);
        if (t > c->last_est_ns)
            c->last_est_ns = t;
        c->ramp_done += C1M_LOAD(w->ramp_done_ns) != 0;
        c->reconnects += C1M_LOAD(w->reconnects);
        c->reconnect_attempts += C1M_LOAD(w->reconnect_attempts);
        c->reconnect_failures += C1M_LOAD(w->reconnect_failures);
        c->reconnect_waiting += C1M_LOAD(w->reconnect_waiting);
    }
}

void c1m_summary_collect(struct c1m_summary *s, const struct c1m_shared *sh, int n)
{
    c1m_counts_collect(&s->c, sh, n);
    c1m_push_summary_collect(&s->push, sh, n, s->stall);
    memset(s->fail_errno, 0, sizeof(s->fail_errno));
    memset(&s->connect_us, 0, sizeof(s->connect_us));
    memset(&s->pong_us, 0, sizeof(s->pong_us));
    memset(s->reconnect_fail_errno, 0, sizeof(s->reconnect_fail_errno));
    memset(&s->backoff_us, 0, sizeof(s->backoff_us));
    s->first_close_ns = s->last_reconnect_ns = 0;
    s->c.open = 0;
    for (int i = 0; i < n; i++) {
        const struct c1m_wstat *w = &sh->w[i];
        /* connections open when the stop began; a worker that died before
         * it got there took its connections with it (counted as 0) */
        uint64_t at_stop = C1M_LOAD(w->open_at_stop);
        if (at_stop)
            s->c.open += at_stop - 1;
        for (int e = 0; e < C1M_NERRNO; e++) {
            s->fail_errno[e] += C1M_LOAD(w->fail_errno[e]);
            s->reconnect_fail_errno[e] += C1M_LOAD(w->reconnect_fail_errno[e]);
        }
        c1m_hist_merge(&s->connect_us, &w->connect_us);
        c1m_hist_merge(&s->pong_us, &w->pong_us);
        c1m_hist_merge(&s->backoff_us, &w->backoff_us);
        uint64_t first = C1M_LOAD(w->first_close_ns), last = C1M_LOAD(w->last_reconnect_ns);
        if (first && (!s->first_close_ns || first < s->first_close_ns))
            s->first_close_ns = first;
        if (last > s->last_reconnect_ns)
            s->last_reconnect_ns = last;
    }
}

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

static void text_latency(FILE *f, const char *label, const struct c1m_hist *h)
{
    if (h->count == 0) {
        fprintf(f, "  %-22s -\n", label);
        return;
    }
    fprintf(f, "  %-22s p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (%llu samples)\n", label,
            ms(c1m_hist_percentile(h, 50)), ms(c1m_hist_percentile(h, 90)),
            ms(c1m_hist_percentile(h, 99)), ms(h->max), (unsigned long long)h->count);
}

/* " ENAME count, ENAME count" or " none" */
static void text_errnos(FILE *f, const uint64_t *counts)
{
    int any = 0;
    for (int e = 0; e < C1M_NERRNO; e++) {
        if (!counts[e])
            continue;
        fprintf(f, "%s %s %llu", any ? "," : "", errno_label(e), (unsigned long long)counts[e]);
        any = 1;
    }
    if (!any)
        fputs(" none", f);
}

void c1m_report_text(FILE *f, const struct c1m_summary *s)
{
    const struct c1m_counts *c = &s->c;
    fprintf(f, "c1m-client: %llu/%ld established, %llu failed, %d worker%s\n",
            (unsigned long long)c->established, s->target, (unsigned long long)c->failed,
            s->workers, s->workers == 1 ? "" : "s");
    if (c->established)
        fprintf(f, "  %-22s %.3f s\n", "time to established", (double)c->last_est_ns / 1e9);
    else
        fprintf(f, "  %-22s -\n", "time to established");
    text_latency(f, "connect latency ms", &s->connect_us);
    fprintf(f, "  %-22s", "failures");
    text_errnos(f, s->fail_errno);
    fputc('\n', f);
    uint64_t missing = (uint64_t)s->target - c->established - c->failed;
    if (c->established + c->failed < (uint64_t)s->target)
        fprintf(f, "  %-22s %llu\n", "not completed", (unsigned long long)missing);
    fprintf(f, "  %-22s %llu\n", "closed by peer", (unsigned long long)c->closed_by_peer);
    fprintf(f, "  %-22s %llu\n", "open at stop", (unsigned long long)c->open);
    if (s->reconnect != C1M_RECONNECT_OFF) {
        fprintf(f, "  %-22s %s: %llu reconnected, %llu attempts, %llu waiting at stop\n",
                "reconnect", c1m_reconnect_name(s->reconnect), (unsigned long long)c->reconnects,
                (unsigned long long)c->reconnect_attempts, (unsigned long long)c->reconnect_waiting);
        fprintf(f, "  %-22s %llu:", "reconnect failures", (unsigned long long)c->reconnect_failures);
        text_errnos(f, s->reconnect_fail_errno);
        fputc('\n', f);
        text_latency(f, "backoff delay ms", &s->backoff_us);
    }
    if (s->heartbeat) {
        fprintf(f, "  %-22s sent %llu  pongs %llu  lost %llu\n", "heartbeat",
                (unsigned long long)c->pings, (unsigned long long)c->pongs,
                (unsigned long long)c->lost);
        text_latency(f, "pong latency ms", &s->pong_us);
    }
    c1m_push_report_text(f, &s->push);
    fprintf(f, "  %-22s %.3f s\n", "elapsed", s->elapsed_s);
    fprintf(f, "  %-22s user %.3f s  sys %.3f s\n", "worker cpu", s->cpu_user_s, s->cpu_sys_s);
    if (s->stopped_reason)
        fprintf(f, "  %-22s %s\n", "stopped", s->stopped_reason);
}

static void json_latency(FILE *f, const struct c1m_hist *h)
{
    if (h->count == 0) {
        fputs("{\"p50\": null, \"p90\": null, \"p99\": null, \"max\": null}", f);
        return;
    }
    fprintf(f, "{\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}",
            ms(c1m_hist_percentile(h, 50)), ms(c1m_hist_percentile(h, 90)),
            ms(c1m_hist_percentile(h, 99)), ms(h->max));
}

/* {"ENAME": count, ...} */
static void json_errnos(FILE *f, const uint64_t *counts)
{
    int any = 0;
    fputc('{', f);
    for (int e = 0; e < C1M_NERRNO; e++) {
        if (!counts[e])
            continue;
        fprintf(f, "%s\"%s\": %llu", any ? ", " : "", errno_label(e),
                (unsigned long long)counts[e]);
        any = 1;
    }
    fputc('}', f);
}

/* seconds since the client's start of an offset + 1 (0 = none: null) */
static void json_offset_s(FILE *f, uint64_t off_plus_1)
{
    if (off_plus_1)
        fprintf(f, "%.6f", (double)(off_plus_1 - 1) / 1e9);
    else
        fputs("null", f);
}

int c1m_report_json(FILE *f, const struct c1m_summary *s)
{
    const struct c1m_counts *c = &s->c;
    fprintf(f, "{\n  \"target\": %ld,\n  \"established\": %llu,\n  \"failed\": %llu,\n",
            s->target, (unsigned long long)c->established, (unsigned long long)c->failed);
    fputs("  \"failures\": ", f);
    json_errnos(f, s->fail_errno);
    fprintf(f, ",\n  \"workers\": %d,\n", s->workers);
    if (c->established)
        fprintf(f, "  \"time_to_established_s\": %.6f,\n", (double)c->last_est_ns / 1e9);
    else
        fputs("  \"time_to_established_s\": null,\n", f);
    fprintf(f, "  \"elapsed_s\": %.6f,\n  \"connect_latency_ms\": ", s->elapsed_s);
    json_latency(f, &s->connect_us);
    fprintf(f, ",\n  \"heartbeat\": {\"sent\": %llu, \"pongs\": %llu, \"lost\": %llu, "
               "\"latency_ms\": ",
            (unsigned long long)c->pings, (unsigned long long)c->pongs,
            (unsigned long long)c->lost);
    json_latency(f, &s->pong_us);
    fprintf(f, "},\n  \"closed_by_peer\": %llu,\n  \"open_at_end\": %llu,\n",
            (unsigned long long)c->closed_by_peer, (unsigned long long)c->open);
    c1m_push_report_json(f, &s->push);
    fprintf(f, "  \"reconnect\": \"%s\",\n  \"backoff_base_ms\": %ld,\n  \"backoff_cap_ms\": %ld,\n",
            c1m_reconnect_name(s->reconnect), s->backoff_base_ms, s->backoff_cap_ms);
    fprintf(f, "  \"reconnects\": %llu,\n  \"reconnect_attempts\": %llu,\n"
               "  \"reconnect_failures\": %llu,\n  \"reconnect_failures_by_errno\": ",
            (unsigned long long)c->reconnects, (unsigned long long)c->reconnect_attempts,
            (unsigned long long)c->reconnect_failures);
    json_errnos(f, s->reconnect_fail_errno);
    fprintf(f, ",\n  \"reconnect_waiting\": %llu,\n  \"first_close_s\": ",
            (unsigned long long)c->reconnect_waiting);
    json_offset_s(f, s->first_close_ns);
    fputs(",\n  \"last_reconnect_s\": ", f);
    json_offset_s(f, s->last_reconnect_ns);
    fputs(",\n  \"backoff_delay_ms\": ", f);
    json_latency(f, &s->backoff_us);
    /* the histograms themselves: several clients' summaries merge exactly */
    fputs(",\n  \"histograms\": {\"connect_us\": ", f);
    c1m_hist_json(f, &s->connect_us);
    fputs(", \"pong_us\": ", f);
    c1m_hist_json(f, &s->pong_us);
    fputs(", \"push_latency_us\": ", f);
    c1m_hist_json(f, &s->push.push.latency_us);
    fputs(", \"backoff_us\": ", f);
    c1m_hist_json(f, &s->backoff_us);
    fputs("}", f);
    fprintf(f, ",\n  \"cpu_user_s\": %.3f,\n  \"cpu_sys_s\": %.3f,\n", s->cpu_user_s, s->cpu_sys_s);
    if (s->stopped_reason)
        fprintf(f, "  \"stopped_reason\": \"%s\"\n}\n", s->stopped_reason);
    else
        fputs("  \"stopped_reason\": null\n}\n", f);
    if (fflush(f) == EOF || ferror(f)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}
