/* pkernels.runtime._cuda_launch: a Cuda range launch in one C call.
 *
 * The Python way from parallel_for to the GPU (the signature key, the argument plan,
 * CuPy's launch call, the stream polls) touches hundreds of Python objects; right after
 * another library's host work swept the caches, each comes back from memory, and a
 * launch cost some 150 us more than the kernel (bench/bench_cuda_dispatch.py). A
 * Launcher does the same for one loaded kernel: it checks that each keyword argument is
 * of the kind the kernel was built for, packs the values into its own slots, launches
 * through the CUDA driver (cuLaunchKernel on CuPy's current stream) and polls the
 * stream for a while with the GIL released. Anything else goes back to Python: other
 * argument kinds (`other`), a range the Python side gives no recipe for (`slow`), a
 * kernel still running after the spin (`wait_rest`), a failed launch (`failed`).
 *
 * The driver is looked up with dlopen at load_driver() (libcuda.so.1, which CuPy has
 * loaded already), so the module builds without CUDA and runs nothing until then.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Step kinds: the order of cuda_arguments.py's VIEW ... COMPLEX. */
enum { VIEW = 0, FLOAT64, FLOAT32, BOOL, INT64, INT, POOL_OR_INT, COMPLEX };
/* A reduce's total, read from pinned host memory after the wait (cuda_fast.RESULT_KINDS). */
enum { NO_RESULT = 0, R_FLOAT64, R_FLOAT32, R_INT64, R_INT32, R_INT16, R_INT8, R_UINT64,
       R_UINT32, R_UINT16, R_UINT8, R_BOOL };

#define MAX_LEAD 16   /* a box's bounds (8 at rank 4), a reduce's 3 scratch addresses; a team's 8 */
#define MAX_POOLS 64
#define NOT_READY 600 /* CUDA_ERROR_NOT_READY: what cuStreamQuery answers while work runs */

typedef int CUresult;
typedef CUresult (*launch_kernel_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, void *, void **, void **);
typedef CUresult (*stream_query_fn)(void *);
typedef CUresult (*context_fn)(void **);

static struct {
    void *library;
    launch_kernel_fn launch_kernel;
    stream_query_fn stream_query;
    context_fn current_context;
} driver;

static int enabled = 1;
static PyObject *data_name, *ptr_name, *shape_name, *strides_name, *dtype_name, *key_name;

typedef struct {
    PyObject_HEAD
    PyObject *steps;    /* tuple of steps, see Launcher_init */
    PyObject *view_type; /* pk.View: its array is .data */
    PyObject *recipe, *slow, *other, *wait_rest, *failed, *current_stream;
    PyObject *key_names; /* the policy attributes that tell its launches apart */
    PyObject *fault;     /* raises the fault a team launch flagged (None: no flag) */
    Py_ssize_t n_keywords, n_slots;
    double spin_seconds;
    int busy; /* a launch of this object is under way (its slots and scratch in use) */
    /* The last range's, box's or team's launch (a recipe): function NULL where Python
     * launches it. A range is told by begin and end, a box or team by key (its policy's
     * key_names attributes: a box's begins, ends and tiling). */
    int planned;
    long long begin, end;
    PyObject *key;
    unsigned shared; /* dynamic shared memory bytes (a team's scratch) */
    const volatile int32_t *flag; /* a team launch's fault flag, pinned host memory */
    void *context, *function;
    unsigned grid[3], block[3];
    Py_ssize_t n_lead;
    int64_t lead[MAX_LEAD];
    void *result;
    int result_kind;
    int64_t *slots;
    void **params;
} Launcher;

/* The Python objects a Launcher holds: its callables hold its kernel, which holds it. */
#define LAUNCHER_OBJECTS(apply)                                                           \
    apply(steps) apply(view_type) apply(recipe) apply(slow) apply(other) apply(wait_rest) \
    apply(failed) apply(current_stream) apply(key) apply(key_names) apply(fault)

