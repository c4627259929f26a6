/* stats_reader.c - the one reader of the counters file (stats.h): validation
 * over bytes, record copies with pread (no mapping: a truncated file is an
 * error, not a SIGBUS), dead-worker detection and totals. */
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int c1m_stats_validate(const void *buf, size_t len, uint32_t *nworkers)
{
    struct c1m_stats_header h;
    if (!buf || len < sizeof(h))
        goto bad;
    memcpy(&h, buf, sizeof(h));
    if (memcmp(h.magic, C1M_STATS_MAGIC, 8) != 0 || h.version != C1M_STATS_VERSION ||
        h.nworkers > C1M_STATS_MAX_WORKERS ||
        sizeof(h) + (size_t)h.nworkers * sizeof(struct c1m_stats_worker) > len)
        goto bad;
    *nworkers = h.nworkers;
    return 0;
bad:
    errno = EPROTO;
    return -1;
}

/* pread exactly len bytes at off; a short read means the file shrank. */
static int pread_all(int fd, void *buf, size_t len, off_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EPROTO;
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

int c1m_stats_reader_attach(struct c1m_stats_reader *r, int fd)
{
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        goto fail;
    if (!S_ISREG(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : C1M_ENOTREG;
        goto fail;
    }
    size_t max = sizeof(struct c1m_stats_header) +
                 (size_t)C1M_STATS_MAX_WORKERS * sizeof(struct c1m_stats_worker);
    if (sb.st_size < (off_t)sizeof(struct c1m_stats_header) || (size_t)sb.st_size > max) {
        errno = EPROTO;
        goto fail;
    }
    /* Validate the whole file as it is now (one copy, bounded by max). */
    size_t len = (size_t)sb.st_size;
    void *buf = malloc(len);
    if (!buf)
        goto fail;
    ssize_t n;
    do
        n = pread(fd, buf, len, 0);
    while (n < 0 && errno == EINTR);
    uint32_t nw = 0;
    if (n < 0 || c1m_stats_validate(buf, (size_t)n, &nw) < 0) {
        int e = n < 0 ? errno : EPROTO;
        free(buf);
        errno = e;
        goto fail;
    }
    memcpy(&r->hdr, buf, sizeof(r->hdr));
    free(buf);
    r->fd = fd;
    r->nworkers = nw;
    return 0;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

int c1m_stats_reader_open(struct c1m_stats_reader *r, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    return c1m_stats_reader_attach(r, fd);
}

int c1m_stats_reader_read(const struct c1m_stats_reader *r, uint32_t i,
                          struct c1m_stats_worker *out)
{
    if (i >= r->nworkers) {
        errno = EINVAL;
        return -1;
    }
    off_t off = (off_t)(sizeof(struct c1m_stats_header) + (size_t)i * sizeof(*out));
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t s2;
        if (pread_all(r->fd, out, sizeof(*out), off) < 0 ||
            pread_all(r->fd, &s2, sizeof(s2), off) < 0)
            return -1;
        if (out->seq == s2 && !(s2 & 1))
            return 0;
    }
    return 0; /* a writer that died mid-update: its last copy as is */
}

void c1m_stats_reader_close(struct c1m_stats_reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    memset(r, 0, sizeof(*r));
    r->fd = -1;
}

const char *c1m_stats_strerror(int err)
{
    switch (err) {
    case EPROTO: return "not a c1m counters file (or truncated)";
    case EISDIR: return "is a directory, not a counters file";
    case C1M_ENOTREG: return "not a regular file";
    default: return strerror(err);
    }
}

/* A zombie still answers kill(pid, 0): ask /proc for its state letter. */
static int pid_is_zombie(pid_t pid)
{
    char path[40], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT; /* gone between kill() and here */
    ssize_t n;
    do
        n = read(fd, buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* comm may hold spaces and parens */
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

int c1m_stats_worker_dead(const struct c1m_stats_worker *w)
{
    if (w->state == C1M_ST_FAILED)
        return 1;
    if (w->state == C1M_ST_EXITED)
        return 0;
    if (w->pid == 0)
        return w->state != C1M_ST_STARTING; /* a worker publishes its pid first */
    if (w->pid > (uint64_t)INT_MAX)
        return 1; /* no such process can exist */
    pid_t pid = (pid_t)w->pid;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    return pid_is_zombie(pid);
}

/* a + b, at most UINT64_MAX: no server counts that far (2^64 connections),
 * but a counters file is input, and a hostile one summed modulo 2^64 read as
 * a small total (open 2^63 twice: 0). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int c1m_stats_sum(const struct c1m_stats_reader *r, struct c1m_stats_worker *recs,
                  unsigned char *dead, struct c1m_stats_total *t)
{
    memset(t, 0, sizeof(*t));
    t->workers = r->nworkers;
    for (uint32_t i = 0; i < r->nworkers; i++) {
        struct c1m_stats_worker *w = &recs[i];
        if (c1m_stats_reader_read(r, i, w) < 0)
            return -1;
        if (w->state == C1M_ST_FAILED)
            t->failed++;
        dead[i] = (unsigned char)c1m_stats_worker_dead(w);
        if (dead[i]) {
            t->workers_dead++;
            continue; /* a dead worker's last counters are not connections */
        }
        if (w->state < 6)
            t->state[w->state]++;
        t->open = sat_add(t->open, w->open);
        t->accepted = sat_add(t->accepted, w->accepted);
        t->closed = sat_add(t->closed, w->closed);
        t->slow = sat_add(t->slow, w->slow);
        t->lines = sat_add(t->lines, w->lines);
        t->pongs = sat_add(t->pongs, w->pongs);
        t->oversized = sat_add(t->oversized, w->oversized);
        t->accept_errors = sat_add(t->accept_errors, w->accept_errors);
        t->pushed = sat_add(t->pushed, w->pushed);
        if (w->updated_ns && (!t->oldest_ns || w->updated_ns < t->oldest_ns))
            t->oldest_ns = w->updated_ns;
    }
    return 0;
}
