/* reconnect.h - what a worker does with a connection the peer closed during
 * the hold (--reconnect): the policies, the full-jitter backoff delay, and the
 * worker's queue of slots waiting for their next connect.
 *
 * The queue is a min-heap on the due time with a fixed capacity: a slot is in
 * exactly one place at a time (an open fd, a connect in progress, or one queue
 * entry), so a worker's share of the connections bounds it. An entry is one
 * uint64: (due time in microseconds << 8) | attempt. Nothing allocates after
 * c1m_rq_init. */
#ifndef C1M_CLIENT_RECONNECT_H
#define C1M_CLIENT_RECONNECT_H

#include <stdint.h>

enum c1m_reconnect {
    C1M_RECONNECT_OFF = 0, /* a closed connection stays closed (the default) */
    C1M_RECONNECT_NOW,     /* reconnect at once, and again at once after a failure */
    C1M_RECONNECT_BACKOFF, /* after a full-jitter exponential backoff delay */
};

/* The largest attempt number kept (it fits the entry's low byte; the delay's
 * exponent stops growing long before: base * 2^attempt saturates at the cap). */
#define C1M_RQ_MAX_ATTEMPT 254u

struct c1m_rq {
    uint64_t *heap;
    long n, cap;
};

/* 0, or -1 (out of memory). cap 0 is allowed (an empty share). */
int c1m_rq_init(struct c1m_rq *q, long cap);
void c1m_rq_free(struct c1m_rq *q);
/* Queue a slot due at due_us (an offset, < 2^56) for its attempt (clamped to
 * C1M_RQ_MAX_ATTEMPT). 0, or -1 when full (the caller's invariant broke). */
int c1m_rq_push(struct c1m_rq *q, uint64_t due_us, unsigned attempt);
/* The earliest due time; the queue must not be empty. */
uint64_t c1m_rq_next_due(const struct c1m_rq *q);
/* Remove the earliest entry and return its attempt; the queue must not be empty. */
unsigned c1m_rq_pop(struct c1m_rq *q);

/* splitmix64: a small per-worker generator (seeded from time, pid and index). */
uint64_t c1m_rng_next(uint64_t *state);

/* The delay before attempt `attempt` (0 = the first reconnect after a close,
 * n = after n consecutive failed attempts), "full jitter" of the AWS
 * Architecture Blog's "Exponential Backoff And Jitter":
 *     uniform in [0, min(cap, base * 2^attempt)]   (microseconds here)
 * The product saturates (no overflow for any attempt). */
uint64_t c1m_backoff_us(uint64_t *rng, unsigned attempt, uint64_t base_us, uint64_t cap_us);

/* "off", "now", "backoff"; parse: 0, or -1 for another word. */
const char *c1m_reconnect_name(int policy);
int c1m_reconnect_parse(const char *s, int *policy);

#endif