static int Launcher_traverse(Launcher *self, visitproc visit, void *arg)
{
#define VISIT(field) Py_VISIT(self->field);
    LAUNCHER_OBJECTS(VISIT)
#undef VISIT
    return 0;
}

static int Launcher_clear(Launcher *self)
{
#define CLEAR(field) Py_CLEAR(self->field);
    LAUNCHER_OBJECTS(CLEAR)
#undef CLEAR
    return 0;
}

static void Launcher_dealloc(Launcher *self)
{
    PyObject_GC_UnTrack(self);
    Launcher_clear(self);
    PyMem_Free(self->slots);
    PyMem_Free(self->params);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t step_slots(PyObject *step)
{
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(step, 1));
    if (kind == VIEW)
        return 1 + 2 * PyLong_AsSsize_t(PyTuple_GET_ITEM(step, 4));
    return kind == COMPLEX ? 2 : 1;
}

static int Launcher_init(Launcher *self, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"steps", "view_type", "recipe", "slow", "other", "wait_rest",
                            "failed", "current_stream", "spin_seconds", "key_names", "fault",
                            NULL};
    PyObject *steps, *view_type, *recipe, *slow, *other, *wait_rest, *failed, *stream;
    PyObject *key_names = NULL, *fault = Py_None;
    double spin;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOOOOOOd|O!O", names, &PyTuple_Type,
                                     &steps, &view_type, &recipe, &slow, &other, &wait_rest,
                                     &failed, &stream, &spin, &PyTuple_Type, &key_names,
                                     &fault))
        return -1;
    if (key_names == NULL)
        key_names = PyTuple_New(0);
    else
        Py_INCREF(key_names);
    if (key_names == NULL)
        return -1;
    Py_XSETREF(self->key_names, key_names);
    Py_ssize_t n_slots = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(steps); ++k) {
        PyObject *step = PyTuple_GET_ITEM(steps, k);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) < 3) {
            PyErr_SetString(PyExc_TypeError, "each step is a tuple (name, kind, type, ...)");
            return -1;
        }
        n_slots += step_slots(step);
        if (PyErr_Occurred())
            return -1;
    }
    PyMem_Free(self->slots); /* (__init__ called again) */
    PyMem_Free(self->params);
    self->planned = 0;
    self->slots = PyMem_Calloc(MAX_LEAD + n_slots + 1, sizeof(int64_t));
    self->params = PyMem_Calloc(MAX_LEAD + n_slots + 1, sizeof(void *));
    if (self->slots == NULL || self->params == NULL) {
        PyErr_NoMemory();
        return -1;
    }
#define KEEP(field, value) Py_INCREF(value); Py_XSETREF(self->field, value)
    KEEP(steps, steps);
    KEEP(view_type, view_type);
    KEEP(recipe, recipe);
    KEEP(slow, slow);
    KEEP(other, other);
    KEEP(wait_rest, wait_rest);
    KEEP(failed, failed);
    KEEP(current_stream, stream);
    KEEP(fault, fault);
#undef KEEP
    self->n_keywords = PyTuple_GET_SIZE(steps);
    self->n_slots = n_slots;
    self->spin_seconds = spin;
    return 0;
}

/* The element stride layout the kernel was built for (marshal.view_layout's order:
 * 0 strided, 1 the last axis of unit stride, 2 the first). */
static int layout_of(const int64_t *strides, Py_ssize_t rank, int64_t itemsize)
{
    if (rank == 0)
        return 0;
    if (strides[rank - 1] == itemsize)
        return 1;
    return strides[0] == itemsize ? 2 : 0;
}

/* A tuple of ints (an array's shape or strides) of `rank` items into `out`. */
static int read_ints(PyObject *owner, PyObject *name, Py_ssize_t rank, int64_t *out)
{
    PyObject *tuple = PyObject_GetAttr(owner, name);
    if (tuple == NULL)
        return -1;
    int ok = PyTuple_Check(tuple) && PyTuple_GET_SIZE(tuple) == rank;
    for (Py_ssize_t d = 0; ok && d < rank; ++d) {
        out[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, d));
        ok = !(out[d] == -1 && PyErr_Occurred());
    }
    Py_DECREF(tuple);
    return ok ? 0 : -1;
}

