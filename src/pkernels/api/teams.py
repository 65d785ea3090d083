"""Hierarchical parallelism: ``TeamPolicy``, the team member, nested ranges, scratch views.

A ``TeamPolicy(league_size, team_size)`` runs the workunit once per team member: a
league of ``league_size`` teams, each of ``team_size`` threads that share scratch memory
and synchronise with ``team_member.team_barrier()``. Inside, nested ``def`` bodies run
over ``TeamThreadRange`` (split among the team's threads), ``ThreadVectorRange`` (every
index in the calling thread) and ``TeamThreadMDRange`` with ``pk.parallel_for`` /
``parallel_reduce`` / ``parallel_scan``; ``pk.single(pk.PerTeam(tm), body)`` runs a body
once per team.

On the CPU spaces a team is ``team_size`` real threads (``pk.AUTO`` picks one), so
barriers, scratch sharing and their bugs behave as on a GPU. The classes here are what
kernels name (the translator reads them) and what the ``Debug`` space runs in Python.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from ..errors import DispatchError
from .spaces import (
    ExecutionPolicy,
    ExecutionSpace,
    ExecutionSpaceInstance,
    as_space,
    resolve_space,
)
from .types import DataType, to_datatype

# The most threads one team may have (a CUDA block's limit; on CPUs a team is real threads).
MAX_TEAM_SIZE = 1024
# Per-team scratch limits by level, as Kokkos' host backends have them: level 0 is the
# small, fast memory (a GPU's shared memory), level 1 the large one.
SCRATCH_LIMITS = (32 * 1024, 20 * 1024 * 1024)
# Scratch allocations start at multiples of this, as ScratchView.shmem_size counts them.
SCRATCH_ALIGNMENT = 8


class _Auto:
    """``pk.AUTO``: let the space choose the team size (one thread on CPUs)."""

    def __repr__(self) -> str:
        return "pk.AUTO"


AUTO = _Auto()


@dataclass(frozen=True)
class PerTeam:
    """``pk.PerTeam(bytes)`` in ``set_scratch_size``: scratch shared by a team;
    ``pk.PerTeam(team_member)`` in ``pk.single``: once per team."""

    value: Any


@dataclass(frozen=True)
class PerThread:
    """``pk.PerThread(bytes)`` in ``set_scratch_size``: scratch of each thread of a team;
    ``pk.PerThread(team_member)`` in ``pk.single``: once per thread (every thread, on CPUs)."""

    value: Any


@dataclass(eq=False, init=False)
class TeamPolicy(ExecutionPolicy):
    """``TeamPolicy([space,] league_size, team_size | pk.AUTO[, vector_length])``.

    Also as keywords (``league_size=``, ``team_size=``, ``vector_length=``, ``space=``),
    and with the space last, as older PyKokkos wrote it:
    ``TeamPolicy(league_size, team_size, vector_length, space)``.

    The workunit takes the team member first: ``def k(team_member: pk.TeamMember, ...)``
    (then ``acc`` for parallel_reduce). ``set_scratch_size(level, pk.PerTeam(bytes))``
    (or ``pk.PerThread``) reserves scratch memory and returns the policy.
    """

    space: ExecutionSpace
    league_size: int
    team_size: int | None  # None: pk.AUTO
    vector_length: int
    # Scratch bytes per level (0, 1): shared by the team, and per thread of the team.
    team_scratch: list[int] = field(default_factory=lambda: [0, 0])
    thread_scratch: list[int] = field(default_factory=lambda: [0, 0])

    def __init__(
        self,
        *args: object,
        league_size: object = None,
        team_size: object = None,
        vector_length: object = None,
        space: ExecutionSpace | None = None,
    ) -> None:
        usage = "TeamPolicy takes ([space,] league_size, team_size | pk.AUTO[, vector_length])"
        if args and isinstance(args[0], ExecutionSpace | ExecutionSpaceInstance | str):
            given_space, rest = args[0], args[1:]
        elif len(args) == 4 and isinstance(args[3], ExecutionSpace | ExecutionSpaceInstance | str):
            given_space, rest = args[3], args[:3]  # older PyKokkos: the space last
        else:
            given_space, rest = None, args
        if given_space is not None and space is not None:
            raise TypeError(f"TeamPolicy: the space is given twice; {usage}")
        space = given_space or space or ExecutionSpace.Default
        space = as_space(space, "TeamPolicy")
        # Keywords fill the places after the positional arguments, in order.
        keywords = {"league_size": league_size, "team_size": team_size}
        keywords["vector_length"] = vector_length
        for position, (name, value) in enumerate(keywords.items()):
            if value is None:
                continue
            if position < len(rest):
                raise TypeError(f"TeamPolicy: {name} is given twice; {usage}")
            if position > len(rest):
                raise TypeError(f"TeamPolicy: {name} without the arguments before it; {usage}")
            rest = (*rest, value)
        if len(rest) not in (2, 3):
            raise TypeError(usage)
        self.space = resolve_space(space)
        self.league_size = _count("league_size", rest[0], minimum=0)
        team = rest[1]
        if team is AUTO or (isinstance(team, str) and team.lower() == "auto"):
            self.team_size = None
        else:
            self.team_size = _count("team_size", team, minimum=1)
            if self.team_size > MAX_TEAM_SIZE:
                raise ValueError(
                    f"TeamPolicy: team_size {self.team_size} exceeds the limit of "
                    f"{MAX_TEAM_SIZE} threads per team"
                )
        self.vector_length = _count("vector_length", rest[2], minimum=1) if len(rest) == 3 else 1
        if self.vector_length & (self.vector_length - 1):
            raise ValueError(
                f"TeamPolicy: vector_length must be a power of two, got {self.vector_length}"
            )
        self.team_scratch = [0, 0]
        self.thread_scratch = [0, 0]

    def set_scratch_size(self, level: int, size: PerTeam | PerThread) -> TeamPolicy:
        """Reserve scratch memory at ``level`` (0 or 1): ``pk.PerTeam(bytes)`` for the team,
        ``pk.PerThread(bytes)`` for each of its threads. Returns the policy (chainable)."""
        if level not in (0, 1):
            raise ValueError(f"set_scratch_size: level must be 0 or 1, got {level!r}")
        if not isinstance(size, PerTeam | PerThread):
            raise TypeError(
                "set_scratch_size(level, pk.PerTeam(bytes)) or (level, pk.PerThread(bytes)), "
                f"got {size!r}"
            )
        nbytes = _count("scratch size", size.value, minimum=0)
        if isinstance(size, PerTeam):
            self.team_scratch[level] = nbytes
        else:
            self.thread_scratch[level] = nbytes
        self.check_scratch(self.team_size or 1)
        return self

    def resolved_team_size(self) -> int:
        """The team size a CPU space runs: the one asked for, or 1 for ``pk.AUTO``."""
        return 1 if self.team_size is None else self.team_size

    def scratch_bytes(self, level: int, team_size: int) -> int:
        """Scratch bytes one team of ``team_size`` threads has at ``level``."""
        return self.team_scratch[level] + team_size * self.thread_scratch[level]

    def check_scratch(self, team_size: int) -> None:
        """Raise DispatchError when a team's scratch exceeds the per-team limit."""
        for level, limit in enumerate(SCRATCH_LIMITS):
            total = self.scratch_bytes(level, team_size)
            if total > limit:
                parts = f"{self.team_scratch[level]} per team"
                if self.thread_scratch[level]:
                    parts += f" + {team_size} threads x {self.thread_scratch[level]} per thread"
                raise DispatchError(
                    f"TeamPolicy: scratch level {level} needs {total} bytes per team ({parts}), "
                    f"more than the limit of {limit} bytes"
                    + (" (use level 1 for large scratch)" if level == 0 else "")
                )

    def launch_spec(self, team_size: int) -> list[int]:
        """What a compiled launcher takes: league, team size, vector length, then scratch
        bytes per team and per thread for levels 0 and 1."""
        return [
            self.league_size,
            team_size,
            self.vector_length,
            self.team_scratch[0],
            self.team_scratch[1],
            self.thread_scratch[0],
            self.thread_scratch[1],
        ]

    def __repr__(self) -> str:
        team = "pk.AUTO" if self.team_size is None else self.team_size
        return f"TeamPolicy({self.space.name}, {self.league_size}, {team}, {self.vector_length})"


