/* loop_type.c - c1m.Loop: run_forever, timers, signals, servers, errors.
 *
 * run_forever() drives c1m_loop_run_once() itself so that between two polls
 * it can run the ready queue (call_soon callbacks, deferred connection_lost
 * calls, listener state callbacks), pick up call_soon_threadsafe work and
 * Python-level signals, and stop with a KeyboardInterrupt/SystemExit raised
 * by a callback. The GIL is released only while the C loop blocks in
 * epoll_wait (wait hooks below): every callback runs with it held.
 */
#include "c1m_ext.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEFAULT_READ_SIZE (64 * 1024)

/* ---- checks ------------------------------------------------------------- */

int c1m_loop_check_thread(C1mLoop *lp)
{
    if (lp->running && lp->thread_id != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError,
                        "c1m.Loop used from a thread other than the one running it "
                        "(use call_soon_threadsafe)");
        return -1;
    }
    return 0;
}

int c1m_loop_check(C1mLoop *lp)
{
    if (lp->closed || !lp->cl) {
        PyErr_SetString(PyExc_RuntimeError, "Event loop is closed");
        return -1;
    }
    return c1m_loop_check_thread(lp);
}

/* ---- ready queue -------------------------------------------------------- */

int c1m_ready_push(C1mLoop *lp, PyObject *obj, PyObject *exc)
{
    assert(obj && lp->ready_cap >= 0 && lp->nready <= lp->ready_cap);
    if (lp->nready == lp->ready_cap) {
        Py_ssize_t cap = lp->ready_cap ? lp->ready_cap * 2 : 64;
        c1m_ready_item *r = PyMem_Realloc(lp->ready, (size_t)cap * sizeof *r);
        if (!r) {
            PyErr_NoMemory();
            return -1;
        }
        lp->ready = r;
        lp->ready_cap = cap;
    }
    lp->ready[lp->nready].obj = obj;
    lp->ready[lp->nready].exc = Py_XNewRef(exc);
    lp->nready++;
    return 0;
}

/* Run the items queued before this call (FIFO); later ones wait for the next
 * iteration, like asyncio's _ready. Stops early on a stashed fatal error. */
static void run_ready(C1mLoop *lp)
{
    C1M_ASSERT_GIL();
    assert(lp->nready >= 0 && lp->nready <= lp->ready_cap);
    Py_ssize_t n = lp->nready, i;
    for (i = 0; i < n && !lp->exc_type && lp->ready; i++) {
        PyObject *obj = lp->ready[i].obj, *exc = lp->ready[i].exc;
        lp->ready[i].obj = lp->ready[i].exc = NULL;
        assert(obj);
        if (Py_IS_TYPE(obj, lp->st->TransportType))
            c1m_transport_call_lost((C1mTransport *)obj, exc);
        else if (Py_IS_TYPE(obj, lp->st->HandleType))
            c1m_handle_run(lp, (C1mHandle *)obj);
        else if (Py_IS_TYPE(obj, lp->st->ServerType))
            c1m_server_call_state(lp, (C1mServer *)obj, exc);
        Py_DECREF(obj);
        Py_XDECREF(exc);
    }
    if (!lp->ready)   /* torn down meanwhile (cannot happen while running) */
        return;
    assert(i <= n && n <= lp->nready);   /* items only get appended meanwhile */
    memmove(lp->ready, lp->ready + i, (size_t)(lp->nready - i) * sizeof *lp->ready);
    lp->nready -= i;
}

/* ---- error reporting ---------------------------------------------------- */

static void write_str(PyObject *file, const char *s)
{
    if (PyFile_WriteString(s, file) < 0)
        PyErr_Clear();
}

static void write_obj(PyObject *file, PyObject *o, int flags)
{
    if (PyFile_WriteObject(o, file, flags) < 0)
        PyErr_Clear();
}

/* key is the str name (compares the characters: no user code runs) */
static int is_key(PyObject *key, const char *name)
{
    return PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, name) == 0;
}

/* asyncio's default_exception_handler, printed to sys.stderr. The str/repr
 * and write calls run user code that may change the context dict, so the
 * walk is over a snapshot of its items (a list of owned pairs), like
 * CPython's dict_repr owning each key and value while it formats them. */
