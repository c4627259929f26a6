/* module.c - the `c1m` module: multi-phase init (PEP 489) and module state. */
#include "c1m_ext.h"

int c1m_is_fatal(PyObject *type)
{
    return type && (PyErr_GivenExceptionMatches(type, PyExc_KeyboardInterrupt) ||
                    PyErr_GivenExceptionMatches(type, PyExc_SystemExit));
}

static PyObject *nofile_limit(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(c1m_nofile_limit());
}

static PyMethodDef module_methods[] = {
    {"nofile_limit", nofile_limit, METH_NOARGS,
     "nofile_limit()\n--\n\nThe soft RLIMIT_NOFILE of this process."},
    {NULL, NULL, 0, NULL},
};

static int add_type(PyObject *m, PyType_Spec *spec, PyTypeObject **slot)
{
    PyObject *t = PyType_FromModuleAndSpec(m, spec, NULL);
    if (!t)
        return -1;
    *slot = (PyTypeObject *)t;
    return PyModule_AddType(m, *slot);
}

static int intern(PyObject **slot, const char *s)
{
    *slot = PyUnicode_InternFromString(s);
    return *slot ? 0 : -1;
}

static int c1m_exec(PyObject *m)
{
    c1m_state *st = PyModule_GetState(m);
    if (add_type(m, &c1m_loop_spec, &st->LoopType) < 0 ||
        add_type(m, &c1m_server_spec, &st->ServerType) < 0 ||
        add_type(m, &c1m_transport_spec, &st->TransportType) < 0 ||
        add_type(m, &c1m_handle_spec, &st->HandleType) < 0 ||
        add_type(m, &c1m_counters_spec, &st->CountersType) < 0)
        return -1;
    /* call_soon returns the same type; asyncio calls it Handle */
    if (PyModule_AddObjectRef(m, "Handle", (PyObject *)st->HandleType) < 0)
        return -1;
    if (intern(&st->s_connection_made, "connection_made") < 0 ||
        intern(&st->s_data_received, "data_received") < 0 ||
        intern(&st->s_eof_received, "eof_received") < 0 ||
        intern(&st->s_connection_lost, "connection_lost") < 0 ||
        intern(&st->s_pause_writing, "pause_writing") < 0 ||
        intern(&st->s_resume_writing, "resume_writing") < 0 ||
        intern(&st->s_message, "message") < 0 || intern(&st->s_exception, "exception") < 0 ||
        intern(&st->s_protocol, "protocol") < 0 || intern(&st->s_transport, "transport") < 0 ||
        intern(&st->s_handle, "handle") < 0 || intern(&st->s_server, "server") < 0)
        return -1;
    if (PyModule_AddStringConstant(m, "__version__", "0.1.0") < 0)
        return -1;
    return 0;
}

#define STATE_FIELDS(X)                                                                    \
    X(LoopType) X(ServerType) X(TransportType) X(HandleType) X(CountersType)               \
    X(s_connection_made) X(s_data_received) X(s_eof_received) X(s_connection_lost)         \
    X(s_pause_writing)                                                                     \
    X(s_resume_writing) X(s_message) X(s_exception) X(s_protocol) X(s_transport)           \
    X(s_handle) X(s_server)

static int c1m_traverse(PyObject *m, visitproc visit, void *arg)
{
    c1m_state *st = PyModule_GetState(m);
    if (!st)
        return 0;
#define VISIT(f) Py_VISIT(st->f);
    STATE_FIELDS(VISIT)
#undef VISIT
    return 0;
}

static int c1m_clear(PyObject *m)
{
    c1m_state *st = PyModule_GetState(m);
    if (!st)
        return 0;
#define CLEAR(f) Py_CLEAR(st->f);
    STATE_FIELDS(CLEAR)
#undef CLEAR
    return 0;
}

static void c1m_free(void *m)
{
    (void)c1m_clear((PyObject *)m);
}

static PyModuleDef_Slot c1m_slots[] = {
    {Py_mod_exec, c1m_exec},
    {0, NULL},
};

PyDoc_STRVAR(module_doc,
"c1m - the c1m benchmark suite's C event loop for asyncio-style Protocols.\n\n"
"    loop = c1m.Loop()\n"
"    server = loop.create_server(MyProtocol, '0.0.0.0', 9000)\n"
"    loop.add_signal_handler(signal.SIGTERM, loop.stop)\n"
"    loop.run_forever()\n"
"    loop.close()\n");

PyModuleDef c1m_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "c1m",
    .m_doc = module_doc,
    .m_size = sizeof(c1m_state),
    .m_methods = module_methods,
    .m_slots = c1m_slots,
    .m_traverse = c1m_traverse,
    .m_clear = c1m_clear,
    .m_free = c1m_free,
};

PyMODINIT_FUNC PyInit_c1m(void);
PyMODINIT_FUNC PyInit_c1m(void)
{
    return PyModuleDef_Init(&c1m_module);
}
