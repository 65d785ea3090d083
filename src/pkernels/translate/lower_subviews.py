"""Lowering of subviews: ``row = A[j, :]`` in a kernel, then ``row[i]``, ``len(row)``.

A feature lowerer of :class:`~pkernels.translate.lower.FunctionLowerer` (see
:mod:`~pkernels.translate.lower_context`). A subview is not a C++
object: binding one stores, in hidden int64 locals, the index of each axis it fixes and
the first index, length and step of each axis it keeps (Python's slice rules: negative
bounds count from the end, bounds are clamped to the extent), as Python evaluates the
subscript once, at the assignment. ``row[i]`` is then an access of ``A`` itself,
``A[j0, start + i * step]``; debug builds check ``i`` against the subview's own length,
so an index past the subview is reported even where it is still inside ``A``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..api import types as t
from . import ir
from .ir import Expr
from .lower_context import Lowerer

_HINT = "Kernels take subviews of views as `row = A[j, :]` or `block = A[a:b, c:d]`."


@dataclass
class SubviewAxis:
    """One axis of the view a subview is cut from: fixed at ``index``, or kept from
    ``start`` on, ``length`` indices, ``step`` apart."""

    index: Expr | None = None
    start: Expr | None = None
    length: Expr | None = None
    step: int = 1


@dataclass
class Subview:
    """``name = base[...]``: the base view (a parameter) and one entry per base axis."""

    name: str
    base: str
    axes: list[SubviewAxis]

    @property
    def kept(self) -> list[tuple[int, SubviewAxis]]:
        return [(k, a) for k, a in enumerate(self.axes) if a.index is None]

    @property
    def layout(self) -> tuple[object, ...]:
        """What a rebinding of the name must keep: the view, which axes, their steps."""
        return (self.base, *((a.index is None, a.step) for a in self.axes))

    def describe(self) -> dict[str, object]:
        """The subview for a debugger (JSON): per axis of the view, the hidden local of
        its fixed index, or those of its first index and length, and its step."""
        axes: list[list[object]] = []
        for axis in self.axes:
            if axis.index is not None:
                axes.append(["index", _var_name(axis.index)])
            else:
                axes.append(["range", _var_name(axis.start), _var_name(axis.length), axis.step])
        return {"view": self.base, "axes": axes}


class SubviewLowerer(Lowerer):
    """The subview lowerer (see the module docstring)."""

    def is_view_name(self, name: str) -> bool:
        return name in self.cx.views or name in self.cx.subviews

    def binds_subview(self, target: ast.expr, value: ast.expr) -> bool:
        """Whether ``target = value`` makes a subview: a slice of a view, or a view
        indexed on fewer axes than it has (NumPy's ``A[j]`` is row ``j``)."""
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Subscript):
            return False
        base, index_nodes = flatten_subscript(value)
        if not isinstance(base, ast.Name) or not self.is_view_name(base.id):
            return False
        rank = self._rank_of(base.id)
        return any(isinstance(i, ast.Slice) for i in index_nodes) or len(index_nodes) < rank

    def bind_subview(self, node: ast.stmt, target: ast.Name, value: ast.Subscript) -> list[ir.Stmt]:
        """``target = view[...]``: the hidden locals that describe the subview."""
        name = target.id
        if name in self.cx.views or name in self.cx.params or name in self.cx.locals:
            self.src.error(
                target, f"{name!r} is already a variable or a view; a subview needs a new name"
            )
        base_node, index_nodes = flatten_subscript(value)
        assert isinstance(base_node, ast.Name)
        parent = self._as_subview(base_node.id)
        kept = parent.kept
        if len(index_nodes) > len(kept):
            self.src.error(
                value,
                f"{base_node.id!r} has rank {len(kept)} but is indexed with "
                f"{len(index_nodes)} indices",
            )
        index_nodes = [*index_nodes, *(ast.Slice() for _ in range(len(kept) - len(index_nodes)))]
        previous = self.cx.subviews.get(name)
        # One set of hidden locals per name (a rebinding reuses them), so that a debugger
        # finds the subview's current description under fixed names.
        prefix = f"pk_sv_{name}"
        stmts: list[ir.Stmt] = []

        def hidden(what: str, k: int, e: Expr) -> ir.Var:
            var = ir.Var(t.int64, f"{prefix}_{what}{k}")
            self.cx.locals[var.name] = t.int64
            stmts.append(ir.Assign(node.lineno, var, e))
            return var

        axes = list(parent.axes)
        for axis_number, ((k, axis), idx) in enumerate(zip(kept, index_nodes, strict=True)):
            assert axis.start is not None and axis.length is not None
            if not isinstance(idx, ast.Slice):
                # Checked here, as Python raises at the subscript, not at a later access.
                index = self.cx.exprs.view_index(idx)
                offset = ir.SubviewIndex(t.int64, index, axis.length, parent.name, axis_number)
                axes[k] = SubviewAxis(index=hidden("i", k, _at(axis, offset)))
                continue
            step = self._slice_step(idx)
            first = hidden("f", k, _bound(self._optional_index(idx.lower), axis.length, 0))
            stop = _bound(self._optional_index(idx.upper), axis.length, None)
            start = hidden("s", k, _at(axis, first))
            length = hidden("n", k, _count(first, stop, step))
            axes[k] = SubviewAxis(start=start, length=length, step=axis.step * step)
        subview = Subview(name, parent.base, axes)
        if previous is not None and previous.layout != subview.layout:
            self.src.error(
                target,
                f"{name!r} is already a subview of {previous.base!r} that keeps other axes; "
                "a new subview needs a new name",
            )
        self.cx.subviews[name] = subview
        if self.cx.function is not None:
            self.cx.function.subviews[name] = subview.describe()
        return stmts

    def subview_access(
        self, node: ast.Subscript, name: str, index_nodes: list[ast.expr]
    ) -> ir.ViewAccess:
        """``row[i, ...]``: the base view's element, the indices checked against the
        subview's extents in debug builds."""
        subview = self.cx.subviews[name]
        kept = subview.kept
        if len(index_nodes) != len(kept):
            self.src.error(
                node,
                f"subview {name!r} has rank {len(kept)} but is indexed with "
                f"{len(index_nodes)} indices",
                hint=f"Index all {len(kept)} axes, or make a new subview: `part = {name}[...]`.",
            )
        for idx in index_nodes:
            if isinstance(idx, ast.Slice):
                self.src.error(
                    idx, "a slice here makes a subview: assign it to a name first", hint=_HINT
                )
        indices: list[Expr] = [a.index for a in subview.axes]  # type: ignore[misc]
        for axis_number, ((k, axis), idx) in enumerate(zip(kept, index_nodes, strict=True)):
            assert axis.length is not None
            checked = ir.SubviewIndex(
                t.int64, self.cx.exprs.view_index(idx), axis.length, name, axis_number
            )
            indices[k] = _at(axis, checked)
        view = self.cx.views[subview.base]
        return ir.ViewAccess(view.dtype, ir.ViewRef(subview.base, view), indices, node.lineno)

    def subview_extent(self, name: str, axis: int, node: ast.AST) -> Expr:
        kept = self.cx.subviews[name].kept
        if not 0 <= axis < len(kept):
            self.src.error(node, f"axis {axis} is out of range for a rank-{len(kept)} subview")
        length = kept[axis][1].length
        assert length is not None
        return length

    # ------------------------------------------------------------ helpers

    def _rank_of(self, name: str) -> int:
        return (
            len(self.cx.subviews[name].kept)
            if name in self.cx.subviews
            else self.cx.views[name].rank
        )

    def _as_subview(self, name: str) -> Subview:
        """A view as the subview of itself that keeps every axis whole."""
        if name in self.cx.subviews:
            return self.cx.subviews[name]
        view = self.cx.views[name]
        ref = ir.ViewRef(name, view)
        whole = [
            SubviewAxis(start=ir.Const(t.int64, 0), length=ir.ViewExtent(t.int64, ref, k))
            for k in range(view.rank)
        ]
        return Subview(name, name, whole)

    def _optional_index(self, node: ast.expr | None) -> Expr | None:
        return None if node is None else self.cx.exprs.view_index(node, slice_bound=True)

    def _slice_step(self, node: ast.Slice) -> int:
        if node.step is None:
            return 1
        step = node.step
        if (
            isinstance(step, ast.Constant)
            and isinstance(step.value, int)
            and not isinstance(step.value, bool)
            and step.value > 0
        ):
            return step.value
        self.src.error(step, "a subview's step must be a positive integer literal", hint=_HINT)


