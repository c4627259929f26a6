/* shared.h - the MAP_SHARED|MAP_ANONYMOUS region the parent creates before
 * forking: a control block written by the parent, one record per worker
 * written only by that worker. Counters the parent polls while workers run are
 * read and written with relaxed atomics (single writer: a load + store, no
 * locked add); the histograms are only read after the workers have exited. */
#ifndef C1M_CLIENT_SHARED_H
#define C1M_CLIENT_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "histogram.h"
#include "push_rx.h"

/* errno values are < 134 on Linux; index 0 collects anything out of range */
#define C1M_NERRNO 160

enum c1m_phase {
    C1M_PH_RAMP = 0,   /* open connections */
    C1M_PH_HOLD = 1,   /* everyone finished the ramp: hold (and heartbeat) */
    C1M_PH_FINISH = 2, /* close everything and exit */
};

struct c1m_ctl {
    uint64_t phase;         /* enum c1m_phase, set by the parent */
    uint64_t stop_new;      /* 1: open no new connections (--min-available) */
    uint64_t start_ns;      /* CLOCK_MONOTONIC at start; all times are offsets from it */
    uint64_t hold_start_ns; /* when the hold began (set with phase HOLD) */
    /* push_watch.h: set by the parent, read by the workers */
    uint64_t push_window_us; /* the push window's start (CLOCK_REALTIME us), 0 = not open */
    uint64_t stall_now;      /* 1: stall --stall's fraction of the connections now */
};

struct c1m_wstat {
    /* polled by the parent */
    uint64_t started;          /* connection attempts made */
    uint64_t established;      /* total ever established */
    uint64_t failed;           /* attempts that failed */
    uint64_t inflight;         /* connects in progress now */
    uint64_t open;             /* established and open now */
    uint64_t closed_by_peer;
    uint64_t pings;
    uint64_t pongs;
    uint64_t lost;             /* pings with no pong before the next ping */
    uint64_t ramp_done_ns;     /* offset from start_ns + 1; 0 = ramp not done */
    uint64_t last_est_ns;      /* offset of the last establishment; 0 = none */
    uint64_t exited;           /* 1 once the worker closed everything */
    uint64_t open_at_stop;     /* open + 1 when the worker began to stop; 0 = it never got
                                * there. Taken before closing: at 1M, closing 10k sockets
                                * per worker can outlast the parent's SIGKILL grace */
    uint64_t fail_errno[C1M_NERRNO];
    /* --reconnect (reconnect.h): slots closed by the peer during the hold */
    uint64_t reconnects;          /* slots connected again */
    uint64_t reconnect_attempts;  /* connects started for them */
    uint64_t reconnect_failures;  /* of those, failed (by errno below) */
    uint64_t reconnect_waiting;   /* slots waiting for their delay or connecting now */
    uint64_t first_close_ns;      /* offset + 1 of the first close queued; 0 = none */
    uint64_t last_reconnect_ns;   /* offset + 1 of the latest reconnect; 0 = none */
    uint64_t reconnect_fail_errno[C1M_NERRNO];
    /* read after the worker exited */
    struct c1m_hist connect_us;
    struct c1m_hist pong_us;
    struct c1m_hist backoff_us;   /* the reconnect delays drawn (all 0 with "now") */
    /* server push (push_rx.h) and --stall: polled by the parent (push_watch.h) */
    struct c1m_push_stats push;
    uint64_t stalled;             /* connections this worker stalled */
    uint64_t stall_at_us;         /* CLOCK_REALTIME us when it stalled them; 0 = not yet */
};

struct c1m_shared {
    struct c1m_ctl ctl;
    struct c1m_wstat w[]; /* nworkers */
};

#define C1M_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define C1M_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
/* single-writer increment */
#define C1M_ADD(x, n) C1M_STORE((x), C1M_LOAD(x) + (n))

static inline size_t c1m_shared_size(int nworkers)
{
    return sizeof(struct c1m_shared) + (size_t)nworkers * sizeof(struct c1m_wstat);
}

#endif
