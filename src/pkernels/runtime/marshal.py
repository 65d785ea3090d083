"""Dispatch arguments -> kernel argument types and the flat C argument list."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..api import types as t
from ..api.random_pools import RandomPool
from ..api.views import View, is_foreign_device_array, unwrap
from ..errors import DispatchError
from ..translate.ir import Param, RandomPoolType, StructType, Type, ViewLayout, ViewType
from ..translate.typing_rules import INT_RANGES as TYPE_INT_RANGES

_CTYPES = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "bool": ctypes.c_bool,
}  # fmt: skip


def signature_key(value: Any) -> Any:
    """A cheap hashable key of what matters about an argument for specialisation (a
    ``pk.View``'s is its array's). An array's holds its view_layout: the kernel's code
    depends on it, and a build is only valid for arrays of that layout."""
    if isinstance(value, np.ndarray):
        return (value.dtype, value.ndim, view_layout(value.strides, value.itemsize))
    kind = type(value)
    if kind in _NUMBERS:  # a plain number: not a view (saves ~300 ns an argument)
        return kind
    if kind in _CUPY_ARRAYS:  # a CuPy array (one set look-up: the Cuda fast path's views)
        return ("device", value.dtype, value.ndim, view_layout(value.strides, value.itemsize))
    if isinstance(value, View):
        return signature_key(value.data)
    if is_device_array(value):
        if is_foreign_device_array(value):
            # A PyTorch tensor, another library's GPU array (__cuda_array_interface__):
            # the full dispatch takes its memory (as a NumPy or CuPy array).
            return _FOREIGN
        _CUPY_ARRAYS.add(kind)
        return signature_key(value)
    return kind


_NUMBERS = frozenset({int, float, bool})
#: CuPy's array types, as the first dispatch of each meets them (CuPy is not imported here).
_CUPY_ARRAYS: set[type] = set()
_FOREIGN = ("foreign array",)  # no compiled kernel has it: the full path unwraps these

_STRIDED, _LAST_UNIT, _FIRST_UNIT = ViewLayout.STRIDED, ViewLayout.LAST_UNIT, ViewLayout.FIRST_UNIT


def view_layout(strides: tuple[int, ...], itemsize: int) -> ViewLayout:
    """Which axis of an array of these strides (in bytes) its kernel may index with a
    constant 1: read from the strides, not NumPy's flags (a (5, 1) Fortran-order array is
    "C-contiguous" with a last stride of 5). The last axis comes first: where both have
    stride 1 (rank 1, a (1, n) Fortran-order array) the C-order code is kept."""
    if not strides:
        return _STRIDED
    if strides[-1] == itemsize:
        return _LAST_UNIT
    # Rank >= 2 here: a rank-1 array's first axis is its last.
    return _FIRST_UNIT if strides[0] == itemsize else _STRIDED


def is_device_array(value: Any) -> bool:
    """A GPU array (a CuPy array, or any with ``__cuda_array_interface__``): told apart
    without importing CuPy."""
    return hasattr(type(value), "__cuda_array_interface__")


def argument_type(name: str, value: Any, device: bool = False) -> Type:
    """The kernel type of one dispatch argument (``device``: for the Cuda space, whose
    views are CuPy arrays; the CPU spaces' are NumPy arrays)."""
    if is_device_array(value):
        if not device:
            raise DispatchError(
                f"{name}: a CuPy array (GPU memory) cannot be used by a CPU space: pass "
                f"{name}.get() (a NumPy copy), or dispatch on pk.Cuda"
            )
        return _view_type(name, value)
    if isinstance(value, np.ndarray):
        return _view_type(name, value)
    if isinstance(value, bool | np.bool_):
        return t.bool_
    if isinstance(value, complex) and not isinstance(value, np.generic):
        return t.complex128  # a Python complex: NumPy's complex128 (np.complex128 below)
    if isinstance(value, np.generic):
        try:
            return t.from_numpy(value.dtype)
        except TypeError as exc:
            raise DispatchError(f"{name}: {exc}") from None
    if isinstance(value, int):
        return t.int64
    if isinstance(value, float):
        return t.float64
    if isinstance(value, RandomPool):  # the kernel takes its launch key (lower_random)
        return RandomPoolType()
    raise DispatchError(
        f"{name}: kernels take NumPy arrays and numbers, not {type(value).__name__}"
    )


def _view_type(name: str, value: Any) -> Type:
    """The view type of a NumPy (or CuPy) array argument."""
    if not 1 <= value.ndim <= 8:
        raise DispatchError(f"{name}: views must have rank 1 to 8, this array has {value.ndim}")
    try:
        dtype = t.from_numpy(value.dtype)
    except TypeError as exc:
        raise DispatchError(f"{name}: {exc}") from None
    return ViewType(dtype, value.ndim, view_layout(value.strides, value.itemsize))


def c_argtypes(params: list[Param], rank: int = 1) -> list[Any]:
    """ctypes argument types of a launch symbol: begin and end (for an MDRangePolicy of
    ``rank`` > 1, pointers to ``rank`` begins and ``rank`` ends), the result pointer, then
    the arguments."""
    bound = ctypes.c_int64 if rank == 1 else ctypes.c_void_p  # MDRange, TeamPolicy: arrays
    types: list[Any] = [bound, bound, ctypes.c_void_p]
    for p in params:
        if isinstance(p.type, ViewType):
            types.append(ctypes.c_void_p)
            types.extend([ctypes.c_int64] * (2 * p.type.rank))
        elif p.type.is_complex:  # its parts (emit_launch)
            types.extend([_CTYPES[t.real_part_type(p.type).name]] * 2)
        else:
            types.append(_CTYPES[p.type.name])
    return types


def c_arguments(params: list[Param], kwargs: dict[str, Any]) -> list[Any]:
    """The flat C argument list for ``kwargs`` (views as pointer, extents, strides)."""
    return ArgumentPlan(params).marshal(kwargs)


# What an ArgumentPlan step does with its argument (_UINT64: in C steps only, where a
# uint64 may also be a random pool, whose launch key the kernel takes; _COMPLEX: the
# real and the imaginary part, each a slot).
_VIEW, _WRITTEN_VIEW, _FLOAT, _BOOL, _INT, _UINT64, _COMPLEX = range(7)


class ArgumentPlan:
    """How a kernel's keyword arguments become its flat C argument list, worked out once
    per compiled kernel: a dispatch then walks a tuple of small steps instead of the IR
    types. Dispatches often come right after a kernel that swept the caches, when every
    Python object touched costs a cache miss: this is the dispatch's hot path."""

    def __init__(self, params: list[Param], written: frozenset[str] = frozenset()) -> None:
        steps: list[tuple[str, int, Any]] = []
        # The same plan for pkernels.runtime._launch, which marshals in C: (name, kind,
        # a view's rank, an int's low bound or a uint64's pool class, an int's high bound).
        c_steps: list[tuple[str, int, Any, int]] = []
        for p in params:
            if isinstance(p.type, ViewType):
                kind = _WRITTEN_VIEW if p.name in written else _VIEW
                steps.append((p.name, kind, None))
                c_steps.append((p.name, kind, p.type.rank, 0))
            elif p.type.is_float:
                steps.append((p.name, _FLOAT, None))
                c_steps.append((p.name, _FLOAT, 0, 0))
            elif p.type.is_complex:
                steps.append((p.name, _COMPLEX, None))
                c_steps.append((p.name, _COMPLEX, 0, 0))
            elif p.type == t.bool_:
                steps.append((p.name, _BOOL, None))
                c_steps.append((p.name, _BOOL, 0, 0))
            else:
                low, high = INT_RANGES[p.type.name]
                steps.append((p.name, _INT, (low, high, p.type.name)))
                if high > _INT64_MAX:
                    c_steps.append((p.name, _UINT64, RandomPool, 0))
                else:
                    c_steps.append((p.name, _INT, low, high))
        self.steps = tuple(steps)
        self.c_steps = tuple(c_steps)

    def marshal(self, kwargs: dict[str, Any]) -> list[Any]:
        """The flat C argument list for ``kwargs``; DispatchError for a read-only array
        the kernel writes, strides that are not whole elements, or an int out of range."""
        out: list[Any] = []
        pools: list[tuple[int, RandomPool]] = []  # (slot, pool): a uint64 parameter's pool
        for name, kind, extra in self.steps:
            value = kwargs[name]
            if kind <= _WRITTEN_VIEW:
                value = unwrap(value)  # a pk.View: its array
                # One C call gives the address and the read-only flag (.ctypes, .flags:
                # Python-level objects built at each access).
                pointer, readonly = value.__array_interface__["data"]
                if readonly and kind == _WRITTEN_VIEW:
                    # NumPy refuses such writes too; native code would just do them (into
                    # a broadcast array's one element, or the bytes an array was made from).
                    raise DispatchError(
                        f"{name}: the kernel writes to this array, but it is read-only"
                    )
                out.append(pointer)
                out.extend(value.shape)
                itemsize = value.itemsize
                for stride in value.strides:
                    if stride % itemsize:
                        raise DispatchError(
                            f"{name}: array strides {value.strides} are not multiples of its "
                            "element size"
                        )
                    out.append(stride // itemsize)
            elif kind == _FLOAT:
                out.append(float(value))
            elif kind == _COMPLEX:
                number = complex(value)
                out += [number.real, number.imag]
            elif kind == _BOOL:
                out.append(bool(value))
            elif extra[1] > _INT64_MAX and isinstance(value, RandomPool):
                pools.append((len(out), value))
                out.append(0)
            else:
                low, high, type_name = extra
                number = int(value)
                if not low <= number <= high:
                    # ctypes would silently keep the low bits: 2**64 would arrive as 0.
                    raise DispatchError(f"{name}: {number} does not fit in {type_name}")
                out.append(number)
        # A pool's key last, once nothing can be refused: taking one advances the pool.
        for slot, pool in pools:
            out[slot] = pool.launch_key()
        return out


_INT64_MAX = 2**63 - 1

# The values of each integer type by name, as Python ints (low, high).
INT_RANGES = {dt.name: values for dt, values in TYPE_INT_RANGES.items() if dt.is_integer}


class _ComplexResult(ctypes.Structure):
    """A complex reduce's result: its ``.value`` is a Python complex (as a float64 sum
    gives a Python float)."""

    @property
    def value(self) -> complex:
        return complex(self.re, self.im)  # type: ignore[attr-defined]


class _Complex64Result(_ComplexResult):
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class _Complex128Result(_ComplexResult):
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


# A reduce's result buffer type by the accumulator type's name (one look-up a launch).
_RESULTS = {**_CTYPES, "complex64": _Complex64Result, "complex128": _Complex128Result}


def result_buffer(acc: t.DataType | StructType) -> Any:
    """Where a launcher writes a reduce's result; its ``.value`` is the Python result (a
    number, or the named tuple of a reducer to several values)."""
    if isinstance(acc, StructType):
        return _struct_buffer(acc)()
    return _RESULTS[acc.name]()


_struct_buffers: dict[StructType, type] = {}


def _struct_buffer(acc: StructType) -> type:
    """A ctypes struct laid out as the C++ accumulator struct of ``acc``."""
    found = _struct_buffers.get(acc)
    if found is None:
        names = [name for name, _ in acc.fields]
        result = acc.cls

        def value(self: ctypes.Structure) -> Any:
            return result(*(getattr(self, name) for name in names))

        fields = [(name, _CTYPES[ftype.name]) for name, ftype in acc.fields]
        namespace = {"_fields_": fields, "value": property(value)}
        found = _struct_buffers[acc] = type(acc.ctype, (ctypes.Structure,), namespace)
    return found


def struct_dtype(acc: StructType) -> np.dtype:
    """The NumPy dtype of an array of ``acc`` structs, with the C++ layout (a GPU's
    partial results)."""
    return np.dtype([(name, ftype.np_dtype) for name, ftype in acc.fields], align=True)
