/* transport_type.c - c1m.Transport: one per accepted connection.
 *
 * Object: PyObject_HEAD + loop + protocol + out + fd + flags = 48 bytes, 64
 * with the GC header. The loop's conns[fd] holds the strong reference while
 * the fd is open; once closed, the ready queue holds it until
 * connection_lost() has run, then the transport drops its protocol (breaking
 * the usual transport <-> protocol cycle without the GC) and its loop.
 *
 * Reading: one recv() into the loop's shared buffer per readiness event; the
 * only per-event allocation is the bytes object given to data_received().
 * Writing: write() sends at once; only what the kernel did not take is
 * buffered (c1m_outbuf, allocated then) and EPOLLOUT watched until drained.
 */
#include "c1m_ext.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_HIGH (64 * 1024)

static inline int reading(const C1mTransport *t)
{
    return !(t->flags & (T_READ_PAUSED | T_EOF | T_CLOSING | T_CLOSED));
}

static inline size_t pending(const C1mTransport *t)
{
    return t->out ? t->out->len - t->out->off : 0;
}

static PyObject *os_error(int err)
{
    return PyObject_CallFunction(PyExc_OSError, "is", err, strerror(err));
}

/* Fatal socket error: close now, connection_lost(OSError). Not reported on
 * stderr (asyncio logs OSErrors only in debug mode). */
static void fatal_errno(C1mTransport *t, int err)
{
    PyObject *exc = os_error(err);
    if (!exc)
        PyErr_Clear();
    c1m_transport_force_close(t, exc);
    Py_XDECREF(exc);
}

/* Make the epoll mask match the state: EPOLLIN|EPOLLRDHUP while reading,
 * EPOLLOUT while output is pending, unwatched when neither (so a paused
 * connection whose peer hung up does not spin on EPOLLHUP). */
static int update_mask(C1mTransport *t)
{
    C1mLoop *lp = t->loop;
    if (t->fd < 0 || !lp || !lp->cl)
        return 0;
    uint32_t want = 0;
    if (reading(t))
        want |= EPOLLIN | EPOLLRDHUP;
    if (pending(t))
        want |= EPOLLOUT;
    uint32_t cur = c1m_loop_events(lp->cl, t->fd);
    int rc = 0;
    if (want == cur)
        return 0;
    if (!want)
        rc = c1m_loop_del(lp->cl, t->fd);
    else if (!cur)
        rc = c1m_loop_add(lp->cl, t->fd, want, lp->conn_handler);
    else
        rc = c1m_loop_mod(lp->cl, t->fd, want);
    if (rc < 0) {
        fatal_errno(t, errno);
        return -1;
    }
    return 0;
}

/* Call an optional protocol method (eof_received, connection_lost,
 * pause_writing, resume_writing): a protocol that does not define it gets
 * asyncio.BaseProtocol's no-op. Returns a new ref, or NULL with an error. */
static PyObject *call_optional(PyObject *protocol, PyObject *name, PyObject *arg)
{
    PyObject *r = arg ? PyObject_CallMethodOneArg(protocol, name, arg)
                      : PyObject_CallMethodNoArgs(protocol, name);
    if (!r && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *attr = PyObject_GetAttr(protocol, name);
        if (!attr && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            /* not defined: the default does nothing */
            PyErr_Clear();
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            Py_RETURN_NONE;
        }
        Py_XDECREF(attr);
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return r;
}

/* An exception escaped a protocol callback (set on entry): report it and
 * close the connection with it, like asyncio's _fatal_error(). */
void c1m_protocol_error(C1mTransport *t, const char *message)
{
    C1mLoop *lp = t->loop;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value)
        PyException_SetTraceback(value, tb);
    PyObject *exc = Py_XNewRef(value);
    PyErr_Restore(type, value, tb);
    PyObject *protocol = Py_XNewRef(t->protocol);
    int fatal = lp ? c1m_report(lp, message, protocol, (PyObject *)t, NULL) : (PyErr_Clear(), 0);
    Py_XDECREF(protocol);
    if (!fatal)
        c1m_transport_force_close(t, exc);
    Py_XDECREF(exc);
}

