/* push_rx.h - receive server push lines on the client's connections.
 *
 * A server started with --push sends lines "push SEQ USEC <padding>\n"
 * (DEVELOPERS.md "Server push"): SEQ counts from 1 per connection, USEC is
 * the CLOCK_REALTIME microsecond at which the server handed the line to the
 * kernel. The client feeds every byte it reads through c1m_push_feed, which
 * recognises those lines (any other line is skipped; the pong matcher in
 * conn_worker.c sees the same bytes) and records, per worker:
 *   - delivery latency (CLOCK_REALTIME at receipt of the newline - USEC),
 *   - lines received, sequence gaps (missing), bytes of push lines,
 *   - the earliest USEC and the latest receipt (the run's push span),
 *   - the push window: once the parent opens it (SIGUSR1 to c1m-client,
 *     push_watch.h), the first line on each connection sent at or after the
 *     window's start marks that connection reached; the latest of those
 *     receipts is when a broadcast had reached every connection.
 * Lines may be split across reads at any byte: the per-connection state is a
 * 16-byte struct in an fd-indexed table, and nothing allocates per line.
 */
#ifndef C1M_CLIENT_PUSH_RX_H
#define C1M_CLIENT_PUSH_RX_H

#include <stddef.h>
#include <stdint.h>

#include "histogram.h"

/* One worker's push figures, in its record of the shared region. The scalar
 * counters are single-writer relaxed atomics (C1M_LOAD/C1M_ADD in shared.h):
 * the parent polls win_reached while the workers run; the histogram is read
 * after the workers exited. Times are CLOCK_REALTIME microseconds; 0 = none. */
struct c1m_push_stats {
    uint64_t received;          /* well-formed push lines */
    uint64_t missing;           /* sequence numbers skipped (gaps) */
    uint64_t bytes;             /* bytes of lines starting "push " (newline included) */
    uint64_t bad;               /* "push " lines that do not parse, or whose SEQ did not increase */
    uint64_t first_send_us;     /* smallest USEC received */
    uint64_t last_rx_us;        /* latest receipt */
    uint64_t win_reached;       /* connections reached by a line sent in the push window */
    uint64_t win_first_send_us; /* smallest USEC in the window */
    uint64_t win_first_rx_us;   /* earliest receipt in the window */
    uint64_t win_last_rx_us;    /* latest first-receipt of a connection in the window */
    struct c1m_hist latency_us; /* delivery latency of every well-formed line */
};

/* Per-connection receive state (fd-indexed; reset when a connection opens). */
struct c1m_push_conn {
    uint64_t acc;      /* the number being parsed: SEQ, then USEC */
    uint32_t last_seq; /* last SEQ accepted on this connection (0 = none yet) */
    uint8_t st;        /* parser state (push_rx.c) */
    uint8_t flags;     /* C1M_PUSH_* below */
    uint16_t pad;
};

#define C1M_PUSH_WIN_SEEN 0x01u /* reached in the push window */
#define C1M_PUSH_STALLED 0x02u  /* --stall: this connection no longer reads (conn_worker.c) */

void c1m_push_conn_reset(struct c1m_push_conn *c);

/* Feed n bytes received on one connection. *rt_us is the receipt time: pass
 * 0 and it is read from CLOCK_REALTIME at the first line that needs it (one
 * clock read per batch of reads). window_us: the push window's start, 0 when
 * no window is open. */
void c1m_push_feed(struct c1m_push_conn *c, struct c1m_push_stats *st, const char *buf,
                   size_t n, uint64_t *rt_us, uint64_t window_us);

/* CLOCK_REALTIME now, in microseconds. */
uint64_t c1m_realtime_us(void);

#endif
