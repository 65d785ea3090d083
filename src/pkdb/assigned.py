"""Which local variables of a kernel function cannot have a value yet at a line.

Debug builds declare every local of a workunit or ``@pk.function`` at the top of the
generated C++ function (under the ``def`` line's ``#line``), so gdb shows each one, with
its zero initial value, from the function's entry on -- where Python would have no such
variable yet. Read from the Python source: a local is not yet assigned when a line
starts if every statement that binds it is at that line or after it, and no loop holds
both that statement and the line (an earlier iteration may have run it). Anything less
certain counts as assigned: the variable is shown as before.
"""

from __future__ import annotations

import ast
import linecache
from functools import lru_cache

#: Statements whose body runs again: a name they bind further down may hold a value
#: from an earlier pass.
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Nested scopes: their names are not the function's (comprehensions, lambdas), or share
#: the kernel's frame in ways this module does not follow (nested defs): never hidden.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)  # fmt: skip


def unassigned_locals(file: str, line: int) -> frozenset[str]:
    """The locals of the function around ``file:line`` that no statement can have
    assigned when ``line`` starts (the function's parameters never are)."""
    source = "".join(linecache.getlines(file))
    return _unassigned(source, line) if source else frozenset()


@lru_cache(maxsize=256)
def _unassigned(source: str, line: int) -> frozenset[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    function = _function_at(tree, line)
    if function is None:
        return frozenset()
    bindings: dict[str, list[int]] = {}  # name -> lines of the statements binding it
    loops: list[tuple[int, int]] = []  # (first, last) line of each loop
    shared: set[str] = set()  # names bound in nested scopes
    _collect(function.body, bindings, loops, shared)
    parameters = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    return frozenset(
        name
        for name, lines in bindings.items()
        if name not in parameters
        and name not in shared
        and all(b >= line and not _in_one_loop(b, line, loops) for b in lines)
    )


def _function_at(tree: ast.Module, line: int) -> ast.FunctionDef | None:
    """The function whose lines (``def`` to end) hold ``line``, if it is not nested in
    another function (a nested def's body shares its kernel's frame: left alone)."""
    found = None
    enclosing = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                enclosing += 1
                if found is None or node.lineno >= found.lineno:
                    found = node
    return found if enclosing == 1 else None


def _collect(
    statements: list[ast.stmt],
    bindings: dict[str, list[int]],
    loops: list[tuple[int, int]],
    shared: set[str],
) -> None:
    for statement in statements:
        if isinstance(statement, _SCOPES):
            shared.update(_stored_names(statement))
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bindings.setdefault(statement.name, []).append(statement.lineno)
            continue
        if isinstance(statement, _LOOPS):
            loops.append((statement.lineno, statement.end_lineno or statement.lineno))
        for name in _bound_here(statement, shared):
            bindings.setdefault(name, []).append(statement.lineno)
        for field in ("body", "orelse", "finalbody"):
            _collect(getattr(statement, field, []), bindings, loops, shared)
        for handler in getattr(statement, "handlers", []):
            if handler.name:
                bindings.setdefault(handler.name, []).append(handler.lineno)
            _collect(handler.body, bindings, loops, shared)
        for case in getattr(statement, "cases", []):
            shared.update(_stored_names(case.pattern))  # match captures: not followed
            _collect(case.body, bindings, loops, shared)


def _bound_here(statement: ast.stmt, shared: set[str]) -> set[str]:
    """Names the statement itself binds (not its nested blocks)."""
    if isinstance(statement, ast.AnnAssign) and statement.value is None:
        return set()  # `x: float` alone declares, assigns nothing
    header: list[ast.AST] = []
    if isinstance(statement, ast.For | ast.AsyncFor):
        header = [statement.target, statement.iter]
    elif isinstance(statement, ast.While | ast.If):
        header = [statement.test]
    elif isinstance(statement, ast.With | ast.AsyncWith):
        header = list(statement.items)
    elif isinstance(statement, ast.Try | ast.Match):
        header = [statement.subject] if isinstance(statement, ast.Match) else []
    else:
        header = [statement]
    names: set[str] = set()
    for part in header:
        for node in ast.walk(part):
            if isinstance(node, _SCOPES):
                shared.update(_stored_names(node))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
    return names - shared


def _stored_names(node: ast.AST) -> set[str]:
    names = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            names.add(inner.id)
        elif isinstance(inner, ast.MatchAs | ast.MatchStar) and inner.name:
            names.add(inner.name)
    return names


def _in_one_loop(first: int, second: int, loops: list[tuple[int, int]]) -> bool:
    return any(a <= first <= b and a <= second <= b for a, b in loops)


#: What the front end sends the agent for a kernel variable not assigned yet (JSON).
_MARKER = "__pk_not_yet_assigned__"


def marker() -> dict[str, bool]:
    """The stand-in for a variable :func:`unassigned_locals` names."""
    return {_MARKER: True}


def is_marker(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {_MARKER}
