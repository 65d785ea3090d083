/* pkernels.runtime._boundary: the public API's calls, made by C, so that an error of
 * pkernels (TranslationError, Kernel*Error...) reaches the user with the user's own
 * line (the dispatch) as its innermost frame.
 *
 * A Python wrapper re-raising an exception adds its own frame to the traceback; a call
 * made by this C type adds none. When the call fails, ``filter(exception)`` (Python:
 * pkernels.runtime.tracebacks) may replace the exception's traceback, which then goes on
 * to the caller as it is.
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

static PyObject *boundary_call(Boundary *self, PyObject *args, PyObject *kwargs) {
    PyObject *result = PyObject_Call(self->function, args, kwargs);
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

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pkernels.runtime._boundary",
    "The public API's calls, made by C (see _boundary.c).", -1, NULL,
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
