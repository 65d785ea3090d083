"""Lowering of expressions: literals, names, operators, subscripts, attributes."""

from __future__ import annotations

import ast
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..api import types as t
from ..api.types import DataType
from . import ir
from .builtin_table import (
    MATH_CONSTANTS,
)
from .ir import Expr, StructType
from .lower_context import Lowerer, LoweringContext
from .lower_subviews import flatten_subscript
from .lower_support import (
    BINOPS,
    BIT_OPS,
    CMPOPS,
    OPERATOR_HINT,
    ast_literal_int,
    fold_literals,
    imported_math_constant,
    is_module,
    is_pkernels,
    literal_int,
    literal_result,
    not_in_kernels,
    unsupported_construct,
)
from .typing_rules import (
    is_weak,
    literal_outside,
    promote,
    promote_types,
)


class ExpressionLowerer(Lowerer):
    """Expressions, dispatched on the node's type."""

    def __init__(self, cx: LoweringContext) -> None:
        super().__init__(cx)
        # node type -> handler(node, statement): `statement` is True for a call whose
        # value is not used (the only expressions that may give nothing or a classtype).
        self._handlers: dict[type[ast.expr], Callable[[Any, bool], Expr]] = {
            ast.Constant: self._constant,
            ast.Name: self._name,
            ast.BinOp: self._binary,
            ast.UnaryOp: self._unary,
            ast.BoolOp: self._bool_op,
            ast.Compare: lambda n, _: self._compare(n),
            ast.IfExp: self._if_expression,
            ast.Subscript: self._subscript_value,
            ast.Attribute: lambda n, _: self._attribute(n),
            ast.Call: lambda n, statement: self.cx.calls.call(n, statement),
        }

    def expr(self, node: ast.expr, statement: bool = False) -> Expr:
        """``node`` as a scalar expression (a classtype value only as a statement)."""
        value = self.any_expr(node, statement)
        if isinstance(value.type, StructType) and not statement:
            self.cx.classtypes.struct_misuse(node, value)
        return value

    def any_expr(self, node: ast.expr, statement: bool = False) -> Expr:
        """``node`` lowered (a classtype value included) by the handler of its type; a
        construct kernels lack is an error."""
        handler = self._handlers.get(type(node))
        if handler is None:
            self.src.error(node, *unsupported_construct(node))
        return handler(node, statement)

    def _constant(self, node: ast.Constant, statement: bool) -> Expr:
        v = node.value
        if isinstance(v, bool):
            return ir.Const(t.bool_, v)
        if isinstance(v, int):
            if not -(2**63) <= v < 2**63:
                self.src.error(node, "integer literal does not fit in 64 bits")
            return ir.Const(t.int64, v)
        if isinstance(v, float):
            return ir.Const(t.float64, v)
        if isinstance(v, complex):
            re = "-0.0" if str(v.real) == "-0.0" else repr(v.real)
            self.src.error(
                node,
                f"the complex literal {ast.unparse(node)} in a kernel",
                hint=f"Write pk.complex128({re}, {v.imag!r}): a NumPy complex, as the "
                "kernel's other complex values are (Python's complex divides otherwise).",
            )
        self.src.error(node, *unsupported_construct(node))

    def _name(self, node: ast.Name, statement: bool) -> Expr:
        loaded = self.load_name(node)
        if isinstance(loaded, ir.ViewRef):
            self.src.error(
                node,
                f"view {node.id!r} must be indexed here, e.g. {node.id}[i]",
                hint="Kernels read and write views one element at a time; whole-view "
                "operations belong in the Python code around the dispatch.",
            )
        return loaded

    def _binary(self, node: ast.BinOp, statement: bool) -> Expr:
        symbol = BINOPS.get(type(node.op))
        if symbol is None:
            self.src.error(node, not_in_kernels("operator", node.op), hint=OPERATOR_HINT)
        return self.binop(node, symbol, self.expr(node.left), self.expr(node.right))

    def _unary(self, node: ast.UnaryOp, statement: bool) -> Expr:
        op, operand = node.op, node.operand
        if isinstance(op, ast.Not):
            return ir.UnaryOp(t.bool_, "!", self.expr(operand))
        if isinstance(op, ast.Invert):
            inner = self.expr(operand)
            if not inner.type.is_integer:
                self.src.error(node, "~ needs an integer")
            if isinstance(inner, ir.Const) and inner.weak:  # ~1: the literal -2
                return ir.Const(inner.type, ~int(inner.value))
            return ir.UnaryOp(inner.type, "~", inner)
        folded = ast_literal_int(node)  # - and +
        if folded is not None and -(2**63) <= folded < 2**63:  # -2**63 fits
            return ir.Const(t.int64, folded)
        inner = self.expr(operand)
        if isinstance(inner, ir.Const):  # -(0.5), +(1 + 1): still a literal
            value = -inner.value if isinstance(op, ast.USub) else +inner.value
            return ir.Const(inner.type if inner.type != t.bool_ else t.int64, value)
        rtype = t.int64 if inner.type == t.bool_ else inner.type
        return ir.UnaryOp(rtype, "-" if isinstance(op, ast.USub) else "+", inner)

    def _bool_op(self, node: ast.BoolOp, statement: bool) -> Expr:
        operands = [self.expr(v) for v in node.values]
        # Python's `and`/`or` give an operand, not a bool: `a or b` is a if a else b.
        # The result has the operands' common type (bool when all are bools).
        rtype = operands[0].type
        for operand in operands[1:]:
            if operand.type != rtype:
                rtype = promote_types(rtype, operand.type)
        return ir.BoolOp(rtype, "&&" if isinstance(node.op, ast.And) else "||", operands)

    def _if_expression(self, node: ast.IfExp, statement: bool) -> Expr:
        a, b = self.expr(node.body), self.expr(node.orelse)
        rtype = a.type if a.type == b.type else promote(a, b)
        return ir.Select(rtype, self.expr(node.test), a, b)

    def _subscript_value(self, node: ast.Subscript, statement: bool) -> Expr:
        match node:
            case ast.Subscript(value=ast.Attribute(value=ast.Name(id=owner), attr="shape")):
                if not self.cx.slices.is_view_name(owner):
                    self.src.error(node, f"{owner!r} is not a view")
                return self.cx.calls.extent(node, owner, [node.slice])
        return self.subscript(node)

    def load_name(self, node: ast.Name) -> Expr | ir.ViewRef:
        name = node.id
        if name in self.cx.subviews:
            self.src.error(
                node,
                f"subview {name!r} must be indexed here, e.g. {name}[i]",
                hint="A helper takes whole views: pass the view and the indices of the part.",
            )
        if name in self.cx.views:
            return ir.ViewRef(name, self.cx.views[name])
        if name in self.cx.locals:
            return ir.Var(self.cx.locals[name], name)
        outer = self.cx.teams.outer_name(name)
        if outer is not None:
            return ir.Var(outer, name)
        if name in self.cx.params:
            ptype = self.cx.params[name].type
            if isinstance(ptype, ir.TeamType):
                self.src.error(
                    node,
                    f"the team member {name!r} is only used through its methods",
                    hint=f"e.g. {name}.league_rank(), {name}.team_rank(), {name}.team_barrier(). "
                    "(A TeamPolicy passes the team member first: a workunit written for an "
                    "index runs over a RangePolicy.)",
                )
            assert isinstance(ptype, DataType | StructType)
            return ir.Var(ptype, name)  # type: ignore[arg-type]  # a classtype value too
        value = self.src.lookup(name, getattr(__builtins__, name, None))
        constant = imported_math_constant(value) if self.src.defines(name) else None
        if constant is not None:
            return ir.Const(t.float64, MATH_CONSTANTS[constant])
        if self.src.defines(name) and isinstance(value, bool | int | float):
            whose = "a variable of its enclosing function" if name in self.src.closure else None
            self.src.error(
                node,
                f"kernel reads {name!r}, {whose}"
                if whose
                else f"kernel reads the global variable {name!r}",
                hint=f"Pass it as a keyword argument of the dispatch: `{name}={name}`, and add "
                f"a `{name}` parameter to the kernel.",
            )
        self.src.error(
            node,
            f"name {name!r} is not defined in the kernel",
            hint="Kernels see their parameters and locals; pass other values as keyword "
            "arguments of the dispatch.",
        )

    def binop(self, node: ast.AST, op: str, left: Expr, right: Expr) -> Expr:
        for operand in (left, right):
            if isinstance(operand, ir.ViewRef):
                self.src.error(node, "views cannot be used in arithmetic; index them")
            if isinstance(operand.type, StructType):
                self.cx.classtypes.struct_misuse(node, operand)
        self._check_literal_arithmetic(node, op, left, right)
        self._check_literal_fits(node, left, right)
        folded = fold_literals(op, left, right)
        if folded is not None:
            return folded
        if left.type.is_complex or right.type.is_complex:
            return self._complex_binop(node, op, left, right)
        if op == "/":
            # Ints divide in float64 (Python's true division); with a float operand, the
            # type `*` takes (NumPy's: float32 / int16 is float32, float32 / int32 float64).
            rtype = promote(left, right) if left.type.is_float or right.type.is_float else t.float64
            return ir.BinOp(rtype, op, left, right)
        if op in BIT_OPS:
            if left.type.is_float or right.type.is_float:
                self.src.error(node, f"`{op}` needs integers")
            rtype = promote(left, right)
            if rtype.is_float:
                self.src.error(
                    node,
                    f"`{op}` of {left.type.name} and {right.type.name}: no integer type holds "
                    "the values of both",
                    hint="Convert one operand first: int(...) for int64.",
                )
            if left.type == right.type == t.bool_ and op in ("&", "|", "^"):
                rtype = t.bool_
            return ir.BinOp(rtype, op, left, right)
        rtype = promote(left, right)
        exponent = literal_int(right)
        if op == "**" and rtype.is_integer and exponent is not None and exponent < 0:
            rtype = t.float64  # Python: 2 ** -1 == 0.5
        return ir.BinOp(rtype, op, left, right)

    def _complex_binop(self, node: ast.AST, op: str, left: Expr, right: Expr) -> Expr:
        """``+ - * /`` with a complex operand, in NumPy's complex type of both (a real
        operand is the complex number with imaginary part 0, as NumPy converts it)."""
        if op not in ("+", "-", "*", "/"):
            hints = {
                "**": "Multiply it out (z * z), or compute the power on the host (NumPy).",
                "//": "Complex numbers have no floor division (NumPy refuses it too).",
                "%": "Complex numbers have no remainder (NumPy refuses it too).",
            }
            self.src.error(
                node,
                f"`{op}` of a complex number is not supported in kernels",
                hint=hints.get(op, "Bit operations need integers."),
            )
        return ir.BinOp(promote(left, right), op, left, right)

    def _check_literal_fits(self, node: ast.AST, left: Expr, right: Expr) -> None:
        """An int literal next to a narrower integer (``u8[i] + 300``) takes that type, as
        in NumPy, which raises OverflowError when the literal does not fit; C++ would wrap
        it into another number without a word."""
        for literal, typed in ((left, right), (right, left)):
            if is_weak(typed):
                continue
            value = literal_outside(literal, typed.type)
            if value is not None:
                self.src.error(
                    node,
                    f"{value} does not fit in {typed.type.name}, the type of the other operand "
                    f"of {ast.unparse(node)}",
                    hint=f"NumPy raises OverflowError here (C++ would wrap the literal). To "
                    f"compute in int64, convert the {typed.type.name} value first: int(...).",
                )

    def _check_literal_arithmetic(self, node: ast.AST, op: str, left: Expr, right: Expr) -> None:
        """Integer arithmetic of literals (``2**70``, ``10**20 // 3``) whose Python value
        an int64 cannot hold, or that Python refuses (``1 // 0``): C++ would give another
        number without a word."""
        a, b = literal_int(left), literal_int(right)
        if a is None or b is None:
            return
        written = ast.unparse(node) if isinstance(node, ast.expr) else f"{a} {op} {b}"
        if op in ("//", "%") and b == 0:
            self.src.error(
                node,
                f"{written} divides by zero",
                hint="Python raises ZeroDivisionError here; C++ would give any number.",
            )
        if op in ("<<", ">>") and b < 0:
            self.src.error(
                node,
                f"{written} shifts by a negative count",
                hint="Python raises ValueError here; C++ would give any number.",
            )
        value = literal_result(op, a, b)
        if value is not None and not -(2**63) <= value < 2**63:
            shown = f" is {value}, which" if abs(value) < 10**30 else ""  # else a stand-in
            self.src.error(
                node,
                f"{written}{shown} does not fit in a kernel's 64-bit integers",
                hint="Use a float (e.g. 2.0**70) if an approximate value will do.",
            )

    def _compare(self, node: ast.Compare) -> Expr:
        left = self.expr(node.left)
        parts: list[Expr] = []
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            symbol = CMPOPS.get(type(op))
            if symbol is None:
                self.src.error(
                    node,
                    not_in_kernels("comparison", op),
                    hint="Kernels compare numbers with < <= > >= == !=.",
                )
            right = self.expr(comparator)
            if symbol not in ("==", "!=") and (left.type.is_complex or right.type.is_complex):
                self.src.error(
                    node,
                    f"`{symbol}` of a complex number: complex numbers are not ordered",
                    hint="Compare their magnitudes, abs(z) < abs(w), or their parts, "
                    "z.real < w.real.",
                )
            parts.append(ir.Compare(t.bool_, symbol, left, right))
            left = right
        return parts[0] if len(parts) == 1 else ir.BoolOp(t.bool_, "&&", parts)

    def subscript(self, node: ast.Subscript) -> ir.ViewAccess:
        base, index_nodes = flatten_subscript(node)
        if isinstance(base, ast.Name) and base.id in self.cx.subviews:
            return self.cx.slices.subview_access(node, base.id, index_nodes)
        if not isinstance(base, ast.Name) or base.id not in self.cx.views:
            self.src.error(
                base,
                "only views can be indexed in kernels",
                hint="Index a view passed as a keyword argument of the dispatch, e.g. x[i].",
            )
        view = self.cx.views[base.id]
        for idx in index_nodes:
            if isinstance(idx, ast.Slice):
                self.src.error(
                    idx,
                    "a slice of a view here: assign the subview to a name first",
                    hint=f"Write `part = {ast.unparse(node)}`, then index `part[i]`.",
                )
        if len(index_nodes) != view.rank:
            self.src.error(
                node,
                f"view {base.id!r} has rank {view.rank} but is indexed with "
                f"{len(index_nodes)} indices",
                hint=f"Index all {view.rank} axes: {base.id}[{', '.join('ijkl'[: view.rank])}].",
            )
        indices = [self.view_index(idx) for idx in index_nodes]
        return ir.ViewAccess(view.dtype, ir.ViewRef(base.id, view), indices, node.lineno)

    def view_index(self, node: ast.expr, slice_bound: bool = False) -> Expr:
        """An index of a view or subview axis: an integer (or bool) expression (or a
        slice's bound, which may be negative: Python's slice rules apply)."""
        lowered = self.expr(node)
        literal = literal_int(lowered)
        if literal is not None and literal < 0 and not slice_bound:
            # Python would count from the end; a Kokkos view reads before its first element.
            self.src.error(
                node,
                f"the index {ast.unparse(node)} is negative: kernel views do not count from "
                "the end",
                hint="Write the position from the start, e.g. v[v.extent(0) - 1] for the last "
                "element.",
            )
        if not (lowered.type.is_integer or lowered.type == t.bool_):
            self.src.error(
                node,
                f"view indices must be integers, this is {lowered.type.name}",
                hint="Convert with int(...).",
            )
        return lowered

    def _attribute(self, node: ast.Attribute) -> Expr:
        base = self.cx.classtypes.struct_base(node.value)
        if base is not None:
            return self.cx.classtypes.field_access(node, base)
        if isinstance(node.value, ast.Name):
            module = self.src.lookup(node.value.id)
            if is_module(module, "math") or is_pkernels(module):
                if node.attr in MATH_CONSTANTS:
                    return ir.Const(t.float64, MATH_CONSTANTS[node.attr])
            if node.value.id in self.cx.views and node.attr == "shape":
                self.src.error(node, "use v.shape[k] with a literal axis, or len(v)")
            self.cx.classtypes.refuse_fields_of_a_number(node)
        if node.attr in ("real", "imag") and not self._names_module(node.value):
            return self._complex_part(node)
        self.src.error(
            node,
            f"unsupported attribute {ast.unparse(node)!r} in a kernel",
            hint="Kernels may use math.pi, math.e and pk.* / math.* functions.",
        )

    def _names_module(self, node: ast.expr) -> bool:
        """Whether ``node`` is a name of a module (``math.real`` is no complex part)."""
        if not isinstance(node, ast.Name) or node.id in self.cx.locals:
            return False
        return isinstance(self.src.lookup(node.id), ModuleType)

    def _complex_part(self, node: ast.Attribute) -> Expr:
        """``z.real``, ``z.imag`` of a complex number (a property, as on NumPy's complex
        and PyKokkos' pk.complex128); ``x.real`` of a real number is ``x``."""
        value = self.expr(node.value)
        if value.type.is_complex:
            func = "creal" if node.attr == "real" else "cimag"
            return ir.Call(t.real_part_type(value.type), func, [value])
        if node.attr == "real" and not isinstance(value, ir.Const):
            return ir.Cast(t.int64, value) if value.type == t.bool_ else value
        self.src.error(
            node,
            f"{ast.unparse(node)} of a real number ({value.type.name}) in a kernel",
            hint="A real number's imaginary part is 0; .real and .imag are for complex "
            "values (complex64/complex128 views, pk.complex128(re, im)).",
        )

    def math_module_function(self, func: ast.expr) -> str | None:
        """The name of the math-module function ``func`` refers to (``math.modf`` or a
        ``modf`` imported from math), else None."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id not in self.cx.locals and is_module(
                self.src.lookup(func.value.id), "math"
            ):
                return func.attr
        if isinstance(func, ast.Name) and func.id not in self.cx.locals:
            target = self.src.lookup(func.id)
            if callable(target) and getattr(target, "__module__", "") == "math":
                return str(target.__name__)
        return None

    def is_pk_attr(self, func: ast.expr, name: str) -> bool:
        return (
            isinstance(func, ast.Attribute)
            and func.attr == name
            and isinstance(func.value, ast.Name)
            and is_pkernels(self.src.lookup(func.value.id))
        )
