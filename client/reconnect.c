/* reconnect.c - see reconnect.h. */
#include "reconnect.h"

#include <stdlib.h>
#include <string.h>

#define DUE_SHIFT 8

int c1m_rq_init(struct c1m_rq *q, long cap)
{
    q->n = 0;
    q->cap = cap > 0 ? cap : 0;
    q->heap = calloc((size_t)(q->cap > 0 ? q->cap : 1), sizeof(*q->heap));
    return q->heap ? 0 : -1;
}

void c1m_rq_free(struct c1m_rq *q)
{
    free(q->heap);
    q->heap = NULL;
    q->n = q->cap = 0;
}

int c1m_rq_push(struct c1m_rq *q, uint64_t due_us, unsigned attempt)
{
    if (q->n >= q->cap)
        return -1;
    if (attempt > C1M_RQ_MAX_ATTEMPT)
        attempt = C1M_RQ_MAX_ATTEMPT;
    uint64_t e = (due_us << DUE_SHIFT) | attempt;
    long i = q->n++;
    while (i > 0) {             /* sift up */
        long parent = (i - 1) / 2;
        if (q->heap[parent] <= e)
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
    return 0;
}

uint64_t c1m_rq_next_due(const struct c1m_rq *q)
{
    return q->heap[0] >> DUE_SHIFT;
}

unsigned c1m_rq_pop(struct c1m_rq *q)
{
    unsigned attempt = (unsigned)(q->heap[0] & ((1u << DUE_SHIFT) - 1));
    uint64_t last = q->heap[--q->n];
    long i = 0;
    for (;;) {                  /* sift the last entry down from the root */
        long c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && q->heap[c + 1] < q->heap[c])
            c++;
        if (last <= q->heap[c])
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (q->n > 0)
        q->heap[i] = last;
    return attempt;
}

uint64_t c1m_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t c1m_backoff_us(uint64_t *rng, unsigned attempt, uint64_t base_us, uint64_t cap_us)
{
    uint64_t ceiling = cap_us;
    /* base * 2^attempt, saturating: below the cap only while no bit is lost */
    if (attempt < 63 && base_us <= (cap_us >> attempt))
        ceiling = base_us << attempt;
    /* uniform in [0, ceiling]: the modulo bias is below 2^-30 for any
     * ceiling under 2^34 us (4.7 hours; the flags allow one hour) */
    return c1m_rng_next(rng) % (ceiling + 1);
}

static const char *const names[] = {
    [C1M_RECONNECT_OFF] = "off",
    [C1M_RECONNECT_NOW] = "now",
    [C1M_RECONNECT_BACKOFF] = "backoff",
};

const char *c1m_reconnect_name(int policy)
{
    return policy >= 0 && policy <= C1M_RECONNECT_BACKOFF ? names[policy] : "?";
}

int c1m_reconnect_parse(const char *s, int *policy)
{
    for (int i = 0; i <= C1M_RECONNECT_BACKOFF; i++) {
        if (strcmp(s, names[i]) == 0) {
            *policy = i;
            return 0;
        }
    }
    return -1;
}
