"""Breakpoint conditions on the rank number alone (``break 30 if rank == 2``): decided
by the front end, which sets the breakpoint only in the ranks where they hold (kernel
lines included, where the program's ``rank`` variable is not in scope)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

#: ``break LOCATION if COND`` or pdb's ``break LOCATION, COND``.
_BREAK = re.compile(
    r"^(?P<word>b|break|tbreak)\s+(?P<where>[^\s,]+)(?:\s*,\s*|\s+if\s+)(?P<cond>.+)$"
)
#: The expression nodes a rank condition may use: arithmetic and comparisons on ``rank``.
_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List, ast.Set,
)  # fmt: skip


def split_rank_break(line: str) -> tuple[str, str, ast.Expression] | None:
    """``(word, location, condition)`` when ``line`` sets a breakpoint whose condition
    uses the name ``rank`` and nothing else the program defines; else None (the line
    goes to the ranks as it is)."""
    match = _BREAK.match(line.strip())
    if match is None:
        return None
    try:
        tree = ast.parse(match["cond"].strip(), mode="eval")
    except SyntaxError:
        return None
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    if names != {"rank"} or not all(isinstance(node, _ALLOWED) for node in ast.walk(tree)):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and not isinstance(node.value, int):
            return None
    return match["word"], match["where"], tree


def ranks_where(condition: ast.Expression, ranks: Iterable[int]) -> list[int]:
    """The ranks for which ``condition`` (from :func:`split_rank_break`) holds."""
    code = compile(condition, "<rank condition>", "eval")
    chosen = []
    for rank in sorted(ranks):
        try:
            if eval(code, {"__builtins__": {}}, {"rank": rank}):  # noqa: S307 - checked AST
                chosen.append(rank)
        except ArithmeticError:
            continue  # rank % 0: holds nowhere
    return chosen
