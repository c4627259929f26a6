/* histogram.h - fixed-size log-linear latency histogram (microseconds).
 *
 * Values below 32 get one bucket each; above, every power of two is split into
 * 32 buckets, so a bucket's width is at most 1/32 (~3%) of its value. Values
 * are clamped to 2^40 us (~12 days). Recording is O(1) and never allocates, so a
 * histogram can live in shared memory and be merged by the parent. */
#ifndef C1M_CLIENT_HISTOGRAM_H
#define C1M_CLIENT_HISTOGRAM_H

#include <stdint.h>
#include <stdio.h>

#define C1M_HIST_SUB_BITS 5
#define C1M_HIST_SUB (1u << C1M_HIST_SUB_BITS)
#define C1M_HIST_MAX_BITS 40
#define C1M_HIST_BUCKETS ((C1M_HIST_MAX_BITS - C1M_HIST_SUB_BITS + 1) * C1M_HIST_SUB)

struct c1m_hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;
    uint64_t b[C1M_HIST_BUCKETS];
};

void c1m_hist_record(struct c1m_hist *h, uint64_t v);
void c1m_hist_merge(struct c1m_hist *dst, const struct c1m_hist *src);
/* The value at percentile p (0..100): the upper bound of the bucket holding
 * that rank, never above the recorded max. 0 when empty. */
uint64_t c1m_hist_percentile(const struct c1m_hist *h, double p);
/* The largest value bucket i holds (its upper bound). */
uint64_t c1m_hist_bucket_top(unsigned i);
/* h as JSON, bucket by bucket, so that histograms of several clients can be
 * merged exactly (harness/lib/clientmerge.py):
 * {"count": N, "sum": S, "max": M, "buckets": [[INDEX, COUNT], ...]}, the
 * non-empty buckets only, in index order. */
void c1m_hist_json(FILE *f, const struct c1m_hist *h);

#endif