def _count(what: str, value: object, minimum: int) -> int:
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"TeamPolicy: {what} must be an integer, got {value!r}") from None
    if n < minimum:
        raise ValueError(f"TeamPolicy: {what} must be at least {minimum}, got {n}")
    return n


class TeamMember:
    """The team member a TeamPolicy workunit receives first (``team_member: pk.TeamMember``).

    ``league_rank()`` / ``league_size()``: this team's index in the league and the
    number of teams; ``team_rank()`` / ``team_size()``: this thread's index in its team
    and the team's size; ``team_barrier()``: wait for the whole team;
    ``team_scratch(level)`` / ``thread_scratch(level)``: the scratch memory to build a
    ``ScratchView1D/2D`` in.
    """

    def __init__(
        self, league_rank: int, league_size: int, team_rank: int, team_size: int, team: Any
    ) -> None:
        self._league_rank = league_rank
        self._league_size = league_size
        self._team_rank = team_rank
        self._team_size = team_size
        self._team = team  # the Debug space's shared state of this team

    def league_rank(self) -> int:
        """This team's index in the league, ``0 <= league_rank < league_size``."""
        return self._league_rank

    def league_size(self) -> int:
        """The number of teams."""
        return self._league_size

    def team_rank(self) -> int:
        """This thread's index in its team, ``0 <= team_rank < team_size``."""
        return self._team_rank

    def team_size(self) -> int:
        """The number of threads in a team."""
        return self._team_size

    def team_barrier(self) -> None:
        """Wait until every thread of the team has reached this barrier."""
        self._team.barrier(self)

    def team_scratch(self, level: int) -> Any:
        """The team's scratch memory at ``level``, for ``pk.ScratchView1D(..., n)``."""
        return self._team.scratch(self, level, per_thread=False)

    def thread_scratch(self, level: int) -> Any:
        """This thread's own scratch memory at ``level``, for ``pk.ScratchView1D``."""
        return self._team.scratch(self, level, per_thread=True)

    def __repr__(self) -> str:
        return (
            f"TeamMember(league_rank={self._league_rank}/{self._league_size}, "
            f"team_rank={self._team_rank}/{self._team_size})"
        )