/* pause_writing()/resume_writing(). write() may run them outside
 * run_forever, where the callback can close the loop (detaching t) or drop
 * the protocol: both are owned for the call and the report. */
static void call_flow_control(C1mTransport *t, PyObject *name, const char *message)
{
    C1mLoop *lp = (C1mLoop *)Py_NewRef(t->loop);
    PyObject *protocol = Py_NewRef(t->protocol);
    PyObject *r = call_optional(protocol, name, NULL);
    if (r)
        Py_DECREF(r);
    else
        (void)c1m_report(lp, message, protocol, (PyObject *)t, NULL);
    Py_DECREF(protocol);
    Py_DECREF(lp);
}

static void maybe_pause_protocol(C1mTransport *t)
{
    if ((t->flags & T_WRITE_PAUSED) || !t->out || pending(t) <= t->out->high || !t->protocol ||
        !t->loop)
        return;
    t->flags |= T_WRITE_PAUSED;
    call_flow_control(t, t->loop->st->s_pause_writing, "protocol.pause_writing() failed");
}

static void maybe_resume_protocol(C1mTransport *t)
{
    if (!(t->flags & T_WRITE_PAUSED) || (t->out && pending(t) > t->out->low) || !t->protocol ||
        !t->loop)
        return;
    t->flags &= ~(uint32_t)T_WRITE_PAUSED;
    call_flow_control(t, t->loop->st->s_resume_writing, "protocol.resume_writing() failed");
}

static void free_output(C1mTransport *t, int keep_limits)
{
    if (!t->out)
        return;
    free(t->out->data);
    t->out->data = NULL;
    t->out->off = t->out->len = t->out->cap = 0;
    if (!(keep_limits && t->out->custom)) {
        free(t->out);
        t->out = NULL;
    }
}

static c1m_outbuf *get_outbuf(C1mTransport *t)
{
    if (!t->out) {
        t->out = calloc(1, sizeof *t->out);
        if (!t->out)
            return NULL;
        t->out->high = DEFAULT_HIGH;
        t->out->low = DEFAULT_HIGH / 4;
    }
    return t->out;
}

static int append_output(C1mTransport *t, const char *p, size_t n)
{
    c1m_outbuf *o = get_outbuf(t);
    if (!o)
        return -1;
    if (o->off && o->off == o->len)
        o->off = o->len = 0;
    if (o->len + n > o->cap && o->off) {
        memmove(o->data, o->data + o->off, o->len - o->off);
        o->len -= o->off;
        o->off = 0;
    }
    if (o->len + n > o->cap) {
        /* Grow by a quarter, to what is needed rounded up to 1 KiB: a
         * connection held at --max-pending keeps ~5 KiB here, and doubling
         * from 4 KiB gave it 8 KiB of heap (a stalled peer's userspace cost,
         * README "What a busy connection costs"). Geometric, so a large
         * backlog still costs amortized O(1) copies per byte. */
        size_t need = (o->len + n + 1023) & ~(size_t)1023;
        size_t cap = o->cap + o->cap / 4;
        if (cap < need)
            cap = need;
        char *d = realloc(o->data, cap);
        if (!d)
            return -1;
        o->data = d;
        o->cap = cap;
    }
    memcpy(o->data + o->len, p, n);
    o->len += n;
    return 0;
}

/* One send(). MSG_EOR ends a record: the kernel appends no later write to
 * this one's packet, so SO_SNDBUF bounds what a peer that stopped reading
 * pins in the send queue (without it, small writes are appended to the last
 * unsent packet unchecked, up to 17 of them: c1m-server's conn_send says
 * more). */
