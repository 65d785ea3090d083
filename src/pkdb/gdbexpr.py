"""Python expressions <-> what gdb understands about a stopped kernel.

Kernel breakpoint conditions are written in Python (``j == 10 and y_view[j] > 0``);
gdb evaluates C. :func:`python_to_c` rewrites the subset that conditions use (names,
numbers, arithmetic, comparisons, ``and/or/not``, view indexing, a team member's
``league_rank()``/``league_size()``/``team_rank()``/``team_size()``) into C over the
generated code's variables (a view ``v`` is a ``pk_rt::View`` struct with ``data``,
``extent`` and ``stride``; a team member a ``pk_rt::TeamMember`` with those fields).
:func:`parse_gdb_value` turns gdb's text for a scalar back into a Python value.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .teams import TEAM_FIELDS

_C_BINOPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}  # fmt: skip
_C_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class ConditionError(ValueError):
    """A condition uses Python that has no C equivalent in a kernel."""


def python_to_c(
    expr: str, views: dict[str, int] | None = None, team_member: str | None = None
) -> str:
    """C text for the Python expression ``expr``; ``views`` maps view names to ranks;
    ``team_member`` is a TeamPolicy workunit's team member parameter."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConditionError(f"invalid condition {expr!r}: {exc.msg}") from None
    return _to_c(tree.body, _Names(views or {}, team_member))


@dataclass(frozen=True)
class _Names:
    """What the names of a condition are: views (name -> rank), the team member."""

    views: dict[str, int]
    team_member: str | None = None


def _to_c(node: ast.expr, names: _Names) -> str:
    views = names.views
    match node:
        case ast.Call(
            func=ast.Attribute(value=ast.Name(id=owner), attr=attr), args=[], keywords=[]
        ) if owner == names.team_member and attr in TEAM_FIELDS:
            return f"{owner}.{attr}"
        case ast.Name(id=name) if name == names.team_member:
            raise ConditionError(
                f"use the team member's methods in a condition, e.g. {name}.league_rank()"
            )
        case ast.Constant(value=bool() as v):
            return "1" if v else "0"
        case ast.Constant(value=int() | float() as v):
            return repr(v)
        case ast.Name(id=name):
            if name in views:
                raise ConditionError(f"view {name!r} must be indexed in a condition")
            return name
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _C_BINOPS:
            return f"({_to_c(left, names)} {_C_BINOPS[type(op)]} {_to_c(right, names)})"
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return f"(!{_to_c(operand, names)})"
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return f"(-{_to_c(operand, names)})"
        case ast.BoolOp(op=op, values=values):
            joiner = " && " if isinstance(op, ast.And) else " || "
            return "(" + joiner.join(_to_c(v, names) for v in values) + ")"
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            parts = []
            for op, right in zip(ops, comparators, strict=True):
                if type(op) not in _C_CMPOPS:
                    raise ConditionError(f"unsupported comparison {type(op).__name__}")
                parts.append(f"({_to_c(left, names)} {_C_CMPOPS[type(op)]} {_to_c(right, names)})")
                left = right
            return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
        case ast.Subscript():
            return _view_element(node, names)
    raise ConditionError(f"unsupported in a kernel condition: {ast.unparse(node)!r}")


def _view_element(node: ast.Subscript, names: _Names) -> str:
    # The translator's own reading of A[i][j, k] (loaded on first use, as cpp_name is).
    from pkernels.translate.lower_subviews import flatten_subscript

    views = names.views
    base, indices = flatten_subscript(node)
    if not isinstance(base, ast.Name) or base.id not in views:
        raise ConditionError(f"only views can be indexed: {ast.unparse(node)!r}")
    if len(indices) != views[base.id]:
        raise ConditionError(f"{base.id} needs {views[base.id]} indices in a condition")
    name = base.id
    offset = " + ".join(f"({_to_c(i, names)}) * {name}.stride[{k}]" for k, i in enumerate(indices))
    return f"{name}.data[{offset}]"


_REFERENCE = re.compile(r"^@0x[0-9a-f]+: (?P<value>.*)$")


def parse_gdb_value(text: str) -> object:
    """A Python value for gdb's rendering of a scalar (``10``, ``0.5``, ``true``, ``@0x..: 3``).

    Anything that is not a plain number or bool is returned as the text itself. gdb
    prints a float's integral value without its ``.0`` (``2``), and a negative zero as
    ``-0``, which no integer is: that one is the float -0.0, its sign kept.
    """
    text = text.strip()
    ref = _REFERENCE.match(text)
    if ref:
        text = ref.group("value")
    if text in ("true", "false"):
        return text == "true"
    # char-typed values render as `65 'A'`
    char = re.match(r"^(-?\d+) '.*'$", text)
    if char:
        return int(char.group(1))
    if text == "-0":
        return -0.0
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    lowered = text.lower()
    if lowered in ("inf", "-inf", "nan", "-nan", "nan(0x8000000000000)", "-nan(0x8000000000000)"):
        return float(lowered.split("(")[0].replace("-nan", "nan"))
    return text
