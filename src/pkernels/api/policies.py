"""Execution policies: how a kernel's iterations are spread over a space."""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass

from ..errors import DispatchError
from .spaces import (
    ExecutionPolicy,
    ExecutionSpace,
    ExecutionSpaceInstance,
    as_space,
    resolve_space,
)
from .teams import TeamPolicy


@dataclass(frozen=True, init=False)
class RangePolicy(ExecutionPolicy):
    """``RangePolicy([space,] begin, end)``: iterations ``begin <= i < end``."""

    space: ExecutionSpace
    begin: int
    end: int

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], ExecutionSpace):
            space, rest = args[0], args[1:]
        elif len(args) == 3 or args and isinstance(args[0], str):  # a space of another kind
            space, rest = as_space(args[0], "RangePolicy"), args[1:]
        else:
            space, rest = ExecutionSpace.Default, args
        if len(rest) != 2:
            raise TypeError("RangePolicy takes ([space,] begin, end)")
        try:
            begin, end = (operator.index(v) for v in rest)
        except TypeError:
            raise TypeError(f"RangePolicy bounds must be integers, got {rest!r}") from None
        for name, value in (("begin", begin), ("end", end)):
            if not -(2**63) <= value < 2**63:  # the index is an int64 in every space
                raise ValueError(f"RangePolicy {name} {value} is outside the int64 range")
        object.__setattr__(self, "space", resolve_space(space))
        object.__setattr__(self, "begin", begin)
        object.__setattr__(self, "end", end)

    @property
    def size(self) -> int:
        return max(0, self.end - self.begin)


class Iterate(enum.Enum):
    """The order an MDRangePolicy walks its tiles and the indices in a tile (Kokkos'
    ``Iterate``). pkernels accepts it; results do not depend on it."""

    Default = "Default"
    Left = "Left"
    Right = "Right"


@dataclass(frozen=True)
class Rank:
    """``pk.Rank(n, iter_outer, iter_inner)``: an MDRangePolicy's rank and iteration
    order, PyKokkos' ``rank=`` keyword."""

    n: int
    iter_outer: Iterate = Iterate.Default
    iter_inner: Iterate = Iterate.Default


@dataclass(frozen=True, init=False)
class MDRangePolicy(ExecutionPolicy):
    """``MDRangePolicy([space,] begins, ends[, tiling])``: every index tuple ``(i, j, ...)``
    with ``begins[k] <= index[k] < ends[k]``, for ranks 2 to 4. ``tiling`` (one tile
    extent per dimension, as in PyKokkos) is checked; on ``pk.Cuda`` it is the block shape
    (see :mod:`pkernels.runtime.cuda_geometry`), the CPU spaces do not use it. PyKokkos'
    keywords ``space=``, ``iter_outer=``, ``iter_inner=`` and ``rank=pk.Rank(...)`` are
    accepted; the iteration order does not change results, so it is not used either."""

    space: ExecutionSpace
    begins: tuple[int, ...]
    ends: tuple[int, ...]
    tiling: tuple[int, ...] | None

    def __init__(
        self,
        *args: object,
        tiling: object = None,
        space: ExecutionSpace | None = None,
        iter_outer: Iterate = Iterate.Default,
        iter_inner: Iterate = Iterate.Default,
        rank: Rank | None = None,
    ) -> None:
        if args and isinstance(args[0], ExecutionSpace | ExecutionSpaceInstance | str):
            if space is not None:
                raise TypeError("MDRangePolicy: the space is given twice")
            space, rest = args[0], args[1:]
        else:
            rest = args
        if space is None:
            space = ExecutionSpace.Default
        space = as_space(space, "MDRangePolicy")
        if tiling is not None:
            rest = (*rest, tiling)
        if len(rest) not in (2, 3):
            raise TypeError("MDRangePolicy takes ([space,] begins, ends[, tiling])")
        for name, order in (("iter_outer", iter_outer), ("iter_inner", iter_inner)):
            if not isinstance(order, Iterate):
                raise TypeError(f"MDRangePolicy {name} must be a pk.Iterate, not {order!r}")
        begins = _int_tuple("begins", rest[0])
        ends = _int_tuple("ends", rest[1])
        tiling = _int_tuple("tiling", rest[2]) if len(rest) == 3 and rest[2] is not None else None
        if len(begins) != len(ends):
            raise ValueError(
                f"MDRangePolicy: begins and ends must have the same length, got "
                f"{len(begins)} and {len(ends)}"
            )
        if rank is not None and (not isinstance(rank, Rank) or rank.n != len(begins)):
            raise ValueError(
                f"MDRangePolicy: rank={rank!r} does not match the {len(begins)} dimensions "
                "of begins and ends"
            )
        if not 2 <= len(begins) <= 4:
            raise ValueError(
                f"MDRangePolicy: the rank must be 2 to 4, got {len(begins)} "
                "(use RangePolicy for one dimension)"
            )
        if tiling is not None and len(tiling) != len(begins):
            raise ValueError(
                f"MDRangePolicy: tiling must have one entry per dimension ({len(begins)}), "
                f"got {len(tiling)}"
            )
        object.__setattr__(self, "space", resolve_space(space))
        object.__setattr__(self, "begins", begins)
        object.__setattr__(self, "ends", ends)
        object.__setattr__(self, "tiling", tiling)

    @property
    def rank(self) -> int:
        return len(self.begins)

    @property
    def size(self) -> int:
        n = 1
        for b, e in zip(self.begins, self.ends, strict=True):
            n *= max(0, e - b)
        return n


def _int_tuple(what: str, values: object) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in values)  # type: ignore[attr-defined]
    except TypeError:
        raise TypeError(
            f"MDRangePolicy {what} must be a list of integers, got {values!r}"
        ) from None


def as_policy(policy: object) -> RangePolicy | MDRangePolicy | TeamPolicy:
    """The policy of a dispatch: an int ``n`` means ``RangePolicy(0, n)`` on the default
    space."""
    if isinstance(policy, RangePolicy):
        # A policy built before set_default_space keeps the space it resolved then.
        return policy
    if isinstance(policy, MDRangePolicy | TeamPolicy):
        return policy
    try:
        n = operator.index(policy)
    except TypeError:
        raise DispatchError(
            "a dispatch policy must be an int, a RangePolicy, an MDRangePolicy or a "
            "TeamPolicy, got "
            f"{type(policy).__name__}"
        ) from None
    return RangePolicy(0, n)
