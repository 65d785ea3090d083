/* pkernels.runtime._launch: a kernel launch with its arguments marshalled in C.
 *
 * The Python marshaller (marshal.ArgumentPlan.marshal) and a ctypes call of the launch
 * symbol cost ~40 us right after a kernel that swept the caches (every Python object on
 * the way comes back from memory) and ~3 us otherwise; this does the same work in one
 * C call. It handles the common arguments only: anything else (a read-only array the
 * kernel writes, strides that are not whole elements, an int out of range, a value of
 * another type) makes it return without running anything, and the caller goes the
 * Python way, which raises the error with its full message or launches through ctypes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Step kinds: the order of marshal.py's _VIEW, _WRITTEN_VIEW, _FLOAT, _BOOL, _INT, _UINT64,
 * _COMPLEX. */
enum { VIEW = 0, WRITTEN_VIEW = 1, FLOAT = 2, BOOL = 3, INT = 4, UINT64 = 5, COMPLEX = 6 };

/* begin, end, result, then at most this many argument slots (a rank-4 view takes 9). */
#define MAX_SLOTS 512

typedef void (*packed_launch)(const int64_t *);

static PyObject *data_name; /* "data": a pk.View's array (set at import) */
static PyObject *launch_key_name; /* "launch_key": a random pool's key for a new launch */

static int marshal_view(PyObject *value, int written, long rank, int64_t *slots, Py_ssize_t *n)
{
    Py_buffer view;
    int flags = PyBUF_STRIDES | (written ? PyBUF_WRITABLE : 0);
    PyObject *array = NULL;
    if (!PyObject_CheckBuffer(value)) {
        /* A pk.View holds its array as .data (kept alive by the view for the launch). */
        array = PyObject_GetAttr(value, data_name);
        if (array == NULL || !PyObject_CheckBuffer(array)) {
            Py_XDECREF(array);
            PyErr_Clear();
            return -1;
        }
        value = array;
    }
    int got = PyObject_GetBuffer(value, &view, flags);
    Py_XDECREF(array); /* the buffer holds its own reference */
    if (got != 0) {
        PyErr_Clear();
        return -1;
    }
    int ok = view.ndim == rank && view.itemsize > 0 && *n + 1 + 2 * rank <= MAX_SLOTS;
    for (int d = 0; ok && d < view.ndim; ++d)
        ok = view.strides[d] % view.itemsize == 0;
    if (ok) {
        slots[(*n)++] = (int64_t)(intptr_t)view.buf;
        for (int d = 0; d < view.ndim; ++d)
            slots[(*n)++] = (int64_t)view.shape[d];
        for (int d = 0; d < view.ndim; ++d)
            slots[(*n)++] = (int64_t)(view.strides[d] / view.itemsize);
    }
    PyBuffer_Release(&view);
    return ok ? 0 : -1;
}

/* A complex number (Python's, NumPy's: any with __complex__) as two slots: the bits of
 * its real and imaginary parts as doubles (a complex64's parts convert exactly). */
static int marshal_complex(PyObject *value, int64_t *slots, Py_ssize_t *n)
{
    if (*n + 2 > MAX_SLOTS)
        return -1;
    Py_complex number = PyComplex_AsCComplex(value);
    if (number.real == -1.0 && PyErr_Occurred())
        return -1;
    memcpy(slots + (*n)++, &number.real, sizeof number.real);
    memcpy(slots + (*n)++, &number.imag, sizeof number.imag);
    return 0;
}

/* `number` (a new reference, NULL on an error already raised) into `slot` as a uint64. */
static int store_uint64(PyObject *number, int64_t *slot)
{
    if (number == NULL)
        return -1;
    unsigned long long bits = PyLong_AsUnsignedLongLong(number);
    Py_DECREF(number);
    if (bits == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    memcpy(slot, &bits, sizeof bits);
    return 0;
}

static int marshal_scalar(PyObject *value, long kind, PyObject *step, int64_t *slot)
{
    if (kind == FLOAT) {
        double number = PyFloat_AsDouble(value);
        if (number == -1.0 && PyErr_Occurred())
            return -1;
        memcpy(slot, &number, sizeof number);
        return 0;
    }
    if (kind == BOOL) {
        int truth = PyObject_IsTrue(value);
        if (truth < 0)
            return -1;
        *slot = truth;
        return 0;
    }
    if (kind == UINT64) /* an int (or __index__); a random pool is left to take_pool_keys */
        return store_uint64(PyNumber_Index(value), slot);
    /* INT: the step's third and fourth items bound it (the C type's range). */
    long long number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred())
        return -1;
    long long low = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 2));
    long long high = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 3));
    if (PyErr_Occurred() || number < low || number > high)
        return -1;
    *slot = (int64_t)number;
    return 0;
}