static ssize_t send_some(int fd, const char *p, size_t n)
{
    ssize_t k;
    do
        k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_EOR);
    while (k < 0 && errno == EINTR);
    return k;
}

/* EPOLLOUT: one send of the pending output. */
static void do_flush(C1mTransport *t)
{
    c1m_outbuf *o = t->out;
    ssize_t k = send_some(t->fd, o->data + o->off, o->len - o->off);
    if (k < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            fatal_errno(t, errno);
        return;
    }
    o->off += (size_t)k;
    if (o->off < o->len) {
        maybe_resume_protocol(t);
        return;
    }
    free_output(t, 1);
    maybe_resume_protocol(t);
    if (t->fd < 0)
        return;
    if (pending(t)) {   /* resume_writing() wrote more */
        (void)update_mask(t);
        return;
    }
    if (t->flags & T_CLOSING) {
        c1m_transport_force_close(t, NULL);
        return;
    }
    if (t->flags & T_EOF_WRITTEN)
        (void)shutdown(t->fd, SHUT_WR);
    (void)update_mask(t);
}

static void on_eof(C1mTransport *t)
{
    t->flags |= T_EOF;
    if (update_mask(t) < 0)
        return;
    int keep = 0;
    if (t->protocol) {
        PyObject *protocol = Py_NewRef(t->protocol);   /* set_protocol() may drop it */
        PyObject *r = call_optional(protocol, t->loop->st->s_eof_received, NULL);
        Py_DECREF(protocol);
        if (!r) {
            c1m_protocol_error(t, "protocol.eof_received() call failed.");
            return;
        }
        keep = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (keep < 0) {
            c1m_protocol_error(t, "protocol.eof_received() call failed.");
            return;
        }
    }
    if (t->fd >= 0 && !keep && !(t->flags & T_CLOSING)) {
        t->flags |= T_CLOSING;
        if (pending(t))
            (void)update_mask(t);
        else
            c1m_transport_force_close(t, NULL);
    }
}

static void do_read(C1mTransport *t)
{
    C1mLoop *lp = t->loop;
    ssize_t n;
    do
        n = recv(t->fd, lp->rbuf, lp->rbuf_size, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        if (!t->protocol)
            return;
        PyObject *data = PyBytes_FromStringAndSize(lp->rbuf, n);
        if (!data) {
            c1m_protocol_error(t, "Fatal read error on socket transport");
            return;
        }
        PyObject *protocol = Py_NewRef(t->protocol);   /* set_protocol() may drop it */
        PyObject *r = PyObject_CallMethodOneArg(protocol, lp->st->s_data_received, data);
        Py_DECREF(protocol);
        Py_DECREF(data);
        if (r)
            Py_DECREF(r);
        else
            c1m_protocol_error(t, "Fatal error: protocol.data_received() call failed.");
    } else if (n == 0) {
        on_eof(t);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        fatal_errno(t, errno);
    }
}

void c1m_transport_io(C1mLoop *lp, int fd, uint32_t events)
{
    C1mTransport *t = (fd >= 0 && fd < lp->max_fds) ? lp->conns[fd] : NULL;
    if (!t) {
        /* not ours (stale event): stop watching rather than spin */
        if (c1m_loop_events(lp->cl, fd))
            (void)c1m_loop_del(lp->cl, fd);
        return;
    }
    C1M_ASSERT_GIL();
    assert(t->fd == fd && t->loop == lp && lp->running);
    Py_INCREF(t);
    if (events & EPOLLERR) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err) {
            fatal_errno(t, err);
            goto done;
        }
    }
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && reading(t)) {
        do_read(t);
        if (t->fd < 0)
            goto done;
    }
    if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && pending(t))
        do_flush(t);
done:
    Py_DECREF(t);
}

