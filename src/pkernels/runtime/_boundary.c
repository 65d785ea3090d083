/* pkernels.runtime._boundary: the public API's calls, made by C, so that an error of
 * pkernels (TranslationError, Kernel*Error...) reaches the user with the user's own
 * line (the dispatch) as its innermost frame.
 *
 * A Python wrapper re-raising an exception adds its own frame to the traceback; a call
 * made by this C type adds none. When the call fails, ``filter(exception)`` (Python:
 * pkernels.runtime.tracebacks) may replace the exception's traceback, which then goes on
 * to the caller as it is.
 *
 * Untraced calls (asked for by a debugger: set_untraced): a call made while the calling
 * thread has a trace function (sys.settrace) runs with that thread's tracing suspended
 * (PyThreadState_EnterTracing, Python 3.11+): pkernels' own Python then costs the tracer
 * nothing, and the trace function stays installed. Switching it off and on instead is a
 * pointer swap up to 3.11, but from 3.12 sys.settrace is built on sys.monitoring: every
 * line of every function is instrumented while any thread traces, and turning a thread's
 * trace function off and on re-instruments code (or, kept instrumented, still pays for
 * each line); a suspended thread drops each event at its first check. resume_tracing()
 * ends the suspension of the innermost call early (where the program's own Python runs
 * inside it: a Debug-space kernel's body); suspend_tracing() starts it again.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *function; /* what is called */
    PyObject *filter;   /* filter(exception) -> None, on failure */
    PyObject *dict;     /* __doc__, __name__, __wrapped__... (functools.update_wrapper) */
} Boundary;

#if PY_VERSION_HEX >= 0x030B0000 /* PyThreadState_EnterTracing */
#define UNTRACED_CALLS 1
/* One call of a Boundary on a thread's C stack: whether it holds the thread's tracing
 * suspended now. Calls nest (a Debug-space kernel dispatching another). */
typedef struct Suspension {
    struct Suspension *outer;
    int active;
} Suspension;

static int untraced = 0;                           /* set_untraced() */
static _Thread_local Suspension *innermost = NULL; /* this thread's innermost call */
#endif

static PyObject *boundary_call(Boundary *self, PyObject *args, PyObject *kwargs) {
#ifdef UNTRACED_CALLS
    Suspension suspension = {innermost, 0};
    PyThreadState *tstate = NULL;
    if (untraced) {
        tstate = PyThreadState_Get();
        if (tstate->c_tracefunc != NULL) {
            PyThreadState_EnterTracing(tstate);
            suspension.active = 1;
        }
        innermost = &suspension;
    }
    PyObject *result = PyObject_Call(self->function, args, kwargs);
    if (tstate != NULL) {
        innermost = suspension.outer;
        if (suspension.active) PyThreadState_LeaveTracing(tstate);
    }
#else
    PyObject *result = PyObject_Call(self->function, args, kwargs);
#endif
    if (result != NULL) return result;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL) PyException_SetTraceback(value, tb);
    PyObject *done = value != NULL ? PyObject_CallOneArg(self->filter, value) : NULL;
    if (done == NULL) {
        PyErr_Clear(); /* the exception goes on unfiltered */
    } else {
        Py_DECREF(done);
        Py_XDECREF(tb);
        tb = PyException_GetTraceback(value); /* the filtered one (a new reference) */
    }
    PyErr_Restore(type, value, tb);
    return NULL;
}

static PyObject *boundary_repr(Boundary *self) {
    PyObject *name = self->dict ? PyDict_GetItemString(self->dict, "__qualname__") : NULL;
    if (name != NULL) return PyUnicode_FromFormat("<function %U>", name);
    return PyUnicode_FromFormat("<function %R>", self->function);
}

static int boundary_traverse(Boundary *self, visitproc visit, void *arg) {
    Py_VISIT(self->function);
    Py_VISIT(self->filter);
    Py_VISIT(self->dict);
    return 0;
}

static int boundary_clear(Boundary *self) {
    Py_CLEAR(self->function);
    Py_CLEAR(self->filter);
    Py_CLEAR(self->dict);
    return 0;
}

static void boundary_dealloc(Boundary *self) {
    PyObject_GC_UnTrack(self);
    boundary_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *boundary_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *function, *filter;
    static char *names[] = {"function", "filter", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", names, &function, &filter)) return NULL;
    Boundary *self = (Boundary *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(function);
    Py_INCREF(filter);
    self->function = function;
    self->filter = filter;
    return (PyObject *)self;
}

static PyMemberDef boundary_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(Boundary, dict), READONLY},
    {NULL},
};

static PyTypeObject BoundaryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pkernels.runtime._boundary.Boundary",
    .tp_doc = PyDoc_STR("Boundary(function, filter): calls function; on failure, "
                        "filter(exception) may replace its traceback."),
    .tp_basicsize = sizeof(Boundary),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = boundary_new,
    .tp_call = (ternaryfunc)boundary_call,
    .tp_repr = (reprfunc)boundary_repr,
    .tp_traverse = (traverseproc)boundary_traverse,
    .tp_clear = (inquiry)boundary_clear,
    .tp_dealloc = (destructor)boundary_dealloc,
    .tp_dictoffset = offsetof(Boundary, dict),
    .tp_members = boundary_members,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

#ifdef UNTRACED_CALLS
static PyObject *set_untraced(PyObject *module, PyObject *on) {
    int flag = PyObject_IsTrue(on);
    if (flag < 0) return NULL;
    untraced = flag;
    Py_RETURN_NONE;
}

static PyObject *resume_tracing(PyObject *module, PyObject *unused) {
    Suspension *suspension = innermost;
    if (suspension == NULL || !suspension->active) Py_RETURN_FALSE;
    suspension->active = 0;
    PyThreadState_LeaveTracing(PyThreadState_Get());
    Py_RETURN_TRUE;
}

static PyObject *suspend_tracing(PyObject *module, PyObject *unused) {
    Suspension *suspension = innermost;
    if (suspension == NULL || suspension->active) Py_RETURN_FALSE;
    PyThreadState *tstate = PyThreadState_Get();
    if (tstate->c_tracefunc == NULL) Py_RETURN_FALSE;
    PyThreadState_EnterTracing(tstate);
    suspension->active = 1;
    Py_RETURN_TRUE;
}

static PyMethodDef module_methods[] = {
    {"set_untraced", set_untraced, METH_O,
     PyDoc_STR("set_untraced(on): whether later calls suspend a tracing thread's tracing.")},
    {"resume_tracing", resume_tracing, METH_NOARGS,
     PyDoc_STR("resume_tracing() -> bool: end the innermost call's suspension, if any.")},
    {"suspend_tracing", suspend_tracing, METH_NOARGS,
     PyDoc_STR("suspend_tracing() -> bool: suspend again in the innermost untraced call.")},
    {NULL},
};
#else
static PyMethodDef module_methods[] = {{NULL}};
#endif

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pkernels.runtime._boundary",
    "The public API's calls, made by C (see _boundary.c).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__boundary(void) {
    if (PyType_Ready(&BoundaryType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    Py_INCREF(&BoundaryType);
    if (PyModule_AddObject(module, "Boundary", (PyObject *)&BoundaryType) < 0) {
        Py_DECREF(&BoundaryType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
