/* stat_main.c - c1m-stat: print or wait on a live counters file (stats.h).
 * Reads the file only; never touches the server's sockets. The one reader of
 * the format: the Python servers write the same file and are read by this. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "loop.h"
#include "stats.h"

static const char usage_line[] =
    "usage: c1m-stat [--total | --json | --csv | --get FIELD] [--watch MS [--count N]]\n"
    "                [--wait-ready | --wait FIELD=N] [--timeout S] FILE\n";

static void help(void)
{
    printf("%s", usage_line);
    printf("\nPrints the counters a c1m server publishes in FILE: one line per worker and a\n"
           "'total' line (key=value), or JSON.\n\n"
           "A worker is dead when its state is failed, or its process is gone (or a zombie)\n"
           "while it was neither starting nor exited: it is shown with dead=1, counted in\n"
           "workers_dead, and its counters are left out of every total.\n\n"
           "  --total          only the total line\n"
           "  --json           {\"kind\":..,\"workers\":[..],\"total\":{..}}\n"
           "  --csv            one line per sample: unix_ms,open,accepted,closed,slow,listening,\n"
           "                   full,workers_dead,pushed,stale_ms,lag_ms (a header first; for ramp\n"
           "                   curves with --watch; stale_ms: the oldest live worker's counters'\n"
           "                   age; lag_ms: their age weighted by each worker's open connections,\n"
           "                   at least the live workers' mean)\n"
           "  --get FIELD      print one total: open accepted closed slow lines pongs oversized\n"
           "                   accept_errors pushed workers workers_dead starting listening full\n"
           "                   stopping exited failed ready pid (ready = 1 when every worker\n"
           "                   is alive and listening or full; pid = the server's)\n"
           "  --watch MS       print again every MS milliseconds (with --count N: N times)\n"
           "  --wait-ready     exit 0 once ready, 1 at --timeout or when a worker is dead\n"
           "  --wait FIELD=N   exit 0 once total FIELD >= N (live workers only), 1 at\n"
           "                   --timeout or as soon as a worker is dead\n"
           "  --timeout S      for the waits (default 30)\n\n"
           "The waits and --watch follow FILE: a server started again with the same --stats\n"
           "renames its new file over the old one, and that new file is read from then on.\n"
           "They end (exit 1) once the process that started c1m-stat is gone: nobody is left\n"
           "to read the answer (a script killed with SIGKILL leaves no waiter behind).\n\n"
           "Exit status: 0 ok, 1 unreadable, truncated or invalid FILE (or a wait that\n"
           "failed), 2 usage error.\n");
}

struct sample {
    struct c1m_stats_total t;
    uint64_t pid; /* the server's (parent) pid, from the header */
};

/* The value of a --get/--wait field; -1 for an unknown name. */
static int field(const struct sample *s, const char *name, uint64_t *out)
{
    const struct c1m_stats_total *t = &s->t;
    uint64_t alive_ready = t->state[C1M_ST_LISTENING] + t->state[C1M_ST_FULL];
    struct { const char *n; uint64_t v; } f[] = {
        {"open", t->open}, {"accepted", t->accepted}, {"closed", t->closed}, {"slow", t->slow},
        {"lines", t->lines}, {"pongs", t->pongs}, {"oversized", t->oversized},
        {"accept_errors", t->accept_errors}, {"pushed", t->pushed}, {"workers", t->workers},
        {"workers_dead", t->workers_dead},
        {"starting", t->state[C1M_ST_STARTING]}, {"listening", t->state[C1M_ST_LISTENING]},
        {"full", t->state[C1M_ST_FULL]}, {"stopping", t->state[C1M_ST_STOPPING]},
        {"exited", t->state[C1M_ST_EXITED]}, {"failed", t->failed},
        {"ready", t->workers > 0 && t->workers_dead == 0 && alive_ready == t->workers},
        {"pid", s->pid},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!strcmp(name, f[i].n)) {
            *out = f[i].v;
            return 0;
        }
    return -1;
}

