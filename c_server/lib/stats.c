/* stats.c - see stats.h. */
#include "stats.h"
#include "loop.h" /* c1m_now_ns */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int c1m_stats_create(struct c1m_stats *st, const char *path, uint32_t nworkers,
                     uint64_t target, const char *kind)
{
    memset(st, 0, sizeof(*st));
    /* rename() below replaces whatever is at path: only ever a counters file
     * (a regular file) or a symlink (replaced, never followed). --stats
     * /dev/null, a FIFO or a socket is refused: a root server must not turn
     * a device node into a regular file. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : C1M_ENOTREG;
        return -1;
    }
    size_t size = sizeof(struct c1m_stats_header) + (size_t)nworkers * sizeof(struct c1m_stats_worker);
    /* Write a new file and rename it into place, so a reader never maps a
     * half-initialised one. mkostemp opens with O_CREAT|O_EXCL under a name
     * nobody can predict: never through a planted symlink (/dev/shm is
     * world-writable and the server may run as root). */
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fchmod(fd, 0644) < 0 || ftruncate(fd, (off_t)size) < 0)
        goto fail;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        goto fail;
    st->hdr = p;
    st->w = (struct c1m_stats_worker *)(st->hdr + 1);
    st->size = size;
    memcpy(st->hdr->magic, C1M_STATS_MAGIC, 8);
    st->hdr->version = C1M_STATS_VERSION;
    st->hdr->nworkers = nworkers;
    st->hdr->target = target;
    st->hdr->parent_pid = (uint64_t)getpid();
    snprintf(st->hdr->kind, sizeof(st->hdr->kind), "%s", kind);
    if (rename(tmp, path) < 0) {
        munmap(p, size);
        goto fail;
    }
    close(fd);
    return 0;
fail:;
    int e = errno;
    close(fd);
    unlink(tmp);
    memset(st, 0, sizeof(*st));
    errno = e;
    return -1;
}

void c1m_stats_close(struct c1m_stats *st)
{
    if (st->hdr)
        munmap(st->hdr, st->size);
    memset(st, 0, sizeof(*st));
}

/* Single writer per record; x86 keeps stores in order, the compiler barriers
 * keep gcc from moving field stores across the seq stores. */
void c1m_stats_begin(struct c1m_stats_worker *w)
{
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

void c1m_stats_end(struct c1m_stats_worker *w)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
}

const char *c1m_state_name(uint64_t state)
{
    static const char *names[] = {"starting", "listening", "full", "stopping", "exited", "failed"};
    return state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown";
}

void c1m_stats_publish(struct c1m_stats_pub *p)
{
    struct c1m_stats_worker *r = p->rec;
    c1m_stats_begin(r);
    r->state = p->state;
    r->open = (uint64_t)p->open;
    r->accepted = p->accepted;
    r->closed = p->closed;
    r->slow = p->slow;
    r->lines = p->lines;
    r->pongs = p->pongs;
    r->oversized = p->oversized;
    r->pushed = p->pushed;
    r->accept_errors = p->accept_errors;
    r->updated_ns = c1m_now_ns();
    c1m_stats_end(r);
    p->dirty = 0;
}

void c1m_stats_set_state(struct c1m_stats_pub *p, uint64_t state)
{
    p->state = state;
    c1m_stats_publish(p);
}