static void default_handler(PyObject *context)
{
    PyObject *file = PySys_GetObject("stderr"); /* borrowed */
    if (!file || file == Py_None)
        return;
    Py_INCREF(file);
    PyObject *items = PyDict_Check(context) ? PyDict_Items(context) : NULL;
    if (!items)
        PyErr_Clear();
    PyObject *msg = NULL, *exc = NULL;   /* owned */
    Py_ssize_t n = items ? PyList_GET_SIZE(items) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        PyObject *key = PyTuple_GET_ITEM(kv, 0), *value = PyTuple_GET_ITEM(kv, 1);
        if (is_key(key, "message"))
            Py_XSETREF(msg, Py_NewRef(value));
        else if (is_key(key, "exception"))
            Py_XSETREF(exc, Py_NewRef(value));
    }
    write_str(file, "c1m: ");
    if (msg)
        write_obj(file, msg, Py_PRINT_RAW);
    else
        write_str(file, "Unhandled exception in event loop");
    write_str(file, "\n");
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);   /* the list owns kv, kv its items */
        PyObject *key = PyTuple_GET_ITEM(kv, 0), *value = PyTuple_GET_ITEM(kv, 1);
        if (is_key(key, "message") || is_key(key, "exception"))
            continue;
        write_obj(file, key, Py_PRINT_RAW);
        write_str(file, ": ");
        write_obj(file, value, 0);
        write_str(file, "\n");
    }
    Py_XDECREF(items);
    Py_XDECREF(msg);
    PyErr_Clear();
    if (exc && PyExceptionInstance_Check(exc)) {
        PyObject *tb = PyException_GetTraceback(exc);
        PyErr_Display((PyObject *)Py_TYPE(exc), exc, tb);
        Py_XDECREF(tb);
    }
    Py_XDECREF(exc);
    PyObject *r = PyObject_CallMethod(file, "flush", NULL);
    if (r)
        Py_DECREF(r);
    else
        PyErr_Clear();
    Py_DECREF(file);
}

/* Run the handler (or the default one) for context. Returns -1 with a
 * KeyboardInterrupt/SystemExit set if the custom handler raised one. */
static int call_handler(C1mLoop *lp, PyObject *context)
{
    if (!lp->exc_handler) {
        default_handler(context);
        return 0;
    }
    PyObject *handler = Py_NewRef(lp->exc_handler);
    PyObject *r = PyObject_CallFunctionObjArgs(handler, (PyObject *)lp, context, NULL);
    Py_DECREF(handler);
    if (r) {
        Py_DECREF(r);
        return 0;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (c1m_is_fatal(type)) {
        PyErr_Restore(type, value, tb);
        return -1;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value)
        PyException_SetTraceback(value, tb);
    PyObject *ctx = Py_BuildValue("{sssOsO}", "message", "Unhandled error in exception handler",
                                  "exception", value ? value : Py_None, "context", context);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (ctx) {
        default_handler(ctx);
        Py_DECREF(ctx);
    } else {
        PyErr_Clear();
    }
    default_handler(context);
    return 0;
}

static void stash_fatal(C1mLoop *lp, PyObject *type, PyObject *value, PyObject *tb)
{
    if (lp->exc_type) {
        /* keep the first one; show this one */
        PyErr_Display(type, value, tb);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return;
    }
    lp->exc_type = type;
    lp->exc_value = value;
    lp->exc_tb = tb;
    lp->stopping = 1;
}

int c1m_report(C1mLoop *lp, const char *message, PyObject *protocol, PyObject *transport,
               PyObject *handle)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (!type)
        return 0;
    if (c1m_is_fatal(type)) {
        stash_fatal(lp, type, value, tb);
        return 1;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value)
        PyException_SetTraceback(value, tb);
    c1m_state *st = lp->st;
    int fatal = 0;
    PyObject *ctx = PyDict_New();
    PyObject *msg = PyUnicode_FromString(message);
    if (!ctx || !msg || PyDict_SetItem(ctx, st->s_message, msg) < 0 ||
        PyDict_SetItem(ctx, st->s_exception, value ? value : Py_None) < 0 ||
        (protocol && PyDict_SetItem(ctx, st->s_protocol, protocol) < 0) ||
        (transport && PyDict_SetItem(ctx, st->s_transport, transport) < 0) ||
        (handle && PyDict_SetItem(ctx, st->s_handle, handle) < 0)) {
        PyErr_Clear();
        PyErr_Display(type, value, tb);
    } else if (call_handler(lp, ctx) < 0) {
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        stash_fatal(lp, t2, v2, tb2);
        fatal = 1;
    }
    Py_XDECREF(ctx);
    Py_XDECREF(msg);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return fatal;
}

/* ---- C callbacks -------------------------------------------------------- */

static void on_conn_io(c1m_loop *cl, int fd, uint32_t events, void *ud)
{
    (void)cl;
    c1m_transport_io(ud, fd, events);
}

static void on_wake(c1m_loop *cl, int fd, uint32_t events, void *ud)
{
    (void)cl;
    (void)events;
    (void)ud;
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
}

static void wake(C1mLoop *lp)
{
    uint64_t one = 1;
    if (lp->wake_fd >= 0)
        while (write(lp->wake_fd, &one, sizeof one) < 0 && errno == EINTR)
            ;
}

/* The wait hooks: the GIL is released while the C loop blocks in epoll_wait
 * and nowhere else, so other threads run while the loop waits (and can call
 * call_soon_threadsafe / stop, which wake it through the eventfd). */
static void release_gil(c1m_loop *cl, int timeout_ms, void *ud)
{
    (void)cl;
    (void)timeout_ms;
    C1mLoop *lp = ud;
    C1M_ASSERT_GIL();
    assert(lp->running && !lp->saved);
    lp->saved = PyEval_SaveThread();
}

static void take_gil(c1m_loop *cl, int timeout_ms, void *ud)
{
    (void)cl;
    (void)timeout_ms;
    C1mLoop *lp = ud;
    assert(lp->saved);
    PyThreadState *ts = lp->saved;
    lp->saved = NULL;
    PyEval_RestoreThread(ts);
}

