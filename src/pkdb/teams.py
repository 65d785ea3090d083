"""Team kernels (``TeamPolicy``) at a kernel stop: where a thread is in the league.

A TeamPolicy workunit's first parameter is its team member. In the generated C++ it is
a ``pk_rt::TeamMember&`` with int64 fields ``league_rank, league_size, team_rank,
team_size`` and ``shared`` (the team's shared state: one address per running team); in
Python the user calls methods (``team_member.league_rank()``). This module reads gdb's
rendering of that struct (:class:`TeamPosition`), carries it to the agent over the JSON
channel (:meth:`TeamPosition.encode`, :func:`decode_values`) and gives the agent's
evaluation an object with the Python methods (:class:`TeamMemberValue`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The team member's methods that read a field of the C++ struct of the same name.
TEAM_FIELDS = ("league_rank", "league_size", "team_rank", "team_size")
#: The launcher's team_barrier line for the barrier at the end of each league rank.
END_OF_WORKUNIT_LINE = -1

_MARKER = "__pkdb_team_member__"
_FIELD = re.compile(r"\b(league_rank|league_size|team_rank|team_size|shared) = (-?\w+)")


@dataclass(frozen=True)
class TeamPosition:
    """A kernel thread's place in a TeamPolicy launch."""

    league_rank: int
    league_size: int
    team_rank: int
    team_size: int
    shared: int = 0  # address of the team's shared state (same for teammates)

    @classmethod
    def parse(cls, text: str) -> TeamPosition | None:
        """Read gdb's ``{league_rank = 0, league_size = 6, ...}`` (or ``@0x..: {...}``)."""
        found: dict[str, int] = {}
        for name, value in _FIELD.findall(text):
            try:
                found.setdefault(name, int(value, 0))
            except ValueError:
                return None
        if any(name not in found for name in TEAM_FIELDS):
            return None
        return cls(**{name: found[name] for name in TEAM_FIELDS}, shared=found.get("shared", 0))

    def encode(self) -> dict[str, Any]:
        """A JSON-able stand-in for the team member, for the agent's evaluation."""
        return {_MARKER: {name: getattr(self, name) for name in TEAM_FIELDS}}

    def label(self) -> str:
        """``league 0 team_rank 1``."""
        return f"league {self.league_rank} team_rank {self.team_rank}"


class TeamMemberValue:
    """What ``team_member`` is in Python expressions at a kernel stop: its read-only
    methods answer for the selected thread."""

    def __init__(self, league_rank: int, league_size: int, team_rank: int, team_size: int) -> None:
        self._fields = {
            "league_rank": league_rank,
            "league_size": league_size,
            "team_rank": team_rank,
            "team_size": team_size,
        }

    def league_rank(self) -> int:
        """The league rank (the team's index) this thread runs."""
        return self._fields["league_rank"]

    def league_size(self) -> int:
        """How many teams the league has."""
        return self._fields["league_size"]

    def team_rank(self) -> int:
        """This thread's rank in its team."""
        return self._fields["team_rank"]

    def team_size(self) -> int:
        """How many threads a team has."""
        return self._fields["team_size"]

    def team_barrier(self) -> None:
        """Refused: a barrier needs the held threads of the team."""
        raise RuntimeError("team_barrier() cannot run at a kernel stop; use 'next' over it")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TeamMemberValue) and other._fields == self._fields

    def __hash__(self) -> int:
        return hash(tuple(self._fields.values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value}" for name, value in self._fields.items())
        return f"TeamMember({inner})"


def is_encoded(value: object) -> bool:
    """True for :meth:`TeamPosition.encode`'s stand-in."""
    return isinstance(value, dict) and set(value) == {_MARKER}


def decode(value: object) -> object:
    """The :class:`TeamMemberValue` for an encoded team member; anything else as is."""
    if not is_encoded(value):
        return value
    fields = value[_MARKER]  # type: ignore[index]
    return TeamMemberValue(**{name: int(fields[name]) for name in TEAM_FIELDS})


def decode_values(values: dict[str, Any]) -> dict[str, Any]:
    """Kernel variables as sent by the front end, with team members, structs, float32
    and complex values as objects (and a GPU scratch view's copy as a NumPy array)."""
    from . import complex_values, float32, memviews
    from .structs import decode as decode_struct

    return {
        name: memviews.decode_copy(
            complex_values.decode(float32.decode(decode_struct(decode(value))))
        )
        for name, value in values.items()
    }