C1mTransport *c1m_transport_new(C1mLoop *lp, int fd)
{
    assert(fd >= 0 && fd < lp->max_fds && !lp->conns[fd] && lp->nconns >= 0);
    C1mTransport *t = PyObject_GC_New(C1mTransport, lp->st->TransportType);
    if (!t)
        return NULL;
    t->loop = lp;
    t->protocol = NULL;
    t->out = NULL;
    t->fd = fd;
    t->flags = 0;
    PyObject_GC_Track(t);
    lp->conns[fd] = (C1mTransport *)Py_NewRef(t);
    if (fd >= lp->hi_fd)
        lp->hi_fd = fd + 1;
    lp->nconns++;
    assert(lp->hi_fd <= lp->max_fds && lp->nconns <= lp->hi_fd);
    return t;
}

void c1m_transport_start(C1mTransport *t)
{
    (void)update_mask(t);
}

/* Close the fd now, drop pending output, queue connection_lost(exc). */
void c1m_transport_force_close(C1mTransport *t, PyObject *exc)
{
    C1mLoop *lp = t->loop;
    int fd = t->fd;
    if (fd < 0 || !lp)
        return;
    /* an open transport is the one in conns[fd], which owns it */
    assert(fd < lp->hi_fd && lp->conns[fd] == t && lp->nconns > 0 && !(t->flags & T_CLOSED));
    t->flags |= T_CLOSING | T_CLOSED;
    free_output(t, 0);
    if (lp->cl && c1m_loop_events(lp->cl, fd))
        (void)c1m_loop_del(lp->cl, fd);
    (void)close(fd);
    t->fd = -1;
    lp->conns[fd] = NULL;
    lp->nconns--;
    /* conns[fd]'s reference moves to the ready queue */
    if (c1m_ready_push(lp, (PyObject *)t, exc) < 0) {
        /* no memory for the queue: connection_lost is skipped. Every caller
         * holds its own reference to t, so dropping the table's is safe. */
        PyErr_WriteUnraisable((PyObject *)t);
        t->flags |= T_LOST;
        t->loop = NULL;
        Py_DECREF(t);
    }
    /* a paused listener may re-open and accept at once, running other
     * protocols' connection_made(): do that from the loop, not from inside
     * this close() */
    lp->conns_dropped = 1;
}

void c1m_transport_call_lost(C1mTransport *t, PyObject *exc)
{
    C1mLoop *lp = t->loop;
    if (t->protocol && !(t->flags & T_LOST) && lp) {
        C1M_ASSERT_GIL();
        t->flags |= T_LOST;
        PyObject *protocol = Py_NewRef(t->protocol);   /* set_protocol() may drop it */
        PyObject *r = call_optional(protocol, lp->st->s_connection_lost, exc ? exc : Py_None);
        if (r)
            Py_DECREF(r);
        else
            (void)c1m_report(lp, "protocol.connection_lost() call failed.", protocol,
                             (PyObject *)t, NULL);
        Py_DECREF(protocol);
    }
    t->flags |= T_LOST;
    Py_CLEAR(t->protocol);
    t->loop = NULL;
}

void c1m_transport_detach(C1mTransport *t)
{
    C1mLoop *lp = t->loop;
    if (t->fd >= 0) {
        if (lp && lp->cl && c1m_loop_events(lp->cl, t->fd))
            (void)c1m_loop_del(lp->cl, t->fd);
        (void)close(t->fd);
        t->fd = -1;
        if (lp)
            lp->nconns--;
    }
    t->flags |= T_CLOSING | T_CLOSED;
    free_output(t, 0);
    t->loop = NULL;
}

/* ---- Python methods ---------------------------------------------------- */

/* 1: go on, 0: transport is closed/detached (silently do nothing), -1: error */
static int usable(C1mTransport *t)
{
    if (!t->loop || t->fd < 0)
        return 0;
    return c1m_loop_check_thread(t->loop) < 0 ? -1 : 1;
}

