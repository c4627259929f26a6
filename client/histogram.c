/* histogram.c - see histogram.h. */
#include "histogram.h"

static unsigned bucket_of(uint64_t v)
{
    if (v < C1M_HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - C1M_HIST_SUB_BITS;     /* mantissa keeps SUB_BITS+1 bits */
    return shift * C1M_HIST_SUB + (unsigned)(v >> shift);
}

uint64_t c1m_hist_bucket_top(unsigned i)
{
    if (i < 2 * C1M_HIST_SUB)
        return i;
    unsigned shift = i / C1M_HIST_SUB - 1;
    uint64_t mant = i - shift * C1M_HIST_SUB;     /* in [SUB, 2*SUB) */
    return ((mant + 1) << shift) - 1;
}

void c1m_hist_record(struct c1m_hist *h, uint64_t v)
{
    const uint64_t cap = (1ull << C1M_HIST_MAX_BITS) - 1;
    if (v > cap)
        v = cap;
    h->b[bucket_of(v)]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

void c1m_hist_merge(struct c1m_hist *dst, const struct c1m_hist *src)
{
    for (unsigned i = 0; i < C1M_HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t c1m_hist_percentile(const struct c1m_hist *h, double p)
{
    if (h->count == 0)
        return 0;
    if (p >= 100.0)
        return h->max;
    uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < C1M_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t top = c1m_hist_bucket_top(i);
            return top < h->max ? top : h->max;
        }
    }
    return h->max;
}

void c1m_hist_json(FILE *f, const struct c1m_hist *h)
{
    fprintf(f, "{\"count\": %llu, \"sum\": %llu, \"max\": %llu, \"buckets\": [",
            (unsigned long long)h->count, (unsigned long long)h->sum, (unsigned long long)h->max);
    const char *sep = "";
    for (unsigned i = 0; i < C1M_HIST_BUCKETS; i++) {
        if (!h->b[i])
            continue;
        fprintf(f, "%s[%u, %llu]", sep, i, (unsigned long long)h->b[i]);
        sep = ", ";
    }
    fputs("]}", f);
}
