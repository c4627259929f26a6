/* stat_main.c - c1m-stat: print or wait on a live counters file (stats.h).
 * Reads shared memory only; never touches the server's sockets. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
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
           "  --total          only the total line\n"
           "  --json           {\"kind\":..,\"workers\":[..],\"total\":{..}}\n"
           "  --csv            one line per sample: unix_ms,open,accepted,closed,slow,listening,full\n"
           "                   (a header first; for ramp curves with --watch)\n"
           "  --get FIELD      print one total: open accepted closed slow lines pongs oversized\n"
           "                   accept_errors workers listening full stopping exited failed ready\n"
           "                   (ready = 1 when every worker is listening or full)\n"
           "  --watch MS       print again every MS milliseconds (with --count N: N times)\n"
           "  --wait-ready     exit 0 once ready, 1 at --timeout\n"
           "  --wait FIELD=N   exit 0 once total FIELD >= N, 1 at --timeout\n"
           "  --timeout S      for the waits (default 30)\n");
}

struct total {
    uint64_t workers, st[6], open, accepted, closed, slow, lines, pongs, oversized, accept_errors;
    uint64_t pid; /* parent pid from the header */
};

static void sum(const struct c1m_stats *s, struct total *t, struct c1m_stats_worker *recs)
{
    memset(t, 0, sizeof(*t));
    t->workers = s->hdr->nworkers;
    t->pid = s->hdr->parent_pid;
    for (uint32_t i = 0; i < s->hdr->nworkers; i++) {
        struct c1m_stats_worker *w = &recs[i];
        c1m_stats_read(s, i, w);
        if (w->state < 6)
            t->st[w->state]++;
        t->open += w->open;
        t->accepted += w->accepted;
        t->closed += w->closed;
        t->slow += w->slow;
        t->lines += w->lines;
        t->pongs += w->pongs;
        t->oversized += w->oversized;
        t->accept_errors += w->accept_errors;
    }
}

