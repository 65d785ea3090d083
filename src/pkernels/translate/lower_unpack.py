"""Lowering of assignments to several targets: ``a, b = b, a`` and ``a = b = 0``.

A feature lowerer of :class:`~pkernels.translate.lower.FunctionLowerer` (see
:mod:`~pkernels.translate.lower_context`). Python evaluates the whole
right-hand side first, then assigns the targets from left to right; the kernel does the
same through hidden locals (``pk_`` names, which debuggers do not list), one per value,
so that ``a, b = b, a`` swaps and ``x[i], x[j] = x[j], x[i]`` exchanges two elements.
Each target is then an ordinary assignment (a local, a view element or a classtype
field) with that assignment's rules. ``math.modf(x)`` and ``math.frexp(x)`` unpack into
two targets the same way.
"""

from __future__ import annotations

import ast

from ..api import types as t
from ..api.types import DataType
from . import ir
from .builtin_table import TUPLE_MATH
from .lower_context import Lowerer

_TARGET_HINT = "Unpack into names, view elements or fields: `a, b = b, a`."
_VALUE_HINT = "Kernels unpack a tuple written out (`a, b = b, a`), math.modf(x) or math.frexp(x)."


class UnpackLowerer(Lowerer):
    """The assignments to several targets of a function."""

    def chained_assign(
        self, node: ast.Assign, targets: list[ast.expr], value_node: ast.expr
    ) -> list[ir.Stmt]:
        """``a = b = value``: ``value`` once, then each target from left to right."""
        for target in targets:
            if isinstance(target, ast.Tuple | ast.List):
                self.src.error(
                    target,
                    "a chained assignment with a tuple target is not supported in kernels",
                    hint="Write the unpacking on its own line.",
                )
        stmts: list[ir.Stmt] = []
        held = self._hold(node, value_node, stmts)
        for target in targets:
            stmts.extend(self._assign_each(node, target, held))
        return stmts

    def unpack(
        self, node: ast.stmt, target: ast.Tuple | ast.List, value_node: ast.expr
    ) -> list[ir.Stmt]:
        """``a, b = <two values>``: every value first, then the targets in order."""
        for element in target.elts:
            if isinstance(element, ast.Starred):
                self.src.error(
                    element, "starred unpacking is not supported in kernels", hint=_TARGET_HINT
                )
            if isinstance(element, ast.Tuple | ast.List):
                self.src.error(
                    element, "nested unpacking is not supported in kernels", hint=_TARGET_HINT
                )
        stmts: list[ir.Stmt] = []
        if isinstance(value_node, ast.Tuple | ast.List):
            values = value_node.elts
            for value in values:
                if isinstance(value, ast.Starred):
                    self.src.error(
                        value, "starred values are not supported in kernels", hint=_VALUE_HINT
                    )
            self._check_count(target, len(values))
            held = [self._hold(node, value, stmts) for value in values]
        else:
            held = self._tuple_call(node, target, value_node, stmts)
        for element, value in zip(target.elts, held, strict=True):
            stmts.extend(self._assign_each(node, element, value))
        return stmts

    def _tuple_call(
        self, node: ast.stmt, target: ast.Tuple | ast.List, call: ast.expr, stmts: list[ir.Stmt]
    ) -> list[ast.Name]:
        """``math.modf(x)`` / ``math.frexp(x)``: ``x`` held once, each part read from it."""
        name = (
            self.cx.exprs.math_module_function(call.func)
            if isinstance(call, ast.Call) and not call.keywords
            else None
        )
        if name not in TUPLE_MATH:
            self.src.error(
                call, "only a tuple of values can be unpacked in a kernel", hint=_VALUE_HINT
            )
        assert isinstance(call, ast.Call) and name is not None
        if len(call.args) != 1:
            self.src.error(call, f"math.{name}() takes exactly one argument")
        self._check_count(target, 2)
        value = self.cx.exprs.expr(call.args[0])
        if not value.type.is_float and not value.type.is_integer:
            self.src.error(call.args[0], f"math.{name}() takes a number, not {value.type}")
        argument = self._hold_value(node, value, stmts, call.args[0])
        held = ir.Var(value.type, argument.id)
        ftype = t.float64  # math's functions compute in double, as in Python
        fraction, second = TUPLE_MATH[name]
        parts = [
            ir.Call(ftype, fraction, [held]),
            ir.Call(t.int64 if name == "frexp" else ftype, second, [held]),
        ]
        return [self._hold_value(node, part, stmts, call) for part in parts]

    def _check_count(self, target: ast.Tuple | ast.List, values: int) -> None:
        wanted = len(target.elts)
        if values != wanted:
            amount = "too many" if values > wanted else "not enough"
            self.src.error(
                target,
                f"{amount} values to unpack (expected {wanted}, got {values})",
                hint="Give one name (or view element) per value.",
            )

    def _hold(self, node: ast.stmt, value: ast.expr, stmts: list[ir.Stmt]) -> ast.Name:
        """``value`` evaluated into a new hidden local; a name that reads it."""
        lowered = self.cx.exprs.any_expr(value)
        if isinstance(lowered.type, ir.StructType):
            self.src.error(
                value,
                f"a {lowered.type.name} value cannot be unpacked or chained in a kernel",
                hint="Assign it on a line of its own; to exchange two classtype values, "
                "exchange their fields (`p.x, q.x = q.x, p.x`).",
            )
        return self._hold_value(node, lowered, stmts, value)

    def _hold_value(
        self, node: ast.stmt, value: ir.Expr, stmts: list[ir.Stmt], where: ast.expr
    ) -> ast.Name:
        if not isinstance(value.type, DataType):
            self.src.error(where, "only numbers and booleans can be unpacked or chained")
        held = self.hidden_local(node, value, stmts)
        return ast.copy_location(ast.Name(held.name, ast.Load()), where)

    def hidden_local(self, node: ast.stmt, value: ir.Expr, stmts: list[ir.Stmt]) -> ir.Var:
        """``value`` computed now into a new hidden local (a ``pk_`` name, which debuggers
        do not list), appended to ``stmts``; the local."""
        self.cx.counter += 1
        held = ir.Var(value.type, f"pk_tuple{self.cx.counter}")
        self.cx.locals[held.name] = value.type  # type: ignore[assignment]
        stmts.append(ir.Assign(node.lineno, held, value))
        return held

    def _assign_each(self, node: ast.stmt, target: ast.expr, value: ast.Name) -> list[ir.Stmt]:
        if not isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
            self.src.error(
                target, f"cannot assign to {type(target).__name__} in a kernel", hint=_TARGET_HINT
            )
        lowered = self.cx.stmts.assign(node, target, value, None)
        return lowered if isinstance(lowered, list) else [lowered]
