/* c1m_ext.h - shared declarations of the CPython extension `c1m`.
 *
 * The extension exposes the suite's C event loop (c_server/lib/loop.h) with an
 * asyncio-shaped API: Loop, Server, Transport and TimerHandle (and Counters,
 * the benchmark's counters file writer) are heap types
 * created per module (PEP 489 multi-phase init, PEP 573 module state).
 *
 * Memory per idle connection is the point of the suite, so a connection costs
 * exactly two Python objects, the Transport (64 bytes with its GC header) and
 * the user's protocol, plus two 8-byte fd-indexed slots: the C loop's and this
 * extension's `conns[fd]`. Everything else (output buffers, pending
 * connection_lost calls) is allocated only while it is needed.
 *
 * GIL: run_forever() releases the GIL only while the C loop blocks in
 * epoll_wait() (c1m_loop_set_wait_hooks, like select.epoll.poll's
 * Py_BEGIN_ALLOW_THREADS), so every C callback runs with the GIL held by
 * construction; C1M_ASSERT_GIL() checks it where NDEBUG is not defined (the
 * sanitizer build).
 *
 * Ownership rule: own a reference to anything used after calling Python code
 * (user code can drop the last reference to a handle, a server, a dict item).
 */
#ifndef C1M_EXT_H
#define C1M_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <assert.h>
#include <signal.h>
#include <stdint.h>

#include "listener.h"
#include "loop.h"
#include "net.h"

extern PyModuleDef c1m_module;

typedef struct {
    PyTypeObject *LoopType;
    PyTypeObject *ServerType;
    PyTypeObject *TransportType;
    PyTypeObject *HandleType;
    PyTypeObject *CountersType;
    /* interned method names and context keys */
    PyObject *s_connection_made, *s_data_received, *s_eof_received, *s_connection_lost;
    PyObject *s_pause_writing, *s_resume_writing;
    PyObject *s_message, *s_exception, *s_protocol, *s_transport, *s_handle, *s_server;
} c1m_state;

struct C1mTransport;
struct C1mHandle;

/* An entry of the loop's ready queue (run after each poll, FIFO):
 *   Handle     -> call_soon callback (exc unused)
 *   Transport  -> connection_lost(exc or None)
 *   Server     -> state callback(exc is Py_True/Py_False)
 * Both references are owned by the queue. */
typedef struct {
    PyObject *obj;
    PyObject *exc;
} c1m_ready_item;

typedef struct C1mLoop {
    PyObject_HEAD
    c1m_state *st;
    c1m_loop *cl;                  /* NULL once closed */
    struct C1mTransport **conns;   /* fd-indexed, strong refs, max_fds entries */
    char *rbuf;                    /* shared read buffer */
    size_t rbuf_size;
    long nconns;                   /* open connections (the listeners' open_count) */
    int max_fds;
    int hi_fd;                     /* conns[] is NULL at and above hi_fd */
    int conn_handler;              /* loop handler id for connections */
    int wake_fd;                   /* eventfd: call_soon_threadsafe / stop from threads */
    struct C1mHandle *timers;      /* pending call_later handles (strong refs) */
    PyObject *servers;             /* list of open Servers */
    PyObject *ts_list;             /* handles queued by call_soon_threadsafe */
    PyObject *exc_handler;         /* set_exception_handler() or NULL */
    PyObject *sig[NSIG];           /* signal handles (strong refs) */
    c1m_ready_item *ready;
    Py_ssize_t nready, ready_cap;
    PyObject *exc_type, *exc_value, *exc_tb; /* KeyboardInterrupt/SystemExit to re-raise */
    PyThreadState *saved;          /* set while the GIL is released (epoll_wait only) */
    struct C1mServer *held_server; /* strong ref: the server whose listener is
                                      dispatching (see on_accept), dropped after
                                      the iteration */
    unsigned long thread_id;       /* thread running run_forever */
    int running, stopping, closed;
    int conns_dropped;             /* a connection closed since the listeners were told */
    struct C1mCounters *publisher; /* publish_counters(): strong ref, or NULL */
    uint64_t publish_timer;        /* its C timer (0: none pending) */
    double publish_ms;
} C1mLoop;

/* Output buffer, allocated on the first partial send only. `data` is freed
 * when drained; the struct itself too unless custom limits were set. */
typedef struct {
    char *data;
    size_t off, len, cap;          /* pending bytes are data[off..len) */
    size_t high, low;              /* write buffer limits */
    int custom;                    /* set_write_buffer_limits() was called */
} c1m_outbuf;

enum {
    T_MADE = 1u << 0,          /* connection_made was called */
    T_CLOSING = 1u << 1,       /* close() called: flush then close */
    T_CLOSED = 1u << 2,        /* fd closed, connection_lost queued */
    T_READ_PAUSED = 1u << 3,
    T_EOF = 1u << 4,           /* EOF received: reading is over */
    T_EOF_WRITTEN = 1u << 5,   /* write_eof(): shutdown(SHUT_WR) once drained */
    T_WRITE_PAUSED = 1u << 6,  /* protocol.pause_writing() was called */
    T_LOST = 1u << 7,          /* connection_lost was called */
};