#define COUNTERS_FMT "open=%llu accepted=%llu closed=%llu slow=%llu lines=%llu pongs=%llu " \
                     "oversized=%llu accept_errors=%llu pushed=%llu"
#define U(x) (unsigned long long)(x)
#define COUNTERS(w) U((w)->open), U((w)->accepted), U((w)->closed), U((w)->slow), \
                    U((w)->lines), U((w)->pongs), U((w)->oversized), U((w)->accept_errors), \
                    U((w)->pushed)

/* kind as text: NUL-padded bytes from the file, printed up to the first NUL;
 * anything outside printable ASCII (and, for JSON, quote and backslash) is
 * escaped, so a hostile file cannot break the output's syntax. */
static void put_kind(const struct c1m_stats_header *h, int json)
{
    for (size_t i = 0; i < sizeof(h->kind) && h->kind[i]; i++) {
        unsigned char c = (unsigned char)h->kind[i];
        if (json && (c == '"' || c == '\\'))
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f || (!json && c == ' '))
            printf(json ? "\\u%04x" : "\\x%02x", c);
        else
            putchar(c);
    }
}

static void print_text(const struct c1m_stats_reader *r, const struct sample *s,
                       const struct c1m_stats_worker *recs, const unsigned char *dead,
                       int total_only)
{
    const struct c1m_stats_total *t = &s->t;
    if (!total_only)
        for (uint32_t i = 0; i < r->nworkers; i++) {
            const struct c1m_stats_worker *w = &recs[i];
            printf("worker=%u pid=%llu state=%s dead=%d " COUNTERS_FMT "\n", i, U(w->pid),
                   c1m_state_name(w->state), dead[i], COUNTERS(w));
        }
    printf("total kind=");
    put_kind(&r->hdr, 0);
    printf(" workers=%llu listening=%llu full=%llu failed=%llu workers_dead=%llu " COUNTERS_FMT
           "\n", U(t->workers), U(t->state[C1M_ST_LISTENING]), U(t->state[C1M_ST_FULL]),
           U(t->failed), U(t->workers_dead), COUNTERS(t));
}

#define JCOUNTERS "\"open\":%llu,\"accepted\":%llu,\"closed\":%llu,\"slow\":%llu,\"lines\":%llu," \
                  "\"pongs\":%llu,\"oversized\":%llu,\"accept_errors\":%llu,\"pushed\":%llu"

static void print_json(const struct c1m_stats_reader *r, const struct sample *s,
                       const struct c1m_stats_worker *recs, const unsigned char *dead)
{
    const struct c1m_stats_total *t = &s->t;
    printf("{\"kind\":\"");
    put_kind(&r->hdr, 1);
    printf("\",\"target\":%llu,\"parent_pid\":%llu,\"workers\":[", U(r->hdr.target),
           U(r->hdr.parent_pid));
    for (uint32_t i = 0; i < r->nworkers; i++) {
        const struct c1m_stats_worker *w = &recs[i];
        printf("%s{\"pid\":%llu,\"state\":\"%s\",\"dead\":%d," JCOUNTERS "}", i ? "," : "",
               U(w->pid), c1m_state_name(w->state), dead[i], COUNTERS(w));
    }
    printf("],\"total\":{\"workers\":%llu,\"listening\":%llu,\"full\":%llu,\"failed\":%llu,"
           "\"workers_dead\":%llu," JCOUNTERS "}}\n",
           U(t->workers), U(t->state[C1M_ST_LISTENING]), U(t->state[C1M_ST_FULL]), U(t->failed),
           U(t->workers_dead), COUNTERS(t));
}

/* lag_ms: the live workers' counters' age, each weighted by its connections.
 * A worker's rate (lines pushed, connections accepted) goes with its
 * connections, so a count read N ms late is short by about that worker's
 * share of the rate times N: over all workers, the total rate times this
 * weighted age. The oldest age alone (stale_ms) would let one starved worker
 * of fifty void every window. A worker weighs at least the live workers'
 * mean: its own open count is as old as the rest of its record, and a
 * worker starved since the ramp published fewer connections than it holds.
 * 0 with no connection. */
