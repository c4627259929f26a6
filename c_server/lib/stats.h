/* stats.h - live counters in a shared-memory file, readable by any process at
 * any rate without touching the server's sockets.
 *
 * The file (README "Live counters" documents it for other languages) is a
 * 64-byte header followed by one 128-byte record per worker, all fields
 * little-endian. Each worker owns its record and publishes with a sequence
 * lock: seq is odd while the record is being written. A reader copies the
 * record and retries while seq is odd or changed. The C server writes on every
 * change (plain stores to shared memory); Python servers write from a timer.
 */
#ifndef C1M_STATS_H
#define C1M_STATS_H

#include <stddef.h>
#include <stdint.h>

#define C1M_STATS_MAGIC "C1MSTAT1"
#define C1M_STATS_VERSION 1

enum c1m_worker_state {
    C1M_ST_STARTING = 0,  /* forked, not listening yet */
    C1M_ST_LISTENING = 1, /* accepting */
    C1M_ST_FULL = 2,      /* listener closed: near the fd cap (or EMFILE back-off) */
    C1M_ST_STOPPING = 3,  /* got SIGTERM/SIGINT, closing connections */
    C1M_ST_EXITED = 4,    /* exited cleanly */
    C1M_ST_FAILED = 5,    /* died or failed (set by the parent) */
};

struct c1m_stats_header {          /* 64 bytes */
    char magic[8];                 /* "C1MSTAT1" */
    uint32_t version;              /* 1 */
    uint32_t nworkers;             /* number of records that follow */
    uint64_t target;               /* --max-conns, 0 if none */
    uint64_t parent_pid;
    char kind[32];                 /* "c", "asyncio-streams", "pyext", ... NUL padded */
};

struct c1m_stats_worker {          /* 128 bytes */
    uint64_t seq;                  /* odd while being written */
    uint64_t pid;
    uint64_t state;                /* enum c1m_worker_state */
    uint64_t open;                 /* connections open now */
    uint64_t accepted;             /* total accepted */
    uint64_t closed;               /* total closed (any reason) */
    uint64_t slow;                 /* closed because output exceeded the bound */
    uint64_t lines;                /* complete lines received */
    uint64_t pongs;                /* pong replies queued */
    uint64_t oversized;            /* closed because a line exceeded 1 KiB */
    uint64_t accept_errors;        /* accept() failures other than EAGAIN */
    uint64_t updated_ns;           /* CLOCK_MONOTONIC of the last publish */
    uint64_t reserved[4];
};

_Static_assert(sizeof(struct c1m_stats_header) == 64, "header layout");
_Static_assert(sizeof(struct c1m_stats_worker) == 128, "record layout");

struct c1m_stats {
    struct c1m_stats_header *hdr;
    struct c1m_stats_worker *w;   /* hdr+1 */
    size_t size;
};

/* Create (truncate) path for nworkers and map it shared; the mapping survives
 * fork(), so the parent creates it and each worker writes its own record. */
int c1m_stats_create(struct c1m_stats *st, const char *path, uint32_t nworkers,
                     uint64_t target, const char *kind);
/* Map an existing file read-only. */
int c1m_stats_open(struct c1m_stats *st, const char *path);
void c1m_stats_close(struct c1m_stats *st);

/* Writer side: begin/end around field updates of one record. */
void c1m_stats_begin(struct c1m_stats_worker *w);
void c1m_stats_end(struct c1m_stats_worker *w);
/* Reader side: a consistent copy of record i. */
void c1m_stats_read(const struct c1m_stats *st, uint32_t i, struct c1m_stats_worker *out);

const char *c1m_state_name(uint64_t state);

#endif
