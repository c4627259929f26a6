/* push_report.h - the workers' push and --stall figures summed for the
 * summary: the text lines and the JSON keys (README "c1m-client"). */
#ifndef C1M_CLIENT_PUSH_REPORT_H
#define C1M_CLIENT_PUSH_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "push_rx.h"
#include "shared.h"

struct c1m_push_summary {
    struct c1m_push_stats push; /* summed; times: min of the firsts, max of the lasts */
    uint64_t window_us;         /* the push window's start, 0 = never opened */
    uint64_t stalled;
    uint64_t stall_at_us;       /* the latest worker's stall, 0 = none */
    int stall_asked;            /* --stall above 0 */
};

/* Call after the workers exited (the histograms). */
void c1m_push_summary_collect(struct c1m_push_summary *s, const struct c1m_shared *sh, int n,
                              double stall);
void c1m_push_report_text(FILE *f, const struct c1m_push_summary *s);
/* The keys, each line "  \"key\": value,\n" (the caller closes the object). */
void c1m_push_report_json(FILE *f, const struct c1m_push_summary *s);

#endif
