"""Which indices can stop at a breakpoint, from conditions on the index alone."""

from __future__ import annotations

import numpy as np
import pytest

from pkdb.agent.index_conditions import debug_indices


def where(conditions, begin=0, end=40, **scalars):
    mask = debug_indices(conditions, "j", scalars, begin, end)
    return None if mask is None else (np.flatnonzero(mask) + begin).tolist()


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("j == 10", [10]),
        ("j % 7 == 3 and j > 20", [24, 31, 38]),
        ("not (j < 37)", [37, 38, 39]),
        ("3 <= j < 6", [3, 4, 5]),
        ("j == cols - 1", [7]),
        ("j * 2 + 1 == 21 or j // 10 == 3", [10, *range(30, 40)]),
        ("-j == -2", [2]),
        ("j == 2.0 * scale", [5]),
        ("flag and j == 1", [1]),
        ("cols > 100", []),  # no index: the same for all
        ("j == 99", []),
    ],
)
def test_the_indices_where_a_condition_holds(condition, expected):
    assert where([condition], cols=8, scale=2.5, flag=True) == expected


def test_several_breakpoints_add_up_and_ranges_may_start_anywhere():
    assert where(["j == 3", "j == 35"]) == [3, 35]
    assert where(["j % 2 == 1"], begin=-3, end=3) == [-3, -1, 1]  # Python's %: -3 % 2 == 1
    assert where(["j == 5"], begin=5, end=5) == []


@pytest.mark.parametrize(
    "conditions",
    [
        [None],  # an unconditional breakpoint stops at every index
        ["j == 3", ""],
        ["temp2 > 1.0"],  # a local of the kernel
        ["A_view[j] > 0"],  # a view
        ["abs(j) == 3"],  # a call
        ["j % k == 0"],  # k is 0: Python raises where NumPy gives 0
        ["j * big == 0"],  # int64 would overflow
        ["j ** 2 == 9"],
        ["j = 3"],  # not an expression
    ],
)
def test_what_only_the_debug_build_can_decide(conditions):
    scalars = {"k": 0, "big": 2**61, "A_view": np.ones(40)}
    assert debug_indices(conditions, "j", scalars, 0, 40) is None


def test_large_ranges_are_evaluated_in_chunks():
    mask = debug_indices(["j % 100000 == 7"], "j", {}, 0, 1_000_000)
    assert mask is not None and np.flatnonzero(mask).tolist() == list(range(7, 1_000_000, 100000))


def test_the_same_launch_again_gets_the_same_read_only_array():
    first = debug_indices(["j == cols"], "j", {"cols": 3}, 0, 10)
    assert first is debug_indices(["j == cols"], "j", {"cols": 3}, 0, 10)
    assert not first.flags.writeable
    assert np.flatnonzero(debug_indices(["j == cols"], "j", {"cols": 4}, 0, 10)).tolist() == [4]
