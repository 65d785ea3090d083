"""Whole-array functions for host code, as PyKokkos' ufuncs: ``pk.sqrt(view)``,
``pk.add(a, b)``, ``pk.sum(view)``, ``pk.zeros(shape)``...

In kernels, ``pk.sqrt(x)`` takes a number (translated to C++; the Debug space runs the
Python definition). Given an array -- a view, a NumPy or a CuPy array -- the same names
compute over every element with the array's own library (NumPy on the host, CuPy on the
GPU) and return a new array, a ``pk.View`` on the host. The array-only names (``add``,
``sum``, ``unique``, ...) are those of PyKokkos that NumPy has under the same meaning.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .types import DataType, from_numpy, to_datatype
from .views import View, unwrap, view_dtype

inf = math.inf
nan = math.nan


# Numbers are looked at first: the Debug space calls the math functions once per element.
_NUMBERS = (float, int, np.generic)
_COMPLEX_NUMBERS = (complex, np.complexfloating)


def is_array(value: object) -> bool:
    """Whether ``value`` is an array (NumPy's, a view, or a GPU array such as CuPy's)."""
    if isinstance(value, np.ndarray | View):
        return True
    return not isinstance(value, _NUMBERS) and hasattr(value, "__cuda_array_interface__")


def array_module(*values: object) -> Any:
    """The library of the arrays among ``values``: CuPy if one is on the GPU, else NumPy."""
    for value in values:
        value = unwrap(value)
        if not isinstance(value, np.ndarray) and hasattr(value, "__cuda_array_interface__"):
            import cupy

            return cupy
    return np


def as_view(value: Any) -> Any:
    """A host array result as a ``pk.View`` (as PyKokkos' functions return them);
    anything else (numbers, NumPy scalars, GPU arrays) as is."""
    if isinstance(value, np.ndarray):
        return View.wrapping(value)
    if isinstance(value, tuple):
        return tuple(as_view(v) for v in value)
    return value


def _arrays(values: Any) -> list[Any]:
    """Arguments with views replaced by their arrays (in a list or tuple too)."""
    return [
        type(v)(unwrap(x) for x in v) if isinstance(v, list | tuple) else unwrap(v) for v in values
    ]


def elementwise(
    scalar: Callable[..., Any],
    ufunc: str | Callable[[Any], Any],
    single: Callable[..., float] | None = None,
    complex_ufunc: str | None = None,
) -> Any:
    """``scalar`` for numbers (kernels, the Debug space); for arrays, the array library's
    ``ufunc`` (a name, or a function of the library giving the function).

    On numbers it computes what a compiled kernel's ``pk.`` function gives (Kokkos' C
    math): ``single`` (C's float function, e.g. ``sqrtf``) when every argument is a
    float32, and NaN or +-inf where Python's math raises (``sqrt(-1)``, ``exp(1000)``);
    of a complex number (a Python complex, a complex64 or complex128), NumPy's
    ``complex_ufunc`` (a complex128, or a complex64 for a complex64)."""

    def function(*args: Any, **view: Any) -> Any:
        if view:  # PyKokkos' ufuncs name their array: pk.sqrt(view=v)
            args = (_view_keyword(scalar.__name__, view), *args)
        for arg in args:
            if not isinstance(arg, _NUMBERS) and is_array(arg):
                xp = array_module(*args)
                op = getattr(xp, ufunc) if isinstance(ufunc, str) else ufunc(xp)
                return as_view(op(*_arrays(args)))
            if complex_ufunc is not None and isinstance(arg, _COMPLEX_NUMBERS):
                number = arg if isinstance(arg, np.complexfloating) else np.complex128(arg)
                with np.errstate(all="ignore"):  # C's answer, as for the real functions
                    return getattr(np, complex_ufunc)(number)
        # builtins.all: this module's `all` is PyKokkos' array function
        if single is not None and args and builtins.all(type(a) is np.float32 for a in args):
            return np.float32(single(*args))
        try:
            return scalar(*args)
        except (ValueError, OverflowError):
            if not isinstance(ufunc, str) or not builtins.all(
                isinstance(a, _NUMBERS) for a in args
            ):
                raise
            with np.errstate(all="ignore"):  # C's answer: NaN or +-inf, no exception
                return float(getattr(np, ufunc)(*(np.float64(a) for a in args)))

    function.__name__ = function.__qualname__ = scalar.__name__
    function.__doc__ = (scalar.__doc__ or f"{scalar.__name__}(x)").split("\n")[0] + (
        " Element-wise on an array (a new array)."
    )
    return function


def _view_keyword(name: str, keywords: dict[str, Any]) -> Any:
    if set(keywords) != {"view"}:
        unknown = ", ".join(sorted(set(keywords) - {"view"}))
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown}")
    return keywords["view"]


def special(name: str, scalar: Callable[[float], float]) -> Callable[[Any], Any]:
    """An element-wise special function NumPy lacks: math's per element on the host,
    ``cupyx.scipy.special``'s on the GPU."""

    def pick(xp: Any) -> Any:
        if xp is np:
            return np.vectorize(scalar, otypes=[np.float64])
        import cupyx.scipy.special

        return getattr(cupyx.scipy.special, name)

    return pick


def _array_function(name: str, doc: str) -> Callable[..., Any]:
    """The array library's ``name`` over arrays (numbers too), host results as views."""

    def function(*args: Any, **kwargs: Any) -> Any:
        if "view" in kwargs:  # PyKokkos' ufuncs name their array: pk.sign(view=v)
            args = (kwargs.pop("view"), *args)
        xp = array_module(*args, *kwargs.values())
        values = _arrays(kwargs.values())
        return as_view(getattr(xp, name)(*_arrays(args), **dict(zip(kwargs, values, strict=True))))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


# element-wise
reciprocal = _array_function("reciprocal", "1 / x, element-wise.")
sign = _array_function("sign", "-1, 0 or 1 by the sign of each element.")
negative = _array_function("negative", "-x, element-wise.")
positive = _array_function("positive", "+x, element-wise (a copy).")
square = _array_function("square", "x * x, element-wise.")
rint = _array_function("rint", "Each element rounded to an integer, halves to even (a float).")
conj = _array_function("conjugate", "The complex conjugate, element-wise (a real number: itself).")
add = _array_function("add", "a + b, element-wise (arrays or numbers, broadcast as NumPy does).")
subtract = _array_function("subtract", "a - b, element-wise.")
multiply = _array_function("multiply", "a * b, element-wise.")
divide = _array_function("divide", "a / b, element-wise.")
true_divide = _array_function("true_divide", "a / b, element-wise.")
floor_divide = _array_function("floor_divide", "a // b, element-wise (Python's floor division).")
power = _array_function("power", "a ** b, element-wise.")
greater = _array_function("greater", "a > b, element-wise (booleans).")
logaddexp = _array_function("logaddexp", "log(exp(a) + exp(b)), element-wise, without overflow.")
logaddexp2 = _array_function("logaddexp2", "log2(2**a + 2**b), element-wise, without overflow.")
logical_and = _array_function("logical_and", "a and b, element-wise.")
logical_or = _array_function("logical_or", "a or b, element-wise.")
logical_xor = _array_function("logical_xor", "a xor b, element-wise.")
logical_not = _array_function("logical_not", "not a, element-wise.")
# whole arrays
_matmul = _array_function("matmul", "The matrix product a @ b.")


class MatmulShapeError(RuntimeError, ValueError):
    """``pk.matmul`` of arrays whose inner dimensions differ: a RuntimeError with
    PyKokkos' message, and a ValueError as NumPy's."""


def _inner_sizes(a: Any, b: Any) -> tuple[int, int]:
    """The two sizes ``a @ b`` multiplies together: a's last, b's first (of a vector) or
    second to last."""
    return a.shape[-1], b.shape[0] if len(b.shape) == 1 else b.shape[-2]


def matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    """The matrix product ``a @ b`` (NumPy's rules); arrays whose inner dimensions differ
    raise :class:`MatmulShapeError` with PyKokkos' message."""
    if len(getattr(a, "shape", ())) and len(getattr(b, "shape", ())):
        left, right = _inner_sizes(a, b)
        if left != right:
            raise MatmulShapeError(
                "Input operand 1 has a mismatch in its core dimension "
                f"(Size {left} is different from {right})"
            )
    return _matmul(a, b, **kwargs)


def np_matmul(a: Any, b: Any, **kwargs: Any) -> Any:
    """The matrix product ``a @ b`` (PyKokkos' NumPy-backed name); arrays whose inner
    dimensions differ raise :class:`MatmulShapeError` with PyKokkos' message."""
    if len(getattr(a, "shape", ())) and len(getattr(b, "shape", ())):
        left, right = _inner_sizes(a, b)
        if left != right:
            raise MatmulShapeError(
                "Matrix dimensions are not compatible for multiplication: "
                f"{tuple(a.shape)} and {tuple(b.shape)}"
            )
    return _matmul(a, b, **kwargs)


transpose = _array_function("transpose", "The array with its axes reversed (or permuted by axes=).")
sum = _array_function(  # noqa: A001 - PyKokkos' name
    "sum", "The sum of the elements (along axis=, if given)."
)
mean = _array_function("mean", "The mean of the elements (along axis=, if given).")
var = _array_function("var", "The variance of the elements (along axis=, if given).")
argmax = _array_function("argmax", "The index of the largest element (along axis=, if given).")
all = _array_function(  # noqa: A001 - PyKokkos' name
    "all", "Whether every element is true (along axis=, if given)."
)
any = _array_function(  # noqa: A001 - PyKokkos' name
    "any", "Whether some element is true (along axis=, if given)."
)
unique = _array_function("unique", "The sorted distinct elements.")
dot = _array_function("dot", "The dot product of a and b (NumPy's dot).")
equal = _array_function("equal", "a == b, element-wise (booleans).")
linspace = _array_function("linspace", "num evenly spaced numbers from start to stop.")
logspace = _array_function("logspace", "num numbers evenly spaced on a log scale.")
reshape = _array_function(
    "reshape", "The array with a new shape (sharing its memory when it can, as NumPy's)."
)
ravel = _array_function("ravel", "The elements as a rank-1 array (order='C' or 'F').")
expand_dims = _array_function("expand_dims", "The array with a new axis of length 1 at axis.")
hstack = _array_function("hstack", "The arrays of a sequence joined along their last axis.")
searchsorted = _array_function(
    "searchsorted", "Where to insert values into the sorted array a to keep it sorted."
)


def round(view: Any, decimals: int = 0) -> Any:  # noqa: A001 - PyKokkos' name
    """Each element rounded to ``decimals`` places, halves to even (NumPy's ``round``)."""
    return as_view(array_module(view).round(unwrap(view), decimals))


def copyto(destination: Any, source: Any) -> None:
    """Copy ``source`` into the array ``destination`` (broadcast as NumPy does)."""
    array_module(destination, source).copyto(unwrap(destination), unwrap(source))


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The element type NumPy's promotion gives ``arrays_and_dtypes`` (``pk.`` types,
    NumPy dtypes or arrays), as a ``pk.`` type: ``pk.result_type(pk.uint8, pk.int16)``."""
    args = [a.np_dtype if isinstance(a, DataType) else a for a in arrays_and_dtypes]
    return from_numpy(np.result_type(*args))


def in1d(a: Any, b: Any) -> Any:
    """For each element of ``a``, whether it is in ``b`` (a flat boolean array)."""
    xp = array_module(a, b)
    return as_view(xp.isin(xp.ravel(unwrap(a)), unwrap(b)))


def zeros(shape: int | tuple[int, ...] | list[int], dtype: Any = float) -> Any:
    """A zero-filled view: ``pk.zeros((n, m), dtype=pk.int32)``."""
    return View(shape, dtype)


def ones(shape: int | tuple[int, ...] | list[int], dtype: Any = float) -> Any:
    """A view of ones: ``pk.ones((n, m), dtype=pk.int32)``."""
    return full(shape, 1, dtype)


def full(shape: int | tuple[int, ...] | list[int], fill_value: Any, dtype: Any = None) -> Any:
    """A view of ``fill_value`` (of ``dtype``, else the type NumPy gives the value)."""
    view = View(shape, np.asarray(fill_value).dtype if dtype is None else dtype)
    view[...] = fill_value
    return view


def zeros_like(array: Any = None, dtype: Any = None, *, view: Any = None) -> Any:
    """Zeros of ``array``'s shape and type (or ``dtype``), where ``array`` lives."""
    return full_like(array, 0, dtype, view=view)


