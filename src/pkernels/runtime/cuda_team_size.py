"""The team size a Cuda TeamPolicy launch runs with (``pk.AUTO``'s, from the
dispatch's arguments)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api.teams import SCRATCH_LIMITS, TeamPolicy
from ..translate import ir
from ..translate.emit_cuda import CudaEntry

AUTO_TEAM_SIZE = 128  # pk.AUTO's most threads per team


def auto_team_size(entry: CudaEntry, policy: TeamPolicy, kwargs: dict[str, Any]) -> int:
    """The team size of a TeamPolicy on the GPU: the one asked for, else (``pk.AUTO``) the
    smallest power of two that gives each index of the largest team-split nested range
    (TeamThreadRange & co., whose bounds are read from the dispatch's arguments) a thread
    of its own, at most :data:`AUTO_TEAM_SIZE` (also when the bounds are computed in the
    kernel); one thread when the body has no such range (nor asks its team size, as a
    kernel splitting work itself does); fewer when the per-thread scratch would not fit."""
    if policy.team_size is not None:
        return policy.team_size
    if not entry.team_ranges:
        wanted = AUTO_TEAM_SIZE if entry.asks_team_size else 1
    else:
        wanted = 0
        for begins, ends in entry.team_ranges:
            count = 1
            for begin, end in zip(begins, ends, strict=True):
                b, e = _static_value(begin, kwargs), _static_value(end, kwargs)
                if b is None or e is None:
                    count = AUTO_TEAM_SIZE
                    break
                count *= max(0, e - b)
            wanted = max(wanted, count)
    size = 1
    while size < min(wanted, AUTO_TEAM_SIZE):
        size *= 2
    for level, limit in enumerate(SCRATCH_LIMITS):
        while size > 1 and policy.scratch_bytes(level, size) > limit:
            size //= 2
    return size


def _static_value(e: ir.Expr, kwargs: dict[str, Any]) -> int | None:
    """The value of an integer expression of the kernel's arguments, or None."""
    match e:
        case ir.Const(value=value) if not isinstance(value, float):
            return int(value)
        case ir.Var(name=name):
            argument: Any = kwargs.get(name)
            return int(argument) if isinstance(argument, int | np.integer) else None
        case ir.ViewExtent(view=view, axis=axis):
            array: Any = kwargs.get(view.name)
            return int(array.shape[axis]) if hasattr(array, "shape") else None
        case ir.Cast(operand=operand) if e.type.is_integer:
            return _static_value(operand, kwargs)
        case ir.BinOp(op=op, left=left, right=right) if op in ("+", "-", "*", "//", "%"):
            a, b = _static_value(left, kwargs), _static_value(right, kwargs)
            if a is None or b is None or (op in ("//", "%") and b == 0):
                return None
            if op == "//":
                return a // b
            if op == "%":
                return a % b
            return a + b if op == "+" else a - b if op == "-" else a * b
    return None
