"""Team kernels' small parts, without processes: gdb's team member text, its Python
stand-in, and conditions over it."""

from __future__ import annotations

import json

import pytest

from pkdb.gdbexpr import ConditionError, python_to_c
from pkdb.teams import TeamMemberValue, TeamPosition, decode, decode_values, is_encoded

GDB_TEXT = (
    "@0x7ffd88c22940: {league_rank = 3, league_size = 6, team_rank = 1, team_size = 2, "
    "shared = 0x5630e04da490, team_used = {0, 0}, thread_used = {0, 0}}"
)


def test_team_position_from_gdb_text():
    position = TeamPosition.parse(GDB_TEXT)
    assert position == TeamPosition(3, 6, 1, 2, shared=0x5630E04DA490)
    assert position.label() == "league 3 team_rank 1"
    assert TeamPosition.parse("@0x7ffd88c22940") is None  # a bare reference: no fields
    assert TeamPosition.parse("{league_rank = 1}") is None


def test_team_member_travels_as_json_and_answers_its_methods():
    encoded = json.loads(json.dumps(TeamPosition.parse(GDB_TEXT).encode()))
    assert is_encoded(encoded) and not is_encoded({"league_rank": 3})
    values = decode_values({"team_member": encoded, "row": 3})
    member = values["team_member"]
    assert isinstance(member, TeamMemberValue) and values["row"] == 3
    assert (member.league_rank(), member.league_size()) == (3, 6)
    assert (member.team_rank(), member.team_size()) == (1, 2)
    assert repr(member) == "TeamMember(league_rank=3, league_size=6, team_rank=1, team_size=2)"
    assert decode(encoded) == member and decode(5) == 5
    with pytest.raises(RuntimeError, match="team_barrier"):
        member.team_barrier()


def test_conditions_read_the_team_member_fields():
    c = python_to_c("team_member.league_rank() == 2 and i > 0", {}, "team_member")
    assert c == "((team_member.league_rank == 2) && (i > 0))"
    assert python_to_c("tm.team_rank() + tm.team_size() * tm.league_size()", {}, "tm") == (
        "(tm.team_rank + (tm.team_size * tm.league_size))"
    )
    with pytest.raises(ConditionError, match="methods"):
        python_to_c("team_member == 1", {}, "team_member")
    with pytest.raises(ConditionError):
        python_to_c("team_member.team_scratch(0) == 1", {}, "team_member")
    with pytest.raises(ConditionError):  # not a team kernel: no team member
        python_to_c("team_member.league_rank() == 1", {})