static PyObject *tr_write(C1mTransport *t, PyObject *data)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError,
                            "data argument must be a bytes-like object, not '%.100s'",
                            Py_TYPE(data)->tp_name);
    }
    int u = usable(t);
    if (u <= 0 || (t->flags & T_CLOSING) || view.len == 0) {
        PyBuffer_Release(&view);
        if (u < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (t->flags & T_EOF_WRITTEN) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "Cannot call write() after write_eof()");
        return NULL;
    }
    const char *p = view.buf;
    size_t n = (size_t)view.len;
    if (!pending(t)) {
        ssize_t k = send_some(t->fd, p, n);
        if (k < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                int err = errno;
                PyBuffer_Release(&view);
                fatal_errno(t, err);
                Py_RETURN_NONE;
            }
            k = 0;
        }
        p += k;
        n -= (size_t)k;
    }
    if (n) {
        if (append_output(t, p, n) < 0) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        if (update_mask(t) == 0)
            maybe_pause_protocol(t);
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *tr_writelines(C1mTransport *t, PyObject *lines)
{
    PyObject *it = PyObject_GetIter(lines);
    if (!it)
        return NULL;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        PyObject *r = tr_write(t, item);
        Py_DECREF(item);
        if (!r) {
            Py_DECREF(it);
            return NULL;
        }
        Py_DECREF(r);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *tr_close(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    int u = usable(t);
    if (u <= 0)
        return u < 0 ? NULL : Py_NewRef(Py_None);
    if (t->flags & T_CLOSING)
        Py_RETURN_NONE;
    t->flags |= T_CLOSING;
    if (pending(t))
        (void)update_mask(t);   /* stop reading, keep flushing */
    else
        c1m_transport_force_close(t, NULL);
    Py_RETURN_NONE;
}

static PyObject *tr_abort(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    int u = usable(t);
    if (u <= 0)
        return u < 0 ? NULL : Py_NewRef(Py_None);
    c1m_transport_force_close(t, NULL);
    Py_RETURN_NONE;
}

static PyObject *tr_write_eof(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    int u = usable(t);
    if (u <= 0)
        return u < 0 ? NULL : Py_NewRef(Py_None);
    if (t->flags & (T_CLOSING | T_EOF_WRITTEN))
        Py_RETURN_NONE;
    t->flags |= T_EOF_WRITTEN;
    if (!pending(t))
        (void)shutdown(t->fd, SHUT_WR);
    Py_RETURN_NONE;
}

static PyObject *tr_can_write_eof(C1mTransport *t, PyObject *unused)
{
    (void)t;
    (void)unused;
    Py_RETURN_TRUE;
}

static PyObject *tr_is_closing(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(t->fd < 0 || (t->flags & T_CLOSING));
}

static PyObject *tr_is_reading(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(t->fd >= 0 && reading(t));
}

static PyObject *tr_pause_reading(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    int u = usable(t);
    if (u <= 0)
        return u < 0 ? NULL : Py_NewRef(Py_None);
    if (t->flags & (T_CLOSING | T_READ_PAUSED))
        Py_RETURN_NONE;
    t->flags |= T_READ_PAUSED;
    (void)update_mask(t);
    Py_RETURN_NONE;
}

static PyObject *tr_resume_reading(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    int u = usable(t);
    if (u <= 0)
        return u < 0 ? NULL : Py_NewRef(Py_None);
    if ((t->flags & T_CLOSING) || !(t->flags & T_READ_PAUSED))
        Py_RETURN_NONE;
    t->flags &= ~(uint32_t)T_READ_PAUSED;
    (void)update_mask(t);
    Py_RETURN_NONE;
}

static PyObject *tr_get_write_buffer_size(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(pending(t));
}

static PyObject *tr_get_write_buffer_limits(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    size_t high = t->out ? t->out->high : DEFAULT_HIGH;
    size_t low = t->out ? t->out->low : DEFAULT_HIGH / 4;
    return Py_BuildValue("(nn)", (Py_ssize_t)low, (Py_ssize_t)high);
}

static PyObject *tr_set_write_buffer_limits(C1mTransport *t, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"high", "low", NULL};
    PyObject *ho = Py_None, *lo = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:set_write_buffer_limits", kwlist, &ho, &lo))
        return NULL;
    Py_ssize_t high = -1, low = -1;
    if (ho != Py_None && (high = PyNumber_AsSsize_t(ho, PyExc_OverflowError)) == -1 &&
        PyErr_Occurred())
        return NULL;
    if (lo != Py_None && (low = PyNumber_AsSsize_t(lo, PyExc_OverflowError)) == -1 &&
        PyErr_Occurred())
        return NULL;
    if (ho == Py_None) {
        /* asyncio's 4 * low, saturated: 4 * 2**62 wrapped to high 0 and refused */
        if (lo == Py_None)
            high = DEFAULT_HIGH;
        else
            high = low > PY_SSIZE_T_MAX / 4   ? PY_SSIZE_T_MAX
                   : low < PY_SSIZE_T_MIN / 4 ? PY_SSIZE_T_MIN
                                              : 4 * low;
    }
    if (lo == Py_None)
        low = high / 4;
    if (!(high >= low && low >= 0)) {
        PyErr_Format(PyExc_ValueError, "high (%zd) must be >= low (%zd) must be >= 0", high,
                     low);
        return NULL;
    }
    if (!get_outbuf(t))
        return PyErr_NoMemory();
    t->out->high = (size_t)high;
    t->out->low = (size_t)low;
    t->out->custom = 1;
    if (t->loop && t->fd >= 0) {
        maybe_pause_protocol(t);
        maybe_resume_protocol(t);
    }
    Py_RETURN_NONE;
}

static PyObject *sockaddr_tuple(const struct sockaddr_storage *ss)
{
    char host[INET6_ADDRSTRLEN];
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        if (!inet_ntop(AF_INET, &a->sin_addr, host, sizeof host))
            return PyErr_SetFromErrno(PyExc_OSError);
        return Py_BuildValue("(si)", host, ntohs(a->sin_port));
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        if (!inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host))
            return PyErr_SetFromErrno(PyExc_OSError);
        return Py_BuildValue("(siII)", host, ntohs(a->sin6_port), ntohl(a->sin6_flowinfo),
                             a->sin6_scope_id);
    }
    Py_RETURN_NONE;
}

