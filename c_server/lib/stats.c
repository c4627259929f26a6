/* stats.c - see stats.h. */
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int c1m_stats_create(struct c1m_stats *st, const char *path, uint32_t nworkers,
                     uint64_t target, const char *kind)
{
    memset(st, 0, sizeof(*st));
    size_t size = sizeof(struct c1m_stats_header) + (size_t)nworkers * sizeof(struct c1m_stats_worker);
    /* Write a new file and rename it into place, so a reader never maps a
     * half-initialised one. */
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) < 0)
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

int c1m_stats_open(struct c1m_stats *st, const char *path)
{
    memset(st, 0, sizeof(*st));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        close(fd);
        return -1;
    }
    if ((size_t)sb.st_size < sizeof(struct c1m_stats_header)) {
        close(fd);
        errno = EPROTO;
        return -1;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    st->hdr = p;
    st->w = (struct c1m_stats_worker *)(st->hdr + 1);
    st->size = (size_t)sb.st_size;
    size_t need = sizeof(struct c1m_stats_header) + (size_t)st->hdr->nworkers * sizeof(struct c1m_stats_worker);
    if (memcmp(st->hdr->magic, C1M_STATS_MAGIC, 8) != 0 || st->hdr->version != C1M_STATS_VERSION ||
        need > st->size) {
        c1m_stats_close(st);
        errno = EPROTO;
        return -1;
    }
    return 0;
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

void c1m_stats_read(const struct c1m_stats *st, uint32_t i, struct c1m_stats_worker *out)
{
    const struct c1m_stats_worker *w = &st->w[i];
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t s1 = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
        memcpy(out, (const void *)w, sizeof(*out));
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t s2 = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
        if (s1 == s2 && !(s1 & 1))
            return;
    }
    /* a writer that died mid-update: return the last copy as is */
}

const char *c1m_state_name(uint64_t state)
{
    static const char *names[] = {"starting", "listening", "full", "stopping", "exited", "failed"};
    return state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown";
}