PyDoc_STRVAR(launch_doc,
"launch(entry, steps, kwargs, begin, end, result) -> int\n\n"
"Marshal ``kwargs`` as ``steps`` say (a tuple of (name, kind, a, b): a view's rank,\n"
"an int's bounds, a uint64's random pool class) and call the packed launch entry at\n"
"address ``entry`` with the GIL released. Returns 0 once the kernel ran, or 1 + the\n"
"index of the first step it could not marshal, having run nothing.");

/* A random pool's launch key into each of `count` slots: taken only once every other
 * argument was marshalled, since taking one advances the pool (a launch that goes the
 * Python way instead must not have advanced it). */
static int take_pool_keys(PyObject *const *pools, int64_t *const *slots, Py_ssize_t count)
{
    for (Py_ssize_t k = 0; k < count; ++k)
        if (store_uint64(PyObject_CallMethodNoArgs(pools[k], launch_key_name), slots[k]) != 0)
            return -1;
    return 0;
}

static PyObject *launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6 || !PyTuple_Check(args[1]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "launch(entry, steps, kwargs, begin, end, result)");
        return NULL;
    }
    void *entry = PyLong_AsVoidPtr(args[0]);
    int64_t slots[3 + MAX_SLOTS];
    slots[0] = PyLong_AsLongLong(args[3]);
    slots[1] = PyLong_AsLongLong(args[4]);
    slots[2] = (int64_t)(intptr_t)(args[5] == Py_None ? NULL : PyLong_AsVoidPtr(args[5]));
    if (PyErr_Occurred())
        return NULL;
    PyObject *steps = args[1];
    Py_ssize_t count = PyTuple_GET_SIZE(steps), n = 0, n_pools = 0;
    PyObject *pools[MAX_SLOTS];
    int64_t *pool_slots[MAX_SLOTS];
    for (Py_ssize_t k = 0; k < count; ++k) {
        PyObject *step = PyTuple_GET_ITEM(steps, k);
        PyObject *value = PyDict_GetItemWithError(args[2], PyTuple_GET_ITEM(step, 0));
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(step, 1));
        int failed = value == NULL || kind == -1;
        if (!failed && kind <= WRITTEN_VIEW) {
            long rank = PyLong_AsLong(PyTuple_GET_ITEM(step, 2));
            failed = marshal_view(value, kind == WRITTEN_VIEW, rank, slots + 3, &n);
        } else if (!failed && kind == COMPLEX) {
            failed = marshal_complex(value, slots + 3, &n);
        } else if (!failed && kind == UINT64 && n < MAX_SLOTS) {
            /* The step's third item is the random pool class (see marshal.ArgumentPlan). */
            int is_pool = PyObject_IsInstance(value, PyTuple_GET_ITEM(step, 2));
            failed = is_pool < 0;
            if (is_pool > 0) {
                pools[n_pools] = value;
                pool_slots[n_pools++] = slots + 3 + n++;
            } else if (!failed) {
                failed = marshal_scalar(value, kind, step, slots + 3 + n++);
            }
        } else if (!failed) {
            failed = n >= MAX_SLOTS || marshal_scalar(value, kind, step, slots + 3 + n++);
        }
        if (failed) {
            PyErr_Clear();
            return PyLong_FromSsize_t(k + 1);
        }
    }
    if (take_pool_keys(pools, pool_slots, n_pools) != 0)
        return NULL; /* a pool that cannot give a key: its error, not a second attempt */
    Py_BEGIN_ALLOW_THREADS
    ((packed_launch)entry)(slots);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(0);
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, launch_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pkernels.runtime._launch",
    "Kernel launches with their arguments marshalled in C (see launch.py).", -1, methods,
};

/* What launch() expects of `steps` and of the packed entries; launch.py ignores a module
 * built from another version of this file (an editable install not rebuilt since). */
#define INTERFACE 3

PyMODINIT_FUNC PyInit__launch(void)
{
    data_name = PyUnicode_InternFromString("data");
    launch_key_name = PyUnicode_InternFromString("launch_key");
    if (data_name == NULL || launch_key_name == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module != NULL && PyModule_AddIntConstant(module, "INTERFACE", INTERFACE) != 0)
        Py_CLEAR(module);
    return module;
}
