/* push_rx_test.c - unit tests of the client's push line parser (client/push_rx.c,
 * compiled into this test with the client's histogram). Run by tests/push_stall.bats.
 *
 *   push_rx_test CASE      exit 0 when CASE passes, 1 (with a message) when not
 *
 * CHECK, not assert(): the normal build is -DNDEBUG.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/histogram.c"
#include "../../client/push_rx.c"

#include "check_exit.h"

/* A stream of everything the parser meets: pongs, other lines, well-formed
 * pushes with and without padding, a gap (3 -> 5: one missing), a repeated
 * SEQ, SEQ 0, letters, a USEC overflow, an empty push line, a line that only
 * starts like "push", and a push whose USEC has no newline yet (split at the
 * end: it must not count). */
static const char stream[] =
    "pong\n"
    "push 1 1000000 ....\n"
    "hello\n"
    "push 2 1000001 \n"
    "push 3 1000002\n"
    "pus\n"
    "push 5 1000004 ..........\n"
    "push 5 1000005 .\n"          /* SEQ not above the previous: bad */
    "push 0 1 .\n"                /* SEQ 0: bad */
    "push x 1 .\n"                /* bad */
    "push 6 99999999999999999999999 .\n" /* USEC overflows 64 bits: bad (SEQ 6 taken) */
    "push \n"                     /* bad */
    "pushy 7 1 .\n"               /* not a push line */
    "\n"
    "push 7 1000007 ...\n"
    "push 8 100";                 /* unfinished */

/* What feeding `stream` must give, however it is split. */
#define WANT_RECEIVED 5u
#define WANT_MISSING 1u       /* SEQ 4 */
#define WANT_BAD 5u

static uint64_t push_bytes_of_stream(void)
{
    /* every byte of lines starting "push " (the unfinished one included) */
    uint64_t n = 0;
    const char *p = stream;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (len >= 5 && memcmp(p, "push ", 5) == 0)
            n += len;
        p += len;
    }
    return n;
}

static void feed_split(struct c1m_push_stats *st, const size_t *cuts, int ncuts)
{
    struct c1m_push_conn c;
    c1m_push_conn_reset(&c);
    size_t len = strlen(stream), at = 0;
    uint64_t rt = 2000000; /* a fixed receipt time: latency = 2000000 - USEC */
    for (int i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        c1m_push_feed(&c, st, stream + at, end - at, &rt, 0);
        at = end;
    }
    CHECK(c.last_seq == 8);
}

static void check_stream(const struct c1m_push_stats *st)
{
    CHECK(st->received == WANT_RECEIVED);
    CHECK(st->missing == WANT_MISSING);
    CHECK(st->bad == WANT_BAD);
    CHECK(st->bytes == push_bytes_of_stream());
    CHECK(st->first_send_us == 1000000);
    CHECK(st->last_rx_us == 2000000);
    CHECK(st->latency_us.count == WANT_RECEIVED);
    CHECK(st->latency_us.max == 1000000);
}

/* The same figures whole, split at every byte, and split at every pair of
 * positions: the state carries across reads at any point of a line. */
static int split_anywhere(void)
{
    static struct c1m_push_stats st;
    size_t len = strlen(stream);
    memset(&st, 0, sizeof(st));
    feed_split(&st, NULL, 0);
    check_stream(&st);
    for (size_t a = 1; a < len; a++) {
        memset(&st, 0, sizeof(st));
        feed_split(&st, &a, 1);
        check_stream(&st);
        for (size_t b = a + 1; b < len; b++) {
            size_t cuts[2] = {a, b};
            memset(&st, 0, sizeof(st));
            feed_split(&st, cuts, 2);
            check_stream(&st);
        }
    }
    size_t bytewise[sizeof(stream)];
    for (size_t i = 0; i + 1 < len; i++)
        bytewise[i] = i + 1;
    memset(&st, 0, sizeof(st));
    feed_split(&st, bytewise, (int)len - 1);
    check_stream(&st);
    return 0;
}

/* Latency is the receipt time read once per batch minus USEC; a stamp from
 * the future counts 0; with *rt 0 the clock is read at the first line. */
