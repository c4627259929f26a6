/* push_rx.c - see push_rx.h.
 *
 * The parser is a byte-level state machine, so a line may be split anywhere:
 *   0..4      at the start of a line, that many bytes of "push " matched
 *   SEQ0/SEQ  the SEQ digits (the first / the following ones)
 *   USEC0/USEC the USEC digits
 *   PAD       a well-formed line's padding, up to its newline
 *   BAD       a "push " line that did not parse, up to its newline
 *   OTHER     any other line (pong...), up to its newline
 * Padding and other lines are skipped with memchr, not byte by byte.
 * A SEQ is taken when its digits end (the gap is counted there), the latency
 * when the newline arrives: the receipt of a line is the read that completes
 * it. */
#include "push_rx.h"

#include <string.h>
#include <time.h>

enum { ST_SEQ0 = 5, ST_SEQ, ST_USEC0, ST_USEC, ST_PAD, ST_BAD, ST_OTHER };

static const char prefix[5] = {'p', 'u', 's', 'h', ' '};

/* single-writer relaxed updates (the parent may read while we write) */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

uint64_t c1m_realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void c1m_push_conn_reset(struct c1m_push_conn *c)
{
    memset(c, 0, sizeof(*c));
}

/* What one call gathered, published once at its end. */
struct batch {
    uint64_t received, missing, bytes, bad;
    uint64_t first_send, last_rx; /* 0 = none in this batch */
};

static void min_into(uint64_t *dst, uint64_t v)
{
    uint64_t cur = LOAD(*dst);
    if (v && (!cur || v < cur))
        STORE(*dst, v);
}

static void max_into(uint64_t *dst, uint64_t v)
{
    if (v > LOAD(*dst))
        STORE(*dst, v);
}

/* A well-formed line ended: usec is its send stamp. */
static void line_done(struct c1m_push_conn *c, struct c1m_push_stats *st, struct batch *b,
                      uint64_t usec, uint64_t *rt_us, uint64_t window_us)
{
    if (!*rt_us)
        *rt_us = c1m_realtime_us();
    uint64_t rx = *rt_us;
    /* same clock, same machine; a stamp from the future (a clock step) is 0 */
    c1m_hist_record(&st->latency_us, rx > usec ? rx - usec : 0);
    b->received++;
    if (!b->first_send || usec < b->first_send)
        b->first_send = usec;
    if (rx > b->last_rx)
        b->last_rx = rx;
    if (window_us && usec >= window_us && !(c->flags & C1M_PUSH_WIN_SEEN)) {
        c->flags |= C1M_PUSH_WIN_SEEN;
        min_into(&st->win_first_send_us, usec);
        min_into(&st->win_first_rx_us, rx);
        max_into(&st->win_last_rx_us, rx);
        STORE(st->win_reached, LOAD(st->win_reached) + 1); /* after the times: the parent polls it */
    }
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

void c1m_push_feed(struct c1m_push_conn *c, struct c1m_push_stats *st, const char *buf,
                   size_t n, uint64_t *rt_us, uint64_t window_us)
{
    struct batch b = {0, 0, 0, 0, 0, 0};
    size_t i = 0;
    while (i < n) {
        if (c->st >= ST_PAD) { /* skip to the end of the line */
            const char *nl = memchr(buf + i, '\n', n - i);
            size_t upto = nl ? (size_t)(nl - buf) + 1 : n;
            if (c->st != ST_OTHER)
                b.bytes += upto - i;
            if (nl) {
                if (c->st == ST_PAD)
                    line_done(c, st, &b, c->acc, rt_us, window_us);
                c->st = 0;
            }
            i = upto;
            continue;
        }
        char ch = buf[i++];
        if (c->st < ST_SEQ0) { /* matching "push " at the start of a line */
            if (ch == prefix[c->st]) {
                if (++c->st == ST_SEQ0) {
                    b.bytes += sizeof(prefix);
                    c->acc = 0;
                }
            } else {
                c->st = ch == '\n' ? 0 : ST_OTHER;
            }
            continue;
        }
        b.bytes++;
        int ok = 1;
        switch (c->st) {
        case ST_SEQ0:
        case ST_USEC0:
            if (is_digit(ch)) {
                c->acc = (uint64_t)(ch - '0');
                c->st++;
            } else {
                ok = 0;
            }
            break;
        case ST_SEQ:
            if (is_digit(ch)) {
                c->acc = c->acc * 10 + (uint64_t)(ch - '0');
                ok = c->acc <= UINT32_MAX;
            } else if (ch == ' ' && c->acc > c->last_seq) {
                b.missing += c->acc - c->last_seq - 1;
                c->last_seq = (uint32_t)c->acc;
                c->acc = 0;
                c->st = ST_USEC0;
            } else {
                ok = 0; /* not a digit, or SEQ 0 / not above the previous one */
            }
            break;
        case ST_USEC:
            if (is_digit(ch)) {
                ok = c->acc <= (UINT64_MAX - 9) / 10;
                if (ok)
                    c->acc = c->acc * 10 + (uint64_t)(ch - '0');
            } else if (ch == ' ') {
                c->st = ST_PAD;
            } else if (ch == '\n') { /* no padding: still a line */
                line_done(c, st, &b, c->acc, rt_us, window_us);
                c->st = 0;
            } else {
                ok = 0;
            }
            break;
        }
        if (!ok) {
            b.bad++;
            c->st = ch == '\n' ? 0 : ST_BAD;
        }
    }
    if (b.received) {
        STORE(st->received, LOAD(st->received) + b.received);
        min_into(&st->first_send_us, b.first_send);
        max_into(&st->last_rx_us, b.last_rx);
    }
    if (b.missing)
        STORE(st->missing, LOAD(st->missing) + b.missing);
    if (b.bytes)
        STORE(st->bytes, LOAD(st->bytes) + b.bytes);
    if (b.bad)
        STORE(st->bad, LOAD(st->bad) + b.bad);
}
