"""Control-flow checks of a kernel's Python, before it is lowered.

A compiled kernel declares its locals at the top of the C++ function and a helper of a
non-void type may run off its end: both read whatever is in memory where Python raises
(UnboundLocalError) or returns None. So a local read on a path that did not assign it,
and a helper that returns a value on some paths but can reach its end, are refused.

The analysis is Python's own rule, path by path: a loop body may run zero times, a
`break`, `continue` or `return` ends its path. Constructs kernels lack (try, with,
comprehensions ...) end the analysis silently; the lowering reports them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .source import KernelSource

_State = frozenset[str] | None  # the names assigned on every path so far; None: unreachable

# Statements the analysis understands; any other stops it (the lowering refuses them).
_SIMPLE = (ast.Pass, ast.Expr, ast.Nonlocal)
_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_STOPS = (*_OWN_SCOPES, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


class _Stop(Exception):
    """A construct the analysis leaves to the lowering, which refuses it."""


def check_assigned_before_read(src: KernelSource, tree: ast.FunctionDef) -> None:
    """Refuse (TranslationError at the read) a local of ``tree`` that is read where a
    path reaching the read has not assigned it."""
    try:
        _Scope(src, tree).run()
    except _Stop:
        pass


def missing_return(body: list[ast.stmt]) -> tuple[ast.stmt, str] | None:
    """Where ``body`` can reach its end without a ``return``: the statement control
    leaves it by, and which path that is (None when every path returns)."""
    if not body:
        return None
    for stmt in body:
        if _always_leaves(stmt):
            return None
    return _falls_out_of(body[-1])


def _falls_out_of(stmt: ast.stmt) -> tuple[ast.stmt, str]:
    """The innermost statement through which control gets past ``stmt``, and how."""
    match stmt:
        case ast.If(body=body, orelse=orelse):
            condition = f"the condition on line {stmt.lineno}"
            inner = missing_return(body)
            if inner is not None:
                return inner[0], _and(f"when {condition} is true", inner[1])
            if not orelse:
                return stmt, f"when {condition} is false (there is no else)"
            inner = missing_return(orelse)
            assert inner is not None  # else the if would always leave
            return inner[0], _and(f"when {condition} is false", inner[1])
        case ast.For():
            return stmt, f"after the for loop on line {stmt.lineno} (it may run zero times)"
        case ast.While():
            return stmt, f"after the while loop on line {stmt.lineno} ends"
    return stmt, f"after line {stmt.end_lineno or stmt.lineno}"


def _and(outer: str, inner: str) -> str:
    """Two conditions of one path: "when A is true" and "when B is false" read as
    "when A is true and B is false"."""
    return f"{outer} and {inner.removeprefix('when ')}"


def _always_leaves(stmt: ast.stmt) -> bool:
    """Whether every path through ``stmt`` returns (an endless loop never falls out)."""
    match stmt:
        case ast.Return():
            return True
        case ast.If(test=test, body=body, orelse=orelse):
            truth = _constant_truth(test)
            if truth is True:
                return _block_leaves(body)
            if truth is False:
                return _block_leaves(orelse)
            return _block_leaves(body) and _block_leaves(orelse)
        case ast.While(test=test, body=body):
            return _constant_truth(test) is True and not _breaks(body)
    return False


def _block_leaves(body: list[ast.stmt]) -> bool:
    return any(_always_leaves(stmt) for stmt in body)


def _breaks(body: list[ast.stmt]) -> bool:
    """Whether a ``break`` in ``body`` ends the loop it is the body of."""
    for stmt in body:
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, ast.If) and (_breaks(stmt.body) or _breaks(stmt.orelse)):
            return True
    return False


def _constant_truth(test: ast.expr) -> bool | None:
    """The truth of a literal condition (``while True``), else None."""
    if isinstance(test, ast.Constant) and isinstance(test.value, bool | int | float):
        return bool(test.value)
    return None


def _bound_names(stmts: list[ast.stmt]) -> set[str]:
    """The names ``stmts`` assign (not inside nested functions, whose names are theirs;
    a nested def's name itself is bound)."""
    found: set[str] = set()
    pending: list[ast.AST] = list(stmts)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
            continue
        if isinstance(node, _OWN_SCOPES):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _declared_outer(stmts: list[ast.stmt]) -> set[str]:
    """The names ``nonlocal`` / ``global`` statements of this function declare."""
    found: set[str] = set()
    pending: list[ast.AST] = list(stmts)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.Nonlocal | ast.Global):
            found.update(node.names)
        pending.extend(ast.iter_child_nodes(node))
    return found


@dataclass
class _Loop:
    at_breaks: list[frozenset[str]] = field(default_factory=list)