def ones_like(array: Any = None, dtype: Any = None, *, view: Any = None) -> Any:
    """Ones of ``array``'s shape and type (or ``dtype``), where ``array`` lives."""
    return full_like(array, 1, dtype, view=view)


def full_like(
    array: Any = None, fill_value: Any = 0, dtype: Any = None, *, view: Any = None
) -> Any:
    """``fill_value`` in an array of ``array``'s shape and type (or ``dtype``; ``int`` is
    int32, as for ``pk.View``), on the host for a host array (a view), on the GPU for a
    GPU one. The array may be given as ``view=``, PyKokkos' keyword."""
    array = unwrap(_one_array("full_like", array, view))
    np_dtype = None if dtype is None else view_dtype(dtype).np_dtype
    return as_view(array_module(array).full_like(array, fill_value, dtype=np_dtype))


def _one_array(name: str, array: Any, view: Any) -> Any:
    if (array is None) == (view is None):
        raise TypeError(f"{name}() takes one array (positional or view=)")
    return array if view is None else view


def find_max(view: Any) -> Any:
    """The largest element (PyKokkos' ``find_max``)."""
    return array_module(view).max(unwrap(view))


def iinfo(dtype: Any) -> np.iinfo:
    """The range of an integer type: ``pk.iinfo(pk.int32).max``."""
    return np.iinfo(to_datatype(dtype).np_dtype)