static int latency(void)
{
    static struct c1m_push_stats st;
    struct c1m_push_conn c;
    c1m_push_conn_reset(&c);
    char line[96];
    uint64_t now = c1m_realtime_us();
    snprintf(line, sizeof(line), "push 1 %llu ...\n", (unsigned long long)(now - 5000));
    uint64_t rt = 0;
    c1m_push_feed(&c, &st, line, strlen(line), &rt, 0);
    CHECK(rt >= now);
    CHECK(st.latency_us.count == 1 && st.latency_us.max >= 5000 && st.latency_us.max < 5000000);
    snprintf(line, sizeof(line), "push 2 %llu ...\n", (unsigned long long)(rt + 60000000));
    c1m_push_feed(&c, &st, line, strlen(line), &rt, 0);
    CHECK(st.received == 2 && st.latency_us.count == 2);
    CHECK(c1m_hist_percentile(&st.latency_us, 50) == 0); /* the future stamp */
    return 0;
}

/* The window: a connection is reached once, by the first line sent at or
 * after the window's start; earlier lines do not count; the times are the
 * window's own. */
static int window(void)
{
    static struct c1m_push_stats st;
    struct c1m_push_conn a, b;
    c1m_push_conn_reset(&a);
    c1m_push_conn_reset(&b);
    uint64_t rt = 5000;
    const char *early = "push 1 999 .\n", *l2 = "push 2 1000 .\n", *l3 = "push 3 1500 .\n";
    c1m_push_feed(&a, &st, early, strlen(early), &rt, 1000);
    CHECK(st.win_reached == 0 && st.received == 1);
    c1m_push_feed(&a, &st, l2, strlen(l2), &rt, 1000);
    CHECK(st.win_reached == 1 && st.win_first_send_us == 1000 && st.win_first_rx_us == 5000);
    rt = 6000;
    c1m_push_feed(&a, &st, l3, strlen(l3), &rt, 1000);
    CHECK(st.win_reached == 1 && st.win_last_rx_us == 5000); /* a: reached already */
    c1m_push_feed(&b, &st, early, strlen(early), &rt, 1000);
    c1m_push_feed(&b, &st, l3, strlen(l3), &rt, 1000);
    CHECK(st.win_reached == 2 && st.win_last_rx_us == 6000 && st.win_first_rx_us == 5000);
    CHECK(st.win_first_send_us == 1000);
    /* no window (0): nothing marks */
    struct c1m_push_conn c;
    c1m_push_conn_reset(&c);
    c1m_push_feed(&c, &st, l3, strlen(l3), &rt, 0);
    CHECK(st.win_reached == 2 && !(c.flags & C1M_PUSH_WIN_SEEN));
    return 0;
}

/* A connection opened again starts from SEQ 1 (reset), and a SEQ above
 * 2^32 - 1 is bad, not wrapped. */
static int reset_and_range(void)
{
    static struct c1m_push_stats st;
    struct c1m_push_conn c;
    c1m_push_conn_reset(&c);
    uint64_t rt = 10;
    const char *l9 = "push 9 1 .\n", *l1 = "push 1 1 .\n", *big = "push 4294967296 1 .\n";
    c1m_push_feed(&c, &st, l9, strlen(l9), &rt, 0);
    CHECK(st.missing == 8);
    c1m_push_conn_reset(&c);
    c1m_push_feed(&c, &st, l1, strlen(l1), &rt, 0);
    CHECK(st.missing == 8 && st.bad == 0 && st.received == 2);
    c1m_push_feed(&c, &st, big, strlen(big), &rt, 0);
    CHECK(st.bad == 1 && c.last_seq == 1 && st.received == 2);
    c1m_push_feed(&c, &st, l9, strlen(l9), &rt, 0);
    CHECK(st.received == 3 && st.missing == 15);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(void);
    } cases[] = {
        {"split-anywhere", split_anywhere},
        {"latency", latency},
        {"window", window},
        {"reset-and-range", reset_and_range},
    };
    if (argc != 2) {
        fprintf(stderr, "usage: push_rx_test CASE\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(argv[1], cases[i].name) == 0)
            return cases[i].fn();
    fprintf(stderr, "push_rx_test: unknown case %s\n", argv[1]);
    return 2;
}
