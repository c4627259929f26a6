/* workers.c - see workers.h. */
#include "workers.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

int c1m_workers_auto(long target, long per_worker)
{
    if (per_worker <= 0 || target <= 0)
        return 1;
    long n = (target + per_worker - 1) / per_worker;
    return n < 1 ? 1 : (int)n;
}

void c1m_workers_kill(struct c1m_workers *ws, int sig)
{
    for (int i = 0; i < ws->n; i++)
        if (ws->pids[i] > 0)
            kill(ws->pids[i], sig);
}

void c1m_workers_free(struct c1m_workers *ws)
{
    free(ws->pids);
    free(ws->status);
    memset(ws, 0, sizeof(*ws));
}

int c1m_workers_start(struct c1m_workers *ws, int n, c1m_worker_fn *fn, void *ud)
{
    memset(ws, 0, sizeof(*ws));
    ws->pids = calloc((size_t)n, sizeof(pid_t));
    ws->status = calloc((size_t)n, sizeof(int));
    if (!ws->pids || !ws->status) {
        c1m_workers_free(ws);
        errno = ENOMEM;
        return -1;
    }
    ws->n = n;
    /* Block the stop signals across fork so a worker never runs the parent's
     * disposition between fork and installing its own; workers unblock them
     * (or take them over through the loop's signalfd). */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop, &old);
    pid_t parent = getpid();
    for (int i = 0; i < n; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            int e = errno;
            c1m_workers_kill(ws, SIGTERM);
            for (int j = 0; j < i; j++)
                waitpid(ws->pids[j], NULL, 0);
            sigprocmask(SIG_SETMASK, &old, NULL);
            c1m_workers_free(ws);
            errno = e;
            return -1;
        }
        if (pid == 0) {
            /* A parent killed with SIGKILL cannot stop its workers: the kernel
             * sends them SIGTERM instead, so no worker is left holding
             * sockets. */
            if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
                fprintf(stderr, "%s: prctl(PR_SET_PDEATHSIG): %s\n",
                        program_invocation_short_name, strerror(errno));
            if (getppid() != parent)
                _exit(1); /* the parent died before the prctl: nobody to work for */
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            int rc = fn(i, ud);
            /* Stopped: a later stop signal (a group's, then the parent's or a
             * supervisor's own) has nothing left to stop, and would end the
             * worker mid-exit (under ASan, in its leak check). */
            c1m_workers_stopping();
            fflush(NULL);
#ifdef __SANITIZE_ADDRESS__
            /* _exit() skips LeakSanitizer's atexit check: run it here (a leak
             * ends the worker with ASAN_OPTIONS' exitcode) */
            __lsan_do_leak_check();
#endif
            _exit(rc);
        }
        ws->pids[i] = pid;
    }
    /* The parent keeps SIGINT/SIGTERM blocked: c1m_workers_wait takes them
     * with sigtimedwait. */
    return 0;
}

static int live_count(const struct c1m_workers *ws)
{
    int k = 0;
    for (int i = 0; i < ws->n; i++)
        k += ws->pids[i] > 0;
    return k;
}

void c1m_workers_stopping(void)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    signal(SIGINT, SIG_IGN); /* also discards one already pending */
    signal(SIGTERM, SIG_IGN);
    sigprocmask(SIG_BLOCK, &stop, NULL);
}

int c1m_workers_wait(struct c1m_workers *ws,
                     void (*on_fail)(int index, int status, void *ud), void *ud)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int stopping = 0; /* the workers were sent SIGTERM */
    while (live_count(ws) > 0) {
        /* Reap whatever has exited. */
        for (;;) {
            int st;
            pid_t pid = waitpid(-1, &st, WNOHANG);
            if (pid <= 0)
                break;
            for (int i = 0; i < ws->n; i++) {
                if (ws->pids[i] != pid)
                    continue;
                ws->pids[i] = 0;
                ws->status[i] = st;
                /* Killed by the SIGTERM sent below: a worker that had not
                 * taken its signals over yet (between fork and its loop's
                 * signalfd), stopped as asked, not failed. */
                int ok = (WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
                         (stopping && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
                if (!ok) {
                    ws->failed++;
                    if (!stopping) {
                        if (on_fail)
                            on_fail(i, st, ud);
                        stopping = 1; /* never run on half-dead */
                        c1m_workers_kill(ws, SIGTERM);
                    }
                }
            }
        }
        if (live_count(ws) == 0)
            break;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            stopping = 1;
            c1m_workers_kill(ws, SIGTERM);
        }
    }
    return ws->failed ? 1 : 0;
}
