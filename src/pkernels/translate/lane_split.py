"""Which loop of a range workunit several GPU threads can share (the Cuda space's
release builds).

A range kernel that runs one index per thread over a short range (yAx's 8192 rows, a
row per thread) leaves most of the GPU idle, and each of its threads walks a long loop
alone (the row's 8192 columns). Where the workunit's body is *a sum over a loop*, the
Cuda space runs 32 indices on a block of up to 32 warps instead (as many as keep the GPU
full): thread ``t`` of warp ``w`` runs index ``t`` of the 32, the code before the loop,
and iterations ``w``, ``w + warps``, ... of the loop into partial sums of its own; the
partials of each index are added up in warp order (shared memory), and the first warp
alone runs the rest of the body. The threads of a warp run 32 consecutive indices, as
one index per thread does: a row-per-index kernel over a column-major (LayoutLeft)
matrix still reads 256 contiguous bytes a load. :func:`lane_split` says whether a
workunit has such a loop, and which.

The loop qualifies when splitting it cannot change what the body does but for the order
of the loop's additions:

* it is a ``for ... in range(...)`` at the top level of the body, and the statements
  before it only compute locals (no view stores, atomics, prints, random draws, helper
  calls, ``return``, and no update of the reduce's accumulator);
* inside it, nothing but locals is assigned, through the same kinds of expressions; no
  ``break`` or ``return`` leaves it (a loop nested in it may break);
* each local it assigns is either a *sum*, only ever updated as ``s += e`` or ``s -= e``
  (``e`` not reading ``s``) and read nowhere else in the loop, or a *private* value,
  assigned before it is read in every iteration and not read after the loop (the loop
  variable is one). A value carried from one iteration to the next (``prev = x[k]``)
  keeps the loop whole.

Sums of 32- and 64-bit integers come out exactly as before (two's complement addition
is associative); floating-point sums are added in another order (each warp's partial,
then the partials in warp order), deterministic run to run for a given range and GPU,
like a reduce's threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api import types as t
from ..api.types import DataType
from . import ir

#: The sums' types: 32- and 64-bit numbers, whose addition is done in the sum's own type.
_SUM_TYPES = frozenset({t.float32, t.float64, t.int32, t.int64, t.uint32, t.uint64})


@dataclass(frozen=True)
class LaneSplit:
    """The loop of a workunit that a group of lanes shares: its position among the body's
    top-level statements and its sums (the locals the lanes' partials are added into)."""

    position: int
    loop: ir.ForRange
    sums: tuple[ir.Var, ...]


def lane_split(fn: ir.Function) -> LaneSplit | None:
    """The first top-level loop of ``fn`` whose iterations lanes can share (see the
    module docstring), or None."""
    locals_ = set(fn.locals)
    for position, s in enumerate(fn.body):
        if isinstance(s, ir.ForRange):
            sums = _loop_sums(s, locals_, fn.body[position + 1 :])
            if sums is not None:
                return LaneSplit(position, s, sums)
        if not _computes_locals_only(s, locals_):
            return None  # what follows it may depend on an effect every lane would repeat
    return None


def _pure(e: ir.Expr) -> bool:
    """Whether evaluating ``e`` only reads (no atomics, random draws or helper calls)."""
    for sub in ir.subexpressions(e):
        if isinstance(sub, ir.AtomicOp | ir.RandomDraw | ir.TeamQuery):
            return False
        if isinstance(sub, ir.Call) and sub.user:
            return False
    return True


def _computes_locals_only(
    s: ir.Stmt, locals_: set[str], in_loop: bool = False, nested: int = 0
) -> bool:
    """Whether ``s`` only assigns locals from pure expressions (``in_loop``: inside the
    shared loop, where ``continue`` is fine too; ``nested``: inside that many loops of
    its own, which ``break`` and ``continue`` may leave)."""
    match s:
        case (
            ir.Assign(target=ir.Var(name=name), value=value)
            | ir.AugAssign(target=ir.Var(name=name), value=value)
        ):
            return name in locals_ and _pure(value)
        case ir.If(cond=cond, body=body, orelse=orelse):
            return _pure(cond) and all(
                _computes_locals_only(x, locals_, in_loop, nested) for x in [*body, *orelse]
            )
        case ir.ForRange(var=var, start=start, stop=stop, step=step, body=body):
            return (
                var.name in locals_
                and all(_pure(e) for e in (start, stop, step))
                and all(_computes_locals_only(x, locals_, in_loop, nested + 1) for x in body)
            )
        case ir.While(cond=cond, body=body):
            return _pure(cond) and all(
                _computes_locals_only(x, locals_, in_loop, nested + 1) for x in body
            )
        case ir.Continue():
            return in_loop or nested > 0
        case ir.Break():
            return nested > 0
    return False


def _loop_sums(
    loop: ir.ForRange, locals_: set[str], after: list[ir.Stmt]
) -> tuple[ir.Var, ...] | None:
    """The sums of ``loop`` when its iterations can be shared (None otherwise)."""
    if not all(_pure(e) for e in (loop.start, loop.stop, loop.step)):
        return None
    if loop.var.name not in locals_:
        return None
    if not all(_computes_locals_only(s, locals_, in_loop=True) for s in loop.body):
        return None
    assigned = _assigned(loop.body) | {loop.var.name}
    # A sum is only ever updated (s += e, e not reading s) and read nowhere else.
    sums = _only_summed(loop.body, loop.var.name)
    reads = _reads_outside_updates(loop.body, set(sums))
    for e in (loop.start, loop.stop, loop.step):  # read before the lanes' sums start
        reads |= _expression_reads(e)
    for name in list(sums):
        if name in reads:
            del sums[name]
    private = assigned - set(sums)
    read_after = {v for s in after for v in _reads(s)}
    if private & read_after:
        return None  # a value of the last iteration, which another lane ran
    if not _assigned_before_read(loop.body, private, {loop.var.name}):
        return None  # a value carried from one iteration to the next
    return tuple(sums[name] for name in sorted(sums))


def _assigned(body: list[ir.Stmt]) -> set[str]:
    """The locals ``body`` assigns (nested statements and loop variables included)."""
    names: set[str] = set()
    for s in ir.statements(body):
        match s:
            case ir.Assign(target=ir.Var(name=name)) | ir.AugAssign(target=ir.Var(name=name)):
                names.add(name)
            case ir.ForRange(var=var):
                names.add(var.name)
    return names


def _only_summed(body: list[ir.Stmt], loop_var: str) -> dict[str, ir.Var]:
    """The locals ``body`` assigns only by sum updates (a loop variable is none)."""
    sums: dict[str, ir.Var] = {}
    others = {loop_var}
    for s in ir.statements(body):
        match s:
            case (
                ir.Assign(target=ir.Var(name=name) as var)
                | ir.AugAssign(target=ir.Var(name=name) as var)
            ):
                if _is_sum_update(s, name):
                    sums.setdefault(name, var)
                else:
                    others.add(name)
            case ir.ForRange(var=var):
                others.add(var.name)
    return {name: var for name, var in sums.items() if name not in others}


def _is_sum_update(s: ir.Stmt, name: str) -> bool:
    """``name += e`` or ``name -= e``, in the sum's own type, ``e`` not reading it."""
    if not (
        isinstance(s, ir.AugAssign)
        and isinstance(s.target, ir.Var)
        and s.target.name == name
        and s.op in ("+", "-")
    ):
        return False
    kind, value = s.target.type, s.value.type
    if not isinstance(kind, DataType) or kind not in _SUM_TYPES:
        return False
    if kind.is_float and not (value == kind or value.is_integer):
        return False  # a wider or narrower float: rounded at every step, not a sum
    if kind.is_integer and not value.is_integer:
        return False
    return name not in _expression_reads(s.value)


def _expression_reads(e: ir.Expr) -> set[str]:
    return {sub.name for sub in ir.subexpressions(e) if isinstance(sub, ir.Var)}


def _reads(s: ir.Stmt) -> set[str]:
    """The variables ``s`` and the statements inside it read (an update reads its target)."""
    names: set[str] = set()
    for inner in ir.statements([s]):
        for e in ir.read_expressions(inner):
            names |= _expression_reads(e)
    return names


def _reads_outside_updates(body: list[ir.Stmt], sums: set[str]) -> set[str]:
    """What ``body`` reads of ``sums`` other than as the target of their own updates."""
    names: set[str] = set()
    for s in ir.statements(body):
        if isinstance(s, ir.AugAssign) and isinstance(s.target, ir.Var) and s.target.name in sums:
            names |= _expression_reads(s.value)
            continue
        for e in ir.read_expressions(s):
            names |= _expression_reads(e)
    return names & sums


def _assigned_before_read(body: list[ir.Stmt], private: set[str], assigned: set[str]) -> bool:
    """Whether every read of a ``private`` local in ``body`` (one iteration) comes after
    an assignment made on every path to it, ``assigned`` holding those made so far."""
    return _definite(body, private, set(assigned)) is not None


def _definite(body: list[ir.Stmt], private: set[str], done: set[str]) -> set[str] | None:
    """The private locals surely assigned after ``body`` (from ``done``), or None where a
    read comes first."""
    for s in body:
        match s:
            case ir.Assign(target=ir.Var(name=name), value=value):
                if (_expression_reads(value) & private) - done:
                    return None
                done = done | {name}
            case ir.AugAssign(target=ir.Var(name=name), value=value):
                if (({name} | _expression_reads(value)) & private) - done:
                    return None
                done = done | {name}
            case ir.If(cond=cond, body=then, orelse=orelse):
                if (_expression_reads(cond) & private) - done:
                    return None
                a, b = _definite(then, private, done), _definite(orelse, private, done)
                if a is None or b is None:
                    return None
                done = a & b
            case ir.ForRange(var=var, start=start, stop=stop, step=step, body=inner):
                reads = set().union(*(_expression_reads(e) for e in (start, stop, step)))
                if (reads & private) - done:
                    return None
                # Its body may run any number of times, from a state it leaves itself.
                if _definite(inner, private, done | {var.name}) is None:
                    return None
            case ir.While(cond=cond, body=inner):
                if (_expression_reads(cond) & private) - done:
                    return None
                if _definite(inner, private, done) is None:
                    return None
            case ir.Continue():
                return done | private  # nothing after it runs in this iteration
    return done