/* A signal with a loop's handler is blocked, for the loop's signalfd, only
 * in the thread that added the handler (sigprocmask): any other thread (one
 * started before, or by a library) takes a process-directed one with its
 * disposition, the default for most (the process died of SIGUSR1). While a
 * handler is registered the disposition is this forwarder, which sends the
 * signal on to that thread (tgkill: async-signal-safe), where the signalfd
 * reads it. Process-wide like a disposition: set with the GIL held, read by
 * the handler; the previous action is put back when the last loop's handler
 * for the signal goes. */
static struct {
    pid_t pid, tid;            /* where to forward; tid 0: drop */
    int users;                 /* loops with a handler for the signal */
    struct sigaction prev;
} sig_fwd[NSIG];

static void forward_signal(int signo)
{
    int e = errno;
    pid_t pid = __atomic_load_n(&sig_fwd[signo].pid, __ATOMIC_RELAXED);
    pid_t tid = __atomic_load_n(&sig_fwd[signo].tid, __ATOMIC_RELAXED);
    pid_t me = (pid_t)syscall(SYS_gettid);
    /* never to itself: the target thread has it blocked, so runs this only
     * while its handler is being removed (the signal is then dropped) */
    if (tid > 0 && tid != me && pid == getpid())
        (void)syscall(SYS_tgkill, pid, tid, signo);
    errno = e;
}

