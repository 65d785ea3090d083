"""Tables, messages and name tests the feature lowerers share."""

from __future__ import annotations

import ast
import builtins
import functools
import math
import operator
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api import kernel_builtins
from ..api import types as t
from ..api.classtypes import is_classtype
from ..api.decorators import marker_of
from ..api.types import C_TYPE_NAMES, DataType, ViewAnnotation
from . import ir
from .builtin_table import (
    MATH_CONSTANTS,
)
from .ir import Expr, StructType

BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
# Annotations are evaluated under another file name: a debugger's breakpoint on the
# kernel's own line must not fire while the translator reads its annotation.
ANNOTATION_FILENAME = "<pkernels annotation>"
BIT_OPS = {"&", "|", "^", "<<", ">>"}

UNSUPPORTED_HINTS: dict[type, str] = {
    ast.ListComp: "Write an explicit `for i in range(...)` loop instead.",
    ast.List: "Kernels have no lists; use a view passed as a keyword argument.",
    ast.Dict: "Kernels have no dicts; pass views and scalars as keyword arguments.",
    ast.Lambda: "Define a `@pk.function` helper instead.",
    ast.With: "Kernels have no context managers.",
    ast.Try: "Kernels cannot raise or catch exceptions; debug builds check view bounds.",
    ast.Raise: "Kernels cannot raise; use pk.printf to report, or a debug build.",
    ast.Global: "Pass the value as a keyword argument of the dispatch.",
    ast.Nonlocal: "Pass the value as a keyword argument of the dispatch.",
    ast.Import: "Import modules at the top of the file; kernels may use `math.*` and `pk.*`.",
    ast.ImportFrom: "Import at the top of the file; kernels may use `math.*` and `pk.*`.",
    ast.Delete: "Kernels cannot delete variables.",
    ast.Assert: "Kernels have no assert; debug builds check view bounds for you.",
    ast.JoinedStr: 'Kernels print f-strings: print(f"x={x:.3f}"); elsewhere they have no text.',
    ast.NamedExpr: "Assign the value on a line of its own first.",
    ast.Tuple: "Use one variable per value, or a view.",
    ast.Set: "Kernels have no sets; use a view passed as a keyword argument.",
    ast.SetComp: "Write an explicit `for i in range(...)` loop instead.",
    ast.DictComp: "Write an explicit `for i in range(...)` loop instead.",
    ast.GeneratorExp: "Write an explicit `for i in range(...)` loop that adds up the values.",
    ast.Starred: "Pass each value as its own argument.",
    ast.Yield: "A workunit writes its results into views (or an accumulator).",
    ast.YieldFrom: "A workunit writes its results into views (or an accumulator).",
    ast.Await: "Kernels run synchronously; await in the Python code around the dispatch.",
    ast.ClassDef: "Define classes at module level; kernels may use @pk.classtype objects.",
    ast.Match: "Use if/elif/else.",
    ast.AsyncFor: "Use a plain `for i in range(...)` loop.",
    ast.AsyncWith: "Kernels have no context managers.",
}

# What the construct is, for the message (the AST's class name says little to users).
CONSTRUCT_NAMES: dict[type, str] = {
    ast.ListComp: "a list comprehension", ast.List: "a list", ast.Dict: "a dict",
    ast.Lambda: "a lambda", ast.With: "a with statement", ast.Try: "try/except",
    ast.Raise: "raise", ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Import: "import",
    ast.ImportFrom: "import", ast.Delete: "del", ast.Assert: "assert",
    ast.JoinedStr: "an f-string outside print()", ast.NamedExpr: "an assignment expression (:=)",
    ast.Tuple: "a tuple", ast.Set: "a set", ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension", ast.GeneratorExp: "a generator expression",
    ast.Starred: "* unpacking", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.Await: "await", ast.ClassDef: "a class definition", ast.Match: "a match statement",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with",
    ast.AsyncFunctionDef: "an async function",
}  # fmt: skip

# Constants that are not numbers: what they are, and what to write instead.
CONSTANT_NAMES: dict[type, tuple[str, str]] = {
    str: ("text (a str)", "Kernels compute with numbers; text goes in print(...) or pk.printf."),
    bytes: ("bytes", "Kernels compute with numbers; pass bytes as a uint8 view."),
    type(None): ("None", "Give the variable a number where it starts, e.g. `x: float = 0`."),
    complex: (
        "a complex number",
        "Keep the real and imaginary parts in two float variables (or views).",
    ),
    type(...): ("...", "Write `pass` for an empty block."),
}