static uint64_t weighted_age_ms(const struct c1m_stats_worker *recs, const unsigned char *dead,
                                uint32_t n, uint64_t mono)
{
    double sum = 0, weights = 0, open = 0, live = 0; /* counters from a file: no overflow */
    for (uint32_t i = 0; i < n; i++) {
        if (!dead[i] && recs[i].updated_ns) {
            open += (double)recs[i].open;
            live++;
        }
    }
    if (open <= 0)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct c1m_stats_worker *w = &recs[i];
        if (dead[i] || !w->updated_ns)
            continue;
        double weight = (double)w->open > open / live ? (double)w->open : open / live;
        uint64_t age = w->updated_ns < mono ? (mono - w->updated_ns) / 1000000 : 0;
        sum += weight * (double)age;
        weights += weight;
    }
    return (uint64_t)(sum / weights + 0.5);
}

static void print_csv(const struct c1m_stats_reader *r, const struct sample *s,
                      const struct c1m_stats_worker *recs, const unsigned char *dead, long n)
{
    const struct c1m_stats_total *t = &s->t;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (n == 0)
        printf("unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed,stale_ms,"
               "lag_ms\n");
    /* stale_ms: how old the oldest live worker's counters are; lag_ms: their
     * age weighted by each worker's connections (above). A Python worker
     * publishes from a timer in its loop, so a starved one publishes late: a
     * rate taken between two samples is only as good as their counters' age
     * (harness/lib/pushkept.py). The new columns come last: readers that take
     * columns by position keep working. */
    uint64_t mono = c1m_now_ns();
    uint64_t stale = t->oldest_ns && t->oldest_ns < mono ? (mono - t->oldest_ns) / 1000000 : 0;
    printf("%lld,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
           (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, U(t->open), U(t->accepted),
           U(t->closed), U(t->slow), U(t->state[C1M_ST_LISTENING]), U(t->state[C1M_ST_FULL]),
           U(t->workers_dead), U(t->pushed), U(stale),
           U(weighted_age_ms(recs, dead, r->nworkers, mono)));
}

/* The process that started this one, for orphaned(). */
static pid_t starter;

/* True once the starter is gone (this process reparented): a wait or a watch
 * nobody reads must not outlive, say, a run_one.sh killed with SIGKILL. */
static int orphaned(void)
{
    if (getppid() == starter)
        return 0;
    fprintf(stderr, "c1m-stat: the process that started it (pid %d) is gone: stopping\n",
            (int)starter);
    return 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

enum { F_HELP, F_H, F_TOTAL, F_JSON, F_CSV, F_WAIT_READY, F_GET, F_WATCH, F_COUNT, F_TIMEOUT,
       F_WAIT, F_NFLAGS };
static const struct c1m_cli_flag flags[F_NFLAGS] = {
    [F_HELP] = {"--help", 0}, [F_H] = {"-h", 0}, [F_TOTAL] = {"--total", 0},
    [F_JSON] = {"--json", 0}, [F_CSV] = {"--csv", 0}, [F_WAIT_READY] = {"--wait-ready", 0},
    [F_GET] = {"--get", 1}, [F_WATCH] = {"--watch", 1}, [F_COUNT] = {"--count", 1},
    [F_TIMEOUT] = {"--timeout", 1}, [F_WAIT] = {"--wait", 1},
};

struct opts {
    int total_only, json, csv, wait_ready;
    const char *get, *path;
    char wait_field[32];
    long watch, count, timeout, wait_n;
};

/* -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct opts *o)
{
    struct c1m_cli c;
    c1m_cli_init(&c, "c1m-stat", usage_line, flags, F_NFLAGS, argc, argv);
    int f;
    unsigned valued = 0; /* the flags with a value seen: a second one would replace the first */
    while ((f = c1m_cli_next(&c)) != C1M_CLI_END) {
        const char *v = c.value;
        if (f == F_GET || f == F_WAIT || f == F_WATCH || f == F_COUNT || f == F_TIMEOUT) {
            if (valued & (1u << f))
                return c1m_cli_error(&c, c.flag, NULL, "given twice (one per run)");
            valued |= 1u << f;
        }
        switch (f) {
        case C1M_CLI_ERROR:
            return 2;
        case C1M_CLI_POSITIONAL:
            if (o->path)
                return c1m_cli_error(&c, v, NULL, "only one FILE");
            o->path = v;
            break;
        case F_HELP: case F_H: help(); return 0;
        case F_TOTAL: o->total_only = 1; break;
        case F_JSON: o->json = 1; break;
        case F_CSV: o->csv = 1; break;
        case F_WAIT_READY: o->wait_ready = 1; break;
        case F_GET: o->get = v; break;
        case F_WAIT: {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof(o->wait_field) ||
                c1m_parse_long(eq + 1, 0, 1L << 40, 1, &o->wait_n) < 0)
                return c1m_cli_error(&c, c.flag, v, "expects FIELD=N, e.g. open=2000");
            memcpy(o->wait_field, v, (size_t)(eq - v));
            o->wait_field[eq - v] = 0;
            break;
        }
        case F_WATCH: case F_COUNT: case F_TIMEOUT: {
            long *dst = f == F_WATCH ? &o->watch : f == F_COUNT ? &o->count : &o->timeout;
            if (c1m_parse_long(v, 1, 86400000, 0, dst) < 0)
                return c1m_cli_error(&c, c.flag, v, "expects a number 1-86400000");
            break;
        }
        }
    }
    if (!o->path)
        return c1m_cli_error(&c, "FILE", NULL, "missing");
    /* One output (or one wait) per run: a second one would be silently
     * ignored, so it is a usage error, as is a --count without --watch. */
    const char *given[] = {o->total_only ? "--total" : NULL, o->json ? "--json" : NULL,
                           o->csv ? "--csv" : NULL, o->get ? "--get" : NULL,
                           o->wait_ready ? "--wait-ready" : NULL,
                           o->wait_field[0] ? "--wait" : NULL};
    int seen = 0;
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
        if (given[i] && seen++)
            return c1m_cli_error(&c, given[i], NULL,
                                 "only one of --total, --json, --csv, --get, --wait-ready, --wait");
    if (o->count && !o->watch)
        return c1m_cli_error(&c, "--count", NULL, "needs --watch");
    if (o->watch && (o->wait_ready || o->wait_field[0]))
        return c1m_cli_error(&c, "--watch", NULL, "cannot be combined with a wait");
    struct sample probe;
    memset(&probe, 0, sizeof(probe));
    uint64_t dummy;
    if (o->get && field(&probe, o->get, &dummy) < 0)
        return c1m_cli_error(&c, "--get", o->get, "unknown field");
    if (o->wait_field[0] && field(&probe, o->wait_field, &dummy) < 0)
        return c1m_cli_error(&c, "--wait", o->wait_field, "unknown field");
    return -1;
}