static int hook_signal(int signo)
{
    if (sig_fwd[signo].users == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = forward_signal;
        sa.sa_flags = SA_RESTART;
        sigfillset(&sa.sa_mask);
        if (sigaction(signo, &sa, &sig_fwd[signo].prev) < 0)
            return -1;
    }
    sig_fwd[signo].users++;
    __atomic_store_n(&sig_fwd[signo].pid, getpid(), __ATOMIC_RELAXED);
    __atomic_store_n(&sig_fwd[signo].tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
    return 0;
}

static void unhook_signal(int signo)
{
    if (sig_fwd[signo].users <= 0 || --sig_fwd[signo].users > 0)
        return;
    __atomic_store_n(&sig_fwd[signo].tid, 0, __ATOMIC_RELAXED);
    (void)sigaction(signo, &sig_fwd[signo].prev, NULL);
}

static void on_signal(c1m_loop *cl, int signo, void *ud)
{
    (void)cl;
    C1mLoop *lp = ud;
    C1M_ASSERT_GIL();
    assert(lp->cl == cl);
    if (signo <= 0 || signo >= NSIG || !lp->sig[signo])
        return;
    PyObject *h = Py_NewRef(lp->sig[signo]);
    c1m_handle_run(lp, (C1mHandle *)h);
    Py_DECREF(h);
}

void c1m_conns_changed(C1mLoop *lp)
{
    assert(lp->nconns >= 0 && lp->hi_fd <= lp->max_fds);
    lp->conns_dropped = 0;
    if (!lp->servers)
        return;
    for (Py_ssize_t i = 0; lp->servers && i < PyList_GET_SIZE(lp->servers); i++) {
        C1mServer *s = (C1mServer *)PyList_GET_ITEM(lp->servers, i);
        if (s->loop)
            c1m_listener_conn_closed(&s->l);
    }
}

/* ---- construction / teardown ------------------------------------------- */

/* ---- counters publishing (counters_type.c) ------------------------------ */

static void stop_publishing(C1mLoop *lp)
{
    if (lp->publish_timer && lp->cl)
        (void)c1m_loop_timer_cancel(lp->cl, lp->publish_timer);
    lp->publish_timer = 0;
    Py_CLEAR(lp->publisher);
}

/* The C timer of publish_counters(): writes the record and re-arms, no Python
 * code runs. ud is the loop (freed with its C timers), never the counters. */
static void on_publish_tick(c1m_loop *cl, uint64_t timer_id, void *ud)
{
    C1mLoop *lp = ud;
    (void)timer_id;
    lp->publish_timer = 0;
    if (!lp->publisher)
        return;
    c1m_counters_publish(lp->publisher);
    lp->publish_timer = c1m_loop_timer(cl, lp->publish_ms, on_publish_tick, lp);
    if (!lp->publish_timer) {
        /* ENOMEM: the record goes stale and the harness sees the worker as
         * not updating, which is the truth */
        fprintf(stderr, "c1m: publish_counters: timer: %s: publishing stops\n", strerror(errno));
        Py_CLEAR(lp->publisher);
    }
}

static PyObject *loop_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"max_fds", "read_size", NULL};
    int max_fds = 0;
    Py_ssize_t read_size = DEFAULT_READ_SIZE;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$in:Loop", kwlist, &max_fds, &read_size))
        return NULL;
    if (max_fds < 0) {
        PyErr_SetString(PyExc_ValueError, "max_fds must be >= 0 (0: RLIMIT_NOFILE)");
        return NULL;
    }
    if (read_size < 1 || read_size > (1 << 26)) {
        PyErr_SetString(PyExc_ValueError, "read_size must be in 1..67108864");
        return NULL;
    }
    if (max_fds == 0)
        max_fds = c1m_nofile_limit();
    if (max_fds <= 0)
        max_fds = 1024;
    PyObject *mod = PyType_GetModuleByDef(type, &c1m_module);
    if (!mod)
        return NULL;
    C1mLoop *lp = (C1mLoop *)type->tp_alloc(type, 0);
    if (!lp)
        return NULL;
    /* tp_alloc zeroed everything */
    lp->st = PyModule_GetState(mod);
    lp->wake_fd = -1;
    lp->conn_handler = -1;
    lp->max_fds = max_fds;
    lp->rbuf_size = (size_t)read_size;
    lp->servers = PyList_New(0);
    lp->ts_list = PyList_New(0);
    if (!lp->servers || !lp->ts_list)
        goto fail;
    /* calloc: the table's pages are only touched as fds get used */
    lp->conns = calloc((size_t)max_fds, sizeof *lp->conns);
    lp->rbuf = malloc(lp->rbuf_size);
    if (!lp->conns || !lp->rbuf) {
        PyErr_NoMemory();
        goto fail;
    }
    lp->cl = c1m_loop_new(max_fds);
    if (!lp->cl) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    c1m_loop_set_wait_hooks(lp->cl, release_gil, take_gil, lp);
    lp->conn_handler = c1m_loop_handler(lp->cl, on_conn_io, lp);
    int wake_handler = c1m_loop_handler(lp->cl, on_wake, lp);
    if (lp->conn_handler < 0 || wake_handler < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    lp->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (lp->wake_fd < 0 || lp->wake_fd >= max_fds ||
        c1m_loop_add(lp->cl, lp->wake_fd, EPOLLIN, wake_handler) < 0) {
        if (lp->wake_fd >= max_fds)
            errno = EMFILE;
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    return (PyObject *)lp;
fail:
    Py_DECREF(lp);
    return NULL;
}

/* Release the C loop and everything attached to it, without calling into
 * Python code of ours (DECREFs may still run __del__ methods; by then the
 * loop is marked closed so they see RuntimeError / closed transports). */
static void loop_teardown(C1mLoop *lp)
{
    assert(!lp->running);
    lp->closed = 1;
    Py_CLEAR(lp->held_server);
    c1m_loop *cl = lp->cl;
    if (lp->servers) {
        PyObject *servers = lp->servers;
        lp->servers = NULL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(servers); i++)
            c1m_server_detach((C1mServer *)PyList_GET_ITEM(servers, i));
        Py_DECREF(servers);
    }
    if (lp->conns) {
        for (int fd = 0; fd < lp->hi_fd; fd++) {
            C1mTransport *t = lp->conns[fd];
            if (!t)
                continue;
            lp->conns[fd] = NULL;
            c1m_transport_detach(t);
            Py_DECREF(t);
        }
        lp->hi_fd = 0;
        assert(lp->nconns == 0);   /* every open transport was in conns[] */
    }
    stop_publishing(lp);
    C1mHandle *h;
    while ((h = lp->timers)) {   /* c1m_loop_free() below drops the C timers */
        c1m_handle_unlink(h);
        Py_DECREF(h);
    }
    if (lp->ready) {
        c1m_ready_item *items = lp->ready;
        Py_ssize_t n = lp->nready;
        lp->ready = NULL;
        lp->nready = lp->ready_cap = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!items[i].obj)
                continue;
            if (Py_IS_TYPE(items[i].obj, lp->st->TransportType))
                ((C1mTransport *)items[i].obj)->loop = NULL;
            Py_DECREF(items[i].obj);
            Py_XDECREF(items[i].exc);
        }
        PyMem_Free(items);
    }
    for (int s = 1; s < NSIG; s++) {
        if (!lp->sig[s])
            continue;
        if (cl)
            (void)c1m_loop_signal(cl, s, NULL, NULL);
        unhook_signal(s);
        Py_CLEAR(lp->sig[s]);
    }
    if (lp->wake_fd >= 0) {
        if (cl && c1m_loop_events(cl, lp->wake_fd))
            (void)c1m_loop_del(cl, lp->wake_fd);
        (void)close(lp->wake_fd);
        lp->wake_fd = -1;
    }
    if (cl) {
        lp->cl = NULL;
        c1m_loop_free(cl);
    }
    free(lp->conns);
    lp->conns = NULL;
    free(lp->rbuf);
    lp->rbuf = NULL;
    Py_CLEAR(lp->ts_list);
}

static int loop_traverse(C1mLoop *lp, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(lp));
    Py_VISIT(lp->servers);
    Py_VISIT(lp->held_server);
    Py_VISIT(lp->ts_list);
    Py_VISIT(lp->exc_handler);
    Py_VISIT(lp->exc_type);
    Py_VISIT(lp->exc_value);
    Py_VISIT(lp->exc_tb);
    Py_VISIT(lp->publisher);
    for (C1mHandle *h = lp->timers; h; h = h->next)
        Py_VISIT(h);
    for (int s = 1; s < NSIG; s++)
        Py_VISIT(lp->sig[s]);
    for (Py_ssize_t i = 0; lp->ready && i < lp->nready; i++) {
        Py_VISIT(lp->ready[i].obj);
        Py_VISIT(lp->ready[i].exc);
    }
    if (lp->conns)
        for (int fd = 0; fd < lp->hi_fd; fd++)
            Py_VISIT(lp->conns[fd]);
    return 0;
}