class _Scope:
    """The definite-assignment analysis of one function (a nested def: one more)."""

    def __init__(self, src: KernelSource, tree: ast.FunctionDef) -> None:
        self.src = src
        self.tree = tree
        a = tree.args
        self.params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        self.params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        self.outer = _declared_outer(tree.body)
        self.locals = (_bound_names(tree.body) | self.params) - self.outer
        self.loops: list[_Loop] = []
        # Why a name is not assigned on every path, from the last merge that dropped it.
        self.why: dict[str, tuple[str, int, str]] = {}

    def run(self) -> None:
        self._block(self.tree.body, frozenset(self.params))

    # ------------------------------------------------------------ statements

    def _block(self, stmts: list[ast.stmt], state: _State) -> _State:
        for stmt in stmts:
            if state is None:
                return None  # unreachable: Python never runs it
            state = self._stmt(stmt, state)
        return state

    def _stmt(self, node: ast.stmt, state: frozenset[str]) -> _State:
        match node:
            case ast.Assign(targets=targets, value=value):
                self._reads(value, state)
                for target in targets:
                    state = self._assign(target, state)
                return state
            case ast.AnnAssign(target=target, value=value):
                if value is None:
                    raise _Stop  # the lowering asks for a value
                self._reads(value, state)
                return self._assign(target, state)
            case ast.AugAssign(target=target, value=value):
                self._reads(target, state, load=True)
                self._reads(value, state)
                return self._assign(target, state)
            case ast.If(test=test, body=body, orelse=orelse):
                self._reads(test, state)
                truth = _constant_truth(test)
                if truth is not None:
                    return self._block(body if truth else orelse, state)
                taken, skipped = self._block(body, state), self._block(orelse, state)
                return self._merge_if(node, taken, skipped)
            case ast.For(target=target, iter=iterable, body=body, orelse=[]):
                self._reads(iterable, state)
                self._loop(node, body, self._assign(target, state))
                return self._after_loop(node, state, "for")
            case ast.While(test=test, body=body, orelse=[]):
                self._reads(test, state)
                loop = self._loop(node, body, state)
                if _constant_truth(test) is True:  # left only by a break
                    return self._meet(loop.at_breaks) if loop.at_breaks else None
                return self._after_loop(node, state, "while")
            case ast.Break():
                if self.loops:
                    self.loops[-1].at_breaks.append(state)
                return None
            case ast.Continue():
                return None
            case ast.Return(value=value):
                if value is not None:
                    self._reads(value, state)
                return None
            case ast.FunctionDef():
                # A nested body (a team's parallel_for, pk.single): its own locals are
                # checked in it; what it reads of ours is left alone (it runs later).
                try:
                    _Scope(self.src, node).run()
                except _Stop:
                    pass
                nonlocal_names = _declared_outer(node.body) & self.locals
                return state | {node.name} | nonlocal_names
            case _ if isinstance(node, _SIMPLE):
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.expr):
                        self._reads(child, state)
                return state
        raise _Stop

    def _assign(self, target: ast.expr, state: frozenset[str]) -> frozenset[str]:
        """``state`` after a store into ``target``; the parts of a target that are read
        (``x[j]``'s ``x`` and ``j``, ``p.f``'s ``p``) must be assigned."""
        if isinstance(target, ast.Name):
            return state | {target.id}
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                state = self._assign(element, state)
            return state
        if isinstance(target, ast.Starred):
            return self._assign(target.value, state)
        self._reads(target, state)
        return state

    def _loop(
        self, node: ast.For | ast.While, body: list[ast.stmt], state: frozenset[str]
    ) -> _Loop:
        kind = "for" if isinstance(node, ast.For) else "while"
        for name in _bound_names(body) - state:  # read in the body before its assignment
            self.why[name] = (f"the {kind} loop on line {node.lineno}", node.lineno, "later")
        loop = _Loop()
        self.loops.append(loop)
        self._block(body, state)
        self.loops.pop()
        return loop

    def _after_loop(self, node: ast.stmt, before: frozenset[str], kind: str) -> frozenset[str]:
        """After a loop that may run zero times: what was assigned before it (a break
        leaves with at least that too)."""
        when = "zero times" if kind == "for" else "not at all"
        for name in _bound_names([node]) - before:
            self.why[name] = (f"the {kind} loop on line {node.lineno}", node.lineno, when)
        return before

    def _merge_if(self, node: ast.If, taken: _State, skipped: _State) -> _State:
        if taken is None or skipped is None:
            return skipped if taken is None else taken
        condition = f"the condition on line {node.lineno}"
        for name in taken - skipped:
            self.why[name] = (condition, node.lineno, "is false")
        for name in skipped - taken:
            self.why[name] = (condition, node.lineno, "is true")
        return taken & skipped

    @staticmethod
    def _meet(states: list[frozenset[str]]) -> frozenset[str]:
        result = states[0]
        for state in states[1:]:
            result &= state
        return result

    # ------------------------------------------------------------ reads

    def _reads(self, expr: ast.expr, state: frozenset[str], load: bool = False) -> None:
        """Refuse the first read in ``expr`` (in source order) of a local ``state`` lacks;
        ``load``: ``expr`` is an augmented assignment's target, which is read first."""
        unassigned: list[ast.Name] = []
        for node in ast.walk(expr):
            if isinstance(node, _STOPS):
                raise _Stop
            if (
                isinstance(node, ast.Name)
                and (isinstance(node.ctx, ast.Load) or load and node is expr)
                and node.id in self.locals
                and node.id not in state
            ):
                unassigned.append(node)
        if unassigned:
            first = min(unassigned, key=lambda n: (n.lineno, n.col_offset))
            self._refuse(first)

    def _refuse(self, node: ast.Name) -> None:
        name = node.id
        why = self.why.get(name)
        unbound = "Python raises UnboundLocalError here"
        if why is None:
            self.src.error(
                node,
                f"{name!r} is read before any value is assigned to it",
                hint=f"Assign {name!r} before this line: {unbound} (a name a function "
                "assigns anywhere is its local).",
            )
        where, lineno, when = why
        if when == "later":
            message = (
                f"{name!r} has no value here in the first pass of {where}, which assigns it "
                "only further on"
            )
        elif when.startswith("is"):
            message = f"{name!r} may have no value here: it is not assigned when {where} {when}"
        else:
            message = (
                f"{name!r} may have no value here: it is assigned in {where}, which may run {when}"
            )
        self.src.error(
            node,
            message,
            hint=f"Give {name!r} a value before line {lineno} too (e.g. `{name} = 0.0`, of the "
            f"type it holds): {unbound} when a path did not assign it, where a compiled "
            "kernel would read an undefined value.",
        )
