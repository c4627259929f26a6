/* counters_type.c - c1m.Counters: a worker's counters, and their record in the
 * counters file written from C.
 *
 * Why in C: a Python worker publishes its counters 20 times a second so the
 * harness sees them live and knows the worker is alive (updated_ns). Done in
 * Python (a call_later tick, three frames, a struct pack, three mmap stores),
 * each tick cost ~20 us of a cold interpreter: at 1M, 53 pyext workers spent
 * 1.2 us of CPU per accepted connection there (results/reference-anatomy-cpu-1m,
 * the on_timer frames), a cost that grows with workers x seconds, so with N^2,
 * where c1m-server's C timer costs 0.04 us. With this type the protocol still
 * does `w.open += 1`, and Loop.publish_counters() writes the record on a C timer
 * without running Python code.
 *
 * Why Python ints in object slots (T_OBJECT_EX), not C integers (T_LONGLONG):
 * `w.open += 1` runs on every accept and close. CPython 3.11 specializes
 * LOAD_ATTR/STORE_ATTR on an object slot (LOAD_ATTR_SLOT, STORE_ATTR_SLOT: a
 * pointer load or store) but not on a C integer member, which goes through the
 * generic attribute lookup, PyLong_FromLongLong and PyMember_SetOne each time:
 * 1,000 of the ~4,100 instructions the extension and the interpreter spent per
 * accepted connection (callgrind, pyext/README.md "CPU per connection"). The
 * values are converted when published instead, 20 times a second: a value
 * that is not an int, or is negative, reads 0; one past 64 bits reads
 * 2^64 - 1 (py_server/stats.py's clamp for its plain-int Counters).
 *
 * The record layout and its sequence lock are c_server/lib/stats.h's, the same
 * code the C servers publish with. Subclassable: py_server adds the cap and its
 * callbacks in Python (protocol.NativeCounters).
 */
#include "c1m_ext.h"

#include <stddef.h>
#include <structmember.h>

#include "stats.h"

/* every counter slot, in the struct's order */
#define COUNTER_SLOTS(c) \
    { &(c)->pid, &(c)->state, &(c)->open, &(c)->accepted, &(c)->closed, &(c)->slow, \
      &(c)->lines, &(c)->pongs, &(c)->oversized, &(c)->accept_errors, &(c)->pushed }
#define NCOUNTERS 11

static PyObject *counters_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    /* a subclass's __init__ takes its own arguments; this type takes none */
    if (type->tp_init == PyBaseObject_Type.tp_init &&
        (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw)))) {
        PyErr_Format(PyExc_TypeError, "%s() takes no arguments", type->tp_name);
        return NULL;
    }
    C1mCounters *c = (C1mCounters *)type->tp_alloc(type, 0);   /* no record */
    if (!c)
        return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (!zero) {
        Py_DECREF(c);
        return NULL;
    }
    PyObject **slot[NCOUNTERS] = COUNTER_SLOTS(c);
    for (int i = 0; i < NCOUNTERS; i++)
        *slot[i] = Py_NewRef(zero);
    Py_DECREF(zero);
    return (PyObject *)c;
}

static void detach(C1mCounters *c)
{
    if (c->rec) {
        c->rec = NULL;
        PyBuffer_Release(&c->view);
    }
}

/* A counter as the record's u64, like py_server/stats.py's _u64: negative (a
 * bug elsewhere) reads 0, past 64 bits 2^64 - 1; not an int (deleted, or
 * anything else stored there) 0. Runs no Python code: an int (subclasses
 * too) is read without __index__. Leaves no exception set. */
static uint64_t u64(PyObject *v)
{
    if (!v || !PyLong_Check(v))
        return 0;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow)
        return x < 0 ? 0 : (uint64_t)x;
    if (overflow < 0)
        return 0;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    unsigned long long u = PyLong_AsUnsignedLongLong(v);   /* 2^63 .. */
    if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();   /* 2^64 and over */
        u = UINT64_MAX;
    }
    PyErr_Restore(type, value, tb);
    return (uint64_t)u;
}

void c1m_counters_publish(C1mCounters *c)
{
    struct c1m_stats_worker *r = c->rec;
    if (!r)
        return;
    c1m_stats_begin(r);
    r->pid = u64(c->pid);
    r->state = u64(c->state);
    r->open = u64(c->open);
    r->accepted = u64(c->accepted);
    r->closed = u64(c->closed);
    r->slow = u64(c->slow);
    r->lines = u64(c->lines);
    r->pongs = u64(c->pongs);
    r->oversized = u64(c->oversized);
    r->accept_errors = u64(c->accept_errors);
    r->updated_ns = c1m_now_ns();
    r->pushed = u64(c->pushed);
    c1m_stats_end(r);
}