def finfo(dtype: Any) -> np.finfo:
    """The limits of a floating type: ``pk.finfo(pk.float32).eps``."""
    return np.finfo(to_datatype(dtype).np_dtype)


def astype(view: Any, dtype: Any) -> Any:
    """A new view of ``view``'s elements converted to ``dtype`` (PyKokkos' ``pk.astype``:
    NumPy's conversion, e.g. float to int truncates)."""
    array = unwrap(view)
    return as_view(array.astype(view_dtype(dtype).np_dtype))


def col(view: Any, column: int) -> Any:
    """Column ``column`` of a rank-2 view, as a new rank-1 view (PyKokkos' ``pk.col``)."""
    array = unwrap(view)
    if array.ndim != 2:
        raise RuntimeError(f"pk.col takes a rank-2 view, not one of rank {array.ndim}")
    return as_view(array[:, column].copy())


def index(view: Any, indices: Any) -> Any:
    """``view[indices[i]]`` for every ``i``, a new view (PyKokkos' ``pk.index``: a gather
    by an integer view)."""
    positions = unwrap(indices)
    if not np.issubdtype(positions.dtype, np.integer):
        raise RuntimeError(f"pk.index takes integer indices, not {positions.dtype}")
    return as_view(unwrap(view)[positions])


def broadcast_view(value: Any, view: Any) -> Any:
    """``value`` (a number or a smaller view) stretched to ``view``'s shape, a new view
    (PyKokkos' ``pk.broadcast_view``, NumPy's broadcasting rules)."""
    target = unwrap(view)
    xp = array_module(value, target)
    return as_view(xp.broadcast_to(unwrap(value), target.shape).copy())
