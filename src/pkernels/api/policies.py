"""Execution policies: how a kernel's iterations are spread over a space."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from ..errors import DispatchError
from .spaces import ExecutionSpace, resolve_space


@dataclass(frozen=True, init=False)
class RangePolicy:
    """``RangePolicy([space,] begin, end)``: iterations ``begin <= i < end``."""

    space: ExecutionSpace
    begin: int
    end: int

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], ExecutionSpace):
            space, rest = args[0], args[1:]
        else:
            space, rest = ExecutionSpace.Default, args
        if len(rest) != 2:
            raise TypeError("RangePolicy takes ([space,] begin, end)")
        try:
            begin, end = (operator.index(v) for v in rest)
        except TypeError:
            raise TypeError(f"RangePolicy bounds must be integers, got {rest!r}") from None
        object.__setattr__(self, "space", resolve_space(space))
        object.__setattr__(self, "begin", begin)
        object.__setattr__(self, "end", end)

    @property
    def size(self) -> int:
        return max(0, self.end - self.begin)


def as_policy(policy: object) -> RangePolicy:
    """An int ``n`` means ``RangePolicy(0, n)`` on the default space."""
    if isinstance(policy, RangePolicy):
        # A policy built before set_default_space keeps the space it resolved then.
        return policy
    try:
        n = operator.index(policy)
    except TypeError:
        raise DispatchError(
            f"a dispatch policy must be an int or a RangePolicy, got {type(policy).__name__}"
        ) from None
    return RangePolicy(0, n)