typedef struct C1mTransport {
    PyObject_HEAD
    C1mLoop *loop;             /* borrowed; NULL once detached (after connection_lost) */
    PyObject *protocol;
    c1m_outbuf *out;           /* NULL unless output is pending or limits were set */
    int fd;                    /* -1 once closed */
    uint32_t flags;
} C1mTransport;

enum { H_TIMER = 0, H_SOON = 1, H_SIGNAL = 2 };

typedef struct C1mHandle {
    PyObject_HEAD
    C1mLoop *loop;             /* borrowed; set while the timer is pending */
    PyObject *callback;
    PyObject *args;            /* tuple */
    struct C1mHandle *prev, *next;
    uint64_t timer_id;
    double when;
    int kind;
    int cancelled;
} C1mHandle;

typedef struct C1mServer {
    PyObject_HEAD
    C1mLoop *loop;             /* borrowed; NULL once closed */
    PyObject *factory;
    PyObject *state_cb;
    int port;                  /* actual bound port */
    struct c1m_listener l;
} C1mServer;

/* A worker's counters and, once attached, its record in a counters file
 * (c_server/lib/stats.h) inside `view`. */
typedef struct C1mCounters {
    PyObject_HEAD
    /* Python ints (object slots: see counters_type.c), never NULL but after del */
    PyObject *pid, *state, *open, *accepted, *closed, *slow, *lines, *pongs, *oversized,
        *accept_errors, *pushed;
    struct c1m_stats_worker *rec;  /* in view.buf; NULL when detached */
    Py_buffer view;                /* valid while rec != NULL */
} C1mCounters;

/* At the entry of every C callback that touches Python (see GIL above). */
#define C1M_ASSERT_GIL() assert(PyGILState_Check())

/* A raw PyCFunction cast without -Wcast-function-type noise. */
#define C1M_METH(f) ((PyCFunction)(void (*)(void))(f))

/* module.c */
int c1m_is_fatal(PyObject *type);

/* loop_type.c */
extern PyType_Spec c1m_loop_spec;
int c1m_loop_check(C1mLoop *lp);      /* -1 + RuntimeError when closed/wrong thread */
int c1m_loop_check_thread(C1mLoop *lp);
int c1m_ready_push(C1mLoop *lp, PyObject *obj, PyObject *exc); /* steals obj, borrows exc */
/* Report the current exception (must be set) like asyncio's default handler.
 * KeyboardInterrupt/SystemExit are stashed instead and stop run_forever.
 * Returns 1 when stashed, 0 when reported. Clears the exception. */
int c1m_report(C1mLoop *lp, const char *message, PyObject *protocol, PyObject *transport,
               PyObject *handle);
void c1m_conns_changed(C1mLoop *lp);  /* tell paused listeners (may accept: not re-entrant) */

/* transport_type.c */
extern PyType_Spec c1m_transport_spec;
C1mTransport *c1m_transport_new(C1mLoop *lp, int fd);   /* new ref; table holds another */
void c1m_transport_io(C1mLoop *lp, int fd, uint32_t events);
void c1m_transport_start(C1mTransport *t);              /* after connection_made */
void c1m_transport_force_close(C1mTransport *t, PyObject *exc);
void c1m_transport_detach(C1mTransport *t);             /* loop close: no callbacks */
void c1m_transport_call_lost(C1mTransport *t, PyObject *exc);
void c1m_protocol_error(C1mTransport *t, const char *message);

/* server_type.c */
extern PyType_Spec c1m_server_spec;
PyObject *c1m_server_create(C1mLoop *lp, PyObject *factory, const char *host, int port,
                            int backlog, int reuse_port, long max_conns, int sndbuf,
                            int rcvbuf);
void c1m_server_detach(C1mServer *s);
void c1m_server_call_state(C1mLoop *lp, C1mServer *s, PyObject *paused);

/* counters_type.c */
extern PyType_Spec c1m_counters_spec;
void c1m_counters_publish(C1mCounters *c);   /* no Python code runs; no-op when detached */

/* timer_type.c */
extern PyType_Spec c1m_handle_spec;
C1mHandle *c1m_handle_new(C1mLoop *lp, int kind, PyObject *callback, PyObject *const *args,
                          Py_ssize_t nargs);
/* Longest wait of a timer (~31 years): a longer delay, +inf included, waits
 * this long (asyncio never runs it) */
#define C1M_MAX_DELAY 1e9
/* call_later: delay is any number but NaN (< 0: next iteration); 0 or -1 */
int c1m_handle_schedule(C1mHandle *h, double delay);
void c1m_handle_run(C1mLoop *lp, C1mHandle *h);
void c1m_handle_unlink(C1mHandle *h);                   /* drop from lp->timers */

#endif
