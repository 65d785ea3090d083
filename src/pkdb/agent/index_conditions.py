"""Which indices of a launch can stop at its breakpoints, from their conditions alone.

``break 18 if j == 10`` in a kernel whose index is ``j``: gdb would test ``j == 10`` each
time any thread reaches line 18 (for yAx, 1024 times per index, ~0.1 ms each). When every
condition depends only on the index and the launch's scalar arguments, pkdb evaluates
them here, for all the indices at once with NumPy, and has the launch run only the
indices where one holds in the debug build (``Dispatch.debug_indices``); gdb still tests
the condition there. Anything else (a local, a view, a call) returns None: then every
index runs in the debug build, as before.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

#: Indices evaluated at once (bounds the temporary arrays to a few MB).
_CHUNK = 1 << 18
#: Larger magnitudes could overflow int64 where Python's ints would not: give up.
_LIMIT = 2**62

_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class _NotIndexOnly(Exception):
    """The condition needs more than the index and scalars (or could overflow)."""


def debug_indices(
    conditions: list[str | None], index: str, scalars: dict[str, Any], begin: int, end: int
) -> np.ndarray | None:
    """A bool array, one entry per index of ``begin <= index < end``: True where one of
    ``conditions`` holds. None when one is missing (an unconditional breakpoint) or uses
    anything but ``index``, the ``scalars`` (int, float or bool values), literals,
    ``+ - * // %``, comparisons, ``and``, ``or`` and ``not``; or when a divisor can be 0
    or a value could leave int64 (Python's ints would not). The array is read-only:
    a program dispatching the same launch again gets it from a cache."""
    if not conditions or any(not c for c in conditions):
        return None
    values = tuple(
        sorted((name, v) for name, v in scalars.items() if _is_scalar(v) and name != index)
    )
    return _cached(tuple(c for c in conditions if c), index, values, begin, end)


@functools.lru_cache(maxsize=16)
def _cached(
    conditions: tuple[str, ...], index: str, scalars: tuple[tuple[str, Any], ...], begin: int,
    end: int,
) -> np.ndarray | None:  # fmt: skip
    mask = _evaluate_all(conditions, index, dict(scalars), begin, end)
    if mask is not None:
        mask.flags.writeable = False
    return mask


def _evaluate_all(
    conditions: tuple[str, ...], index: str, values: dict[str, Any], begin: int, end: int
) -> np.ndarray | None:
    try:
        trees = [ast.parse(c.strip(), mode="eval").body for c in conditions]
        span = max(abs(begin), abs(end))
        for tree in trees:
            _bound(tree, index, span, values)
        mask = np.zeros(max(0, end - begin), dtype=bool)
        for start in range(begin, end, _CHUNK):
            indices = np.arange(start, min(end, start + _CHUNK), dtype=np.int64)
            names = {**values, index: indices}
            part = mask[start - begin : start - begin + len(indices)]
            for tree in trees:
                part |= np.broadcast_to(_truth(_evaluate(tree, names)), part.shape)
    except (_NotIndexOnly, SyntaxError):
        return None
    return mask


def _is_scalar(value: Any) -> bool:
    return isinstance(value, int | float | bool | np.integer | np.floating | np.bool_)


def _bound(node: ast.expr, index: str, span: int, values: dict[str, Any]) -> float:
    """An upper bound of ``|node|`` over the launch; raises _NotIndexOnly for what
    :func:`debug_indices` does not evaluate."""
    match node:
        case ast.Constant(value=value) if _is_scalar(value):
            bound = abs(value)
        case ast.Name(id=name) if name == index:
            bound = span
        case ast.Name(id=name) if name in values:
            bound = abs(values[name])
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _ARITHMETIC:
            a, b = _bound(left, index, span, values), _bound(right, index, span, values)
            bound = a * b if isinstance(op, ast.Mult) else a + b
        case ast.UnaryOp(op=ast.USub() | ast.UAdd() | ast.Not(), operand=operand):
            bound = _bound(operand, index, span, values)
        case ast.Compare(left=left, ops=ops, comparators=rest) if all(
            type(op) in _COMPARISONS for op in ops
        ):
            for part in (left, *rest):
                _bound(part, index, span, values)
            bound = 1
        case ast.BoolOp(values=parts):
            for part in parts:
                _bound(part, index, span, values)
            bound = 1
        case _:
            raise _NotIndexOnly(ast.dump(node))
    if bound >= _LIMIT:
        raise _NotIndexOnly("too large for int64")
    return bound


def _evaluate(node: ast.expr, names: dict[str, Any]) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            return names[name]
        case ast.BinOp(left=left, op=op, right=right):
            a, b = _evaluate(left, names), _evaluate(right, names)
            if isinstance(op, ast.FloorDiv | ast.Mod) and np.any(np.asarray(b) == 0):
                raise _NotIndexOnly("a divisor can be 0")  # Python raises; NumPy gives 0
            return _ARITHMETIC[type(op)](a, b)
        case ast.UnaryOp(op=op, operand=operand):
            value = _evaluate(operand, names)
            if isinstance(op, ast.Not):
                return ~_truth(value)
            return -value if isinstance(op, ast.USub) else +value
        case ast.Compare(left=left, ops=ops, comparators=rest):
            result: Any = True
            a = _evaluate(left, names)
            for op, right in zip(ops, rest, strict=True):
                b = _evaluate(right, names)
                result = result & _COMPARISONS[type(op)](a, b)
                a = b
            return result
        case ast.BoolOp(op=op, values=parts):
            truths = [_truth(_evaluate(part, names)) for part in parts]
            combine = np.logical_and if isinstance(op, ast.And) else np.logical_or
            return combine.reduce(np.broadcast_arrays(*truths))
    raise _NotIndexOnly(ast.dump(node))  # pragma: no cover - _bound refused it already


def _truth(value: Any) -> Any:
    return np.asarray(value) != 0
