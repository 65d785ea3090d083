"""Typed locals in the Debug space: each store into a scalar local converts the value to
the local's kernel type, as the compiled kernel's C++ variable does.

Plain Python would keep whatever a store gives: ``n: int = v16[i]`` an int16 (so
``n * 1000`` wraps in int16), ``t = 0.0; t += f32[j]`` a float32 (a Python float takes
the other operand's type under NumPy 2's rules). The translator knows every local's type
(:class:`ir.Function.locals`, and the locals of each nested body), so the Debug form
stores a local as ``n = __pk_as_int64(n)`` after each statement assigning it, on the
same line (a debugger stepping through sees one line, and the local already typed):
NumPy scalars of the local's type, whose arithmetic is the kernel language's; a bool
local stays Python's (``True + True == 2``). A loop variable keeps the int ``range``
gives, as the index does.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api.types import DataType
from . import ir

_MASK64 = (1 << 64) - 1
_INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class LocalTypes:
    """The kernel types of a workunit's scalar locals (and parameters a body may assign),
    and those of each nested body (a team kernel's nested ``def``), by the line its
    ``def`` ends on."""

    names: dict[str, DataType] = field(default_factory=dict)
    nested: dict[int, dict[str, DataType]] = field(default_factory=dict)
    # How the workunit draws from a random pool, if it does (translate.lower_random).
    random_draws: ir.RandomDraws | None = None

    @classmethod
    def of(cls, kernel: ir.Function) -> LocalTypes:
        """What the translator found in ``kernel`` (the accumulator is left out: its
        cell converts it, see ``pyexec.mirror_accumulator``)."""
        names = {
            p.name: p.type
            for p in kernel.params
            if isinstance(p.type, DataType) and p.role not in ("acc", "index")
        }
        names |= _scalars(kernel.locals)
        nested: dict[int, dict[str, DataType]] = {}
        for stmt in ir.statements(kernel.body):
            if isinstance(stmt, ir.NestedParallel | ir.Single):
                nested[stmt.end_lineno] = _scalars(stmt.locals)
        return cls(names, nested, kernel.random_draws)


def _scalars(found: dict[str, Any]) -> dict[str, DataType]:
    return {name: kind for name, kind in found.items() if isinstance(kind, DataType)}


def typed_stores(body: list[ast.stmt], types: LocalTypes) -> tuple[list[ast.stmt], dict[str, Any]]:
    """``body`` (a copied def's statements) with each store into a local of ``types``
    followed by its conversion; and the converters the new statements read, by name
    (cells for ``pycode.bind_like``)."""
    used: dict[str, Any] = {}
    return _rewrite(body, types.names, types, used), used


def _rewrite(
    body: list[ast.stmt], scope: dict[str, DataType], types: LocalTypes, used: dict[str, Any]
) -> list[ast.stmt]:
    rewritten: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef):
            # A nested body's own locals; `nonlocal x` stores the enclosing x.
            inner = dict(types.nested.get(stmt.end_lineno or stmt.lineno, {}))
            for node in ast.walk(stmt):
                if isinstance(node, ast.Nonlocal):
                    inner |= {n: scope[n] for n in node.names if n in scope}
            stmt.body = _rewrite(stmt.body, inner, types, used)
            rewritten.append(stmt)
            continue
        for part in ("body", "orelse"):
            inner_body = getattr(stmt, part, None)
            if isinstance(inner_body, list) and not isinstance(stmt, ast.ClassDef):
                setattr(stmt, part, _rewrite(inner_body, scope, types, used))
        rewritten.append(stmt)
        for name in _stored_names(stmt):
            kind = scope.get(name)
            if kind is not None:
                rewritten.append(_convert(name, kind, stmt, used))
    return rewritten


def _stored_names(stmt: ast.stmt) -> list[str]:
    """The names a statement assigns a value to (unpacking included; not a loop's
    variable, nor an annotation alone)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.AnnAssign) and stmt.value):
        targets = [stmt.target]
    else:
        return []
    names: list[str] = []
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append(node.id)
    return list(dict.fromkeys(names))


def _convert(name: str, kind: DataType, where: ast.stmt, used: dict[str, Any]) -> ast.stmt:
    """``name = name if name.__class__ is __pk_<kind> else __pk_as_<kind>(name)`` at
    ``where``'s line: most stores already give the local's type, and skip the call."""
    converter = f"__pk_as_{kind.name}"
    used.setdefault(converter, store_as(kind))
    value = ast.Name(id=name, ctx=ast.Load())
    call = ast.Call(func=ast.Name(id=converter, ctx=ast.Load()), args=[value], keywords=[])
    if kind.kind != "bool":
        held = f"__pk_{kind.name}"
        used.setdefault(held, kind.np_dtype.type)
        same = ast.Compare(
            left=ast.Attribute(value=value, attr="__class__", ctx=ast.Load()),
            ops=[ast.Is()],
            comparators=[ast.Name(id=held, ctx=ast.Load())],
        )
        call = ast.IfExp(test=same, body=ast.Name(id=name, ctx=ast.Load()), orelse=call)
    stmt = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call)
    for node in ast.walk(stmt):
        ast.copy_location(node, where)
    return stmt


def store_as(kind: DataType) -> Callable[[Any], Any]:
    """The conversion a C++ store into a local of ``kind`` makes, on a Debug-space value:
    a NumPy scalar of ``kind`` (integers wrap, floats round), or a Python bool."""
    if kind.kind == "bool":
        return bool
    np_type = kind.np_dtype.type
    if kind.is_float or kind.is_complex:

        def to_float(value: Any) -> Any:
            cls = value.__class__
            if cls is np_type:  # the commonest store: already the local's type
                return value
            if cls is int and not _INT64[0] <= value <= _INT64[1]:
                value = _wrapped(value)  # an int64 the Debug space did not wrap yet
            return np_type(value)

        return to_float
    low, high = int(np.iinfo(np_type).min), int(np.iinfo(np_type).max)
    # NumPy makes a scalar of a Python int slowly (~5x an addition); the indices and
    # counters a kernel stores repeat, so the first few thousand are kept (scalars are
    # immutable: sharing one is safe).
    made: dict[int, Any] = {}

    def to_int(value: Any) -> Any:
        cls = value.__class__
        if cls is np_type:
            return value
        if cls is int:
            found = made.get(value)
            if found is not None:
                return found
            if low <= value <= high:
                found = np_type(value)
                if len(made) < _KEPT_INTS:
                    made[value] = found
                return found
            value = np.uint64(value & _MASK64)  # C's modular conversion
        elif cls is float:
            value = np.float64(value)  # truncated toward zero, as C converts
        return np_type(value)

    return to_int


_KEPT_INTS = 4096  # scalars kept per integer type (see store_as)


def _wrapped(value: int) -> np.int64:
    return np.uint64(value & _MASK64).astype(np.int64)