/* Only drops references (the GC may still reach the loop afterwards): the
 * servers, connections, timers and signal handles of a loop in a garbage
 * cycle are cleared through their own tp_clear; closing sockets and freeing
 * the C loop is close()'s and dealloc's job (loop_teardown). */
static int loop_clear(C1mLoop *lp)
{
    stop_publishing(lp);
    Py_CLEAR(lp->held_server);
    Py_CLEAR(lp->exc_handler);
    Py_CLEAR(lp->exc_type);
    Py_CLEAR(lp->exc_value);
    Py_CLEAR(lp->exc_tb);
    return 0;
}

static void loop_dealloc(C1mLoop *lp)
{
    PyTypeObject *tp = Py_TYPE(lp);
    PyObject_GC_UnTrack(lp);
    assert(!lp->running);   /* run_forever owns a reference */
    if (!lp->closed)
        loop_teardown(lp);
    (void)loop_clear(lp);
    tp->tp_free(lp);
    Py_DECREF(tp);
}

/* ---- running ------------------------------------------------------------ */

static int take_threadsafe(C1mLoop *lp)
{
    if (!lp->ts_list || PyList_GET_SIZE(lp->ts_list) == 0)
        return 0;
    PyObject *fresh = PyList_New(0);
    if (!fresh)
        return -1;
    PyObject *items = lp->ts_list;
    lp->ts_list = fresh;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *h = Py_NewRef(PyList_GET_ITEM(items, i));
        if (c1m_ready_push(lp, h, NULL) < 0) {
            Py_DECREF(h);
            Py_DECREF(items);
            return -1;
        }
    }
    Py_DECREF(items);
    return 0;
}

static PyObject *loop_run_forever(C1mLoop *lp, PyObject *unused)
{
    (void)unused;
    if (c1m_loop_check(lp) < 0)
        return NULL;
    if (lp->running) {
        PyErr_SetString(PyExc_RuntimeError, "This event loop is already running");
        return NULL;
    }
    assert(!lp->saved && !lp->held_server);
    Py_INCREF(lp);
    lp->running = 1;
    lp->thread_id = PyThread_get_thread_ident();
    int failed = 0;
    for (;;) {
        int timeout = (lp->nready || lp->stopping ||
                       (lp->ts_list && PyList_GET_SIZE(lp->ts_list)))
                          ? 0
                          : -1;
        int n = c1m_loop_run_once(lp->cl, timeout);   /* GIL: see release_gil */
        C1M_ASSERT_GIL();
        assert(!lp->saved);
        if (n < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            failed = 1;
            break;
        }
        if (PyErr_CheckSignals() < 0) {
            failed = 1;
            break;
        }
        if (take_threadsafe(lp) < 0) {
            failed = 1;
            break;
        }
        if (!lp->exc_type)
            run_ready(lp);
        if (lp->conns_dropped && !lp->exc_type)
            c1m_conns_changed(lp);
        /* no listener callback is running any more */
        Py_CLEAR(lp->held_server);
        if (lp->exc_type || lp->stopping)
            break;
    }
    Py_CLEAR(lp->held_server);
    lp->running = 0;
    lp->stopping = 0;
    if (lp->exc_type) {
        if (failed) {   /* an error of run_forever's own wins */
            Py_CLEAR(lp->exc_type);
            Py_CLEAR(lp->exc_value);
            Py_CLEAR(lp->exc_tb);
        } else {
            PyErr_Restore(lp->exc_type, lp->exc_value, lp->exc_tb);
            lp->exc_type = lp->exc_value = lp->exc_tb = NULL;
            failed = 1;
        }
    }
    Py_DECREF(lp);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *loop_stop(C1mLoop *lp, PyObject *unused)
{
    (void)unused;
    /* safe from any thread: a flag read under the GIL plus a wake-up */
    lp->stopping = 1;
    if (lp->running && lp->thread_id != PyThread_get_thread_ident())
        wake(lp);
    Py_RETURN_NONE;
}

static PyObject *loop_close(C1mLoop *lp, PyObject *unused)
{
    (void)unused;
    if (lp->running) {
        PyErr_SetString(PyExc_RuntimeError, "Cannot close a running event loop");
        return NULL;
    }
    if (!lp->closed)
        loop_teardown(lp);
    Py_RETURN_NONE;
}

static PyObject *loop_is_running(C1mLoop *lp, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(lp->running);
}

static PyObject *loop_is_closed(C1mLoop *lp, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(lp->closed);
}

static PyObject *loop_time(C1mLoop *lp, PyObject *unused)
{
    (void)lp;
    (void)unused;
    return PyFloat_FromDouble((double)c1m_now_ns() / 1e9);
}

/* ---- scheduling --------------------------------------------------------- */

/* A real number (TypeError otherwise), any but NaN: as in asyncio a delay
 * <= 0 (-inf too) runs on the next iteration and +inf never; asyncio accepts
 * NaN and then orders its timers arbitrarily, here it is a ValueError. */
static int get_time(PyObject *o, const char *what, double *out)
{
    if (o == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s must not be None", what);
        return -1;
    }
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    if (isnan(d)) {
        PyErr_Format(PyExc_ValueError, "%s must not be NaN", what);
        return -1;
    }
    *out = d;
    return 0;
}

static PyObject *schedule(C1mLoop *lp, double delay, PyObject *const *args, Py_ssize_t nargs)
{
    C1mHandle *h = c1m_handle_new(lp, H_TIMER, args[0], args + 1, nargs - 1);
    if (!h)
        return NULL;
    h->loop = lp;
    if (c1m_handle_schedule(h, delay) < 0) {
        Py_DECREF(h);
        return NULL;
    }
    return (PyObject *)h;
}

static PyObject *loop_call_later(C1mLoop *lp, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "call_later(delay, callback, *args)");
        return NULL;
    }
    /* the check after the conversion: a __float__ may close the loop */
    double delay;
    if (get_time(args[0], "delay", &delay) < 0 || c1m_loop_check(lp) < 0)
        return NULL;
    return schedule(lp, delay, args + 1, nargs - 1);
}