static int field(const struct total *t, const char *name, uint64_t *out)
{
    struct { const char *n; uint64_t v; } f[] = {
        {"open", t->open}, {"accepted", t->accepted}, {"closed", t->closed}, {"slow", t->slow},
        {"lines", t->lines}, {"pongs", t->pongs}, {"oversized", t->oversized},
        {"accept_errors", t->accept_errors}, {"workers", t->workers},
        {"starting", t->st[C1M_ST_STARTING]}, {"listening", t->st[C1M_ST_LISTENING]},
        {"full", t->st[C1M_ST_FULL]}, {"stopping", t->st[C1M_ST_STOPPING]},
        {"exited", t->st[C1M_ST_EXITED]}, {"failed", t->st[C1M_ST_FAILED]},
        {"ready", t->workers > 0 && t->st[C1M_ST_LISTENING] + t->st[C1M_ST_FULL] == t->workers},
        {"pid", t->pid},
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (!strcmp(name, f[i].n)) {
            *out = f[i].v;
            return 0;
        }
    return -1;
}

#define COUNTERS_FMT "open=%llu accepted=%llu closed=%llu slow=%llu lines=%llu pongs=%llu " \
                     "oversized=%llu accept_errors=%llu"
#define U(x) (unsigned long long)(x)

static void print_text(const struct c1m_stats *s, const struct total *t,
                       const struct c1m_stats_worker *recs, int total_only)
{
    if (!total_only)
        for (uint32_t i = 0; i < t->workers; i++) {
            const struct c1m_stats_worker *w = &recs[i];
            printf("worker=%u pid=%llu state=%s " COUNTERS_FMT "\n", i, U(w->pid),
                   c1m_state_name(w->state), U(w->open), U(w->accepted), U(w->closed), U(w->slow),
                   U(w->lines), U(w->pongs), U(w->oversized), U(w->accept_errors));
        }
    printf("total kind=%.32s workers=%llu listening=%llu full=%llu failed=%llu " COUNTERS_FMT "\n",
           s->hdr->kind, U(t->workers), U(t->st[C1M_ST_LISTENING]), U(t->st[C1M_ST_FULL]),
           U(t->st[C1M_ST_FAILED]), U(t->open), U(t->accepted), U(t->closed), U(t->slow),
           U(t->lines), U(t->pongs), U(t->oversized), U(t->accept_errors));
}

#define JCOUNTERS "\"open\":%llu,\"accepted\":%llu,\"closed\":%llu,\"slow\":%llu,\"lines\":%llu," \
                  "\"pongs\":%llu,\"oversized\":%llu,\"accept_errors\":%llu"

static void print_json(const struct c1m_stats *s, const struct total *t,
                       const struct c1m_stats_worker *recs)
{
    printf("{\"kind\":\"%.32s\",\"target\":%llu,\"parent_pid\":%llu,\"workers\":[", s->hdr->kind,
           U(s->hdr->target), U(s->hdr->parent_pid));
    for (uint32_t i = 0; i < t->workers; i++) {
        const struct c1m_stats_worker *w = &recs[i];
        printf("%s{\"pid\":%llu,\"state\":\"%s\"," JCOUNTERS "}", i ? "," : "", U(w->pid),
               c1m_state_name(w->state), U(w->open), U(w->accepted), U(w->closed), U(w->slow),
               U(w->lines), U(w->pongs), U(w->oversized), U(w->accept_errors));
    }
    printf("],\"total\":{\"workers\":%llu,\"listening\":%llu,\"full\":%llu,\"failed\":%llu," JCOUNTERS
           "}}\n", U(t->workers), U(t->st[C1M_ST_LISTENING]), U(t->st[C1M_ST_FULL]),
           U(t->st[C1M_ST_FAILED]), U(t->open), U(t->accepted), U(t->closed), U(t->slow),
           U(t->lines), U(t->pongs), U(t->oversized), U(t->accept_errors));
}

static int usage_error(const char *flag, const char *why)
{
    fprintf(stderr, "c1m-stat: %s: %s\n%s", flag, why, usage_line);
    return 2;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

int main(int argc, char **argv)
{
    int total_only = 0, json = 0, csv = 0, wait_ready = 0;
    const char *get = NULL, *path = NULL;
    char wait_field[32] = "";
    long watch = 0, count = 0, timeout = 30, wait_n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            return 0;
        } else if (!strcmp(a, "--total")) {
            total_only = 1;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--csv")) {
            csv = 1;
        } else if (!strcmp(a, "--wait-ready")) {
            wait_ready = 1;
        } else if (!strcmp(a, "--get") || !strcmp(a, "--watch") || !strcmp(a, "--count") ||
                   !strcmp(a, "--timeout") || !strcmp(a, "--wait")) {
            if (i + 1 >= argc)
                return usage_error(a, "needs a value");
            const char *v = argv[++i];
            if (!strcmp(a, "--get")) {
                get = v;
            } else if (!strcmp(a, "--wait")) {
                const char *eq = strchr(v, '=');
                if (!eq || eq == v || (size_t)(eq - v) >= sizeof(wait_field) ||
                    c1m_parse_long(eq + 1, 0, 1L << 40, 1, &wait_n) < 0)
                    return usage_error(a, "expects FIELD=N, e.g. open=2000");
                memcpy(wait_field, v, (size_t)(eq - v));
                wait_field[eq - v] = 0;
            } else {
                long *dst = !strcmp(a, "--watch") ? &watch : !strcmp(a, "--count") ? &count : &timeout;
                if (c1m_parse_long(v, 1, 86400000, 0, dst) < 0)
                    return usage_error(a, "expects a positive number");
            }
        } else if (a[0] == '-') {
            return usage_error(a, "unknown flag");
        } else if (!path) {
            path = a;
        } else {
            return usage_error(a, "only one FILE");
        }
    }
    if (!path)
        return usage_error("FILE", "missing");
    struct total probe = {0};
    uint64_t dummy;
    if (get && field(&probe, get, &dummy) < 0)
        return usage_error("--get", "unknown field");
    if (wait_field[0] && field(&probe, wait_field, &dummy) < 0)
        return usage_error("--wait", "unknown field");

    /* The waits tolerate a file that does not exist yet (server starting). */
    int waiting = wait_ready || wait_field[0];
    uint64_t deadline = c1m_now_ns() + (uint64_t)timeout * 1000000000ull;
    struct c1m_stats s;
    while (c1m_stats_open(&s, path) < 0) {
        if (!waiting || c1m_now_ns() > deadline) {
            fprintf(stderr, "c1m-stat: %s: %s\n", path,
                    errno == EPROTO ? "not a c1m counters file" : strerror(errno));
            return 1;
        }
        sleep_ms(20);
    }
    struct c1m_stats_worker *recs = calloc(s.hdr->nworkers ? s.hdr->nworkers : 1, sizeof(*recs));
    if (!recs) {
        perror("c1m-stat");
        return 1;
    }
    struct total t;
    int rc = 0;
    if (waiting) {
        for (;;) {
            sum(&s, &t, recs);
            uint64_t v = 0;
            if (wait_ready ? (field(&t, "ready", &v), v == 1)
                           : (field(&t, wait_field, &v), v >= (uint64_t)wait_n))
                break;
            if (t.st[C1M_ST_FAILED] > 0 || c1m_now_ns() > deadline) {
                fprintf(stderr, "c1m-stat: %s\n", t.st[C1M_ST_FAILED] ? "a worker failed" : "timed out");
                print_text(&s, &t, recs, 1);
                rc = 1;
                break;
            }
            sleep_ms(10);
        }
    } else {
        for (long n = 0;; n++) {
            sum(&s, &t, recs);
            if (get) {
                uint64_t v = 0;
                field(&t, get, &v);
                printf("%llu\n", U(v));
            } else if (csv) {
                struct timespec now;
                clock_gettime(CLOCK_REALTIME, &now);
                if (n == 0)
                    printf("unix_ms,open,accepted,closed,slow,listening,full\n");
                printf("%lld,%llu,%llu,%llu,%llu,%llu,%llu\n",
                       (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, U(t.open),
                       U(t.accepted), U(t.closed), U(t.slow), U(t.st[C1M_ST_LISTENING]),
                       U(t.st[C1M_ST_FULL]));
            } else if (json) {
                print_json(&s, &t, recs);
            } else {
                print_text(&s, &t, recs, total_only);
            }
            fflush(stdout);
            if (!watch || (count && n + 1 >= count))
                break;
            sleep_ms(watch);
        }
    }
    free(recs);
    c1m_stats_close(&s);
    return rc;
}