static PyObject *tr_get_extra_info(C1mTransport *t, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"name", "default", NULL};
    PyObject *name, *dflt = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "U|O:get_extra_info", kwlist, &name, &dflt))
        return NULL;
    int peer = PyUnicode_CompareWithASCIIString(name, "peername") == 0;
    int sock = PyUnicode_CompareWithASCIIString(name, "sockname") == 0;
    if ((!peer && !sock) || t->fd < 0)
        return Py_NewRef(dflt);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int rc = peer ? getpeername(t->fd, (struct sockaddr *)&ss, &len)
                  : getsockname(t->fd, (struct sockaddr *)&ss, &len);
    if (rc < 0)
        return Py_NewRef(dflt);
    return sockaddr_tuple(&ss);
}

static PyObject *tr_get_protocol(C1mTransport *t, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(t->protocol ? t->protocol : Py_None);
}

static PyObject *tr_set_protocol(C1mTransport *t, PyObject *protocol)
{
    Py_XSETREF(t->protocol, Py_NewRef(protocol));
    Py_RETURN_NONE;
}

static PyObject *tr_get_fd(C1mTransport *t, void *closure)
{
    (void)closure;
    return PyLong_FromLong(t->fd);
}

static PyObject *tr_repr(C1mTransport *t)
{
    if (t->fd < 0)
        return PyUnicode_FromFormat("<%s closed>", Py_TYPE(t)->tp_name);
    return PyUnicode_FromFormat("<%s fd=%d%s%s>", Py_TYPE(t)->tp_name, t->fd,
                                (t->flags & T_CLOSING) ? " closing" : "",
                                reading(t) ? "" : " not-reading");
}

