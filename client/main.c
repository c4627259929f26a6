/* main.c - c1m-client: parse the command line, fork the connection workers,
 * then supervise from a small event loop: a 100 ms tick reaps workers, checks
 * usable memory, moves the run through ramp -> hold -> finish and prints the
 * progress line once a second. The summary is printed once every worker has
 * exited, from the shared counters. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn_worker.h"
#include "loop.h"
#include "net.h"
#include "options.h"
#include "progress.h"
#include "push_watch.h"
#include "reconnect.h"
#include "report.h"
#include "shared.h"
#include "sysinfo.h"
#include "workers.h"

#define TICK_MS 100
#define KILL_AFTER_NS (10 * 1000000000ull) /* finish -> SIGKILL for a worker still alive */

struct parent {
    const struct c1m_opts *o;
    struct c1m_shared *sh;
    struct c1m_workers ws;
    c1m_loop *loop;
    struct c1m_progress prog;
    uint64_t start, next_progress, hold_start, finish_at;
    int phase;
    int live;
    int signals;
    int worker_died;
    int killed;
    const char *stopped_reason;
    struct c1m_push_watch pw; /* SIGUSR1/SIGUSR2, --stall (push_watch.h) */
};

__attribute__((format(printf, 2, 3)))
static void note(struct parent *p, const char *fmt, ...)
{
    c1m_progress_break(&p->prog);
    va_list ap;
    va_start(ap, fmt);
    fputs("c1m-client: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void set_phase(struct parent *p, int phase, uint64_t now)
{
    if (phase <= p->phase)
        return;
    p->phase = phase;
    if (phase == C1M_PH_HOLD) {
        p->hold_start = now;
        C1M_STORE(p->sh->ctl.hold_start_ns, now);
    } else if (phase == C1M_PH_FINISH) {
        p->finish_at = now;
    }
    __atomic_store_n(&p->sh->ctl.phase, (uint64_t)phase, __ATOMIC_RELEASE);
}

static int stop_signal_pending(void)
{
    sigset_t pend;
    return sigpending(&pend) == 0 && (sigismember(&pend, SIGINT) || sigismember(&pend, SIGTERM));
}

static void describe_status(int st, char *buf, size_t len)
{
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(buf, len, "exited before the end of the run");
}

static void reap(struct parent *p)
{
    /* A stop signal may be waiting in the signalfd while the workers (same
     * process group on ^C) already exited: handle the signal first. */
    if (p->phase < C1M_PH_FINISH && stop_signal_pending())
        return;
    for (int i = 0; i < p->ws.n; i++) {
        if (p->ws.pids[i] <= 0)
            continue;
        int st;
        pid_t r;
        do
            r = waitpid(p->ws.pids[i], &st, WNOHANG);
        while (r < 0 && errno == EINTR);
        if (r == 0)
            continue;
        pid_t pid = p->ws.pids[i];
        p->ws.pids[i] = 0;
        p->ws.status[i] = st;
        p->live--;
        if (r < 0)
            st = 0x7f00; /* not our child any more: treat as a failure */
        int clean = r > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
        int expected = p->phase == C1M_PH_FINISH && (clean || p->killed);
        if (p->signals && WIFSIGNALED(st) &&
            (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM))
            expected = 1; /* stopped by the ^C/TERM before it took over its signals */
        if (expected)
            continue;
        char why[96];
        describe_status(st, why, sizeof(why));
        note(p, "worker %d (pid %d) %s", i, (int)pid, why);
        p->ws.failed++;
        if (!p->worker_died) {
            p->worker_died = 1;
            if (!p->stopped_reason)
                p->stopped_reason = "worker-died";
        }
        set_phase(p, C1M_PH_FINISH, c1m_now_ns());
    }
}

static void check_memory(struct parent *p)
{
    const struct c1m_opts *o = p->o;
    if (!o->min_available_mib || p->phase != C1M_PH_RAMP || C1M_LOAD(p->sh->ctl.stop_new))
        return;
    long kib = c1m_mem_usable_kib();
    if (kib < 0 || kib / 1024 >= o->min_available_mib)
        return;
    C1M_STORE(p->sh->ctl.stop_new, 1);
    if (!p->stopped_reason)
        p->stopped_reason = "min-available";
    note(p, "usable memory %ld MiB (MemAvailable less the reclaimable slab) < --min-available %ld MiB: "
            "opening no new connections",
         kib / 1024, o->min_available_mib);
}

static void tick(c1m_loop *loop, uint64_t id, void *ud)
{
    (void)id;
    struct parent *p = ud;
    const struct c1m_opts *o = p->o;
    reap(p);
    check_memory(p);
    uint64_t now = c1m_now_ns();
    struct c1m_counts c;
    c1m_counts_collect(&c, p->sh, p->ws.n);
    if (p->phase == C1M_PH_RAMP && c.ramp_done == p->ws.n) {
        if (!o->quiet)
            note(p, "ramp done: %llu/%ld established, %llu failed in %.3f s",
                 (unsigned long long)c.established, o->connections,
                 (unsigned long long)c.failed, (double)(now - p->start) / 1e9);
        /* nothing open: there is nothing to hold */
        set_phase(p, o->hold == 0 || c.open == 0 ? C1M_PH_FINISH : C1M_PH_HOLD, now);
    }
    if (p->phase == C1M_PH_HOLD && o->hold > 0 &&
        (double)(now - p->hold_start) / 1e9 >= o->hold)
        set_phase(p, C1M_PH_FINISH, now);
    if (p->phase == C1M_PH_FINISH && p->live > 0 && !p->killed &&
        now - p->finish_at > KILL_AFTER_NS) {
        note(p, "%d worker(s) still running %llu s after the stop: SIGKILL", p->live,
             (unsigned long long)(KILL_AFTER_NS / 1000000000ull));
        p->killed = 1;
        c1m_workers_kill(&p->ws, SIGKILL);
    }
    if (!o->quiet && now >= p->next_progress && p->phase < C1M_PH_FINISH) {
        p->next_progress += 1000000000ull;
        if (p->next_progress <= now)
            p->next_progress = now + 1000000000ull;
        int holding = p->phase == C1M_PH_HOLD;
        c1m_progress_line(&p->prog, &c, o->connections, now, (double)(now - p->start) / 1e9,
                          holding, holding ? (double)(now - p->hold_start) / 1e9 : -1, o->hold);
    }
    c1m_push_watch_tick(&p->pw, p->phase);
    if (p->live == 0) {
        c1m_loop_stop(loop);
        return;
    }
    if (!c1m_loop_timer(loop, TICK_MS, tick, p)) {
        note(p, "timer: %s", strerror(errno));
        c1m_workers_kill(&p->ws, SIGKILL);
        p->killed = 1;
        c1m_loop_stop(loop);
    }
}

/* SIGKILL for the workers still closing their connections. One that closed
 * everything is exiting: killing it saves nothing (and, under ASan, cuts its
 * leak check short). A group's stop signal followed by a supervisor's own
 * SIGTERM is such a second signal. */
static void kill_closing(struct parent *p)
{
    for (int i = 0; i < p->ws.n; i++)
        if (p->ws.pids[i] > 0 && !C1M_LOAD(p->sh->w[i].exited))
            kill(p->ws.pids[i], SIGKILL);
}

static void on_signal(c1m_loop *loop, int signo, void *ud)
{
    (void)loop;
    struct parent *p = ud;
    if (p->signals++ == 0) {
        note(p, "%s: stopping the workers", signo == SIGINT ? "SIGINT" : "SIGTERM");
        /* the end of an infinite hold is the normal end, anything else stops early */
        int normal_end = p->phase == C1M_PH_HOLD && p->o->hold < 0;
        if (!normal_end && p->phase < C1M_PH_FINISH && !p->stopped_reason)
            p->stopped_reason = "signal";
        set_phase(p, C1M_PH_FINISH, c1m_now_ns());
    } else if (!p->killed) {
        note(p, "%s again: killing the workers still closing", signo == SIGINT ? "SIGINT" : "SIGTERM");
        p->killed = 1;
        kill_closing(p);
    }
}

static void warn_ports(const struct c1m_opts *o)
{
    if (!o->src_count)
        return;
    /* a source port can serve each server port once: the ephemeral range
     * times the server ports is what one source address holds */
    long ports = c1m_local_port_count() * (long)o->port_count;
    long per = (o->connections + (long)o->src_count - 1) / (long)o->src_count;
    if (ports > 0 && per > ports)
        fprintf(stderr,
                "c1m-client: warning: %ld connections per source address but "
                "ip_local_port_range has %ld ports%s: expect EADDRNOTAVAIL (use --src)\n",
                per, ports, o->port_count > 1 ? " (times the server ports)" : "");
}

int main(int argc, char **argv)
{
    struct c1m_opts o;
    int rc = c1m_opts_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    warn_ports(&o);

    FILE *json = NULL;
    if (o.json && !(json = fopen(o.json, "we"))) {
        fprintf(stderr, "c1m-client: --json: cannot write '%s': %s\n", o.json, strerror(errno));
        c1m_opts_usage();
        return 2;
    }
    size_t shsize = c1m_shared_size(o.workers);
    struct c1m_shared *sh =
        mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "c1m-client: mmap %zu bytes: %s\n", shsize, strerror(errno));
        return 1;
    }
    struct parent p = {.o = &o, .sh = sh, .phase = C1M_PH_RAMP};
    p.start = c1m_now_ns();
    sh->ctl.start_ns = p.start;
    p.next_progress = p.start + 1000000000ull;
    c1m_progress_init(&p.prog, p.start);
    check_memory(&p); /* already too low: the workers open nothing */
    struct c1m_wconf cf = {.o = &o, .sh = sh};
    if (c1m_workers_start(&p.ws, o.workers, c1m_conn_worker, &cf) < 0) {
        fprintf(stderr, "c1m-client: fork: %s\n", strerror(errno));
        return 1;
    }
    p.live = p.ws.n;
    /* SIGINT/SIGTERM stay blocked from c1m_workers_start: the signalfd takes them */
    p.loop = c1m_loop_new(c1m_nofile_limit());
    if (!p.loop || c1m_loop_signal(p.loop, SIGINT, on_signal, &p) < 0 ||
        c1m_loop_signal(p.loop, SIGTERM, on_signal, &p) < 0 ||
        c1m_push_watch_init(&p.pw, p.loop, &o, sh, p.ws.n, &p.prog) < 0 ||
        !c1m_loop_timer(p.loop, TICK_MS, tick, &p) || c1m_loop_run(p.loop) < 0) {
        fprintf(stderr, "c1m-client: event loop: %s\n", strerror(errno));
        c1m_workers_kill(&p.ws, SIGKILL);
        for (int i = 0; i < p.ws.n; i++)
            if (p.ws.pids[i] > 0)
                waitpid(p.ws.pids[i], NULL, 0);
        return 1;
    }
    /* The workers are gone and the summary is all that is left: a stop
     * signal now (unblocked by c1m_loop_free) would only lose it. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    c1m_loop_free(p.loop);
    c1m_progress_break(&p.prog);

    struct c1m_summary *s = calloc(1, sizeof(*s));
    if (!s) {
        fprintf(stderr, "c1m-client: out of memory\n");
        return 1;
    }
    s->target = o.connections;
    s->workers = o.workers;
    s->heartbeat = o.heartbeat > 0 && o.hold != 0;
    s->elapsed_s = (double)(c1m_now_ns() - p.start) / 1e9;
    s->stopped_reason = p.stopped_reason;
    s->stall = o.stall;
    s->reconnect = o.reconnect;
    s->backoff_base_ms = o.backoff_base_ms;
    s->backoff_cap_ms = o.backoff_cap_ms;
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
        s->cpu_user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
        s->cpu_sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    }
    c1m_summary_collect(s, sh, o.workers);
    c1m_report_text(stdout, s);
    fflush(stdout);
    /* held to the end: nothing closed by the peer, or with --reconnect every
     * slot open again when the stop began */
    int held = o.reconnect == C1M_RECONNECT_OFF ? s->c.closed_by_peer == 0
                                                : s->c.open == (uint64_t)o.connections;
    int status = (s->c.established == (uint64_t)o.connections && held &&
                  s->c.lost == 0 && !p.worker_died) ? 0 : 1;
    if (json) {
        if (c1m_report_json(json, s) < 0 || fclose(json) == EOF) {
            fprintf(stderr, "c1m-client: --json: writing '%s': %s\n", o.json, strerror(errno));
            status = 1;
        }
    }
    free(s);
    c1m_workers_free(&p.ws);
    munmap(sh, shsize);
    return status;
}