static PyObject *loop_call_at(C1mLoop *lp, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "call_at(when, callback, *args)");
        return NULL;
    }
    double when;   /* converted first: a __float__ may close the loop */
    if (get_time(args[0], "when", &when) < 0 || c1m_loop_check(lp) < 0)
        return NULL;
    /* (inf - now is inf, -inf - now is -inf: never NaN) */
    return schedule(lp, when - (double)c1m_now_ns() / 1e9, args + 1, nargs - 1);
}

/* publish_counters(): the C timer above, armed from Python */
static PyObject *loop_publish_counters(C1mLoop *lp, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "publish_counters(counters, interval=0.05)");
        return NULL;
    }
    double interval = 0.05;
    if (nargs == 2 && get_time(args[1], "interval", &interval) < 0)
        return NULL;
    if (c1m_loop_check(lp) < 0)
        return NULL;
    if (args[0] == Py_None) {
        stop_publishing(lp);
        Py_RETURN_NONE;
    }
    if (!PyObject_TypeCheck(args[0], lp->st->CountersType)) {
        PyErr_Format(PyExc_TypeError, "publish_counters: a c1m.Counters or None was expected, "
                     "got %.200s", Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    if (!(interval >= 0.001 && interval <= 3600)) {
        PyErr_SetString(PyExc_ValueError, "publish_counters: interval must be in 0.001..3600 s");
        return NULL;
    }
    C1mCounters *c = (C1mCounters *)args[0];
    if (!c->rec) {
        PyErr_SetString(PyExc_ValueError, "publish_counters: the counters have no record "
                        "(Counters.attach() first)");
        return NULL;
    }
    stop_publishing(lp);
    uint64_t id = c1m_loop_timer(lp->cl, interval * 1e3, on_publish_tick, lp);
    if (!id)
        return PyErr_SetFromErrno(PyExc_OSError);
    lp->publisher = (C1mCounters *)Py_NewRef(c);
    lp->publish_timer = id;
    lp->publish_ms = interval * 1e3;
    Py_RETURN_NONE;
}

static PyObject *loop_call_soon(C1mLoop *lp, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "call_soon(callback, *args)");
        return NULL;
    }
    if (c1m_loop_check(lp) < 0)
        return NULL;
    C1mHandle *h = c1m_handle_new(lp, H_SOON, args[0], args + 1, nargs - 1);
    if (!h)
        return NULL;
    h->when = (double)c1m_now_ns() / 1e9;
    if (c1m_ready_push(lp, Py_NewRef(h), NULL) < 0) {
        Py_DECREF(h);
        Py_DECREF(h);
        return NULL;
    }
    return (PyObject *)h;
}

static PyObject *loop_call_soon_threadsafe(C1mLoop *lp, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "call_soon_threadsafe(callback, *args)");
        return NULL;
    }
    if (lp->closed || !lp->ts_list) {
        PyErr_SetString(PyExc_RuntimeError, "Event loop is closed");
        return NULL;
    }
    C1mHandle *h = c1m_handle_new(lp, H_SOON, args[0], args + 1, nargs - 1);
    if (!h)
        return NULL;
    h->when = (double)c1m_now_ns() / 1e9;
    if (PyList_Append(lp->ts_list, (PyObject *)h) < 0) {
        Py_DECREF(h);
        return NULL;
    }
    wake(lp);
    return (PyObject *)h;
}

/* ---- signals ------------------------------------------------------------ */

static int get_signal(PyObject *o, int *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "sig must be an int, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long sig = PyLong_AsLongAndOverflow(o, &overflow);
    if (sig == -1 && PyErr_Occurred())
        return -1;
    if (overflow || sig < 1 || sig >= NSIG) {
        PyErr_Format(PyExc_ValueError, "sig %R out of range(1, %d)", o, NSIG);
        return -1;
    }
    if (sig == SIGKILL || sig == SIGSTOP) {
        PyErr_Format(PyExc_ValueError, "sig %ld cannot be caught", sig);
        return -1;
    }
    *out = (int)sig;
    return 0;
}