/* A view step: (name, VIEW, array type, dtype, rank, layout, itemsize). */
static int pack_view(Launcher *self, PyObject *step, PyObject *value, int64_t *slot)
{
    if ((PyObject *)Py_TYPE(value) == self->view_type) {
        value = PyObject_GetAttr(value, data_name); /* a pk.View: its array */
        if (value == NULL)
            return -1;
    } else {
        Py_INCREF(value);
    }
    int ok = (PyObject *)Py_TYPE(value) == PyTuple_GET_ITEM(step, 2);
    Py_ssize_t rank = PyLong_AsSsize_t(PyTuple_GET_ITEM(step, 4));
    int64_t itemsize = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 6));
    if (ok) { /* the same dtype object, or an equal one */
        PyObject *dtype = PyObject_GetAttr(value, dtype_name);
        PyObject *wanted = PyTuple_GET_ITEM(step, 3);
        ok = dtype != NULL && (dtype == wanted || PyObject_RichCompareBool(dtype, wanted, Py_EQ) == 1);
        Py_XDECREF(dtype);
    }
    PyObject *memory = NULL, *address = NULL;
    if (ok) {
        memory = PyObject_GetAttr(value, data_name);
        address = memory != NULL ? PyObject_GetAttr(memory, ptr_name) : NULL;
        ok = address != NULL;
        if (ok) {
            slot[0] = (int64_t)(intptr_t)PyLong_AsVoidPtr(address);
            ok = !PyErr_Occurred();
        }
    }
    ok = ok && read_ints(value, shape_name, rank, slot + 1) == 0;
    ok = ok && read_ints(value, strides_name, rank, slot + 1 + rank) == 0;
    for (Py_ssize_t d = 0; ok && d < rank; ++d) {
        int64_t stride = slot[1 + rank + d];
        ok = stride % itemsize == 0;
        slot[1 + rank + d] = stride / itemsize;
    }
    /* The layout of the element strides (a unit stride is 1 element). */
    ok = ok && layout_of(slot + 1 + rank, rank, 1) == PyLong_AsLong(PyTuple_GET_ITEM(step, 5));
    Py_XDECREF(address);
    Py_XDECREF(memory);
    Py_DECREF(value);
    return ok ? 0 : -1;
}

static int pack_double(double number, int64_t *slot)
{
    memcpy(slot, &number, sizeof number);
    return 0;
}

static int pack_float(double number, int64_t *slot)
{
    if (isfinite(number) && fabs(number) > FLT_MAX)
        return -1; /* NumPy's overflow (inf, with a warning): the Python way says it */
    float narrow = (float)number;
    *slot = 0;
    memcpy(slot, &narrow, sizeof narrow);
    return 0;
}

/* A scalar step: (name, kind, value type, [low, high] | [is pool] | [single]). */
static int pack_scalar(PyObject *step, long kind, PyObject *value, int64_t *slot,
                       PyObject **pool)
{
    if ((PyObject *)Py_TYPE(value) != PyTuple_GET_ITEM(step, 2))
        return -1; /* another type: another build (its signature key differs) */
    if (kind == FLOAT64 || kind == FLOAT32) {
        double number = PyFloat_AsDouble(value);
        if (number == -1.0 && PyErr_Occurred())
            return -1;
        return kind == FLOAT64 ? pack_double(number, slot) : pack_float(number, slot);
    }
    if (kind == BOOL) {
        int truth = PyObject_IsTrue(value);
        *slot = truth;
        return truth < 0 ? -1 : 0;
    }
    if (kind == COMPLEX) {
        Py_complex number = PyComplex_AsCComplex(value);
        if (number.real == -1.0 && PyErr_Occurred())
            return -1;
        if (PyObject_IsTrue(PyTuple_GET_ITEM(step, 3)))
            return pack_float(number.real, slot) || pack_float(number.imag, slot + 1) ? -1 : 0;
        return pack_double(number.real, slot) || pack_double(number.imag, slot + 1);
    }
    if (kind == POOL_OR_INT) {
        if (PyObject_IsTrue(PyTuple_GET_ITEM(step, 3))) {
            *pool = value; /* its launch key is taken once nothing can be refused */
            return 0;
        }
        unsigned long long bits = PyLong_AsUnsignedLongLong(value);
        if (bits == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        memcpy(slot, &bits, sizeof bits);
        return 0;
    }
    /* INT64 and INT: the step's bounds are the C type's range. */
    long long number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred())
        return -1;
    long long low = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 3));
    long long high = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 4));
    if (number < low || number > high)
        return -1;
    /* A narrower type's bytes, the slot's others 0 (as struct packs them). */
    unsigned long long span = (unsigned long long)high - (unsigned long long)low;
    *slot = (int64_t)((unsigned long long)number & span);
    return 0;
}

