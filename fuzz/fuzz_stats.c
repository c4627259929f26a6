/* fuzz_stats.c - libFuzzer target for the counters-file reader (stats.h):
 * any bytes go to c1m_stats_validate and, as a file (memfd), through the
 * reader c1m-stat uses (open checks, every record's seqlock copy, the
 * dead-worker rule and the totals). No crash, no hang, no read outside the
 * input; the reader must accept exactly the files the validator accepts. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t nw = 0;
    int valid = c1m_stats_validate(data, size, &nw) == 0;

    int fd = memfd_create("fuzz-stats", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    struct c1m_stats_reader r;
    int opened = c1m_stats_reader_attach(&r, fd) == 0; /* takes fd over */
    if (opened != valid || (opened && r.nworkers != nw)) {
        fprintf(stderr, "reader and validator disagree: validate=%d open=%d\n", valid, opened);
        abort();
    }
    if (!opened)
        return 0;
    struct c1m_stats_worker *recs = calloc(nw ? nw : 1, sizeof(*recs));
    unsigned char *dead = calloc(nw ? nw : 1, 1);
    if (!recs || !dead)
        abort();
    struct c1m_stats_total t;
    if (c1m_stats_sum(&r, recs, dead, &t) < 0)
        abort(); /* the file did not change: every record is there */
    if (t.workers != nw || t.workers_dead > nw)
        abort();
    (void)c1m_state_name(recs[0].state);
    (void)c1m_stats_strerror(EPROTO);
    free(recs);
    free(dead);
    c1m_stats_reader_close(&r);
    return 0;
}
