"""How the Debug space holds a kernel's values: its accumulators (converted at each store
as C converts them), its views (NumPy arrays that refuse negative indices) and the
accumulator's start value and type, read from the workunit's annotations as the
translator reads them. Used by the range and box runs (:mod:`pkernels.backends.debug`)
and the team runs (:mod:`.python_teams`)."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from ..api.random_pools import RandomPool
from ..api.reducers import Reducer, Sum
from ..api.types import AccAnnotation, DataType, float64, to_datatype
from ..errors import KernelIndexError
from ..translate.source import KernelSource

_WIDE = (np.dtype(np.float64), np.dtype(np.bool_), np.dtype(np.complex128))
_MASK64 = (1 << 64) - 1


def debug_cell(reducer: Reducer, start: Any) -> AccumulatorCell:
    """The cell a Debug-space body's accumulator lives in (the body gets ``cell[0]`` as
    its ``acc`` and stores each new value with ``cell.put``), starting at ``start``. A
    float32 or integer accumulator computes as a float64 or int64 there (an int8 acc +
    an element of 300, a float32 acc + a float64) and each store converts it as a
    compiled kernel stores into it (C's conversion, integers wrapping): `acc += x[i]`
    gives the compiled result. The fields of a reducer to several values (``acc.val =
    x[i]``) are converted at each store to their C type too. Float64 and bool
    accumulators are kept as they are."""
    if reducer.parts:
        fields = start._asdict()
        converters = {name: _c_store(type(value))[1] for name, value in fields.items()}
        return AccumulatorCell(_StoringFields(converters, fields))
    if not isinstance(start, np.generic) or start.dtype in _WIDE:
        return AccumulatorCell(reducer.accumulator(start))
    if start.dtype.kind == "c":  # kept in its own type, as its arithmetic is (NumPy's)
        return AccumulatorCell(start, _complex_store(type(start)))
    wide, stored = _c_store(type(start))
    return AccumulatorCell(wide(start), stored)


def _c_store(kind: type[np.generic]) -> tuple[type, Callable[[Any], Any]]:
    """How the Debug space holds a value of C type ``kind``: the wide type it computes in
    (float64, int64 or uint64) and the conversion a C store into ``kind`` makes, giving
    the stored value in that wide type (integers wrap; float32 rounds)."""
    is_float = np.dtype(kind).kind == "f"
    wide = np.float64 if is_float else np.uint64 if kind is np.uint64 else np.int64

    def stored(value: Any) -> Any:
        if isinstance(value, int):  # a Python int (an int64 element): wrap as C does
            return wide(np.uint64(value & _MASK64).astype(kind))
        with np.errstate(all="ignore"):
            return wide(np.asarray(value).astype(kind)[()])

    return wide, stored


def _complex_store(kind: type[np.generic]) -> Callable[[Any], Any]:
    """A store into a complex accumulator: converted to its type (a complex64 given a
    complex128 sum rounds each part), as the compiled store does."""

    def stored(value: Any) -> Any:
        with np.errstate(all="ignore"):
            return kind(value)

    return stored


class AccumulatorCell(list[Any]):
    """A one-element list holding a Debug-space accumulator; stores go through
    ``convert`` (see :func:`debug_cell`)."""

    __slots__ = ("_convert",)

    def __init__(self, value: Any, convert: Callable[[Any], Any] | None = None) -> None:
        super().__init__([value])
        self._convert = convert

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value if self._convert is None else self._convert(value))

    def put(self, value: Any) -> Any:
        """Store ``value`` (what the body assigned its ``acc``); the stored value is
        what the body's ``acc`` holds from then on."""
        self[0] = value
        return self[0]


class _StoringFields(types.SimpleNamespace):
    """The accumulator of a reducer to several values in the Debug space (``acc.val``,
    ``acc.loc``): each field store converts as a store into Kokkos' struct field does."""

    def __init__(self, converters: dict[str, Callable[[Any], Any]], fields: dict[str, Any]):
        object.__setattr__(self, "_converters", converters)
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        convert = self._converters.get(name)
        object.__setattr__(self, name, value if convert is None else convert(value))

    def __repr__(self) -> str:  # the fields only (a debugger's `p acc`)
        values = {name: getattr(self, name) for name in self._converters}
        fields = (
            f"{k}={v.item() if isinstance(v, np.generic) else v!r}" for k, v in values.items()
        )
        return f"acc({', '.join(fields)})"


class _PythonView(np.ndarray):
    """How the Debug space shows an array to a kernel body: the same memory (no copy),
    with ``extent()`` as on a :class:`pk.View`, and elements of int64 and bool arrays
    read as Python ints and bools. Their arithmetic is what compiled kernels implement
    (``True + True == 2``, ``n ** -1 == 1 / n``); NumPy's scalars differ there."""

    # A negative index is out of range, as in the compiled spaces (NumPy would count it
    # from the end); a slice keeps Python's rules, as a kernel's subview does. The checks
    # are inline and cheap first (min() of an index tuple): every view access runs them.
    def __getitem__(self, key: Any) -> Any:
        if key.__class__ is tuple:
            try:
                if min(key) < 0:
                    _negative_index(self, key)
            except TypeError:  # slices in it
                _check_each(self, key)
        elif key.__class__ is int:
            if key < 0:
                _negative_index(self, key)
        else:
            _check_each(self, (key,))
        value = super().__getitem__(key)
        return value.item() if type(value) in _AS_PYTHON else value

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is tuple:
            try:
                if min(key) < 0:
                    _negative_index(self, key)
            except TypeError:
                _check_each(self, key)
        elif key.__class__ is int:
            if key < 0:
                _negative_index(self, key)
        else:
            _check_each(self, (key,))
        super().__setitem__(key, value)

    def extent(self, axis: int) -> int:
        """Length of ``axis`` (Kokkos' spelling of ``shape[axis]``)."""
        return int(self.shape[axis])

    # NumPy's printing indexes from the end, which __getitem__ refuses: shown as the
    # array it is (a debugger's `p view`, a traceback's locals, print in a Debug run).
    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        return str(self.view(np.ndarray))


def _check_each(view: np.ndarray, key: tuple[Any, ...]) -> None:
    for k in key:
        if isinstance(k, int | np.integer) and k < 0:
            _negative_index(view, key)


def _negative_index(view: np.ndarray, key: Any) -> NoReturn:
    for axis, k in enumerate(key if type(key) is tuple else (key,)):
        if isinstance(k, int | np.integer) and k < 0:
            raise KernelIndexError(
                f"index {k} is out of range for axis {axis} of a view of extent "
                f"{view.shape[axis]}: kernel views do not count from the end"
            )
    raise AssertionError(key)


_AS_PYTHON = (np.int64, np.bool_)


def as_kernel_view(array: np.ndarray) -> Any:
    """``array`` as the Debug space shows a view to a kernel body (a list local's too)."""
    return array.view(_PythonView)


def as_python_argument(value: Any) -> Any:
    """A dispatch argument as the Debug space passes it to the kernel body: arrays as
    views, a NumPy bool as Python's; a NumPy number keeps its type (an np.int64 next to an
    np.int32 computes in int64, as compiled; a Python int would take int32)."""
    if type(value) is np.ndarray:  # a subclass keeps its own behaviour
        return value.view(_PythonView)
    if isinstance(value, RandomPool):  # the launch key the body's draws come from
        return value.launch_key()
    if type(value) is complex:  # a complex128 argument: NumPy's, as compiled (Python's
        return np.complex128(value)  # complex times a complex64 would stay complex64)
    return value.item() if type(value) is np.bool_ else value


def start_value(reducer: Reducer, workunit: Callable[..., Any], position: int) -> Any:
    """The accumulator's first value: the reducer's identity for its type, as the Python
    type the result has (a named tuple for a reducer to several values)."""
    return start_and_type(reducer, workunit, position)[0]


def start_and_type(
    reducer: Reducer, workunit: Callable[..., Any], position: int
) -> tuple[Any, type]:
    """:func:`start_value` and the Python type of the accumulator's value, from one reading of
    its annotation."""
    dtype = acc_type(workunit, position)
    kind = kind_of(dtype)
    if reducer is Sum:
        return dtype.np_dtype.type(0), kind
    try:
        reducer.check(dtype)
    except TypeError as exc:  # at the parameter, as the compiled spaces report it
        source = KernelSource.of(workunit)
        source.error(source.tree.args.args[position], str(exc))
    start = reducer.value_of(reducer.identity(dtype), kind)
    # NumPy scalars of the accumulator's type: `acc += f32[i]` then computes in the
    # type the compiled spaces use (a Python float would take float32: NumPy's weak
    # scalars), and debug_cell knows the C type each store converts to.
    if reducer.parts:
        fields = start._asdict()
        for name in fields:
            np_type = np.int64 if reducer.field_is_location(name) else dtype.np_dtype.type
            fields[name] = np_type(fields[name])
        return type(start)(**fields), kind
    return dtype.np_dtype.type(start), kind


def index_is_float(workunit: Callable[..., Any]) -> bool:
    """Whether the index parameter is annotated a float type (PyKokkos' ``i: float``),
    which compiled kernels declare it as."""
    code = workunit.__code__
    if not code.co_argcount:
        return False
    try:
        ann = inspect.get_annotations(workunit, eval_str=True).get(code.co_varnames[0])
        return ann is not None and to_datatype(ann).is_float
    except Exception:  # noqa: BLE001 - not a type: the translator said what is wrong
        return False


def python_type(workunit: Callable[..., Any], position: int = 1) -> type:
    """The Python type of the accumulator's value (the parameter at ``position``)."""
    return kind_of(acc_type(workunit, position))


def kind_of(dtype: DataType) -> type:
    if dtype.kind == "complex":
        return complex
    return int if dtype.kind in ("int", "uint") else bool if dtype.kind == "bool" else float


def acc_type(workunit: Callable[..., Any], position: int = 1) -> DataType:
    """The accumulator's type, read as the translator reads it (float64 if unannotated).

    Annotations are evaluated, so modules using ``from __future__ import annotations``
    (where ``__annotations__`` holds strings) get the same type as in compiled spaces.
    """
    name = workunit.__code__.co_varnames[position]
    try:
        ann = inspect.get_annotations(workunit, eval_str=True).get(name)
    except Exception:  # noqa: BLE001 - an annotation Python cannot evaluate: the default
        ann = None
    if isinstance(ann, AccAnnotation):
        return ann.dtype
    try:
        return float64 if ann is None else to_datatype(ann)
    except TypeError:
        return float64
