/* report.h - aggregate the workers' records; progress line, summary, JSON. */
#ifndef C1M_CLIENT_REPORT_H
#define C1M_CLIENT_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "histogram.h"
#include "push_report.h"
#include "shared.h"

struct c1m_counts {
    uint64_t started, established, failed, inflight, open, closed_by_peer;
    uint64_t pings, pongs, lost;
    uint64_t last_est_ns;   /* latest establishment, offset from start */
    int ramp_done;          /* workers done with their ramp */
    uint64_t reconnects, reconnect_attempts, reconnect_failures, reconnect_waiting;
};

struct c1m_summary {
    long target;
    int workers;
    int heartbeat;          /* heartbeats were configured and the hold ran */
    struct c1m_counts c;
    uint64_t fail_errno[C1M_NERRNO];
    struct c1m_hist connect_us, pong_us;
    double elapsed_s, cpu_user_s, cpu_sys_s;
    const char *stopped_reason; /* NULL or "min-available", "signal", "worker-died" */
    double stall;               /* --stall (set before collecting) */
    struct c1m_push_summary push; /* server push and --stall (push_report.h) */
    int reconnect;          /* --reconnect (enum c1m_reconnect) and its backoff */
    long backoff_base_ms, backoff_cap_ms;
    uint64_t first_close_ns, last_reconnect_ns; /* offset + 1 (earliest, latest); 0 = none */
    uint64_t reconnect_fail_errno[C1M_NERRNO];
    struct c1m_hist backoff_us;
};

/* Sum the polled counters of n worker records (safe while workers run). */
void c1m_counts_collect(struct c1m_counts *c, const struct c1m_shared *sh, int n);
/* Everything, histograms included: call after the workers exited. */
void c1m_summary_collect(struct c1m_summary *s, const struct c1m_shared *sh, int n);

void c1m_report_text(FILE *f, const struct c1m_summary *s);
/* 0, or -1 with errno if writing failed. */
int c1m_report_json(FILE *f, const struct c1m_summary *s);

#endif