/* Each keyword argument checked and packed into the slots after the lead; the random
 * pools met are left in `pools`. -1 where an argument is not of the kernel's kinds. */
static int pack_arguments(Launcher *self, PyObject *kwargs, PyObject **pools,
                          int64_t **pool_slots, Py_ssize_t *n_pools)
{
    if (!PyDict_CheckExact(kwargs) || PyDict_GET_SIZE(kwargs) != self->n_keywords)
        return -1;
    int64_t *slot = self->slots + MAX_LEAD;
    for (Py_ssize_t k = 0; k < self->n_keywords; ++k) {
        PyObject *step = PyTuple_GET_ITEM(self->steps, k);
        PyObject *value = PyDict_GetItemWithError(kwargs, PyTuple_GET_ITEM(step, 0));
        if (value == NULL)
            return -1;
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(step, 1));
        PyObject *pool = NULL;
        if (kind == VIEW ? pack_view(self, step, value, slot)
                         : pack_scalar(step, kind, value, slot, &pool))
            return -1;
        if (pool != NULL) {
            if (*n_pools >= MAX_POOLS)
                return -1;
            pools[*n_pools] = pool;
            pool_slots[(*n_pools)++] = slot;
        }
        slot += step_slots(step);
    }
    return 0;
}

static int take_pool_keys(PyObject **pools, int64_t **slots, Py_ssize_t count)
{
    for (Py_ssize_t k = 0; k < count; ++k) {
        PyObject *key = PyObject_CallMethodNoArgs(pools[k], key_name);
        if (key == NULL)
            return -1;
        unsigned long long bits = PyLong_AsUnsignedLongLong(key);
        Py_DECREF(key);
        if (bits == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        memcpy(slots[k], &bits, sizeof bits);
    }
    return 0;
}

static int read_dims(PyObject *tuple, unsigned *out)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 3)
        return -1;
    for (int d = 0; d < 3; ++d) {
        unsigned long value = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(tuple, d));
        if (PyErr_Occurred())
            return -1;
        out[d] = (unsigned)value;
    }
    return 0;
}

/* The recipe of a launch from the Python side (`recipe`, a new reference, NULL on an
 * error): None (Python launches this range or box), or (function, grid, block, lead
 * values, result address, result kind). */
