/* srcaddr.c - see srcaddr.h. */
#include "srcaddr.h"

#include <stdlib.h>
#include <string.h>

/* first connection index of address block a */
static long block_start(long a, long count, long total)
{
    return (a * total + count - 1) / count;
}

int c1m_srcpick_init(struct c1m_srcpick *p, uint32_t first, uint32_t count, long total,
                     long off, long share)
{
    memset(p, 0, sizeof(*p));
    if (count == 0 || share <= 0 || total <= 0)
        return 0;
    long c = count;
    long a0 = off * c / total, a1 = (off + share - 1) * c / total;
    p->n = (uint32_t)(a1 - a0 + 1);
    p->first = first + (uint32_t)a0;
    p->quota = calloc(p->n, sizeof(long));
    if (!p->quota)
        return -1;
    for (long a = a0; a <= a1; a++) {
        long lo = block_start(a, c, total), hi = block_start(a + 1, c, total);
        if (lo < off)
            lo = off;
        if (hi > off + share)
            hi = off + share;
        p->quota[a - a0] = hi > lo ? hi - lo : 0;
    }
    return 0;
}

uint32_t c1m_srcpick_next(struct c1m_srcpick *p)
{
    for (uint32_t k = 0; k < p->n; k++) {
        uint32_t i = p->rr;
        p->rr = (p->rr + 1) % p->n;
        if (p->quota[i] > 0) {
            p->quota[i]--;
            return p->first + i;
        }
    }
    /* quotas add up to the share: only reached past it */
    return p->first + p->rr;
}

void c1m_srcpick_free(struct c1m_srcpick *p)
{
    free(p->quota);
    memset(p, 0, sizeof(*p));
}
