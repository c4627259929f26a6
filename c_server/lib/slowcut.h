/* slowcut.h - the slow cutoff with a grace (interfaces: --max-pending).
 *
 * A backlog of replies over --max-pending is a slow peer only once it has not
 * shrunk for C1M_SLOW_GRACE_NS; until then the connection is "held": its
 * server stops reading it and looks again when the socket has room or when
 * the grace is over. A backlog back within the bound releases it.
 *
 * Why a grace: a socket can refuse replies for a while although its peer
 * reads all along, when the peer's ACK comes late (the peer was not
 * scheduled, or held its socket's lock in a long send()). A server that takes
 * several reads of one peer in a row queues the replies to all of them before
 * the kernel had a chance to take the first: judged at once, a reader is cut.
 * c1m-uring does (a multishot receive posts every chunk that arrived): its
 * 20,000-ping burst read all along was cut as slow in 2 of 60 runs beside a
 * process scanning its fds, and once in CI. py_server/protocol.py has the same
 * rule (STALL_S, 250 ms: more than the 200 ms minimum delayed ACK and
 * retransmission timeout).
 *
 * A fixed set per worker, searched by key (only held connections are in it;
 * the caller keeps a "held" flag per connection, so others never search):
 * nothing is allocated per event. A full set judges at once (slow), the rule
 * without the grace.
 */
#ifndef C1M_SLOWCUT_H
#define C1M_SLOWCUT_H

#include <stddef.h>
#include <stdint.h>

#define C1M_SLOW_GRACE_NS 250000000ull
#define C1M_HELD_MAX 4096 /* held connections per worker: 96 KiB, touched as used */

enum c1m_backlog_verdict {
    C1M_BACKLOG_OK,   /* within the bound: read again (released if it was held) */
    C1M_BACKLOG_HELD, /* over it: stop reading, look again at room or due time */
    C1M_BACKLOG_SLOW, /* over it and not shrunk for the grace: close as slow */
};

struct c1m_held {
    uint64_t key;      /* the connection: its fd, or a pointer */
    uint64_t backlog;  /* the smallest backlog seen since held */
    uint64_t since_ns; /* when it was held, or last shrank */
};

struct c1m_held_set {
    struct c1m_held *v;
    int n, cap;
};

/* 0, or -1 (errno ENOMEM). */
int c1m_held_init(struct c1m_held_set *s, int cap);
void c1m_held_free(struct c1m_held_set *s);
/* The verdict on the backlog of connection `key` (bytes of output waiting after the server sent
 * what the socket took), now_ns on CLOCK_MONOTONIC. OK and SLOW take key
 * out of the set, HELD puts it in (or keeps it). */
enum c1m_backlog_verdict c1m_held_judge(struct c1m_held_set *s, uint64_t key, size_t backlog,
                                        size_t max_pending, uint64_t now_ns);
/* key is closed: out of the set (a no-op if it is not in it). */
void c1m_held_forget(struct c1m_held_set *s, uint64_t key);
/* Up to max keys whose grace is over at now_ns, into keys; returns how many.
 * The caller judges each (which takes it out of the set, or keeps it held if
 * its backlog shrank). */
int c1m_held_due(const struct c1m_held_set *s, uint64_t now_ns, uint64_t *keys, int max);

#endif