@dataclass(frozen=True)
class NestedRange:
    """A range inside a team: what ``TeamThreadRange`` & co. return.

    ``kind``: "team_thread" (indices split among the team's threads), "thread_vector"
    (every index, in the calling thread), "team_vector" (split among the team's threads
    and their vector lanes: as team_thread on CPUs), "team_thread_md" (a box of indices
    split among the team's threads).
    """

    kind: str
    member: TeamMember
    begins: tuple[int, ...]
    ends: tuple[int, ...]


def _nested(kind: str, name: str, member: object, bounds: tuple[object, ...]) -> NestedRange:
    if not isinstance(member, TeamMember):
        raise TypeError(f"{name} needs the team member first, got {member!r}")
    if len(bounds) == 1:
        begin, end = 0, operator.index(bounds[0])  # type: ignore[arg-type]
    elif len(bounds) == 2:
        begin, end = (operator.index(b) for b in bounds)  # type: ignore[arg-type]
    else:
        raise TypeError(f"{name} takes (team_member, count) or (team_member, begin, end)")
    return NestedRange(kind, member, (begin,), (end,))


def TeamThreadRange(member: TeamMember, *bounds: int) -> NestedRange:  # noqa: N802
    """``TeamThreadRange(team_member, count)`` or ``(team_member, begin, end)``: indices
    split among the threads of the team."""
    return _nested("team_thread", "TeamThreadRange", member, bounds)


def ThreadVectorRange(member: TeamMember, *bounds: int) -> NestedRange:  # noqa: N802
    """``ThreadVectorRange(team_member, count)`` or ``(team_member, begin, end)``: every
    index, run by the calling thread (its vector lanes on a GPU)."""
    return _nested("thread_vector", "ThreadVectorRange", member, bounds)


def TeamVectorRange(member: TeamMember, *bounds: int) -> NestedRange:  # noqa: N802
    """``TeamVectorRange(team_member, count)`` or ``(team_member, begin, end)``: indices
    split among the team's threads and their vector lanes."""
    return _nested("team_vector", "TeamVectorRange", member, bounds)


