/* timer_type.c - c1m.TimerHandle: call_later / call_soon / signal callbacks.
 *
 * A pending call_later handle is owned by the loop (a doubly-linked list, so
 * cancel and GC traversal need no lookup) and by the C timer heap through its
 * user-data pointer; `loop` is a borrowed back-pointer, NULL when not pending.
 */
#include "c1m_ext.h"

#include <errno.h>
#include <math.h>

C1mHandle *c1m_handle_new(C1mLoop *lp, int kind, PyObject *callback, PyObject *const *args,
                          Py_ssize_t nargs)
{
    if (!PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "a callable object was expected, got %.200s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    PyObject *tuple = PyTuple_New(nargs);
    if (!tuple)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    C1mHandle *h = PyObject_GC_New(C1mHandle, lp->st->HandleType);
    if (!h) {
        Py_DECREF(tuple);
        return NULL;
    }
    h->loop = NULL;
    h->callback = Py_NewRef(callback);
    h->args = tuple;
    h->prev = h->next = NULL;
    h->timer_id = 0;
    h->when = 0;
    h->kind = kind;
    h->cancelled = 0;
    PyObject_GC_Track(h);
    return h;
}

void c1m_handle_unlink(C1mHandle *h)
{
    C1mLoop *lp = h->loop;
    /* the pending list is consistent around h */
    assert(!h->prev || h->prev->next == h);
    assert(!h->next || h->next->prev == h);
    assert(h->prev || !lp || lp->timers == h);
    if (h->prev)
        h->prev->next = h->next;
    else if (lp && lp->timers == h)
        lp->timers = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->prev = h->next = NULL;
    h->loop = NULL;
    h->timer_id = 0;
}

void c1m_handle_run(C1mLoop *lp, C1mHandle *h)
{
    C1M_ASSERT_GIL();
    if (h->cancelled || !h->callback)
        return;
    assert(h->args && PyTuple_Check(h->args));
    /* the callback may cancel() this very handle, which drops h->callback and
     * h->args: own both for the duration of the call (the caller owns h) */
    PyObject *callback = Py_NewRef(h->callback), *args = Py_NewRef(h->args);
    PyObject *r = PyObject_Call(callback, args, NULL);
    Py_DECREF(callback);
    Py_DECREF(args);
    if (r)
        Py_DECREF(r);
    else
        (void)c1m_report(lp, "Exception in callback", NULL, NULL, (PyObject *)h);
}

static void on_timer(c1m_loop *cl, uint64_t timer_id, void *ud)
{
    (void)cl;
    (void)timer_id;
    C1mHandle *h = ud;
    C1mLoop *lp = h->loop;
    C1M_ASSERT_GIL();
    assert(lp && lp->cl == cl && h->kind == H_TIMER && h->timer_id == timer_id && !h->cancelled);
    c1m_handle_unlink(h);   /* the list's reference is now ours */
    c1m_handle_run(lp, h);
    Py_DECREF(h);
}

int c1m_handle_schedule(C1mHandle *h, double delay)
{
    C1mLoop *lp = h->loop;
    assert(lp && lp->cl && h->kind == H_TIMER && !h->prev && !h->next && !h->timer_id);
    assert(!isnan(delay));
    /* asyncio: a delay <= 0 runs on the next iteration, +inf never (here:
     * after C1M_MAX_DELAY); when() is time() + delay all the same */
    double wait = delay > 0 ? (delay < C1M_MAX_DELAY ? delay : C1M_MAX_DELAY) : 0;
    uint64_t id = c1m_loop_timer(lp->cl, wait * 1000.0, on_timer, h);
    if (!id) {
        h->loop = NULL;
        if (errno == ENOMEM)
            PyErr_NoMemory();
        else
            PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    h->timer_id = id;
    h->when = (double)c1m_now_ns() / 1e9 + delay;
    h->prev = NULL;
    h->next = lp->timers;
    if (lp->timers)
        lp->timers->prev = h;
    lp->timers = (C1mHandle *)Py_NewRef(h);
    return 0;
}

static PyObject *handle_cancel(C1mHandle *h, PyObject *unused)
{
    (void)unused;
    if (h->cancelled)
        Py_RETURN_NONE;
    C1mLoop *lp = h->loop;
    if (lp && c1m_loop_check_thread(lp) < 0)
        return NULL;
    h->cancelled = 1;
    if (lp && h->kind == H_TIMER && lp->cl) {
        /* pending: take it off the C heap and drop the loop's reference (the
         * caller still holds one) */
        (void)c1m_loop_timer_cancel(lp->cl, h->timer_id);
        c1m_handle_unlink(h);
        Py_DECREF(h);
    }
    Py_CLEAR(h->callback);
    Py_CLEAR(h->args);
    Py_RETURN_NONE;
}

static PyObject *handle_cancelled(C1mHandle *h, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(h->cancelled);
}

static PyObject *handle_when(C1mHandle *h, PyObject *unused)
{
    (void)unused;
    return PyFloat_FromDouble(h->when);
}

static PyObject *handle_repr(C1mHandle *h)
{
    const char *state = h->cancelled ? " cancelled" : (h->loop ? " pending" : "");
    if (h->callback) {
        PyObject *when = PyFloat_FromDouble(h->when);
        if (!when)
            return NULL;
        /* the callback's repr may cancel h, dropping h->callback */
        PyObject *callback = Py_NewRef(h->callback);
        PyObject *r = PyUnicode_FromFormat("<%s%s when=%R callback=%R>", Py_TYPE(h)->tp_name,
                                           state, when, callback);
        Py_DECREF(callback);
        Py_DECREF(when);
        return r;
    }
    return PyUnicode_FromFormat("<%s%s>", Py_TYPE(h)->tp_name, state);
}

static int handle_traverse(C1mHandle *h, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(h));
    Py_VISIT(h->callback);
    Py_VISIT(h->args);
    return 0;
}

static int handle_clear(C1mHandle *h)
{
    Py_CLEAR(h->callback);
    Py_CLEAR(h->args);
    return 0;
}

static void handle_dealloc(C1mHandle *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    PyObject_GC_UnTrack(h);
    (void)handle_clear(h);
    tp->tp_free(h);
    Py_DECREF(tp);
}

static PyMethodDef handle_methods[] = {
    {"cancel", C1M_METH(handle_cancel), METH_NOARGS,
     "cancel()\n--\n\nCancel the call; a no-op once it ran or was cancelled."},
    {"cancelled", C1M_METH(handle_cancelled), METH_NOARGS,
     "cancelled()\n--\n\nTrue once cancel() was called."},
    {"when", C1M_METH(handle_when), METH_NOARGS,
     "when()\n--\n\nThe scheduled time, on the loop.time() clock."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_doc, "A scheduled callback (loop.call_later / call_soon / call_at)."},
    {Py_tp_methods, handle_methods},
    {Py_tp_repr, handle_repr},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_dealloc, handle_dealloc},
    {0, NULL},
};

PyType_Spec c1m_handle_spec = {
    .name = "c1m.TimerHandle",
    .basicsize = sizeof(C1mHandle),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = handle_slots,
};
