"""Type rules of the kernel language: promotion and conversions (the functions kernels
may call are in :mod:`~pkernels.translate.builtin_table`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api import types as t
from ..api.types import DataType, ViewAnnotation
from .ir import Const, Expr, RandomPoolType, ViewType

_INT_RANK = {t.bool_: 0, t.int8: 1, t.uint8: 1, t.int16: 2, t.uint16: 2, t.int32: 3}
_INT_RANK |= {t.uint32: 3, t.int64: 4, t.uint64: 4}


def annotation_mismatch(name: str, ann: Any, actual: Any) -> str | None:
    """Why a dispatch argument of kernel type ``actual`` (a ViewType or a DataType) does
    not fit parameter ``name`` annotated ``ann`` (a ViewAnnotation or a DataType); None
    when it does. The compiled spaces and the Debug space refuse the same arguments."""
    if isinstance(actual, RandomPoolType) or isinstance(ann, RandomPoolType):
        if isinstance(actual, RandomPoolType) and isinstance(ann, RandomPoolType):
            return None
        given = "a random pool" if isinstance(actual, RandomPoolType) else str(actual)
        return f"{name!r} is annotated {getattr(ann, 'name', ann)} but receives {given}"
    if isinstance(actual, ViewType):
        if not isinstance(ann, ViewAnnotation):
            return f"{name!r} is annotated {ann!r} but receives an array"
        if ann.rank != actual.rank or not ann.accepts(actual.dtype):
            return f"{name!r} is annotated {ann.name} but the array passed is {actual}"
        return None
    if not isinstance(ann, DataType):
        return f"{name!r} is annotated as a view but receives a scalar"
    if actual.is_float and not ann.is_float:
        return f"{name!r} is annotated {ann.name} but receives a float ({actual.name})"
    return None


COMPLEX_TO_REAL_HINT = (
    "Take the part you mean, z.real or z.imag, or the magnitude, abs(z) (C++ would drop "
    "the imaginary part without a word), or declare it complex: pk.complex128."
)


def declared_conversion(target: DataType, value: DataType) -> tuple[str, str] | None:
    """What C++ would convert silently where Python keeps the value, storing a ``value``
    into a variable (or a return) declared ``target``: (the value, as a message says it;
    the conversion to write: "int" or "bool", or "complex" for a complex value into a real
    variable, see COMPLEX_TO_REAL_HINT); None when nothing is lost that way."""
    if value.is_complex and not target.is_complex:
        return f"a complex number ({value.name})", "complex"
    if target.is_integer and value.is_float:
        return f"a float ({value.name})", "int"
    if target == t.bool_ and value != t.bool_:
        return f"a number ({value.name})", "bool"
    return None


def is_weak(expr: Expr) -> bool:
    """A Python literal, which takes the type of the other operand (NumPy 2 rules)."""
    return isinstance(expr, Const) and expr.weak


# The values of each integer type (bool: 0 and 1), as Python ints (low, high).
INT_RANGES: dict[DataType, tuple[int, int]] = {
    dt: (int(np.iinfo(dt.np_dtype).min), int(np.iinfo(dt.np_dtype).max))
    for dt in t.ALL_TYPES
    if dt.is_integer
}
INT_RANGES[t.bool_] = (0, 1)


def literal_outside(expr: Expr, dtype: DataType) -> int | None:
    """The value of ``expr``, an int literal taking the integer type ``dtype`` (NumPy's
    weak scalars), when ``dtype`` cannot hold it (NumPy raises OverflowError; C++ would
    wrap it); None otherwise."""
    if not (is_weak(expr) and not expr.type.is_float and dtype.is_integer):
        return None
    value = int(expr.value)  # type: ignore[attr-defined]
    low, high = INT_RANGES[dtype]
    return None if low <= value <= high else value


def int_value_range(expr: Expr) -> tuple[int, int] | None:
    """The values an integer (or bool) operand can hold: a literal its own value, a typed
    value its type's range; None for a float."""
    if expr.type.is_float or expr.type.is_complex:
        return None
    if is_weak(expr):
        value = int(expr.value)  # type: ignore[attr-defined]
        return value, value
    return INT_RANGES[expr.type]


def promote(a: Expr, b: Expr) -> DataType:
    """The type of an arithmetic result of ``a`` and ``b``."""
    ta, tb = a.type, b.type
    if ta == tb:
        return t.int64 if ta == t.bool_ else ta
    if is_weak(a) and not is_weak(b):
        return _absorb_literal(tb, ta)
    if is_weak(b) and not is_weak(a):
        return _absorb_literal(ta, tb)
    return promote_types(ta, tb)


def _absorb_literal(typed: DataType, literal: DataType) -> DataType:
    if typed.is_complex or typed.is_float:
        return typed
    if literal.is_float:
        return t.float64
    return t.int64 if typed == t.bool_ else typed


def promote_types(ta: DataType, tb: DataType) -> DataType:
    """Promotion of two typed (non-literal) operands, NumPy-like."""
    if ta.is_complex or tb.is_complex:
        # complex64 with float32 or an integer of 16 bits or fewer (NumPy: its values fit
        # in a float32), else complex128
        parts = promote_types(t.real_part_type(ta), t.real_part_type(tb))
        return t.complex_of(parts)
    if ta.is_float or tb.is_float:
        if ta == t.float64 or tb == t.float64:
            return t.float64
        other = tb if ta == t.float32 else ta
        return t.float32 if (other.is_float or other.bits <= 16) else t.float64
    if ta == t.bool_ and tb == t.bool_:
        return t.int64
    if ta.kind == tb.kind or t.bool_ in (ta, tb):
        non_bool = [x for x in (ta, tb) if x != t.bool_]
        return max(non_bool, key=lambda x: _INT_RANK[x])
    # signed with unsigned: a signed type wide enough, as NumPy does; none holds uint64
    # and a signed type's values, and NumPy computes those in float64
    signed, unsigned = (ta, tb) if ta.kind == "int" else (tb, ta)
    if signed.bits > unsigned.bits:
        return signed
    return {8: t.int16, 16: t.int32, 32: t.int64}.get(unsigned.bits, t.float64)


def float_of(*types: DataType) -> DataType:
    """The float type math functions compute in: float32 only if every argument is."""
    return t.float32 if types and all(x == t.float32 for x in types) else t.float64