/* A server writes a new file and renames it over the path at every start: a
 * wait or --watch that opened an earlier run's file (one left at the same
 * path) follows the path to the new one. 1 when *r now reads another file,
 * 0 when unchanged (or the new one is not readable yet), -1 out of memory. */
static int follow_path(struct c1m_stats_reader *r, const char *path,
                       struct c1m_stats_worker **recs, unsigned char **dead)
{
    struct stat now, cur;
    if (stat(path, &now) < 0 || fstat(r->fd, &cur) < 0 ||
        (now.st_ino == cur.st_ino && now.st_dev == cur.st_dev))
        return 0;
    struct c1m_stats_reader nr;
    if (c1m_stats_reader_open(&nr, path) < 0)
        return 0;
    size_t n = nr.nworkers ? nr.nworkers : 1;
    struct c1m_stats_worker *nrecs = calloc(n, sizeof(*nrecs));
    unsigned char *ndead = calloc(n, 1);
    if (!nrecs || !ndead) {
        free(nrecs);
        free(ndead);
        c1m_stats_reader_close(&nr);
        return -1;
    }
    c1m_stats_reader_close(r);
    free(*recs);
    free(*dead);
    *r = nr;
    *recs = nrecs;
    *dead = ndead;
    return 1;
}

static int file_error(const char *path, int err)
{
    fprintf(stderr, "c1m-stat: %s: %s\n", path, c1m_stats_strerror(err));
    return 1;
}

