/* slowcut.c - the slow cutoff with a grace (slowcut.h). */
#include "slowcut.h"

#include <errno.h>
#include <stdlib.h>

int c1m_held_init(struct c1m_held_set *s, int cap)
{
    s->n = 0;
    s->cap = cap;
    s->v = calloc((size_t)cap, sizeof(*s->v)); /* pages touched as used */
    if (!s->v) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void c1m_held_free(struct c1m_held_set *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static int find(const struct c1m_held_set *s, uint64_t key)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].key == key)
            return i;
    return -1;
}

static void drop(struct c1m_held_set *s, int i)
{
    s->v[i] = s->v[--s->n]; /* order does not matter */
}

void c1m_held_forget(struct c1m_held_set *s, uint64_t key)
{
    int i = find(s, key);
    if (i >= 0)
        drop(s, i);
}

enum c1m_backlog_verdict c1m_held_judge(struct c1m_held_set *s, uint64_t key, size_t backlog,
                                        size_t max_pending, uint64_t now_ns)
{
    int i = find(s, key);
    if (backlog <= max_pending) {
        if (i >= 0)
            drop(s, i);
        return C1M_BACKLOG_OK;
    }
    if (i < 0) {
        if (s->n == s->cap)
            return C1M_BACKLOG_SLOW; /* no room to wait: the rule without grace */
        s->v[s->n++] = (struct c1m_held){.key = key, .backlog = backlog, .since_ns = now_ns};
        return C1M_BACKLOG_HELD;
    }
    struct c1m_held *h = &s->v[i];
    if (backlog < h->backlog) { /* the peer took some: the grace starts again */
        h->backlog = backlog;
        h->since_ns = now_ns;
        return C1M_BACKLOG_HELD;
    }
    if (now_ns - h->since_ns >= C1M_SLOW_GRACE_NS) {
        drop(s, i);
        return C1M_BACKLOG_SLOW;
    }
    return C1M_BACKLOG_HELD;
}

int c1m_held_due(const struct c1m_held_set *s, uint64_t now_ns, uint64_t *keys, int max)
{
    int k = 0;
    for (int i = 0; i < s->n && k < max; i++)
        if (now_ns - s->v[i].since_ns >= C1M_SLOW_GRACE_NS)
            keys[k++] = s->v[i].key;
    return k;
}