static int tr_traverse(C1mTransport *t, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(t));
    Py_VISIT(t->protocol);
    return 0;
}

static int tr_clear(C1mTransport *t)
{
    Py_CLEAR(t->protocol);
    return 0;
}

static void tr_dealloc(C1mTransport *t)
{
    PyTypeObject *tp = Py_TYPE(t);
    PyObject_GC_UnTrack(t);
    if (t->fd >= 0) /* only possible if its loop is gone; never leak the fd */
        c1m_transport_detach(t);
    free_output(t, 0);
    Py_CLEAR(t->protocol);
    tp->tp_free(t);
    Py_DECREF(tp);
}

#define NOARGS(name, fn, doc) {name, C1M_METH(fn), METH_NOARGS, doc}
static PyMethodDef tr_methods[] = {
    {"write", C1M_METH(tr_write), METH_O,
     "write(data)\n--\n\nSend a bytes-like object; what the kernel does not take now is "
     "buffered. Ignored once the transport is closing."},
    {"writelines", C1M_METH(tr_writelines), METH_O, "writelines(list_of_data)\n--\n\n"},
    NOARGS("close", tr_close,
           "close()\n--\n\nFlush buffered output, then close; connection_lost(None) follows "
           "from the loop."),
    NOARGS("abort", tr_abort, "abort()\n--\n\nClose now, dropping buffered output."),
    NOARGS("write_eof", tr_write_eof, "write_eof()\n--\n\nShut down the write side once "
                                      "buffered output is sent."),
    NOARGS("can_write_eof", tr_can_write_eof, "can_write_eof()\n--\n\nTrue."),
    NOARGS("is_closing", tr_is_closing, "is_closing()\n--\n\n"),
    NOARGS("is_reading", tr_is_reading, "is_reading()\n--\n\n"),
    NOARGS("pause_reading", tr_pause_reading, "pause_reading()\n--\n\n"),
    NOARGS("resume_reading", tr_resume_reading, "resume_reading()\n--\n\n"),
    NOARGS("get_write_buffer_size", tr_get_write_buffer_size,
           "get_write_buffer_size()\n--\n\n"),
    NOARGS("get_write_buffer_limits", tr_get_write_buffer_limits,
           "get_write_buffer_limits()\n--\n\n(low, high)"),
    {"set_write_buffer_limits", C1M_METH(tr_set_write_buffer_limits),
     METH_VARARGS | METH_KEYWORDS, "set_write_buffer_limits(high=None, low=None)\n--\n\n"},
    {"get_extra_info", C1M_METH(tr_get_extra_info), METH_VARARGS | METH_KEYWORDS,
     "get_extra_info(name, default=None)\n--\n\n'peername' and 'sockname' (address "
     "tuples); 'socket' and anything else give default."},
    NOARGS("get_protocol", tr_get_protocol, "get_protocol()\n--\n\n"),
    {"set_protocol", C1M_METH(tr_set_protocol), METH_O, "set_protocol(protocol)\n--\n\n"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tr_getset[] = {
    {"fd", (getter)tr_get_fd, NULL, "The socket's fd, -1 once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot tr_slots[] = {
    {Py_tp_doc, "A connection accepted by a c1m.Server (asyncio Transport API)."},
    {Py_tp_methods, tr_methods},
    {Py_tp_getset, tr_getset},
    {Py_tp_repr, tr_repr},
    {Py_tp_traverse, tr_traverse},
    {Py_tp_clear, tr_clear},
    {Py_tp_dealloc, tr_dealloc},
    {0, NULL},
};

PyType_Spec c1m_transport_spec = {
    .name = "c1m.Transport",
    .basicsize = sizeof(C1mTransport),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = tr_slots,
};