def TeamThreadMDRange(member: TeamMember, *extents: int) -> NestedRange:  # noqa: N802
    """``TeamThreadMDRange(team_member, n0, n1[, n2])``: the index tuples of a box,
    split among the threads of the team; the body takes ``(i, j[, k])``."""
    if not isinstance(member, TeamMember):
        raise TypeError(f"TeamThreadMDRange needs the team member first, got {member!r}")
    if not 2 <= len(extents) <= 3:
        raise TypeError("TeamThreadMDRange takes (team_member, n0, n1[, n2])")
    ends = tuple(operator.index(n) for n in extents)
    return NestedRange("team_thread_md", member, (0,) * len(ends), ends)


def single(scope: PerTeam | PerThread, body: Any) -> None:
    """``pk.single(pk.PerTeam(team_member), body)``: ``body()`` once per team (by its
    thread 0; no barrier is implied); ``pk.PerThread``: once per thread."""
    if not isinstance(scope, PerTeam | PerThread) or not isinstance(scope.value, TeamMember):
        raise TypeError("pk.single takes pk.PerTeam(team_member) or pk.PerThread(team_member)")
    if isinstance(scope, PerThread) or scope.value.team_rank() == 0:
        body()


@dataclass(frozen=True)
class ScratchAnnotation:
    """``pk.ScratchView1D[pk.double]``: a scratch view's rank and element type."""

    rank: int
    dtype: DataType

    def shmem_size(self, *extents: int) -> int:
        """Bytes a scratch view of these extents takes, rounded up to 8 bytes: what to
        pass to ``set_scratch_size``."""
        if len(extents) != self.rank:
            raise TypeError(f"ScratchView{self.rank}D.shmem_size takes {self.rank} extents")
        n = self.dtype.np_dtype.itemsize
        for extent in extents:
            n *= operator.index(extent)
        return -(-n // SCRATCH_ALIGNMENT) * SCRATCH_ALIGNMENT


class ScratchView:
    """The base of ``ScratchView1D`` ... ``ScratchView8D`` (PyKokkos' ``pk.ScratchView``),
    for ``isinstance`` and ``issubclass`` checks."""


def _scratch_view_class(rank: int) -> type:
    class _ScratchViewND(ScratchView):
        __doc__ = (
            f"``ScratchView{rank}D(team_member.team_scratch(level), n0{', n1' * (rank > 1)})``:"
            f" a rank-{rank} view in team scratch memory, annotated "
            f"``s: pk.ScratchView{rank}D[pk.double] = ...``; "
            f"``pk.ScratchView{rank}D[T].shmem_size(...)`` gives its bytes."
        )

        def __class_getitem__(cls, item: object) -> ScratchAnnotation:
            return ScratchAnnotation(rank, to_datatype(item))

        @staticmethod
        def shmem_size(*extents: int) -> int:
            raise TypeError(
                f"ScratchView{rank}D.shmem_size needs the element type: "
                f"pk.ScratchView{rank}D[pk.double].shmem_size(...)"
            )

        def __new__(cls, scratch: Any, *extents: int, dtype: object = None) -> Any:
            # ``dtype``: the element type of the annotation ``s: pk.ScratchView1D[T] = ...``
            # (the Debug space passes it; float64 when None).
            if not hasattr(scratch, "view_of"):
                raise TypeError(
                    f"ScratchView{rank}D takes team_member.team_scratch(level) or "
                    f"team_member.thread_scratch(level) first, got {scratch!r}"
                )
            return scratch.view_of(rank, extents, dtype)

    _ScratchViewND.__name__ = _ScratchViewND.__qualname__ = f"ScratchView{rank}D"
    return _ScratchViewND


ScratchView1D = _scratch_view_class(1)
ScratchView2D = _scratch_view_class(2)
ScratchView3D = _scratch_view_class(3)
ScratchView4D = _scratch_view_class(4)
ScratchView5D = _scratch_view_class(5)
ScratchView6D = _scratch_view_class(6)
ScratchView7D = _scratch_view_class(7)
ScratchView8D = _scratch_view_class(8)