def _var_name(e: Expr | None) -> str:
    """The name of a hidden local (every axis of a bound subview has its own)."""
    assert isinstance(e, ir.Var)
    return e.name


def flatten_subscript(node: ast.Subscript) -> tuple[ast.expr, list[ast.expr]]:
    """``A[i][j, k]`` as ``A`` and ``[i, j, k]``."""
    index_nodes: list[ast.expr] = []
    base: ast.expr = node
    while isinstance(base, ast.Subscript):
        sl = base.slice
        index_nodes[:0] = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        base = base.value
    return base, index_nodes


def _at(axis: SubviewAxis, offset: Expr) -> Expr:
    """The base index of position ``offset`` along a kept ``axis``."""
    assert axis.start is not None
    scaled = (
        offset if axis.step == 1 else ir.BinOp(t.int64, "*", offset, ir.Const(t.int64, axis.step))
    )
    if isinstance(axis.start, ir.Const) and axis.start.value == 0:
        return scaled
    return ir.BinOp(t.int64, "+", axis.start, scaled)


def _bound(value: Expr | None, length: Expr, default: int | None) -> Expr:
    """A slice bound as Python reads it: negative counts from the end, then clamped to
    [0, length]; None is ``default`` (None: the length)."""
    if value is None:
        return ir.Const(t.int64, default) if default is not None else length
    zero = ir.Const(t.int64, 0)
    from_end = ir.Call(t.int64, "max", [ir.BinOp(t.int64, "+", value, length), zero])
    clamped = ir.Call(t.int64, "min", [value, length])
    return ir.Select(t.int64, ir.Compare(t.bool_, "<", value, zero), from_end, clamped)


def _count(first: Expr, stop: Expr, step: int) -> Expr:
    """How many of ``first, first + step, ...`` are below ``stop`` (0 if none)."""
    span: Expr = ir.BinOp(t.int64, "-", stop, first)
    if step != 1:
        span = ir.BinOp(
            t.int64,
            "//",
            ir.BinOp(t.int64, "+", span, ir.Const(t.int64, step - 1)),
            ir.Const(t.int64, step),
        )
    return ir.Call(t.int64, "max", [span, ir.Const(t.int64, 0)])
