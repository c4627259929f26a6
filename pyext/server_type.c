/* server_type.c - c1m.Server: a c1m_listener on the loop plus a protocol
 * factory. The listener does the accept loop and the max_conns back-off; this
 * file turns each accepted fd into a Transport + protocol.
 *
 * TCP_NODELAY (as asyncio and uvloop set it) and sndbuf/rcvbuf are set on the
 * listening socket, which every accepted socket inherits them from (Linux
 * copies them into each connection it creates), not on each accepted fd:
 * three setsockopt() calls fewer per connection. */
#include "c1m_ext.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The listener's accept callback (inside c1m_listener's on_listen_io, which
 * goes on reading s->l after this returns). The protocol factory and
 * connection_made may drop the last reference to s (close() it, forget it):
 * the loop owns a reference to the dispatching server, lp->held_server,
 * until the iteration is over. One slot is enough: listener callbacks do not
 * nest, so when another server's accept starts, the previous one is done. */
static int on_accept(void *ud, int fd)
{
    C1mServer *s = ud;
    C1mLoop *lp = s->loop;
    if (!lp || lp->closed || !s->factory) {
        (void)close(fd);
        return -1;
    }
    C1M_ASSERT_GIL();
    assert(lp->running && lp->cl && s->l.fd >= 0);
    if (lp->held_server != s)
        Py_XSETREF(lp->held_server, (C1mServer *)Py_NewRef(s));
    if (fd >= lp->max_fds) {   /* RLIMIT_NOFILE was raised after Loop() */
        (void)close(fd);
        return 0;
    }

    C1mTransport *t = c1m_transport_new(lp, fd);
    if (!t) {
        (void)close(fd);
        (void)c1m_report(lp, "Error on transport creation for incoming connection", NULL, NULL,
                         NULL);
        return -1;
    }
    PyObject *factory = Py_NewRef(s->factory);
    PyObject *protocol = PyObject_CallNoArgs(factory);
    Py_DECREF(factory);
    if (!protocol) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        c1m_transport_force_close(t, NULL);
        PyErr_Restore(type, value, tb);
        (void)c1m_report(lp, "Error on transport creation for incoming connection", NULL,
                         (PyObject *)t, NULL);
    } else {
        t->protocol = Py_NewRef(protocol);   /* ours stays: set_protocol() may drop t's */
        t->flags |= T_MADE;
        PyObject *r = PyObject_CallMethodOneArg(protocol, lp->st->s_connection_made,
                                                (PyObject *)t);
        Py_DECREF(protocol);
        if (r)
            Py_DECREF(r);
        else
            c1m_protocol_error(t, "protocol.connection_made() call failed.");
        c1m_transport_start(t);   /* watch it, unless closed or paused meanwhile */
    }
    Py_DECREF(t);
    return lp->exc_type ? -1 : 0;
}

static void on_state(void *ud, int paused)
{
    C1mServer *s = ud;
    C1mLoop *lp = s->loop;
    if (!lp || lp->closed)
        return;
    C1M_ASSERT_GIL();
    /* run it from the loop, never re-entrantly (this may be inside close()) */
    if (c1m_ready_push(lp, Py_NewRef(s), paused ? Py_True : Py_False) < 0) {
        Py_DECREF(s);
        PyErr_WriteUnraisable((PyObject *)s);
    }
}

void c1m_server_call_state(C1mLoop *lp, C1mServer *s, PyObject *paused)
{
    if (!s->state_cb)
        return;
    PyObject *cb = Py_NewRef(s->state_cb);
    PyObject *r = PyObject_CallOneArg(cb, paused ? paused : Py_None);
    Py_DECREF(cb);
    if (r) {
        Py_DECREF(r);
        return;
    }
    (void)c1m_report(lp, "Exception in server state callback", NULL, NULL, (PyObject *)s);
}

