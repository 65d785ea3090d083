"""`break LINE if rank == 2`: conditions on the rank alone are decided by the front end."""

from __future__ import annotations

import pytest

from pkdb.mpi.options import split_mpi_argv, wants_mpi
from pkdb.mpi.rank import rank_from_environment
from pkdb.mpi.rank_conditions import ranks_where, split_rank_break


@pytest.mark.parametrize(
    ("line", "ranks"),
    [
        ("break 30 if rank == 2", [2]),
        ("b 30, rank == 2", [2]),
        ("tbreak halo.py:30 if rank in (1, 3)", [1, 3]),
        ("break 30 if rank % 2 == 0", [0, 2]),
        ("break 30 if rank != 0 and rank < 3", [1, 2]),
        ("break 30 if not rank", [0]),
        ("break 30 if rank % 0 == 1", []),
    ],
)
def test_rank_conditions(line: str, ranks: list[int]) -> None:
    split = split_rank_break(line)
    assert split is not None
    word, where, condition = split
    assert word in ("b", "break", "tbreak") and where.endswith("30")
    assert ranks_where(condition, range(4)) == ranks


@pytest.mark.parametrize(
    "line",
    [
        "break 30",
        "break 30 if x == 2",  # the program's names: the ranks' pdb decides
        "break 30 if rank == x",
        "break 30 if rank == 'a'",
        "break 30 if rank.bit_length() == 2",
        "break 30 if __import__('os').system('true') or rank",
        "p rank == 2",
        "break 30 if rank ==",
    ],
)
def test_other_lines_go_to_the_ranks(line: str) -> None:
    assert split_rank_break(line) is None


@pytest.mark.parametrize(
    ("argv", "mpi"),
    [
        (["--np", "4", "prog.py"], True),
        (["--np=4", "prog.py"], True),
        (["-c", "--np", "prog.py"], False),  # a command's text, not an option
        (["prog.py", "--np", "4"], False),  # the program's own argument
        (["--rank", "/tmp/x"], True),
        (["-x", "f", "--launcher", "none", "p.py"], True),
        (["-m", "mod", "--np"], False),
    ],
)
def test_wants_mpi(argv: list[str], mpi: bool) -> None:
    assert wants_mpi(argv) is mpi


def test_split_mpi_argv() -> None:
    assert split_mpi_argv(["--np", "4", "--patience", "5", "p.py", "-n", "3"]) == (
        ["--np", "4", "--patience", "5", "p.py"],
        ["-n", "3"],
    )


def test_rank_from_environment() -> None:
    assert rank_from_environment({"OMPI_COMM_WORLD_RANK": "3"}) == 3
    assert rank_from_environment({"PMI_RANK": "5"}) == 5
    assert rank_from_environment({"SLURM_PROCID": "x"}) is None
    assert rank_from_environment({}) is None
