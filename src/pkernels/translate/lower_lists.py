"""Lowering of local lists: ``f: List[float] = [0.0, 0.0, 0.0]``, ``x = [a, b]``,
``counts = [0] * 8``.

A feature lowerer of :class:`~pkernels.translate.lower.FunctionLowerer` (see
:mod:`~pkernels.translate.lower_context`). PyKokkos kernels may keep
a few values in a list local; here such a list is a fixed-length array on the stack of
the thread, seen by the rest of the kernel as a rank-1 view (``f[k]``, ``f[k] += v``,
``len(f)``, debug builds' bounds checks). Its length is that of the list written and
its element type the annotation's (``List[int]``: int64, as ``int`` everywhere in
kernels) or the type NumPy would give the elements; assigning it again fills the same
array, so the new list must have the same length. The Debug space runs Python's list.
"""

from __future__ import annotations

import ast
import typing
from dataclasses import dataclass
from typing import Any

from ..api import types as t
from ..api.types import DataType, to_datatype
from . import ir
from .ir import ViewLayout, ViewType
from .lower_context import Lowerer
from .typing_rules import literal_outside

_FORMS = "Write a list local as [a, b, ...] or [value] * n (n an integer literal)."
# Elements of a list local at most: it lives on the thread's stack (a GPU thread's too).
MAX_LENGTH = 4096


@dataclass(frozen=True)
class ListAnnotation:
    """``List[T]`` / ``list[T]`` on a local: a list local of ``T`` elements."""

    dtype: DataType


def list_annotation(value: Any) -> ListAnnotation | None | str:
    """The :class:`ListAnnotation` an evaluated annotation means, None if it is no list
    type, or what is wrong with it (a message)."""
    if value is not list and typing.get_origin(value) is not list:
        return None
    if not typing.get_args(value):  # list, typing.List
        return "a list local needs its element type: List[float], List[int], ..."
    (element,) = typing.get_args(value)
    try:
        return ListAnnotation(to_datatype(element))
    except TypeError:
        return "a list local holds numbers: List[float], List[int], List[pk.int32] ..."


def is_list_display(node: ast.expr) -> bool:
    """``[a, b]`` or ``[a] * n`` / ``n * [a]``."""
    if isinstance(node, ast.List):
        return True
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and (isinstance(node.left, ast.List) or isinstance(node.right, ast.List))
    )


class ListLowerer(Lowerer):
    """The list locals of a function."""

    def local_list(
        self, node: ast.stmt, target: ast.expr, value: ast.expr, declared: DataType | None
    ) -> list[ir.Stmt]:
        """``name = [a, b, ...]`` (or ``[a] * n``): fill the list local ``name``."""
        if not isinstance(target, ast.Name):
            self.src.error(target, "a list can only be assigned to a local name", hint=_FORMS)
        name = target.id
        if self.cx.outer_scopes:
            self.src.error(
                node,
                "a list local is made by the workunit itself, not in a nested body",
                hint="Make it before the nested parallel_* and use it inside.",
            )
        element_nodes = self._list_elements(value)
        if not element_nodes:
            self.src.error(value, "an empty list cannot be a kernel local", hint=_FORMS)
        if len(element_nodes) > MAX_LENGTH:
            self.src.error(
                value,
                f"a list local of {len(element_nodes)} elements: at most {MAX_LENGTH} live on "
                "a thread's stack",
                hint="Use a view (an array passed as a keyword argument) instead.",
            )
        values = [self.cx.exprs.expr(e) for e in element_nodes]
        for element, expr in zip(element_nodes, values, strict=True):
            if not isinstance(expr.type, DataType):
                self.src.error(element, "a list local holds numbers (ints, floats, bools)")
        if name in self.cx.params or name in self.cx.locals:
            self.src.error(target, f"{name!r} is already a variable; a list needs its own name")
        assert self.cx.function is not None
        known = self.cx.function.local_arrays.get(name)
        if known is None and name in self.cx.views:
            self.src.error(target, f"cannot rebind view {name!r} inside a kernel")
        if declared is not None:
            dtype = declared
        elif known is not None:  # assigned again: its elements take the list's type
            dtype = known[0].dtype
        else:
            dtype = _element_type([v.type for v in values])
        view = ViewType(dtype, 1, ViewLayout.LAST_UNIT)
        for element, expr in zip(element_nodes, values, strict=True):
            outside = literal_outside(expr, dtype)
            if outside is not None:
                self.src.error(
                    element,
                    f"{outside} does not fit in {dtype.name}, the element type of the list "
                    f"{name!r}",
                    hint="NumPy raises OverflowError here (C++ would wrap it).",
                )
        if known is not None and known != (view, len(values)):
            self.src.error(
                value,
                f"{name!r} is a list of {known[1]} {known[0].dtype.name}: a list local keeps "
                f"its length and element type, this one is {len(values)} {dtype.name}",
                hint="Give each list its own name, or assign its elements: x[k] = v.",
            )
        self.cx.function.local_arrays[name] = (view, len(values))
        self.cx.views[name] = view
        stmts: list[ir.Stmt] = []
        if known is not None and any(
            isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)
        ):
            # `x = [x[1], x[0]]`: every element is read before any is stored, as Python
            # builds the new list before binding it
            values = [self.cx.unpacking.hidden_local(node, v, stmts) for v in values]
        ref = ir.ViewRef(name, view)
        stmts += [
            ir.Assign(node.lineno, ir.ViewAccess(dtype, ref, [ir.Const(t.int64, k)]), v)
            for k, v in enumerate(values)
        ]
        return stmts

    def _list_elements(self, value: ast.expr) -> list[ast.expr]:
        if isinstance(value, ast.List):
            for element in value.elts:
                if isinstance(element, ast.Starred):
                    self.src.error(element, "a starred element in a list local", hint=_FORMS)
            return list(value.elts)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
            listed, count = value.left, value.right
            if not isinstance(listed, ast.List):
                listed, count = count, listed
            if (
                isinstance(listed, ast.List)
                and isinstance(count, ast.Constant)
                and type(count.value) is int
                and count.value >= 0
            ):
                return self._list_elements(listed) * count.value
        self.src.error(value, "this list cannot be a kernel local", hint=_FORMS)


def _element_type(types: list[Any]) -> DataType:
    """The elements' type when they all have one, else int64 for integers (and bools),
    else float64: Python's int and float."""
    if all(x == types[0] for x in types):
        return types[0]
    if all(x.is_integer or x == t.bool_ for x in types):
        return t.int64
    return t.float64
