/* workers.h - fork N worker processes and supervise them.
 *
 * The parent forks, then waits: it forwards SIGINT/SIGTERM to the workers,
 * reaps them, and reports a worker that dies unexpectedly (the caller then
 * stops the rest: never run on half-dead). A worker gets SIGTERM when the
 * parent dies (PR_SET_PDEATHSIG), even by SIGKILL. Used by the servers and the
 * client.
 */
#ifndef C1M_WORKERS_H
#define C1M_WORKERS_H

#include <sys/types.h>

/* Worker body: returns the worker's exit status. */
typedef int c1m_worker_fn(int index, void *ud);

struct c1m_workers {
    int n;
    pid_t *pids;           /* 0 once reaped */
    int *status;           /* wait status of each */
    int failed;            /* workers that exited non-zero or by a signal */
};

/* How many workers for `target` connections when each process may hold
 * `per_worker` of them: ceil(target / per_worker), at least 1. */
int c1m_workers_auto(long target, long per_worker);

/* Fork n workers running fn(i, ud). In the child, fn's return value becomes
 * the exit status. Returns 0, or -1 if a fork failed (the ones started are
 * terminated and reaped). */
int c1m_workers_start(struct c1m_workers *ws, int n, c1m_worker_fn *fn, void *ud);

/* Supervise until all workers have exited. SIGINT/SIGTERM received by the
 * parent are forwarded as SIGTERM. If a worker fails while the others run,
 * on_fail(index, status, ud) is called (may be NULL) and the rest are sent
 * SIGTERM. Returns 0 if every worker exited 0 (or, once they were sent
 * SIGTERM, was killed by it: it had not taken its signals over yet), else 1. */
int c1m_workers_wait(struct c1m_workers *ws,
                     void (*on_fail)(int index, int status, void *ud), void *ud);

/* Send sig to every live worker. */
void c1m_workers_kill(struct c1m_workers *ws, int sig);
/* In a worker that has begun to stop: SIGINT and SIGTERM are ignored from
 * now on, and blocked (a library may put back their default disposition as
 * it closes, as libuv does for its signal handles, or unblock them, as
 * c1m_loop_free does). A later stop signal (the parent forwards a second
 * SIGTERM to its workers) has nothing left to stop and would otherwise kill
 * the worker mid-exit: the parent then reports a worker that died (exit 1). */
void c1m_workers_stopping(void);
void c1m_workers_free(struct c1m_workers *ws);

#endif