static int take_recipe(Launcher *self, PyObject *recipe)
{
    if (recipe == NULL)
        return -1;
    self->planned = 0;
    self->function = NULL;
    int failed = 0;
    if (recipe != Py_None) {
        Py_ssize_t size = PyTuple_Check(recipe) ? PyTuple_GET_SIZE(recipe) : 0;
        PyObject *lead = size == 6 || size == 8 ? PyTuple_GET_ITEM(recipe, 3) : NULL;
        failed = lead == NULL || !PyTuple_Check(lead) || PyTuple_GET_SIZE(lead) > MAX_LEAD;
        failed = failed || read_dims(PyTuple_GET_ITEM(recipe, 1), self->grid) ||
                 read_dims(PyTuple_GET_ITEM(recipe, 2), self->block);
        if (!failed) {
            self->n_lead = PyTuple_GET_SIZE(lead);
            for (Py_ssize_t k = 0; k < self->n_lead; ++k)
                self->lead[k] = (int64_t)PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(lead, k));
            self->function = PyLong_AsVoidPtr(PyTuple_GET_ITEM(recipe, 0));
            self->result = PyLong_AsVoidPtr(PyTuple_GET_ITEM(recipe, 4));
            self->result_kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(recipe, 5));
            self->shared = size == 8 ? (unsigned)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(recipe, 6)) : 0;
            self->flag = size == 8 ? PyLong_AsVoidPtr(PyTuple_GET_ITEM(recipe, 7)) : NULL;
            failed = PyErr_Occurred() != NULL;
        }
        if (failed && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a recipe is (function, grid, block, lead, "
                                             "result, result kind[, shared, flag]) or None");
    }
    Py_DECREF(recipe);
    if (failed) {
        self->function = NULL;
        return -1;
    }
    /* The context the recipe's function was loaded in (the Python side may have made
     * one current): the recipe holds while it stays current. */
    void *context = NULL;
    if (driver.current_context(&context) != 0)
        context = NULL;
    self->context = context;
    self->planned = context != NULL;
    if (context == NULL)
        self->function = NULL;
    return 0;
}

static PyObject *result_value(int kind, const void *at)
{
    if (kind == NO_RESULT || at == NULL)
        Py_RETURN_NONE;
    union { double f64; float f32; int64_t i64; int32_t i32; int16_t i16; int8_t i8;
            uint64_t u64; uint32_t u32; uint16_t u16; uint8_t u8; } v;
    memcpy(&v, at, sizeof v);
    switch (kind) {
    case R_FLOAT64: return PyFloat_FromDouble(v.f64);
    case R_FLOAT32: return PyFloat_FromDouble((double)v.f32);
    case R_INT64: return PyLong_FromLongLong(v.i64);
    case R_INT32: return PyLong_FromLong(v.i32);
    case R_INT16: return PyLong_FromLong(v.i16);
    case R_INT8: return PyLong_FromLong(v.i8);
    case R_UINT64: return PyLong_FromUnsignedLongLong(v.u64);
    case R_UINT32: return PyLong_FromUnsignedLong(v.u32);
    case R_UINT16: return PyLong_FromLong(v.u16);
    case R_UINT8: return PyLong_FromLong(v.u8);
    case R_BOOL: return PyBool_FromLong(v.u8 != 0);
    default: Py_RETURN_NONE;
    }
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Launch with the slots packed, wait, and give the result; busy is cleared by the caller. */
static PyObject *launch_packed(Launcher *self, void *stream)
{
    Py_ssize_t count = self->n_lead + self->n_slots;
    memcpy(self->slots + MAX_LEAD - self->n_lead, self->lead, self->n_lead * sizeof(int64_t));
    for (Py_ssize_t k = 0; k < count; ++k)
        self->params[k] = self->slots + MAX_LEAD - self->n_lead + k;
    CUresult status;
    Py_BEGIN_ALLOW_THREADS
    status = driver.launch_kernel(self->function, self->grid[0], self->grid[1], self->grid[2],
                                  self->block[0], self->block[1], self->block[2], self->shared,
                                  stream, self->params, NULL);
    if (status == 0) {
        double until = now() + self->spin_seconds;
        do
            status = driver.stream_query(stream);
        while (status == NOT_READY && now() < until);
        status = status == 0 ? 0 : -status; /* negative: the wait's answer */
    }
    Py_END_ALLOW_THREADS
    if (status > 0)
        return PyObject_CallFunction(self->failed, "i", status);
    if (status < 0) { /* still running, or failed: CuPy's wait raises its error */
        PyObject *waited = PyObject_CallNoArgs(self->wait_rest);
        if (waited == NULL)
            return NULL;
        Py_DECREF(waited);
    }
    if (self->flag != NULL && *self->flag != 0 && self->fault != Py_None)
        return PyObject_CallNoArgs(self->fault); /* raises the recorded fault */
    return result_value(self->result_kind, self->result);
}

/* A box's or team's launch key: the tuple of the policy's attributes `names` (a box's
 * begins, ends and tiling, say), a list's items as a tuple (a team's scratch sizes are
 * lists that set_scratch_size changes in place); NULL on an error. */
static PyObject *policy_key(PyObject *policy, PyObject *names)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    PyObject *key = PyTuple_New(count);
    for (Py_ssize_t k = 0; key != NULL && k < count; ++k) {
        PyObject *value = PyObject_GetAttr(policy, PyTuple_GET_ITEM(names, k));
        if (value != NULL && PyList_Check(value))
            Py_SETREF(value, PyList_AsTuple(value));
        if (value == NULL)
            Py_CLEAR(key);
        else
            PyTuple_SET_ITEM(key, k, value);
    }
    return key;
}