static PyObject *counters_attach(C1mCounters *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "attach() takes 2 arguments (buffer, offset), %zd given",
                     nargs);
        return NULL;
    }
    Py_ssize_t off = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    if (off == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (off < 0 || off % 8 || view.len < (Py_ssize_t)sizeof(struct c1m_stats_worker) ||
        off > view.len - (Py_ssize_t)sizeof(struct c1m_stats_worker) ||
        ((uintptr_t)view.buf + (uintptr_t)off) % 8) {
        PyErr_Format(PyExc_ValueError,
                     "offset %zd: a record is %zu bytes at a multiple of 8 inside the "
                     "buffer (%zd bytes)", off, sizeof(struct c1m_stats_worker), view.len);
        PyBuffer_Release(&view);
        return NULL;
    }
    detach(c);
    c->view = view;
    c->rec = (struct c1m_stats_worker *)((char *)view.buf + off);
    Py_RETURN_NONE;
}

static PyObject *counters_detach(C1mCounters *c, PyObject *unused)
{
    (void)unused;
    detach(c);
    Py_RETURN_NONE;
}

static PyObject *counters_publish(C1mCounters *c, PyObject *unused)
{
    (void)unused;
    if (!c->rec) {
        PyErr_SetString(PyExc_RuntimeError, "publish(): no record attached (attach() first)");
        return NULL;
    }
    c1m_counters_publish(c);
    Py_RETURN_NONE;
}

static PyObject *counters_get_attached(C1mCounters *c, void *closure)
{
    (void)closure;
    return PyBool_FromLong(c->rec != NULL);
}

static int counters_traverse(C1mCounters *c, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(c));
    if (c->rec)
        Py_VISIT(c->view.obj);
    PyObject **slot[NCOUNTERS] = COUNTER_SLOTS(c);
    for (int i = 0; i < NCOUNTERS; i++)
        Py_VISIT(*slot[i]);   /* anything may be stored there */
    return 0;
}

static int counters_clear(C1mCounters *c)
{
    detach(c);
    PyObject **slot[NCOUNTERS] = COUNTER_SLOTS(c);
    for (int i = 0; i < NCOUNTERS; i++)
        Py_CLEAR(*slot[i]);
    return 0;
}

static void counters_dealloc(C1mCounters *c)
{
    PyTypeObject *tp = Py_TYPE(c);
    PyObject_GC_UnTrack(c);
    (void)counters_clear(c);
    tp->tp_free(c);
    Py_DECREF(tp);
}

#define COUNTER(name, doc) \
    {#name, T_OBJECT_EX, offsetof(C1mCounters, name), 0, doc}
static PyMemberDef counters_members[] = {
    COUNTER(pid, "The record's pid."),
    COUNTER(state, "The record's state (py_server.stats: STARTING ... FAILED)."),
    COUNTER(open, "Connections open now."),
    COUNTER(accepted, "Connections accepted."),
    COUNTER(closed, "Connections closed (any reason)."),
    COUNTER(slow, "Closed because output exceeded the bound."),
    COUNTER(lines, "Complete lines received."),
    COUNTER(pongs, "Pong replies handed to the kernel."),
    COUNTER(oversized, "Closed because a line exceeded 1 KiB."),
    COUNTER(accept_errors, "accept() failures other than EAGAIN."),
    COUNTER(pushed, "Push messages handed to the kernel."),
    {NULL, 0, 0, 0, NULL},
};
#undef COUNTER

static PyMethodDef counters_methods[] = {
    {"attach", C1M_METH(counters_attach), METH_FASTCALL,
     "attach(buffer, offset)\n--\n\n"
     "Write to the 128-byte record at offset of a writable buffer (the counters\n"
     "file's mmap); the buffer stays exported until detach()."},
    {"detach", C1M_METH(counters_detach), METH_NOARGS,
     "detach()\n--\n\nRelease the buffer; a no-op when none is attached."},
    {"publish", C1M_METH(counters_publish), METH_NOARGS,
     "publish()\n--\n\n"
     "Write pid, state, the counters and updated_ns (CLOCK_MONOTONIC) to the record\n"
     "under its sequence lock. RuntimeError when no record is attached."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef counters_getset[] = {
    {"attached", (getter)counters_get_attached, NULL, "True while a record is attached.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot counters_slots[] = {
    {Py_tp_doc, "Counters()\n--\n\n"
                "A worker's counters (ints, 0 at first) and their record in a c1m counters\n"
                "file, written by publish() or, every interval, by Loop.publish_counters()\n"
                "(as u64: not an int or negative 0, past 64 bits 2^64 - 1)."},
    {Py_tp_new, counters_new},
    {Py_tp_members, counters_members},
    {Py_tp_methods, counters_methods},
    {Py_tp_getset, counters_getset},
    {Py_tp_traverse, counters_traverse},
    {Py_tp_clear, counters_clear},
    {Py_tp_dealloc, counters_dealloc},
    {0, NULL},
};

PyType_Spec c1m_counters_spec = {
    .name = "c1m.Counters",
    .basicsize = sizeof(C1mCounters),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = counters_slots,
};