static int run(int argc, char **argv)
{
    struct opts o = {.timeout = 30};
    starter = getppid();
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;

    /* The waits tolerate a file that does not exist yet (server starting). */
    int waiting = o.wait_ready || o.wait_field[0];
    uint64_t deadline = c1m_now_ns() + (uint64_t)o.timeout * 1000000000ull;
    struct c1m_stats_reader r;
    while (c1m_stats_reader_open(&r, o.path) < 0) {
        /* a directory or a FIFO will not turn into a counters file */
        if (!waiting || errno == EISDIR || errno == C1M_ENOTREG || c1m_now_ns() > deadline)
            return file_error(o.path, errno);
        if (orphaned())
            return 1;
        sleep_ms(20);
    }
    struct c1m_stats_worker *recs = calloc(r.nworkers ? r.nworkers : 1, sizeof(*recs));
    unsigned char *dead = calloc(r.nworkers ? r.nworkers : 1, 1);
    if (!recs || !dead) {
        perror("c1m-stat");
        free(recs);
        c1m_stats_reader_close(&r);
        return 1;
    }
    struct sample s = {.pid = r.hdr.parent_pid};
    rc = 0;
    for (long n = 0;; n++) {
        if ((waiting || o.watch) && n > 0) {
            int f = follow_path(&r, o.path, &recs, &dead);
            if (f < 0) {
                perror("c1m-stat");
                rc = 1;
                break;
            }
            if (f > 0)
                s.pid = r.hdr.parent_pid;
        }
        if (c1m_stats_sum(&r, recs, dead, &s.t) < 0) {
            rc = file_error(o.path, errno);
            break;
        }
        if (waiting) {
            /* A dead worker fails the wait even when the live ones reach N:
             * a worker that died is a failure, never a count. */
            uint64_t v = 0;
            if (s.t.workers_dead == 0 &&
                (o.wait_ready ? (field(&s, "ready", &v), v == 1)
                              : (field(&s, o.wait_field, &v), v >= (uint64_t)o.wait_n)))
                break;
            if (s.t.workers_dead > 0 || c1m_now_ns() > deadline) {
                fprintf(stderr, "c1m-stat: %s\n", s.t.workers_dead ? "a worker is dead" : "timed out");
                print_text(&r, &s, recs, dead, 0);
                rc = 1;
                break;
            }
            if (orphaned()) {
                rc = 1;
                break;
            }
            sleep_ms(10);
            continue;
        }
        if (o.get) {
            uint64_t v = 0;
            field(&s, o.get, &v);
            printf("%llu\n", U(v));
        } else if (o.csv) {
            print_csv(&r, &s, recs, dead, n);
        } else if (o.json) {
            print_json(&r, &s, recs, dead);
        } else {
            print_text(&r, &s, recs, dead, o.total_only);
        }
        /* a full disk or a closed stdout is a failure, not a silent success */
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "c1m-stat: cannot write the output: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        if (!o.watch || (o.count && n + 1 >= o.count))
            break;
        if (orphaned()) {
            rc = 1;
            break;
        }
        sleep_ms(o.watch);
    }
    free(recs);
    free(dead);
    c1m_stats_reader_close(&r);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    /* Done: a stop signal now would only cut the exit short. Under ASan it
     * would end LeakSanitizer's exit check mid-way (its tracer passes the
     * signal on, and the report says "Unable to get registers"). */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    return rc;
}