PyDoc_STRVAR(launch_doc,
"launch(space, begin, end, kwargs) (a range kernel's) or launch(policy, kwargs) (a box's,\n"
"a team's)\n\n"
"Run the kernel with ``kwargs`` as the Python launch would, in one C call where it can;\n"
"else hand the call to the Python side (see the module).");

static PyObject *Launcher_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 && nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "launch(space, begin, end, kwargs) or launch(policy, kwargs)");
        return NULL;
    }
    if (self->slow == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this Launcher was cleared (garbage collected)");
        return NULL;
    }
    PyObject *kwargs = args[nargs - 1];
    if (!enabled || driver.launch_kernel == NULL || self->busy)
        return PyObject_Vectorcall(self->slow, args, nargs, NULL);
    long long begin = 0, end = 0;
    PyObject *key = NULL;
    if (nargs == 4) {
        begin = PyLong_AsLongLong(args[1]);
        end = PyLong_AsLongLong(args[2]);
    } else {
        key = policy_key(args[0], self->key_names);
    }
    if (PyErr_Occurred()) { /* a bound outside int64, not a box: the Python way's error */
        PyErr_Clear();
        Py_XDECREF(key);
        return PyObject_Vectorcall(self->slow, args, nargs, NULL);
    }
    PyObject *pools[MAX_POOLS];
    int64_t *pool_slots[MAX_POOLS];
    Py_ssize_t n_pools = 0;
    self->busy = 1;
    if (pack_arguments(self, kwargs, pools, pool_slots, &n_pools) != 0) {
        self->busy = 0;
        PyErr_Clear();
        Py_XDECREF(key);
        return PyObject_Vectorcall(self->other, args, nargs, NULL);
    }
    void *context = NULL;
    if (driver.current_context(&context) != 0)
        context = NULL;
    int same = self->planned && context == self->context;
    if (same && key == NULL)
        same = begin == self->begin && end == self->end;
    else if (same)
        same = self->key != NULL && PyObject_RichCompareBool(key, self->key, Py_EQ) == 1;
    PyErr_Clear(); /* (a comparison that failed: planned again) */
    if (!same) {
        PyObject *recipe = key == NULL ? PyObject_CallFunction(self->recipe, "LL", begin, end)
                                       : PyObject_CallOneArg(self->recipe, args[0]);
        if (take_recipe(self, recipe) != 0) {
            self->busy = 0;
            Py_XDECREF(key);
            return NULL;
        }
        self->begin = begin;
        self->end = end;
        Py_XSETREF(self->key, key);
        key = NULL;
    }
    Py_XDECREF(key);
    PyObject *stream = NULL, *address = NULL, *result = NULL;
    if (self->function == NULL) { /* an empty range, a 64-bit one, no context: Python's */
        self->busy = 0;
        return PyObject_Vectorcall(self->slow, args, nargs, NULL);
    }
    stream = PyObject_CallNoArgs(self->current_stream);
    address = stream != NULL ? PyObject_GetAttr(stream, ptr_name) : NULL;
    void *handle = address != NULL ? PyLong_AsVoidPtr(address) : NULL;
    if (!PyErr_Occurred() && take_pool_keys(pools, pool_slots, n_pools) == 0)
        result = launch_packed(self, handle);
    Py_XDECREF(address);
    Py_XDECREF(stream);
    self->busy = 0;
    return result;
}

