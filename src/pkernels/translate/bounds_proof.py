"""Proofs, before a launch, that a kernel's debug build would record no fault.

A debug build checks every view index (``0 <= index < extent`` on every axis), every
integer divisor (``//``, ``%``, ``pk.atomic_mod``), every integer exponent and every
float converted to an integer at run time; a release build checks
nothing and runs many times faster. Where :func:`launch_proof` and
:meth:`LaunchProof.holds` prove that no index of a launch can fail a check, the debugger
runs the release code for that launch and loses nothing (``BuildMode.HYBRID``).

The proof is an interval analysis of the kernel's IR, evaluated at each launch with the
actual integer arguments and view shapes: every integer expression gets a range ``(lo,
hi)`` of the values it may take, or ``None`` (unknown), and every access and divisor is
checked against those ranges. Unknown never proves anything, so the analysis is sound:
it answers False whenever it is unsure. Float values are not followed at all: a kernel
converting a float to an integer gets no proof (``translate.kernel`` sees to it, from what
the emitter wrote).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api import types as t
from ..api.types import DataType
from . import ir
from .typing_rules import INT_RANGES, promote

Interval = tuple[int, int] | None  # the values an integer expression may take; None: unknown
Env = dict[str, Interval]  # a name absent from an Env is unknown

_INT64 = INT_RANGES[t.int64]
_BOOL = (0, 1)
# Statements of team kernels: no proof (their own checks and a different launch shape).
_REFUSED = (ir.NestedParallel, ir.Single, ir.ScratchAlloc, ir.TeamBarrier, ir.JumpTo)
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_CACHE_SIZE = 4096


class _Unproven(Exception):
    """Some access or divisor cannot be shown safe: the launch is not proven."""


class LaunchProof:
    """The proof of one kernel (for one argument signature), checked per launch by
    :meth:`holds`: a launch it holds for cannot fail a debug build's checks, so a
    debugger may run the release build's code for it, at full speed, and still stop on
    every fault (there is none to stop on)."""

    def __init__(self, kernel: ir.Function, rank: int = 1) -> None:
        self._kernel = kernel
        self._indices = kernel.params[:rank]
        rest = kernel.params[rank:]
        # Only integer and bool scalars and view shapes enter the analysis: they are the
        # cache key (a float argument that changes at every launch keeps the cache warm).
        self._scalars = [
            p.name
            for p in rest
            if p.role == "arg" and isinstance(p.type, DataType) and not p.type.is_float
        ]
        self._views = [p.name for p in rest if isinstance(p.type, ir.ViewType)]
        self._ranks = {p.name: p.type.rank for p in rest if isinstance(p.type, ir.ViewType)}
        self._assigned: dict[int, frozenset[str]] = {}  # per loop: the names its body writes
        self._cache: dict[tuple[Any, ...], bool] = {}

    def holds(self, begin: Any, end: Any, kwargs: dict[str, Any]) -> bool:
        """True if, for every index ``i`` in ``[begin, end)`` of a RangePolicy launch (for
        an MDRangePolicy box, ``begin`` and ``end`` are tuples: every index of the box) with
        these keyword arguments, every view access of the kernel is in range and every
        integer divisor is nonzero: the debug build would record no fault, so running the
        release build instead changes nothing. False when that cannot be shown.

        Results are cached per (begin, end, integer scalars, view shapes): programs launch
        the same kernel thousands of times."""
        # (tuple, list), not tuple | list: isinstance of a union is slower on 3.11.
        begins = tuple(begin) if isinstance(begin, (tuple, list)) else (begin,)
        ends = tuple(end) if isinstance(end, (tuple, list)) else (end,)
        if len(begins) != len(self._indices) or len(ends) != len(self._indices):
            return False
        for b, e in zip(begins, ends, strict=True):  # a loop: no generator each launch
            if e <= b:
                return True  # no index runs
        try:
            key: list[Any] = [begins, ends]
            for name in self._scalars:
                key.append(kwargs[name])
            for name in self._views:
                key.append(kwargs[name].shape)
            found = self._cache.get(tuple(key))
        except (KeyError, AttributeError, TypeError):  # not a launch this kernel can take
            return False
        if found is None:
            found = self._prove(begins, ends, kwargs)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[tuple(key)] = found
        return found

    def _prove(
        self, begins: tuple[Any, ...], ends: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        shapes = {name: tuple(int(n) for n in kwargs[name].shape) for name in self._views}
        if any(len(shapes[name]) != rank for name, rank in self._ranks.items()):
            return False
        env: Env = {
            index.name: _fit((int(b), int(e) - 1), index.type)
            for index, b, e in zip(self._indices, begins, ends, strict=True)
        }
        for p in self._kernel.params[len(self._indices) :]:
            if p.name in self._scalars:  # exact: this launch's values
                value = kwargs[p.name]
                if isinstance(value, int | np.integer | np.bool_):
                    env[p.name] = _fit((int(value), int(value)), p.type)
        try:
            _Analysis(shapes, self._assigned).block(self._kernel.body, env)
        except _Unproven:
            return False
        return True


def launch_proof(
    kernel: ir.Function, helpers: list[ir.Function], operation: str, rank: int
) -> LaunchProof | None:
    """A :class:`LaunchProof` for ``kernel`` (lowered with ``helpers`` for ``operation``
    over ``rank`` index dimensions), or None when no launch of it can ever be proven.

    None for TeamPolicy kernels and team constructs,
    indices read from data (``x[idx[i]]``, a classtype field, an atomic's or a helper's
    result), views passed to helpers, and helpers whose bodies may fault for some
    argument (they are analysed once, their arguments unknown)."""
    if not 1 <= rank <= 4 or operation not in ("for", "reduce", "scan"):
        return None
    leading = kernel.params[:rank]
    if len(leading) < rank or any(p.role != "index" for p in leading):
        return None  # a TeamPolicy kernel (a team member first)
    if kernel.scratch_views or kernel.local_arrays or kernel.view_passes:
        return None
    safe: dict[str, bool] = {}
    by_name = {h.name: h for h in helpers}
    if not _supported(kernel, by_name, safe):
        return None
    return LaunchProof(kernel, rank)


def _supported(fn: ir.Function, by_name: dict[str, ir.Function], safe: dict[str, bool]) -> bool:
    """Whether ``fn`` uses only what the analysis can prove things about."""
    for s in ir.statements(fn.body):
        if isinstance(s, _REFUSED):
            return False
        for top in ir.read_expressions(s):
            for e in ir.subexpressions(top):
                if isinstance(e, ir.TeamQuery | ir.ViewArg):
                    return False
                if isinstance(e, ir.ViewAccess) and any(
                    isinstance(x, ir.ViewAccess | ir.FieldAccess | ir.AtomicOp | ir.TeamQuery)
                    or (isinstance(x, ir.Call) and x.user)
                    for index in e.indices
                    for x in ir.subexpressions(index)
                ):
                    return False  # an index read from data: never proven
                if isinstance(e, ir.Call) and e.user and not _safe_helper(e.func, by_name, safe):
                    return False
    return True


def _safe_helper(name: str, by_name: dict[str, ir.Function], safe: dict[str, bool]) -> bool:
    """Whether helper ``name`` can never fault, whatever its arguments: it takes no views
    and each of its divisors is provably nonzero with its parameters unknown."""
    if name in safe:
        return safe[name]
    helper = by_name.get(name)
    safe[name] = False  # while being analysed: a recursive helper is not proven
    if helper is None or helper.scratch_views or helper.local_arrays or helper.view_passes:
        return False
    if any(isinstance(p.type, ir.ViewType | ir.TeamType) for p in helper.params):
        return False
    if not _supported(helper, by_name, safe):
        return False
    try:
        _Analysis({}, {}).block(helper.body, {})
    except _Unproven:
        return False
    safe[name] = True
    return True


class _Analysis:
    """One pass of the interval analysis over a body, with these view shapes."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], assigned: dict[int, frozenset[str]]):
        self.shapes = shapes
        self.assigned = assigned

    # ------------------------------------------------------------ statements

    def block(self, body: list[ir.Stmt], env: Env) -> Env | None:
        """Check ``body`` from ``env`` (which it updates); the env where it falls through,
        or None when it never does (return, break, continue on every path)."""
        for s in body:
            out = self.stmt(s, env)
            if out is None:
                return None
            env = out
        return env

    def stmt(self, s: ir.Stmt, env: Env) -> Env | None:
        match s:
            case ir.Assign(target=ir.Var(name=name, type=dtype), value=value):
                env[name] = _fit(self.ev(value, env), dtype)
            case ir.Assign(target=target, value=value):
                self.ev(target, env)
                self.ev(value, env)
            case ir.AugAssign(target=target, op=op, value=value):
                # As emitted: target = (T)(target op value), computed in the promoted type.
                rtype = t.float64 if op == "/" else promote(target, value)
                a, b = self.ev(target, env), self.ev(value, env)
                result = self.arith(op, a, b, rtype)
                if isinstance(target, ir.Var):
                    env[target.name] = _fit(result, target.type)
            case ir.ExprStmt() | ir.Print():
                for e in ir.read_expressions(s):
                    self.ev(e, env)
            case ir.Return(value=value):
                if value is not None:
                    self.ev(value, env)
                return None
            case ir.Break() | ir.Continue():
                return None
            case ir.If(cond=cond, body=body, orelse=orelse):
                self.ev(cond, env)
                then_env = self.refine(env, cond, True)
                else_env = self.refine(env, cond, False)
                then_out = None if then_env is None else self.block(body, then_env)
                else_out = None if else_env is None else self.block(orelse, else_env)
                return _join(then_out, else_out)
            case ir.While(cond=cond, body=body):
                # Whatever the body writes may hold anything at any iteration, and after.
                env = self.havoc(env, s)
                self.ev(cond, env)
                inner = self.refine(env, cond, True)
                if inner is not None:
                    self.block(body, inner)
            case ir.ForRange():
                env = self.for_range(s, env)
            case _:
                raise _Unproven
        return env

    def for_range(self, s: ir.ForRange, env: Env) -> Env:
        # As emitted: an int64 counter runs from start to stop by step; each iteration
        # starts with var = (T)counter, so a write to var lasts until the next iteration.
        start = _fit(self.ev(s.start, env), t.int64)
        stop = _fit(self.ev(s.stop, env), t.int64)
        step = _fit(self.ev(s.step, env), t.int64)
        if step is None or step[0] <= 0 <= step[1]:
            raise _Unproven  # a zero step: Python raises, C++ may loop forever
        after = self.havoc(env, s)
        var: Interval = None
        reachable = True
        if start is not None and stop is not None:
            if step[0] > 0:
                reachable = start[0] < stop[1]
                var = (start[0], stop[1] - 1)
                overflow = stop[1] - 1 + step[1] > _INT64[1]
            else:
                reachable = start[1] > stop[0]
                var = (stop[0] + 1, start[1])
                overflow = stop[0] + 1 + step[0] < _INT64[0]
            if overflow:  # the counter could wrap around and visit anything
                var, reachable = None, True
        if reachable:
            body_env = dict(after)
            body_env[s.var.name] = _fit(var, s.var.type)
            self.block(s.body, body_env)
        return after

    def havoc(self, env: Env, loop: ir.ForRange | ir.While) -> Env:
        """``env`` without what ``loop`` writes (its variable included): unknown there."""
        names = self.assigned.get(id(loop))
        if names is None:
            names = frozenset(_written_names(loop.body))
            if isinstance(loop, ir.ForRange):
                names |= {loop.var.name}
            self.assigned[id(loop)] = names
        return {k: v for k, v in env.items() if k not in names}

    # ------------------------------------------------------------ conditions

    def refine(self, env: Env, cond: ir.Expr, truth: bool) -> Env | None:
        """A copy of ``env`` narrowed by ``cond`` being ``truth``; None if it cannot be."""
        match cond:
            case ir.UnaryOp(op="!", operand=operand):
                return self.refine(env, operand, not truth)
            case ir.BoolOp(op=op, values=values, type=t.bool_) if (op == "&&") == truth:
                out: Env | None = env
                for value in values:
                    out = self.refine(out, value, truth)
                    if out is None:
                        return None
                return dict(out)
            case ir.Compare(op=op, left=left, right=right):
                op = op if truth else _NEGATED[op]
                out = dict(env)
                if isinstance(left, ir.Var):
                    out = self.narrow(out, left, op, right)
                if out is not None and isinstance(right, ir.Var):
                    out = self.narrow(out, right, _FLIPPED[op], left)
                return out
            case ir.Const(value=value):
                return dict(env) if bool(value) == truth else None
        return dict(env)

    def narrow(self, env: Env, var: ir.Var, op: str, other: ir.Expr) -> Env | None:
        """``env`` where ``var op other`` holds (``env`` is a copy, updated in place)."""
        common = var.type if var.type == other.type else promote(var, other)
        if not (isinstance(common, DataType) and common.is_integer):
            return env
        mine = env.get(var.name)
        if mine is None and isinstance(var.type, DataType) and var.type.is_integer:
            mine = INT_RANGES[var.type]  # unknown, but a value of its type
        theirs = _fit(self.ev(other, env), common)
        # Only where C++ compares the exact values (no wrap converting to the common type).
        if _fit(mine, common) is None or theirs is None:
            return env
        assert mine is not None
        lo, hi = mine
        if op in ("<", "<="):
            hi = min(hi, theirs[1] - (op == "<"))
        elif op in (">", ">="):
            lo = max(lo, theirs[0] + (op == ">"))
        elif op == "==":
            lo, hi = max(lo, theirs[0]), min(hi, theirs[1])
        elif theirs[0] == theirs[1]:  # != a single value: trims an end
            lo += lo == theirs[0]
            hi -= hi == theirs[0]
        if lo > hi:
            return None
        env[var.name] = (lo, hi)
        return env

    # ------------------------------------------------------------ expressions

    def ev(self, e: ir.Expr, env: Env) -> Interval:
        """The interval of ``e``, after checking every access and divisor inside it."""
        match e:
            case ir.Const(value=value):
                return (int(value), int(value)) if isinstance(value, int) else None
            case ir.Var(name=name):
                value = env.get(name)
                return _BOOL if value is None and e.type == t.bool_ else value
            case ir.ViewExtent(view=view, axis=axis) if view.name in self.shapes:
                extent = self.shapes[view.name][axis]
                return (extent, extent)
            case ir.ViewAccess():
                self.access(e, env)
            case ir.BinOp(op=op, left=left, right=right, type=rtype):
                return self.arith(op, self.ev(left, env), self.ev(right, env), rtype)
            case ir.UnaryOp(op=op, operand=operand, type=rtype):
                a = _fit(self.ev(operand, env), rtype)
                if a is not None and op in ("-", "+", "~"):
                    lo, hi = a
                    a = {"-": (-hi, -lo), "+": a, "~": (-hi - 1, -lo - 1)}[op]
                    return _fit(a, rtype)
            case ir.Compare(left=left, right=right):
                self.ev(left, env)
                self.ev(right, env)
            case ir.BoolOp(op=op, values=values, type=rtype):
                # Short-circuits: each operand runs only where those before it allow.
                results: list[Interval] = []
                current: Env | None = env
                for value in values:
                    results.append(_fit(self.ev(value, current), rtype))
                    current = self.refine(current, value, op == "&&")
                    if current is None:
                        break
                return _hull(results, rtype)
            case ir.Select(cond=cond, then=then, other=other, type=rtype):
                self.ev(cond, env)
                results = []
                for branch, truth in ((then, True), (other, False)):
                    branch_env = self.refine(env, cond, truth)
                    if branch_env is not None:  # only the branch taken runs
                        results.append(_fit(self.ev(branch, branch_env), rtype))
                return _hull(results, rtype)
            case ir.Cast(operand=operand, type=rtype):
                a = self.ev(operand, env)
                if rtype == t.bool_ or operand.type.is_float:  # float -> int: not tracked
                    return _BOOL if rtype == t.bool_ else None
                return _fit(a, rtype)
            case ir.Call(func=func, args=args, user=user, type=rtype):
                values = [self.ev(a, env) for a in args]
                if not user:
                    return _builtin(func, values, rtype)
            case ir.AtomicOp(op=op, target=target, operands=operands, type=rtype):
                self.access(target, env)
                values = [_fit(self.ev(o, env), rtype) for o in operands]
                base = op.removesuffix("_new")
                if base == "mod" or (base == "div" and rtype.is_integer):
                    _divisor(None, values[0], rtype)  # the old value is unknown
            case ir.FieldAccess(base=base):
                self.ev(base, env)
            case _:
                raise _Unproven
        return _BOOL if e.type == t.bool_ else None

    def access(self, e: ir.ViewAccess, env: Env) -> None:
        shape = self.shapes.get(e.view.name)
        if shape is None or len(shape) != len(e.indices):
            raise _Unproven
        for index, extent in zip(e.indices, shape, strict=True):
            value = self.ev(index, env)
            if value is None or value[0] < 0 or value[1] >= extent:
                raise _Unproven

    def arith(self, op: str, a: Interval, b: Interval, rtype: DataType) -> Interval:
        """``a op b`` computed in ``rtype`` (operands converted to it first, as emitted);
        checks the divisor of an integer ``//`` or ``%`` and the exponent of ``**``."""
        if rtype.is_float:
            return None
        a, b = _fit(a, rtype), _fit(b, rtype)
        if op in ("//", "%"):
            _divisor(a, b, rtype)
        if op == "**" and (b is None or b[0] < 0):
            raise _Unproven  # an integer ** a negative integer: the debug build's check
        if rtype == t.bool_:
            return _BOOL
        if a is None or b is None:
            return None
        (a0, a1), (b0, b1) = a, b
        result: Interval = None
        if op == "+":
            result = (a0 + b0, a1 + b1)
        elif op == "-":
            result = (a0 - b1, a1 - b0)
        elif op == "*":
            result = _corners(a, b, lambda x, y: x * y)
        elif op == "//":  # b excludes 0: monotone in each operand, extremes at corners
            result = _corners(a, b, lambda x, y: x // y)
        elif op == "%" and b0 > 0:
            result = a if 0 <= a0 and a1 < b0 else (0, b1 - 1)
        elif op == "%":
            result = (b0 + 1, 0)
        elif op == ">>" and 0 <= b0 and b1 < 63:
            result = _corners(a, b, lambda x, y: x >> y)
        elif op == "&" and a0 >= 0 and b0 >= 0:
            result = (0, min(a1, b1))
        return _fit(result, rtype)


# ---------------------------------------------------------------- intervals


def _fit(value: Interval, dtype: Any) -> Interval:
    """``value`` converted to ``dtype`` as C++ converts: unknown where it could wrap."""
    if dtype == t.bool_:
        return value if value is not None and 0 <= value[0] and value[1] <= 1 else _BOOL
    if value is None or not isinstance(dtype, DataType) or not dtype.is_integer:
        return None
    lo, hi = INT_RANGES[dtype]
    return value if lo <= value[0] and value[1] <= hi else None


def _divisor(dividend: Interval, divisor: Interval, dtype: DataType) -> None:
    """Unproven unless the divisor is nonzero (the debug build's check) and the division
    cannot be MIN // -1 (which traps on x86, unchecked)."""
    if divisor is None or divisor[0] <= 0 <= divisor[1]:
        raise _Unproven
    if dtype.kind == "int" and divisor[0] <= -1 <= divisor[1]:
        if dividend is None or dividend[0] == INT_RANGES[dtype][0]:
            raise _Unproven


def _corners(a: tuple[int, int], b: tuple[int, int], f: Any) -> Interval:
    values = [f(x, y) for x in a for y in b]
    return (min(values), max(values))


def _hull(values: list[Interval], dtype: Any) -> Interval:
    if dtype == t.bool_:
        return _BOOL
    if not values or any(v is None for v in values):
        return None
    return (min(v[0] for v in values), max(v[1] for v in values))  # type: ignore[index]


def _join(a: Env | None, b: Env | None) -> Env | None:
    """Where two paths meet: each name's hull, unknown if unknown on either path."""
    if a is None or b is None:
        return b if a is None else a
    return {k: _hull([v, b[k]], None) for k, v in a.items() if k in b}


def _builtin(func: str, values: list[Interval], rtype: DataType) -> Interval:
    """The interval of a builtin call (min, max, abs, pk.rand_int); unknown otherwise."""
    if rtype == t.bool_:
        return _BOOL
    if func == "rand_int":  # in [0, n) for n > 0, else 0
        n = _fit(values[2], t.int64)
        return None if n is None else _fit((0, max(n[1] - 1, 0)), rtype)
    args = [_fit(v, rtype) for v in values]
    if any(v is None for v in args) or func not in ("min", "max", "abs"):
        return None
    if func == "abs":
        lo, hi = args[0]  # type: ignore[misc]
        result = (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0, max(-lo, hi))
        return _fit(result, rtype)
    pick = min if func == "min" else max
    return (pick(v[0] for v in args), pick(v[1] for v in args))  # type: ignore[index]


def _written_names(body: list[ir.Stmt]) -> set[str]:
    """The names a body assigns, nested loops' variables included."""
    names: set[str] = set()
    for s in ir.statements(body):
        if isinstance(s, ir.Assign | ir.AugAssign) and isinstance(s.target, ir.Var):
            names.add(s.target.name)
        elif isinstance(s, ir.ForRange):
            names.add(s.var.name)
    return names