static PyObject *loop_add_signal_handler(C1mLoop *lp, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "add_signal_handler(sig, callback, *args)");
        return NULL;
    }
    int sig;
    if (get_signal(args[0], &sig) < 0 || c1m_loop_check(lp) < 0)
        return NULL;
    C1mHandle *h = c1m_handle_new(lp, H_SIGNAL, args[1], args + 2, nargs - 2);
    if (!h)
        return NULL;
    if (!lp->sig[sig]) {
        if (c1m_loop_signal(lp->cl, sig, on_signal, lp) < 0) {
            Py_DECREF(h);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        if (hook_signal(sig) < 0) {
            int e = errno;
            (void)c1m_loop_signal(lp->cl, sig, NULL, NULL);
            Py_DECREF(h);
            errno = e;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    Py_XSETREF(lp->sig[sig], (PyObject *)h);
    Py_RETURN_NONE;
}

static PyObject *loop_remove_signal_handler(C1mLoop *lp, PyObject *arg)
{
    int sig;
    if (get_signal(arg, &sig) < 0 || c1m_loop_check(lp) < 0)
        return NULL;
    if (!lp->sig[sig])
        Py_RETURN_FALSE;
    if (c1m_loop_signal(lp->cl, sig, NULL, NULL) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    unhook_signal(sig);
    Py_CLEAR(lp->sig[sig]);
    Py_RETURN_TRUE;
}

/* ---- servers ------------------------------------------------------------ */

static int get_int(PyObject *o, const char *name, long lo, long hi, long *out)
{
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s must be in %ld..%ld, got %R", name, lo, hi, o);
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *loop_create_server(C1mLoop *lp, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"protocol_factory", "host", "port", "backlog", "reuse_port",
                             "max_conns", "sndbuf", "rcvbuf", NULL};
    PyObject *factory, *hosto = Py_None, *porto = Py_None, *backlogo = NULL;
    PyObject *maxo = NULL, *sndo = NULL, *rcvo = NULL;
    int reuse_port = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO$OpOOO:create_server", kwlist, &factory,
                                     &hosto, &porto, &backlogo, &reuse_port, &maxo, &sndo,
                                     &rcvo))
        return NULL;
    if (!PyCallable_Check(factory)) {
        PyErr_Format(PyExc_TypeError, "protocol_factory must be callable, not %.100s",
                     Py_TYPE(factory)->tp_name);
        return NULL;
    }
    const char *host = "0.0.0.0";
    if (hosto != Py_None) {
        if (!PyUnicode_Check(hosto)) {
            PyErr_Format(PyExc_TypeError, "host must be a str or None, not %.100s",
                         Py_TYPE(hosto)->tp_name);
            return NULL;
        }
        Py_ssize_t len;
        host = PyUnicode_AsUTF8AndSize(hosto, &len);
        if (!host)
            return NULL;
        if (len == 0 || len >= (Py_ssize_t)sizeof(((struct c1m_listener *)0)->host) ||
            strlen(host) != (size_t)len) {
            PyErr_SetString(PyExc_ValueError, "host must be a non-empty name of < 64 bytes");
            return NULL;
        }
    }
    long port = 0, backlog = 100, max_conns = 0, sndbuf = 0, rcvbuf = 0;
    if ((porto != Py_None && get_int(porto, "port", 0, 65535, &port) < 0) ||
        (backlogo && get_int(backlogo, "backlog", 0, 1 << 30, &backlog) < 0) ||
        (maxo && get_int(maxo, "max_conns", 0, 1L << 40, &max_conns) < 0) ||
        (sndo && get_int(sndo, "sndbuf", 0, 1 << 30, &sndbuf) < 0) ||
        (rcvo && get_int(rcvo, "rcvbuf", 0, 1 << 30, &rcvbuf) < 0))
        return NULL;
    if (c1m_loop_check(lp) < 0)
        return NULL;
    return c1m_server_create(lp, factory, host, (int)port, (int)backlog, reuse_port, max_conns,
                             (int)sndbuf, (int)rcvbuf);
}

/* ---- exception handler API --------------------------------------------- */

static PyObject *loop_set_exception_handler(C1mLoop *lp, PyObject *handler)
{
    if (handler != Py_None && !PyCallable_Check(handler)) {
        PyErr_Format(PyExc_TypeError, "A callable object or None is expected, got %R", handler);
        return NULL;
    }
    Py_XSETREF(lp->exc_handler, handler == Py_None ? NULL : Py_NewRef(handler));
    Py_RETURN_NONE;
}

static PyObject *loop_get_exception_handler(C1mLoop *lp, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(lp->exc_handler ? lp->exc_handler : Py_None);
}

static PyObject *loop_default_exception_handler(C1mLoop *lp, PyObject *context)
{
    (void)lp;
    if (!PyDict_Check(context)) {
        PyErr_SetString(PyExc_TypeError, "context must be a dict");
        return NULL;
    }
    default_handler(context);
    Py_RETURN_NONE;
}

static PyObject *loop_call_exception_handler(C1mLoop *lp, PyObject *context)
{
    if (!PyDict_Check(context)) {
        PyErr_SetString(PyExc_TypeError, "context must be a dict");
        return NULL;
    }
    if (call_handler(lp, context) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ---- attributes --------------------------------------------------------- */

static PyObject *loop_get_connections(C1mLoop *lp, void *closure)
{
    (void)closure;
    return PyLong_FromLong(lp->nconns);
}

static PyObject *loop_get_max_fds(C1mLoop *lp, void *closure)
{
    (void)closure;
    return PyLong_FromLong(lp->max_fds);
}

static PyObject *loop_repr(C1mLoop *lp)
{
    return PyUnicode_FromFormat("<%s running=%s closed=%s connections=%ld>",
                                Py_TYPE(lp)->tp_name, lp->running ? "True" : "False",
                                lp->closed ? "True" : "False", lp->nconns);
}

#define FAST(name, fn, doc) {name, C1M_METH(fn), METH_FASTCALL, doc}
#define NOARGS(name, fn, doc) {name, C1M_METH(fn), METH_NOARGS, doc}
static PyMethodDef loop_methods[] = {
    NOARGS("run_forever", loop_run_forever,
           "run_forever()\n--\n\nRun until stop() is called. A KeyboardInterrupt or "
           "SystemExit raised by a callback stops the loop and propagates."),
    NOARGS("stop", loop_stop,
           "stop()\n--\n\nStop run_forever() after the current iteration (any thread)."),
    NOARGS("close", loop_close,
           "close()\n--\n\nClose servers and connections (no callbacks) and free the loop."),
    NOARGS("is_running", loop_is_running, "is_running()\n--\n\n"),
    NOARGS("is_closed", loop_is_closed, "is_closed()\n--\n\n"),
    NOARGS("time", loop_time, "time()\n--\n\nThe loop's monotonic clock, in seconds."),
    FAST("call_later", loop_call_later,
         "call_later(delay, callback, *args)\n--\n\nRun callback(*args) in delay seconds; "
         "returns a TimerHandle."),
    FAST("call_at", loop_call_at, "call_at(when, callback, *args)\n--\n\n"),
    FAST("call_soon", loop_call_soon,
         "call_soon(callback, *args)\n--\n\nRun callback(*args) on the next iteration (FIFO)."),
    FAST("call_soon_threadsafe", loop_call_soon_threadsafe,
         "call_soon_threadsafe(callback, *args)\n--\n\ncall_soon from any thread."),
    FAST("add_signal_handler", loop_add_signal_handler,
         "add_signal_handler(sig, callback, *args)\n--\n\nRun callback(*args) from the loop "
         "when sig arrives (signalfd; the signal is blocked in this thread, and "
         "forwarded to it from any other thread that takes it)."),
    {"remove_signal_handler", C1M_METH(loop_remove_signal_handler), METH_O,
     "remove_signal_handler(sig)\n--\n\nTrue if a handler was removed."},
    {"create_server", C1M_METH(loop_create_server), METH_VARARGS | METH_KEYWORDS,
     "create_server(protocol_factory, host=None, port=None, *, backlog=100, "
     "reuse_port=False, max_conns=0, sndbuf=0, rcvbuf=0)\n--\n\n"
     "Listen on host:port and serve each connection with protocol_factory(). max_conns > 0 "
     "caps this loop's connections: the listener closes at the cap and re-opens below 90%. "
     "sndbuf/rcvbuf > 0 set SO_SNDBUF/SO_RCVBUF on accepted sockets."},
    FAST("publish_counters", loop_publish_counters,
         "publish_counters(counters, interval=0.05)\n--\n\nWrite the c1m.Counters' record "
         "every interval seconds (0.001..3600) from a C timer, no Python code running; "
         "None stops. The loop keeps a reference until then or close()."),
    {"set_exception_handler", C1M_METH(loop_set_exception_handler), METH_O,
     "set_exception_handler(handler)\n--\n\nhandler(loop, context) or None."},
    NOARGS("get_exception_handler", loop_get_exception_handler,
           "get_exception_handler()\n--\n\n"),
    {"default_exception_handler", C1M_METH(loop_default_exception_handler), METH_O,
     "default_exception_handler(context)\n--\n\nPrint context to sys.stderr."},
    {"call_exception_handler", C1M_METH(loop_call_exception_handler), METH_O,
     "call_exception_handler(context)\n--\n\n"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef loop_getset[] = {
    {"connections", (getter)loop_get_connections, NULL, "Open connections.", NULL},
    {"max_fds", (getter)loop_get_max_fds, NULL, "Size of the fd tables.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot loop_slots[] = {
    {Py_tp_doc, "Loop(*, max_fds=0, read_size=65536)\n--\n\n"
                "An epoll event loop (the c1m C loop) for asyncio-style Protocols."},
    {Py_tp_new, loop_new},
    {Py_tp_methods, loop_methods},
    {Py_tp_getset, loop_getset},
    {Py_tp_repr, loop_repr},
    {Py_tp_traverse, loop_traverse},
    {Py_tp_clear, loop_clear},
    {Py_tp_dealloc, loop_dealloc},
    {0, NULL},
};

PyType_Spec c1m_loop_spec = {
    .name = "c1m.Loop",
    .basicsize = sizeof(C1mLoop),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = loop_slots,
};
