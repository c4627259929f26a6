/* stats.h - live counters in a shared-memory file, readable by any process at
 * any rate without touching the server's sockets.
 *
 * The file (README "Live counters" documents it for other languages) is a
 * 64-byte header followed by one 128-byte record per worker, all fields
 * little-endian. Each worker owns its record and publishes with a sequence
 * lock: seq is odd while the record is being written. A reader copies the
 * record and retries while seq is odd or changed. The C server writes on every
 * change (plain stores to shared memory); Python servers write from a timer
 * (pyext's from the loop's C timer, with this code: pyext/counters_type.c).
 *
 * Versions: a new counter takes a reserved slot and keeps the version (a file
 * of an older writer reads 0 there; an older reader ignores it); the version
 * changes only when an existing field moves or changes meaning.
 */
#ifndef C1M_STATS_H
#define C1M_STATS_H

#include <errno.h>
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
    uint64_t pongs;                /* pong replies handed to the kernel (counted at write time) */
    uint64_t oversized;            /* closed because a line exceeded 1 KiB */
    uint64_t accept_errors;        /* accept() failures other than EAGAIN */
    uint64_t updated_ns;           /* CLOCK_MONOTONIC of the last publish */
    uint64_t pushed;               /* push messages handed to the kernel (--push; was reserved[0]) */
    uint64_t reserved[3];
};

_Static_assert(sizeof(struct c1m_stats_header) == 64, "header layout");
_Static_assert(sizeof(struct c1m_stats_worker) == 128, "record layout");
_Static_assert(offsetof(struct c1m_stats_worker, pushed) == 96, "pushed is the old reserved[0]");

struct c1m_stats {
    struct c1m_stats_header *hdr;
    struct c1m_stats_worker *w;   /* hdr+1 */
    size_t size;
};

/* The largest file a reader accepts (c1m-server allows 4096 workers). */
#define C1M_STATS_MAX_WORKERS 65536u

/* ---- writer (the server) ---- */

/* Create path for nworkers and map it shared; the mapping survives fork(), so
 * the parent creates it and each worker writes its own record. The file is
 * written under a fresh name made with mkostemp in path's directory (O_EXCL:
 * a symlink or file planted there is never followed or truncated) and renamed
 * over path (rename replaces a symlink at path, it does not follow it). A
 * path that exists as anything but a regular file or a symlink (/dev/null, a
 * FIFO, a directory) is refused: C1M_ENOTREG or EISDIR. */
int c1m_stats_create(struct c1m_stats *st, const char *path, uint32_t nworkers,
                     uint64_t target, const char *kind);
void c1m_stats_close(struct c1m_stats *st);
/* Writer side: begin/end around field updates of one record. */
void c1m_stats_begin(struct c1m_stats_worker *w);
void c1m_stats_end(struct c1m_stats_worker *w);

/* A worker's own copy of what its record says (every C server's worker keeps
 * its counts here and publishes them whole). */
struct c1m_stats_pub {
    struct c1m_stats_worker *rec;  /* st->w[index] */
    uint64_t state;                /* enum c1m_worker_state */
    long open;
    uint64_t accepted, closed, slow, lines, pongs, oversized, pushed, accept_errors;
    int dirty;                     /* counts changed since the last publish */
};
/* p's state and counts to its record in one begin/end, updated_ns now;
 * clears p->dirty. */
void c1m_stats_publish(struct c1m_stats_pub *p);
/* p->state = state, published. */
void c1m_stats_set_state(struct c1m_stats_pub *p, uint64_t state);

/* ---- reader (c1m-stat, the fuzz target) ---- */

/* Check that buf[0..len) is a whole counters file: magic, version, and room
 * for nworkers records (at most C1M_STATS_MAX_WORKERS). 0 and *nworkers set,
 * or -1 with errno EPROTO. Reads only inside buf. */
int c1m_stats_validate(const void *buf, size_t len, uint32_t *nworkers);

/* A reader never maps the file: it copies records with pread(), so a file
 * truncated under it is an error (EPROTO), never a SIGBUS. */
struct c1m_stats_reader {
    int fd;
    uint32_t nworkers;
    struct c1m_stats_header hdr;    /* as validated at open */
};
/* Open path read-only without blocking (a FIFO never hangs the reader); it
 * must be a regular file (EISDIR for a directory, C1M_ENOTREG otherwise)
 * holding a valid counters file (EPROTO). 0, or -1 with errno. */
int c1m_stats_reader_open(struct c1m_stats_reader *r, const char *path);
/* The same over an open regular file's descriptor (taken over: closed by
 * c1m_stats_reader_close, or on failure). */
int c1m_stats_reader_attach(struct c1m_stats_reader *r, int fd);
/* A consistent copy of record i (seqlock retried a bounded number of times;
 * a writer that died mid-update leaves its last copy). 0, or -1 with errno
 * EPROTO when the file no longer holds the record (truncated), or the read's. */
int c1m_stats_reader_read(const struct c1m_stats_reader *r, uint32_t i,
                          struct c1m_stats_worker *out);
void c1m_stats_reader_close(struct c1m_stats_reader *r);
/* errno not used by open(2) on a regular path: "not a regular file". */
#define C1M_ENOTREG ENODEV
/* A message for the errno of the calls above ("not a c1m counters file"...). */
const char *c1m_stats_strerror(int err);

/* A worker that died: its state is FAILED, or it has not exited cleanly
 * (state EXITED) and its pid is gone (kill(pid, 0) ESRCH), a zombie, or not
 * a pid at all (0 is allowed only while starting: the pid is published
 * first). Its counters are no longer true: totals exclude it (c1m_stats_sum).
 * Needs no privilege: kill(pid, 0) failing with EPERM means alive. */
int c1m_stats_worker_dead(const struct c1m_stats_worker *w);

/* Counters and per-state counts over the live workers only; workers,
 * workers_dead and failed over every record. */
struct c1m_stats_total {
    uint64_t workers, workers_dead;
    uint64_t state[6];              /* by enum c1m_worker_state, live workers only */
    uint64_t failed;                /* records in state FAILED */
    uint64_t open, accepted, closed, slow, lines, pongs, oversized, accept_errors, pushed;
    uint64_t oldest_ns;             /* the oldest updated_ns of a live worker that published (0: none) */
};
/* Read every record into recs[nworkers] (dead[i] = 1 for a dead worker) and
 * sum them into *t. 0, or -1 with errno as c1m_stats_reader_read. */
int c1m_stats_sum(const struct c1m_stats_reader *r, struct c1m_stats_worker *recs,
                  unsigned char *dead, struct c1m_stats_total *t);

const char *c1m_state_name(uint64_t state);

#endif
