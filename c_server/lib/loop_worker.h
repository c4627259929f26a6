/* loop_worker.h - what a C server's worker on the c1m loop (c1m-server,
 * c1m-floor) does around its own connection handlers: its counters record
 * (stats.h) published at start, on a tick (updated_ns: readers see it alive)
 * and after every loop iteration that changed a count; SIGTERM/SIGINT stop
 * the loop; the listener (listener.h) with the fd-cap back-off's state
 * published; the end (listener closed, every connection closed, the loop
 * freed, EXITED or FAILED published). The contenders on other loops
 * (c_server/libuv, c_server/uring) share only the record (c1m_stats_pub).
 */
#ifndef C1M_LOOP_WORKER_H
#define C1M_LOOP_WORKER_H

#include "listener.h"
#include "loop.h"
#include "server_main.h"
#include "stats.h"

struct c1m_loop_worker {
    /* set by the caller before c1m_loop_worker_begin */
    const char *prog;            /* "c1m-server": messages */
    double tick_ms;              /* publish every tick_ms */
    void (*tick)(void *ud);      /* optional: each tick, before its publish */
    void (*close_all)(void *ud); /* close every connection (the end) */
    void *ud;                    /* the program's worker; the listener's ud is this struct */
    /* set here */
    struct c1m_stats_pub pub;    /* state and counts; accept_errors is the listener's */
    c1m_loop *loop;
    struct c1m_listener listener;
    int max_fds;                 /* RLIMIT_NOFILE: the size of fd-indexed tables */
    int failed;                  /* the tick could not be re-armed */
};

/* The record st->w[index], STARTING published, max_fds, the loop, with
 * SIGTERM and SIGINT stopping it. 0, or -1 (message printed). */
int c1m_loop_worker_begin(struct c1m_loop_worker *b, struct c1m_stats *st, int index);
/* b's state and counts to its record. */
void c1m_loop_worker_publish(struct c1m_loop_worker *b);
/* Listen on o's host and port (worker `index`: messages), at most
 * o->worker_conns open (*open_count: b->pub.open); accepted sockets inherit
 * o's --sndbuf/--rcvbuf from the listening socket (two setsockopt() calls
 * fewer per connection). on_accept gets b as its ud. 0, or -1 (message
 * printed). */
int c1m_loop_worker_listen(struct c1m_loop_worker *b, const struct c1m_server_opts *o,
                           int index, c1m_accept_fn *on_accept);
/* LISTENING, the publish tick, the loop until stopped, STOPPING. 0, or -1
 * (message printed). */
int c1m_loop_worker_serve(struct c1m_loop_worker *b);
/* The end, whatever came before: rc 0 publishes EXITED, else FAILED.
 * Returns rc. */
int c1m_loop_worker_end(struct c1m_loop_worker *b, int rc);

#endif
