"""Release builds' interleaved reduce bodies: which workunits may run :data:`LANES`
consecutive indices at once, statement by statement (:func:`interleaved_lanes`), and the
name of the function that does (:meth:`~.emit_cpp.CppEmitter.interleaved_function`).
"""

from __future__ import annotations

from . import ir
from .emit_exprs import cpp_name

# Release builds of an eligible parallel_reduce run this many consecutive indices in one
# interleaved body (see :func:`interleaved_lanes`).
LANES = 4

_PURE_EXPRS = (
    ir.Const, ir.Var, ir.ViewAccess, ir.ViewExtent, ir.BinOp, ir.UnaryOp, ir.Compare,
    ir.BoolOp, ir.Select, ir.Cast, ir.Call,
)  # fmt: skip


def interleaved_name(fn: ir.Function) -> str:
    return f"pk_lanes_{cpp_name(fn.name)}"


def interleaved_lanes(fn: ir.Function, operation: str) -> frozenset[str] | None:
    """The names that need one copy per lane when the release build may run ``LANES``
    consecutive indices of this workunit interleaved, statement by statement; None when it
    may not.

    Only for what cannot tell the difference: a ``parallel_reduce`` body that writes no
    view and calls no helper (nothing another index could observe), made of assignments
    to locals, ``if`` and ``for range`` whose conditions and bounds are the same for every
    index ("uniform": they do not depend on the index or on locals that do), with at least
    one loop (the point: a loop-carried chain, like a dot product's additions, that one
    index alone leaves the CPU waiting on), and one top-level ``acc`` update as the only
    use of ``acc`` (so the lanes add to it in index order, the order a thread adds in
    anyway). Every lane then performs exactly its own operations in its own order.
    """
    if operation != "reduce" or fn.written_views:  # helper calls: rejected below
        return None
    index, acc = fn.params[0].name, fn.params[1].name
    stmts = list(ir.statements(fn.body))
    if len(stmts) > 64 or not any(isinstance(s, ir.ForRange) for s in stmts):
        return None
    acc_updates = [
        s
        for s in stmts
        if isinstance(s, ir.Assign | ir.AugAssign)
        and isinstance(s.target, ir.Var)
        and s.target.name == acc
    ]
    if len(acc_updates) != 1 or not any(s is acc_updates[0] for s in fn.body):
        return None
    params = {p.name for p in fn.params}
    for s in stmts:
        if not isinstance(s, ir.Assign | ir.AugAssign | ir.If | ir.ForRange):
            return None
        if isinstance(s, ir.Assign | ir.AugAssign) and (
            not isinstance(s.target, ir.Var)
            or (s.target.name in params and s is not acc_updates[0])
        ):
            return None  # a view element, or a parameter other than acc
        reads = [s.value] if isinstance(s, ir.Assign | ir.AugAssign) else ir.read_expressions(s)
        for e in (sub for top in reads for sub in ir.subexpressions(top)):
            if not isinstance(e, _PURE_EXPRS) or (isinstance(e, ir.Call) and e.user):
                return None
            if isinstance(e, ir.Var) and e.name == acc:
                return None

    def varies(e: ir.Expr, names: set[str]) -> bool:
        return any(isinstance(sub, ir.Var) and sub.name in names for sub in ir.subexpressions(e))

    varying = {index}
    changed = True
    while changed:  # a local varies when any assignment gives it a varying value
        changed = False
        for s in stmts:
            if isinstance(s, ir.Assign | ir.AugAssign):
                name = s.target.name
                if name != acc and name not in varying and varies(s.value, varying):
                    varying.add(name)
                    changed = True
    for s in stmts:
        if isinstance(s, ir.If) and varies(s.cond, varying):
            return None
        if isinstance(s, ir.ForRange) and (
            s.var.name in varying
            or s.var.name in params
            or any(varies(e, varying) for e in ir.read_expressions(s))
        ):
            return None
    return frozenset(varying)
