"""Rank sets: what `rank 2`, `ranks 0-3`, `on 1,3:` accept, refuse, and print."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkdb.mpi.ranksets import RankSetError, describe_ranks, format_ranks, parse_ranks


@pytest.mark.parametrize(
    ("text", "ranks"),
    [
        ("2", {2}),
        ("0-3", {0, 1, 2, 3}),
        ("1,3", {1, 3}),
        ("0-2, 6", {0, 1, 2, 6}),
        ("all", set(range(8))),
        ("*", set(range(8))),
        ("3-3", {3}),
        ("1,1,0-1", {0, 1}),
    ],
)
def test_parse(text: str, ranks: set[int]) -> None:
    assert parse_ranks(text, 8) == ranks


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no rank set"),
        ("1,", "no rank set"),
        ("x", "'x' is not a rank"),
        ("1-x", "'1-x' is not a rank"),
        ("3-1", "from the lower rank to the higher"),
        ("8", "this job has 8 ranks (0-7)"),
        ("2-9", "this job has 8 ranks"),
        ("-1", "is not a rank"),
    ],
)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(RankSetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_ranks(text, 8)


def test_one_rank_job_says_rank() -> None:
    with pytest.raises(RankSetError, match=r"this job has 1 rank \(0-0\)"):
        parse_ranks("1", 1)


@pytest.mark.parametrize(
    ("ranks", "text"),
    [
        ({0, 1, 2, 3}, "0-3"),
        ({0, 1, 3}, "0,1,3"),
        ({0, 1, 2, 3, 6}, "0-3,6"),
        ({5}, "5"),
        ({1, 2, 4, 5, 6, 9}, "1,2,4-6,9"),
        (set(), ""),
    ],
)
def test_format(ranks: set[int], text: str) -> None:
    assert format_ranks(ranks) == text


def test_describe() -> None:
    assert describe_ranks([2]) == "rank 2"
    assert describe_ranks([3, 0, 1, 2]) == "ranks 0-3"


@given(st.sets(st.integers(min_value=0, max_value=63), min_size=1))
def test_format_parses_back(ranks: set[int]) -> None:
    assert parse_ranks(format_ranks(ranks), 64) == ranks