def unsupported_construct(node: ast.AST) -> tuple[str, str]:
    """The message and hint for a construct kernels do not have."""
    if isinstance(node, ast.Constant) and type(node.value) in CONSTANT_NAMES:
        what, hint = CONSTANT_NAMES[type(node.value)]
        return f"{what} cannot be a value in a kernel", hint
    if isinstance(node, ast.Expr):  # a statement of one expression: name the expression
        node = node.value
    what = CONSTRUCT_NAMES.get(type(node), type(node).__name__)
    return f"{what} is not supported in kernels", UNSUPPORTED_HINTS.get(type(node), "")


NESTED_CALL_HINT = (
    "Call it on its own line: `pk.parallel_for(pk.TeamThreadRange(team_member, n), body)`."
)
PY_BUILTINS = {"len", "int", "float", "bool", "abs", "min", "max", "round", "pow"}

CALL_HINT = (
    "Kernels can call @pk.function helpers, math.* / pk.* functions, abs, min, max, round, "
    "pow, int, float, bool and len, and v.extent(k) on views."
)
LOOP_ELSE_HINT = "Set a flag before `break` and test it after the loop."
ASSIGN_HINT = "Assign to a local name or to a view element, e.g. `out[i] = value`."
OPERATOR_HINT = "Kernels have + - * / // % ** & | ^ << >> and the unary - + ~ not."
# Operators kernels lack, as written in Python.
OPERATOR_SYMBOLS: dict[type, str] = {
    ast.MatMult: "@", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip


HUGE = 10**40  # stands for a literal result too large to compute (past int64 anyway)


def ast_literal_int(node: ast.expr) -> int | None:
    """The Python value of integer literal arithmetic as written (``-2**63``), else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd | ast.Invert):
        inner = ast_literal_int(node.operand)
        if inner is None:
            return None
        return (
            -inner
            if isinstance(node.op, ast.USub)
            else ~inner
            if isinstance(node.op, ast.Invert)
            else inner
        )
    if isinstance(node, ast.BinOp):
        symbol = BINOPS.get(type(node.op))
        a, b = ast_literal_int(node.left), ast_literal_int(node.right)
        if symbol is None or a is None or b is None:
            return None
        return literal_result(symbol, a, b)
    return None


def literal_int(e: Expr) -> int | None:
    """The Python value of an integer expression made of literals only, else None."""
    if isinstance(e, ir.Const):
        return e.value if type(e.value) is int else None
    if isinstance(e, ir.UnaryOp) and e.op in ("-", "+", "~"):
        inner = literal_int(e.operand)
        if inner is None:
            return None
        return {"-": -inner, "+": inner, "~": ~inner}[e.op]
    if isinstance(e, ir.BinOp):
        a, b = literal_int(e.left), literal_int(e.right)
        if a is None or b is None:
            return None
        return literal_result(e.op, a, b)
    return None


PY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}  # fmt: skip


def fold_literals(op: str, left: Expr, right: Expr) -> ir.Const | None:
    """``left op right`` of two number literals as the literal Python computes (``1 + 1``
    is the Python int 2, ``0.5 * 2`` the float 1.0): it stays weak, taking the type of a
    typed operand as NumPy 2 lets a Python scalar (``v8[i] + (1 + 1)`` is an int8, as in
    the Debug space). None when not both are number literals, or Python would raise or
    give another kind of number (a complex); the callers have refused what an int64
    cannot hold or Python refuses (``1 // 0``, ``2**70``) already."""
    if not (isinstance(left, ir.Const) and isinstance(right, ir.Const)):
        return None
    if not (left.weak and right.weak):  # a bool's type is its own, as in this translator
        return None
    try:
        value = PY_OPERATORS[op](left.value, right.value)
    except (ArithmeticError, ValueError, TypeError):  # 1.0 / 0, 10.0 ** 400, 1.5 & 1
        return None
    if type(value) is int and -(2**63) <= value < 2**63:
        return ir.Const(t.int64, value)
    if type(value) is float:
        return ir.Const(t.float64, value)
    return None


def literal_result(op: str, a: int, b: int) -> int | None:
    """``a op b`` as Python computes it, for integer results (None: a float, or not an
    integer operation). Huge powers and shifts are not built: :data:`HUGE` stands in."""
    if op in ("//", "%") and b == 0 or op in ("<<", ">>") and b < 0:
        return None
    if op == "**":
        if b < 0:
            return None  # a float in Python
        if abs(a) > 1 and b * a.bit_length() > 10_000:
            return HUGE * (-1 if a < 0 and b % 2 else 1)
        return int(a**b)
    if op == "<<" and a != 0 and b > 10_000:
        return HUGE * (-1 if a < 0 else 1)
    compute = PY_OPERATORS.get(op) if op != "/" else None  # `/` gives a float
    return compute(a, b) if compute is not None else None


def not_in_kernels(what: str, op: ast.AST) -> str:
    """The message for an operator kernels lack, as Python spells it."""
    symbol = OPERATOR_SYMBOLS.get(type(op), type(op).__name__)
    return f"the {what} `{symbol}` is not supported in kernels"


def is_plain_helper(target: object, module_globals: dict[str, Any]) -> bool:
    """An undecorated Python function (not a lambda) defined in the kernel's module."""
    return (
        isinstance(target, types.FunctionType)
        and target.__globals__ is module_globals
        and target.__name__ != "<lambda>"
        and marker_of(target) is None
        and not is_classtype(target)
    )


@functools.cache
def pk_builtin_names() -> dict[int, str]:

    return {id(value): name for name, value in vars(kernel_builtins).items() if callable(value)}


def pk_builtin_name(function: Any) -> str:
    """The ``pk.`` name of a kernel builtin imported bare (``from pkernels import
    tgamma``): its own ``__name__`` may differ (math.gamma, a wrapper)."""
    return pk_builtin_names().get(id(function), getattr(function, "__name__", ""))


def type_name(tp: object) -> str:
    """``tp`` as error messages name types: float64, View1D[float64], Particle."""
    if isinstance(tp, DataType | StructType):
        return tp.name
    if isinstance(tp, ViewAnnotation):
        return tp.name
    return str(tp)


class AnnotationScope(dict[str, Any]):
    """What an annotation's names mean: the kernel's closure, its module's globals and
    Python's builtins, then C type names none of them define (``double``: PyKokkos' C++
    reads ``pk.ScratchView1D[double]``)."""

    def __init__(self, closure: dict[str, Any], module_globals: dict[str, Any]) -> None:
        super().__init__(closure)
        self._globals = module_globals

    def __missing__(self, name: str) -> Any:
        if name in self._globals or hasattr(builtins, name) or name not in C_TYPE_NAMES:
            raise KeyError(name)
        return C_TYPE_NAMES[name]


def is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def is_module(obj: object, name: str) -> bool:
    return getattr(obj, "__name__", None) == name and type(obj).__name__ == "module"


def imported_math_constant(value: object) -> str | None:
    """Which of math's constants ``value`` is, when a global is one imported by name
    (``from math import pi``, ``from numpy import inf``), else None.

    Identity, not equality: ``pi = 3.141592653589793`` typed in is a global variable like
    any other, which the kernel is told to take as an argument."""
    if not isinstance(value, float):
        return None
    for name in MATH_CONSTANTS:
        if any(value is getattr(module, name, None) for module in (math, np)):
            return name
    return None


def is_pkernels(obj: object) -> bool:
    """Whether ``obj`` is pkernels, or a module re-exporting its kernel API (a package
    named ``pykokkos`` doing ``from pkernels import *``): ``pk.atomic_add`` through it is
    pkernels' own."""
    if type(obj).__name__ != "module":
        return False
    if getattr(obj, "__name__", "") == "pkernels":
        return True
    pkernels = sys.modules.get("pkernels")
    return pkernels is not None and any(
        getattr(obj, name, None) is getattr(pkernels, name) for name in PKERNELS_MARKS
    )


# Names a module re-exporting pkernels has as pkernels' own objects.
PKERNELS_MARKS = ("workunit", "parallel_for", "atomic_add", "View")


RESERVED_NAMES = {"math", "pk", "range", "print"}
# pk.* element functions of NumPy and Kokkos lowered to the IR's operations.
