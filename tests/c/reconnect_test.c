/* reconnect_test.c - unit tests of the client's reconnect queue and backoff
 * delay (client/reconnect.c, compiled into this test). Run by tests/storm.bats.
 *
 *   reconnect_test CASE      exit 0 when CASE passes, 1 (with a message) when not
 *
 * CHECK, not assert(): the normal build is -DNDEBUG.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/reconnect.c"

#include "check_exit.h"

#define DRAWS 20000

/* Full jitter: every delay of attempt a lies in [0, min(cap, base * 2^a)], and
 * the draws cover that range uniformly (max near the bound, mean near half of
 * it). A fixed seed: the same draws every run. */
static int backoff_bounds(void)
{
    const uint64_t base = 100000, cap = 10000000; /* 100 ms, 10 s */
    uint64_t rng = 12345;
    for (unsigned a = 0; a <= 40; a++) {
        uint64_t bound = a < 20 && (base << a) < cap ? base << a : cap; /* min(cap, base*2^a) */
        uint64_t max = 0;
        double sum = 0;
        for (int i = 0; i < DRAWS; i++) {
            uint64_t d = c1m_backoff_us(&rng, a, base, cap);
            CHECK(d <= bound);
            if (d > max)
                max = d;
            sum += (double)d;
        }
        double mean = sum / DRAWS;
        CHECK((double)max >= 0.99 * (double)bound);
        CHECK(mean > 0.47 * (double)bound && mean < 0.53 * (double)bound);
    }
    /* attempt 0 is bounded by the base, not 0 and not the cap */
    CHECK(c1m_backoff_us(&rng, 0, 1000, 1000000) <= 1000);
    /* saturation: no overflow of base * 2^attempt for any attempt */
    for (unsigned a = 60; a <= 300; a++) {
        CHECK(c1m_backoff_us(&rng, a, 1, 3600000000ull) <= 3600000000ull);
        CHECK(c1m_backoff_us(&rng, a, 3600000000ull, 3600000000ull) <= 3600000000ull);
    }
    /* a cap of the base: always within [0, base] */
    for (int i = 0; i < 1000; i++)
        CHECK(c1m_backoff_us(&rng, (unsigned)(i % 70), 5000, 5000) <= 5000);
    return 0;
}

/* The queue pops in due order with each entry's attempt, refuses an entry
 * past its capacity, and clamps the attempt to its byte. */
static int queue_order(void)
{
    enum { N = 5000 };
    struct c1m_rq q;
    CHECK(c1m_rq_init(&q, N) == 0);
    uint64_t rng = 7;
    for (int i = 0; i < N; i++) {
        uint64_t due = c1m_rng_next(&rng) % 1000000;
        /* the attempt is a function of the due time, so it can be checked on pop */
        CHECK(c1m_rq_push(&q, due, (unsigned)(due % 200)) == 0);
    }
    CHECK(c1m_rq_push(&q, 1, 1) == -1);
    CHECK(q.n == N);
    uint64_t prev = 0;
    for (int i = 0; i < N; i++) {
        uint64_t due = c1m_rq_next_due(&q);
        CHECK(due >= prev);
        CHECK(c1m_rq_pop(&q) == due % 200);
        prev = due;
    }
    CHECK(q.n == 0);
    /* interleaved pushes and pops, and the clamp */
    CHECK(c1m_rq_push(&q, 30, 300) == 0);
    CHECK(c1m_rq_push(&q, 10, 1) == 0);
    CHECK(c1m_rq_push(&q, 20, 2) == 0);
    CHECK(c1m_rq_next_due(&q) == 10 && c1m_rq_pop(&q) == 1);
    CHECK(c1m_rq_push(&q, 5, 3) == 0);
    CHECK(c1m_rq_next_due(&q) == 5 && c1m_rq_pop(&q) == 3);
    CHECK(c1m_rq_next_due(&q) == 20 && c1m_rq_pop(&q) == 2);
    CHECK(c1m_rq_next_due(&q) == 30 && c1m_rq_pop(&q) == C1M_RQ_MAX_ATTEMPT);
    CHECK(q.n == 0);
    c1m_rq_free(&q);
    /* an empty share: a queue of capacity 0 refuses every push */
    CHECK(c1m_rq_init(&q, 0) == 0);
    CHECK(c1m_rq_push(&q, 1, 0) == -1);
    c1m_rq_free(&q);
    return 0;
}

static int policy_names(void)
{
    int p = -1;
    CHECK(c1m_reconnect_parse("off", &p) == 0 && p == C1M_RECONNECT_OFF);
    CHECK(c1m_reconnect_parse("now", &p) == 0 && p == C1M_RECONNECT_NOW);
    CHECK(c1m_reconnect_parse("backoff", &p) == 0 && p == C1M_RECONNECT_BACKOFF);
    CHECK(c1m_reconnect_parse("Now", &p) == -1 && c1m_reconnect_parse("", &p) == -1);
    CHECK(strcmp(c1m_reconnect_name(C1M_RECONNECT_BACKOFF), "backoff") == 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: reconnect_test backoff-bounds|queue-order|policy-names\n");
        return 2;
    }
    if (strcmp(argv[1], "backoff-bounds") == 0)
        return backoff_bounds();
    if (strcmp(argv[1], "queue-order") == 0)
        return queue_order();
    if (strcmp(argv[1], "policy-names") == 0)
        return policy_names();
    fprintf(stderr, "reconnect_test: unknown case %s\n", argv[1]);
    return 2;
}