PyObject *c1m_server_create(C1mLoop *lp, PyObject *factory, const char *host, int port,
                            int backlog, int reuse_port, long max_conns, int sndbuf, int rcvbuf)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    int gai = c1m_resolve(host, port, &ss, &sslen);
    if (gai) {
        PyObject *v = Py_BuildValue("(is)", gai, gai_strerror(gai));
        if (v) {
            PyErr_SetObject(PyExc_OSError, v);
            Py_DECREF(v);
        }
        return NULL;
    }
    C1mServer *s = PyObject_GC_New(C1mServer, lp->st->ServerType);
    if (!s)
        return NULL;
    s->loop = NULL;
    s->factory = Py_NewRef(factory);
    s->state_cb = NULL;
    s->port = port;
    memset(&s->l, 0, sizeof s->l);
    s->l.fd = -1;
    PyObject_GC_Track(s);

    s->loop = lp;   /* on_state may run during open */
    errno = 0;
    /* inherited by every accepted socket (see the top of this file) */
    const struct c1m_accept_opts opts = {.sndbuf = sndbuf, .rcvbuf = rcvbuf, .nodelay = 1};
    if (c1m_listener_open_opts(&s->l, lp->cl, host, port, backlog, reuse_port, &opts, max_conns,
                               &lp->nconns, on_accept, on_state, s) < 0) {
        s->loop = NULL;
        if (errno)
            PyErr_SetFromErrno(PyExc_OSError);
        else
            PyErr_Format(PyExc_OSError, "cannot listen on %s:%d", host, port);
        Py_DECREF(s);
        return NULL;
    }
    if (s->l.fd >= 0) {
        struct sockaddr_storage a;
        socklen_t alen = sizeof a;
        if (getsockname(s->l.fd, (struct sockaddr *)&a, &alen) == 0) {
            if (a.ss_family == AF_INET)
                s->port = ntohs(((struct sockaddr_in *)&a)->sin_port);
            else if (a.ss_family == AF_INET6)
                s->port = ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
        }
        /* a listener re-opened after a back-off must come back on the same
         * port, not on a fresh ephemeral one */
        s->l.port = s->port;
    }
    if (PyList_Append(lp->servers, (PyObject *)s) < 0) {
        c1m_server_detach(s);
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

void c1m_server_detach(C1mServer *s)
{
    C1mLoop *lp = s->loop;
    if (!lp)
        return;
    s->loop = NULL;   /* on_state/on_accept ignore a detached server */
    if (lp->cl)   /* closes the fd, cancels a retry timer, frees the handler slot */
        c1m_listener_close(&s->l);
}

/* ---- Python methods ---------------------------------------------------- */

static PyObject *srv_close(C1mServer *s, PyObject *unused)
{
    (void)unused;
    C1mLoop *lp = s->loop;
    if (!lp)
        Py_RETURN_NONE;
    if (c1m_loop_check_thread(lp) < 0)
        return NULL;
    Py_INCREF(s);
    c1m_server_detach(s);
    if (lp->servers) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lp->servers); i++) {
            if (PyList_GET_ITEM(lp->servers, i) == (PyObject *)s) {
                if (PySequence_DelItem(lp->servers, i) < 0) {
                    Py_DECREF(s);
                    return NULL;
                }
                break;
            }
        }
    }
    Py_DECREF(s);
    Py_RETURN_NONE;
}

static PyObject *srv_is_serving(C1mServer *s, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(s->loop != NULL);
}

static PyObject *srv_get_port(C1mServer *s, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(s->port);
}

static PyObject *srv_set_state_callback(C1mServer *s, PyObject *cb)
{
    if (cb != Py_None && !PyCallable_Check(cb)) {
        PyErr_Format(PyExc_TypeError, "callback must be callable or None, not %.100s",
                     Py_TYPE(cb)->tp_name);
        return NULL;
    }
    Py_XSETREF(s->state_cb, cb == Py_None ? NULL : Py_NewRef(cb));
    Py_RETURN_NONE;
}

static PyObject *srv_port(C1mServer *s, void *closure)
{
    (void)closure;
    return PyLong_FromLong(s->port);
}

static PyObject *srv_paused(C1mServer *s, void *closure)
{
    (void)closure;
    return PyBool_FromLong(s->loop != NULL && c1m_listener_paused(&s->l));
}

static PyObject *srv_accept_errors(C1mServer *s, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(s->l.accept_errors);
}

static PyObject *srv_repr(C1mServer *s)
{
    return PyUnicode_FromFormat("<%s %s:%d %s>", Py_TYPE(s)->tp_name, s->l.host, s->port,
                                !s->loop ? "closed"
                                         : (c1m_listener_paused(&s->l) ? "paused" : "serving"));
}

static int srv_traverse(C1mServer *s, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(s));
    Py_VISIT(s->factory);
    Py_VISIT(s->state_cb);
    return 0;
}

static int srv_clear(C1mServer *s)
{
    Py_CLEAR(s->factory);
    Py_CLEAR(s->state_cb);
    return 0;
}

static void srv_dealloc(C1mServer *s)
{
    PyTypeObject *tp = Py_TYPE(s);
    PyObject_GC_UnTrack(s);
    if (s->loop) {
        /* only when the loop itself is being collected */
        C1mLoop *lp = s->loop;
        s->loop = NULL;
        if (lp->cl)
            c1m_listener_close(&s->l);
    }
    (void)srv_clear(s);
    tp->tp_free(s);
    Py_DECREF(tp);
}

static PyMethodDef srv_methods[] = {
    {"close", C1M_METH(srv_close), METH_NOARGS,
     "close()\n--\n\nStop listening (open connections stay)."},
    {"is_serving", C1M_METH(srv_is_serving), METH_NOARGS, "is_serving()\n--\n\n"},
    {"get_port", C1M_METH(srv_get_port), METH_NOARGS,
     "get_port()\n--\n\nThe bound port (useful with port 0)."},
    {"set_state_callback", C1M_METH(srv_set_state_callback), METH_O,
     "set_state_callback(fn)\n--\n\nfn(True) when the listener pauses at max_conns or on "
     "EMFILE, fn(False) when it re-opens; called from the loop. None removes it."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef srv_getset[] = {
    {"port", (getter)srv_port, NULL, "The bound port.", NULL},
    {"paused", (getter)srv_paused, NULL, "True while the listener is closed by the back-off.",
     NULL},
    {"accept_errors", (getter)srv_accept_errors, NULL,
     "accept() failures other than EAGAIN/EINTR.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot srv_slots[] = {
    {Py_tp_doc, "A listening server created by Loop.create_server()."},
    {Py_tp_methods, srv_methods},
    {Py_tp_getset, srv_getset},
    {Py_tp_repr, srv_repr},
    {Py_tp_traverse, srv_traverse},
    {Py_tp_clear, srv_clear},
    {Py_tp_dealloc, srv_dealloc},
    {0, NULL},
};

PyType_Spec c1m_server_spec = {
    .name = "c1m.Server",
    .basicsize = sizeof(C1mServer),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = srv_slots,
};