static PyMethodDef Launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Launcher_launch, METH_FASTCALL, launch_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Launcher_doc,
"Launcher(steps, view_type, recipe, slow, other, wait_rest, failed, current_stream,\n"
"         spin_seconds, key_names=(), fault=None)\n\n"
"One loaded Cuda range kernel's launches in C (see cuda_fast.py, which makes them).");

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pkernels.runtime._cuda_launch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Launcher_traverse,
    .tp_clear = (inquiry)Launcher_clear,
    .tp_doc = Launcher_doc,
    .tp_methods = Launcher_methods,
    .tp_init = (initproc)Launcher_init,
    .tp_new = PyType_GenericNew,
};

PyDoc_STRVAR(load_driver_doc,
"load_driver(path) -> bool\n\n"
"Take the CUDA driver's launch, stream query and current-context functions from the\n"
"library at ``path`` (None: none; launches then go the Python way). True once found.");

static PyObject *load_driver(PyObject *module, PyObject *path)
{
    (void)module;
    if (driver.library != NULL)
        dlclose(driver.library);
    memset(&driver, 0, sizeof driver);
    if (path == Py_None)
        Py_RETURN_FALSE;
    PyObject *bytes = PyUnicode_EncodeFSDefault(path);
    if (bytes == NULL)
        return NULL;
    void *library = dlopen(PyBytes_AS_STRING(bytes), RTLD_NOW | RTLD_LOCAL);
    Py_DECREF(bytes);
    if (library == NULL)
        Py_RETURN_FALSE;
    void *launch = dlsym(library, "cuLaunchKernel");
    void *query = dlsym(library, "cuStreamQuery");
    void *context = dlsym(library, "cuCtxGetCurrent");
    if (launch == NULL || query == NULL || context == NULL) {
        dlclose(library);
        Py_RETURN_FALSE;
    }
    driver.library = library;
    driver.launch_kernel = (launch_kernel_fn)launch;
    driver.stream_query = (stream_query_fn)query;
    driver.current_context = (context_fn)context;
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(set_enabled_doc,
"set_enabled(flag) -> bool\n\n"
"Whether Launchers launch in C (False: every launch goes the Python way); the old value.");

static PyObject *set_enabled(PyObject *module, PyObject *flag)
{
    (void)module;
    int old = enabled, truth = PyObject_IsTrue(flag);
    if (truth < 0)
        return NULL;
    enabled = truth;
    return PyBool_FromLong(old);
}

static PyMethodDef methods[] = {
    {"load_driver", load_driver, METH_O, load_driver_doc},
    {"set_enabled", set_enabled, METH_O, set_enabled_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pkernels.runtime._cuda_launch",
    "Cuda range launches in one C call (see cuda_fast.py).", -1, methods,
};

/* What Launcher expects of its steps and recipes; cuda_fast.py ignores a module built
 * from another version of this file (an editable install not rebuilt since). */
#define INTERFACE 2

PyMODINIT_FUNC PyInit__cuda_launch(void)
{
    data_name = PyUnicode_InternFromString("data");
    ptr_name = PyUnicode_InternFromString("ptr");
    shape_name = PyUnicode_InternFromString("shape");
    strides_name = PyUnicode_InternFromString("strides");
    dtype_name = PyUnicode_InternFromString("dtype");
    key_name = PyUnicode_InternFromString("launch_key");
    if (!data_name || !ptr_name || !shape_name || !strides_name || !dtype_name || !key_name)
        return NULL;
    if (PyType_Ready(&LauncherType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(module, "Launcher", (PyObject *)&LauncherType) != 0 ||
        PyModule_AddIntConstant(module, "INTERFACE", INTERFACE) != 0) {
        Py_DECREF(&LauncherType);
        Py_CLEAR(module);
    }
    return module;
}
