"""Type rules of the kernel language: promotion, and the builtins kernels may call."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api import types as t
from ..api.types import DataType, ViewAnnotation
from .ir import Const, Expr, ViewType

_INT_RANK = {t.bool_: 0, t.int8: 1, t.uint8: 1, t.int16: 2, t.uint16: 2, t.int32: 3}
_INT_RANK |= {t.uint32: 3, t.int64: 4, t.uint64: 4}


def annotation_mismatch(name: str, ann: Any, actual: Any) -> str | None:
    """Why a dispatch argument of kernel type ``actual`` (a ViewType or a DataType) does
    not fit parameter ``name`` annotated ``ann`` (a ViewAnnotation or a DataType); None
    when it does. The compiled spaces and the Debug space refuse the same arguments."""
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


def declared_conversion(target: DataType, value: DataType) -> tuple[str, str] | None:
    """What C++ would convert silently where Python keeps the value, storing a ``value``
    into a variable (or a return) declared ``target``: (the value, as a message says it;
    the conversion to write: "int" or "bool"); None when nothing is lost that way."""
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
    if expr.type.is_float:
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
    if typed.is_float:
        return typed
    if literal.is_float:
        return t.float64
    return t.int64 if typed == t.bool_ else typed


def promote_types(ta: DataType, tb: DataType) -> DataType:
    """Promotion of two typed (non-literal) operands, NumPy-like."""
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


# Math functions: name -> (number of arguments, result kind).
# "float": computed in float_of(args); "bool": predicate; "int": Python int result.
MATH_FUNCTIONS: dict[str, tuple[int, str]] = {
    **{
        name: (1, "float")
        for name in (
            "sqrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh "
            "tanh asinh acosh atanh fabs cbrt erf erfc tgamma lgamma"
        ).split()
    },
    **{name: (2, "float") for name in "pow atan2 fmod fmin fmax hypot copysign remainder".split()},
    "ldexp": (2, "float"),  # ldexp(x, i): i an integer
    "isnan": (1, "bool"),
    "isinf": (1, "bool"),
    "isfinite": (1, "bool"),
    "gamma": (1, "float"),  # math.gamma is C's tgamma
    "cyl_bessel_j0": (1, "float"),  # pk.* only (Kokkos' names): C's j0 / j1
    "cyl_bessel_j1": (1, "float"),
    "trunc": (1, "float"),
}

# Math functions a kernel may call bare, without an import, as PyKokkos translates them
# (its math_functions): the pk.* function where pkernels has one (Kokkos' semantics,
# as PyKokkos' C++ gets), else math's (degrees, radians).
BARE_MATH = frozenset(
    (
        "acos acosh asin asinh atan atan2 atanh ceil copysign cos cosh degrees exp expm1 "
        "fabs floor fmod hypot isfinite isinf isnan log log10 log1p log2 radians remainder "
        "sin sinh sqrt tan tanh trunc cbrt exp2 erf erfc tgamma lgamma fmin fmax"
    ).split()
)

# math.floor / math.ceil return Python ints; pk.floor / pk.ceil return floats (Kokkos).
PY_INT_ROUNDING = {"floor", "ceil", "trunc"}

MATH_CONSTANTS = {"pi": 3.141592653589793, "e": 2.718281828459045, "tau": 6.283185307179586}
MATH_CONSTANTS |= {"inf": float("inf"), "nan": float("nan")}

ATOMIC_FUNCTIONS: dict[str, tuple[str, bool]] = {}
for _op in ("add", "sub", "mul", "div", "max", "min", "and", "or", "xor"):
    ATOMIC_FUNCTIONS[f"atomic_{_op}"] = (_op, False)
    ATOMIC_FUNCTIONS[f"atomic_fetch_{_op}"] = (_op, True)
for _op in (
    "add",
    "sub",
    "mul",
    "div",
    "max",
    "min",
    "and",
    "or",
    "xor",
    "mod",
    "lshift",
    "rshift",
):
    ATOMIC_FUNCTIONS[f"atomic_{_op}_fetch"] = (f"{_op}_new", True)
for _op in ("mod", "lshift", "rshift"):  # integer views only
    ATOMIC_FUNCTIONS[f"atomic_{_op}"] = (_op, False)
    ATOMIC_FUNCTIONS[f"atomic_fetch_{_op}"] = (_op, True)
ATOMIC_FUNCTIONS["atomic_load"] = ("load", True)
ATOMIC_FUNCTIONS["atomic_store"] = ("exchange", False)
ATOMIC_FUNCTIONS["atomic_exchange"] = ("exchange", True)
ATOMIC_FUNCTIONS["atomic_compare_exchange"] = ("cas", True)
ATOMIC_FUNCTIONS["atomic_increment"] = ("inc", False)
ATOMIC_FUNCTIONS["atomic_decrement"] = ("dec", False)

# Counter-based random numbers (splitmix64 of seed and counter): the same value for the
# same (seed, counter) in every space and thread count. name -> (arity, result type).
RANDOM_FUNCTIONS: dict[str, tuple[int, DataType]] = {
    "rand": (2, t.float64),
    "rand_int": (3, t.int64),
}
