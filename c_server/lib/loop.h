/* loop.h - a small level-triggered epoll event loop with fd-indexed state.
 *
 * One implementation serves the C server, the C load client and the CPython
 * extension (pyext/), so it knows nothing about connections or protocols:
 *
 *   - I/O: per fd, an event mask and a *handler id*. Handlers are registered once
 *     (a function plus a user-data pointer) and are few (listener, connection,
 *     signal...). The per-fd slot is therefore 8 bytes, not a closure per fd:
 *     at 20k fds per process that is 160 KiB, and it is only touched as fds are
 *     used. The callback gets the fd; callers keep their own fd-indexed tables.
 *   - Timers: a binary min-heap keyed by CLOCK_MONOTONIC deadline, with ids for
 *     cancellation. Insert/cancel are O(log n); the heap only grows on insert.
 *   - Signals: signalfd, so a signal is an ordinary readable fd handled between
 *     events (no async-signal-safety concerns in handlers).
 *
 * No globals; every function takes the loop. Nothing allocates per event.
 */
#ifndef C1M_LOOP_H
#define C1M_LOOP_H

#include <stdint.h>
#include <sys/epoll.h>

typedef struct c1m_loop c1m_loop;

/* An I/O callback: `events` is the epoll mask that fired (EPOLLIN, EPOLLOUT,
 * EPOLLRDHUP, EPOLLHUP, EPOLLERR). */
typedef void c1m_io_fn(c1m_loop *loop, int fd, uint32_t events, void *ud);
/* A timer callback. The timer is already removed when it runs; re-arm it by
 * adding a new one. */
typedef void c1m_timer_fn(c1m_loop *loop, uint64_t timer_id, void *ud);
/* A signal callback (runs in loop context, not in a signal handler). */
typedef void c1m_signal_fn(c1m_loop *loop, int signo, void *ud);

/* Create a loop able to watch fds 0..max_fds-1 (use c1m_nofile_limit()).
 * Returns NULL and sets errno on failure. */
c1m_loop *c1m_loop_new(int max_fds);
/* Free the loop. Does not close watched fds (they belong to the caller). */
void c1m_loop_free(c1m_loop *loop);
int c1m_loop_max_fds(const c1m_loop *loop);

/* Register an I/O handler; returns its id (>= 0) or -1 (errno=ENOMEM). The
 * table grows as needed (one handler per listener: a process may hold many). */
int c1m_loop_handler(c1m_loop *loop, c1m_io_fn *fn, void *ud);
/* Give a handler id back for reuse; no fd may still be watched with it. */
void c1m_loop_handler_release(c1m_loop *loop, int handler);

/* Watch fd with `events` (EPOLLIN|EPOLLOUT|EPOLLRDHUP...) using handler id.
 * add: fd must not be watched yet. mod: change the mask of a watched fd.
 * del: stop watching (call before close(fd)). All return 0 or -1 with errno. */
int c1m_loop_add(c1m_loop *loop, int fd, uint32_t events, int handler);
int c1m_loop_mod(c1m_loop *loop, int fd, uint32_t events);
int c1m_loop_del(c1m_loop *loop, int fd);
/* The mask fd is watched with, or 0 when not watched. */
uint32_t c1m_loop_events(const c1m_loop *loop, int fd);
/* Number of fds currently watched. */
int c1m_loop_nwatched(const c1m_loop *loop);

/* Run `fn` once after `ms` milliseconds (>= 0). Returns a timer id (> 0) or 0
 * with errno=ENOMEM. */
uint64_t c1m_loop_timer(c1m_loop *loop, double ms, c1m_timer_fn *fn, void *ud);
/* Cancel a pending timer; returns 1 if it was pending, 0 otherwise. */
int c1m_loop_timer_cancel(c1m_loop *loop, uint64_t timer_id);
int c1m_loop_ntimers(const c1m_loop *loop);

/* Hooks run right before and right after the loop blocks in epoll_wait, with
 * the timeout it waits for: the CPython extension releases the GIL there and
 * only there (as select.epoll.poll does), so every callback runs with it. */
typedef void c1m_wait_fn(c1m_loop *loop, int timeout_ms, void *ud);
void c1m_loop_set_wait_hooks(c1m_loop *loop, c1m_wait_fn *before, c1m_wait_fn *after, void *ud);

/* Deliver `signo` to fn through a signalfd (the signal is blocked for the
 * whole process). Passing fn=NULL removes it and unblocks. 0 or -1/errno. */
int c1m_loop_signal(c1m_loop *loop, int signo, c1m_signal_fn *fn, void *ud);

/* One iteration: wait up to timeout_ms (-1: until the next timer or event),
 * dispatch I/O, then due timers. Returns the number of I/O events dispatched,
 * or -1 on a fatal epoll error (errno set). EINTR is not an error (returns 0). */
int c1m_loop_run_once(c1m_loop *loop, int timeout_ms);
/* Run until c1m_loop_stop() is called. Returns 0, or -1 on a fatal error. */
int c1m_loop_run(c1m_loop *loop);
void c1m_loop_stop(c1m_loop *loop);
int c1m_loop_stopping(const c1m_loop *loop);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t c1m_now_ns(void);

#endif
