"""Kokkos' built-in reducers: parallel_reduce(..., reducer=pk.Max) and the others, on
ranges, MDRange boxes and TeamPolicies, in release and debug builds and the Debug space,
against what Python computes; empty launches give the identity; what is not supported
says so."""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing
from team_kernels import team_extremes_where

import pkernels as pk


@pk.workunit
def prod_int(i: int, acc: pk.Acc[pk.int64], data):
    acc *= data[i]


@pk.workunit
def min_float(i: int, acc: pk.Acc[pk.double], data):
    if data[i] < acc:
        acc = data[i]


@pk.workunit
def max_float(i: int, acc: pk.Acc[pk.double], data):
    acc = max(acc, data[i])


@pk.workunit
def max_int(i: int, acc: pk.Acc[pk.int32], data):
    if data[i] > acc:
        acc = data[i]


@pk.workunit
def band_int(i: int, acc: pk.Acc[pk.int64], data):
    acc &= data[i]


@pk.workunit
def bor_int(i: int, acc: pk.Acc[pk.int64], data):
    acc |= data[i]


@pk.workunit
def land_bool(i: int, acc: pk.Acc[pk.bool], data):
    acc = acc and data[i] > 0


@pk.workunit
def lor_bool(i: int, acc: pk.Acc[pk.bool], data):
    acc = acc or data[i] > 0


@pk.workunit
def sum_float(i: int, acc: pk.Acc[pk.double], data):
    acc += data[i]


@pk.workunit
def box_max(i: int, j: int, acc: pk.Acc[pk.double], A):
    if A[i, j] > acc:
        acc = A[i, j]


RNG = np.random.default_rng(21)
FLOATS = RNG.normal(size=1000)
SMALL = RNG.integers(1, 4, 40).astype(np.int64)  # a product that fits in int64
BITS = RNG.integers(0, 2**20, 300).astype(np.int64) | 0b1001
SIGNED = RNG.integers(-100, 100, 500).astype(np.int32)

CASES = [
    ("Prod", pk.Prod, prod_int, SMALL, functools.reduce(operator.mul, SMALL.tolist(), 1)),
    ("Min", pk.Min, min_float, FLOATS, float(FLOATS.min())),
    ("Max", pk.Max, max_float, FLOATS, float(FLOATS.max())),
    ("Max int32", pk.Max, max_int, SIGNED, int(SIGNED.max())),
    ("BAnd", pk.BAnd, band_int, BITS, functools.reduce(operator.and_, BITS.tolist())),
    ("BOr", pk.BOr, bor_int, BITS, functools.reduce(operator.or_, BITS.tolist())),
    ("LAnd", pk.LAnd, land_bool, FLOATS, bool((FLOATS > 0).all())),
    ("LAnd true", pk.LAnd, land_bool, np.abs(FLOATS) + 1, True),
    ("LOr", pk.LOr, lor_bool, FLOATS, True),
    ("LOr false", pk.LOr, lor_bool, -np.abs(FLOATS), False),
    ("Sum", pk.Sum, sum_float, FLOATS, None),
]


@pytest.mark.parametrize("name,reducer,workunit,data,expected", CASES, ids=[c[0] for c in CASES])
def test_reducers_on_a_range(space, name, reducer, workunit, data, expected):
    policy = pk.RangePolicy(space, 0, len(data))
    result = pk.parallel_reduce(policy, workunit, reducer=reducer, data=data)
    if expected is None:  # a sum: rounding depends on the order of the threads' partials
        assert result == pytest.approx(data.sum(), rel=1e-12)
    else:
        assert result == expected and type(result) is type(expected)
    with observing(ForceDebugBuild()):  # the debug build (what pkdb runs) agrees
        again = pk.parallel_reduce(policy, workunit, reducer=reducer, data=data)
    assert again == pytest.approx(result, rel=1e-12)


def test_an_empty_range_gives_the_identity(space):
    empty = pk.RangePolicy(space, 0, 0)
    assert pk.parallel_reduce(empty, min_float, reducer=pk.Min, data=FLOATS) == math.inf
    assert pk.parallel_reduce(empty, max_int, reducer=pk.Max, data=SIGNED) == -(2**31)
    assert pk.parallel_reduce(empty, prod_int, reducer=pk.Prod, data=SMALL) == 1
    assert pk.parallel_reduce(empty, band_int, reducer=pk.BAnd, data=BITS) == -1
    assert pk.parallel_reduce(empty, land_bool, reducer=pk.LAnd, data=FLOATS) is True


def test_a_reducer_over_an_mdrange_box(space):
    A = RNG.normal(size=(13, 17))
    policy = pk.MDRangePolicy(space, [0, 0], [13, 17])
    assert pk.parallel_reduce(policy, box_max, reducer=pk.Max, A=A) == A.max()


@pk.workunit
def team_row_max(team_member: pk.TeamMember, acc: pk.Acc[pk.double], A):
    # Each member takes its share of its team's row; the reducer combines all members.
    row: int = team_member.league_rank()
    j: int = team_member.team_rank()
    while j < A.extent(1):
        if A[row, j] > acc:
            acc = A[row, j]
        j += team_member.team_size()


@pytest.mark.parametrize(
    "space,team",
    [(pk.OpenMP, 1), (pk.OpenMP, 3), (pk.OpenMP, pk.AUTO), (pk.Serial, 1), (pk.Debug, 3)],
)
def test_a_reducer_over_a_team_policy(space, team):
    A = RNG.normal(size=(6, 11))
    policy = pk.TeamPolicy(space, 6, team)
    assert pk.parallel_reduce(policy, team_row_max, reducer=pk.Max, A=A) == A.max()


def test_what_reducers_do_not_take_is_refused():
    with pytest.raises(pk.DispatchError, match=r"reducer= takes one of pk.Sum, pk.Prod"):
        pk.parallel_reduce(4, max_float, reducer=max, data=FLOATS)
    with pytest.raises(pk.TranslationError, match="pk.BAnd reduces integers") as info:
        pk.parallel_reduce(4, min_float, reducer=pk.BAnd, data=FLOATS)
    assert "def min_float(i: int, acc: pk.Acc[pk.double], data):" in str(info.value)
    with pytest.raises(pk.TranslationError, match="pk.BOr reduces integers") as info:
        pk.parallel_reduce(pk.RangePolicy(pk.Debug, 0, 4), min_float, reducer=pk.BOr, data=FLOATS)
    assert "def min_float(i: int, acc: pk.Acc[pk.double], data):" in str(info.value)


# ---------------------------------------------------------------- values with locations


@pk.workunit
def where_largest(i: int, acc: pk.Acc[pk.double], data):
    if data[i] > acc.val:
        acc.val = data[i]
        acc.loc = i


@pk.workunit
def where_smallest(i: int, acc: pk.Acc[pk.int32], data):
    if data[i] < acc.val:
        acc.val = data[i]
        acc.loc = i


@pk.workunit
def extremes(i: int, acc: pk.Acc[pk.float], data):
    acc.min_val = min(acc.min_val, data[i])
    acc.max_val = max(acc.max_val, data[i])


@pk.workunit
def extremes_where(i: int, acc: pk.Acc[pk.double], data):
    if data[i] < acc.min_val:
        acc.min_val = data[i]
        acc.min_loc = i
    if data[i] > acc.max_val:
        acc.max_val = data[i]
        acc.max_loc = i


@pk.workunit
def box_where_largest(i: int, j: int, acc: pk.Acc[pk.int64], A):
    if A[i, j] > acc.val:
        acc.val = A[i, j]
        acc.loc = i * A.extent(1) + j


TIES = RNG.integers(0, 30, 20_000).astype(np.float64)  # each value at hundreds of indices


def test_reducers_with_locations_on_a_range(space):
    # Locations are the first index holding the value, as numpy's argmax, however the
    # range is split among threads.
    policy = pk.RangePolicy(space, 0, len(TIES))
    largest = pk.parallel_reduce(policy, where_largest, reducer=pk.MaxLoc, data=TIES)
    assert largest == (29.0, int(TIES.argmax())) and type(largest) is pk.ValLocScalar
    assert (largest.val, largest.loc) == (29.0, int(TIES.argmax()))
    assert type(largest.val) is float and type(largest.loc) is int
    smallest = pk.parallel_reduce(
        pk.RangePolicy(space, 0, len(SIGNED)), where_smallest, reducer=pk.MinLoc, data=SIGNED
    )
    assert smallest == (int(SIGNED.min()), int(SIGNED.argmin()))
    assert type(smallest.val) is int
    singles = FLOATS.astype(np.float32)
    both = pk.parallel_reduce(
        pk.RangePolicy(space, 0, len(singles)), extremes, reducer=pk.MinMax, data=singles
    )
    assert both == (singles.min(), singles.max()) and type(both) is pk.MinMaxScalar
    where = pk.parallel_reduce(policy, extremes_where, reducer=pk.MinMaxLoc, data=TIES)
    assert where == pk.MinMaxLocScalar(0.0, 29.0, int(TIES.argmin()), int(TIES.argmax()))
    with observing(ForceDebugBuild()):  # the debug build (what pkdb runs) agrees
        assert pk.parallel_reduce(policy, extremes_where, reducer=pk.MinMaxLoc, data=TIES) == where


def test_reducers_with_locations_over_boxes_and_teams(space):
    A = RNG.integers(-(2**40), 2**40, (23, 31))
    box = pk.MDRangePolicy(space, [0, 0], list(A.shape))
    assert pk.parallel_reduce(box, box_where_largest, reducer=pk.MaxLoc, A=A) == (
        A.max(), A.argmax()
    )  # fmt: skip
    B = RNG.normal(size=(12, 19))
    teams = pk.TeamPolicy(space, B.shape[0], 1 if space is pk.Serial else 4)
    got = pk.parallel_reduce(teams, team_extremes_where, reducer=pk.MinMaxLoc, A=B)
    assert got == (B.min(), B.max(), B.argmin(), B.argmax())


def test_an_empty_range_gives_the_identity_with_locations(space):
    empty = pk.RangePolicy(space, 0, 0)
    nowhere = 2**63 - 1  # Kokkos' location of nothing: the largest index
    assert pk.parallel_reduce(empty, where_largest, reducer=pk.MaxLoc, data=TIES) == (
        -math.inf, nowhere
    )  # fmt: skip
    assert pk.parallel_reduce(empty, where_smallest, reducer=pk.MinLoc, data=SIGNED) == (
        2**31 - 1, nowhere
    )  # fmt: skip
    assert pk.parallel_reduce(empty, extremes, reducer=pk.MinMax, data=TIES) == (
        math.inf, -math.inf
    )  # fmt: skip


@pk.workunit
def adds_to_a_pair(i: int, acc: pk.Acc[pk.double], data):
    acc += data[i]


@pk.workunit
def misnamed_field(i: int, acc: pk.Acc[pk.double], data):
    if data[i] > acc.value:
        acc.value = data[i]


@pk.workunit
def float_location(i: int, acc: pk.Acc[pk.double], data):
    if data[i] > acc.val:
        acc.val = data[i]
        acc.loc = data[i]


def test_what_location_reducers_refuse_says_what_to_write(native_space):
    policy = pk.RangePolicy(native_space, 0, 4)
    with pytest.raises(pk.TranslationError, match="accumulator holds several values") as info:
        pk.parallel_reduce(policy, adds_to_a_pair, reducer=pk.MinLoc, data=FLOATS)
    assert "acc += data[i]" in str(info.value)
    assert "`if x[i] < acc.val: acc.val = x[i]; acc.loc = i`" in str(info.value)
    with pytest.raises(pk.TranslationError, match="pk.MaxLoc has no field 'value'; its fields"):
        pk.parallel_reduce(policy, misnamed_field, reducer=pk.MaxLoc, data=FLOATS)
    with pytest.raises(pk.TranslationError, match="the field acc.loc is an int64 but is assigned"):
        pk.parallel_reduce(policy, float_location, reducer=pk.MaxLoc, data=FLOATS)
    with pytest.raises(pk.TranslationError, match=r"'acc' is one number \(reducer=pk.Max\)"):
        pk.parallel_reduce(policy, where_largest, reducer=pk.Max, data=FLOATS)
    with pytest.raises(pk.TranslationError, match="pk.MinMax compares numbers"):
        pk.parallel_reduce(policy, land_bool, reducer=pk.MinMax, data=FLOATS)


def test_the_accumulator_passed_by_name_must_be_the_identity(space):
    # PyKokkos programs pass `acc=0.0`: where every thread starts in Kokkos, so taken;
    # another start value has no agreed meaning and is refused.
    policy = pk.RangePolicy(space, 0, len(FLOATS))
    total = pk.parallel_reduce(policy, sum_float, acc=0.0, data=FLOATS)
    assert total == pytest.approx(FLOATS.sum(), rel=1e-12)
    least = pk.parallel_reduce(policy, min_float, reducer=pk.Min, acc=math.inf, data=FLOATS)
    assert least == FLOATS.min()
    with pytest.raises(pk.DispatchError, match=r"acc=5.0 would start the reduction; every"):
        pk.parallel_reduce(policy, sum_float, acc=5.0, data=FLOATS)
    box = pk.MDRangePolicy(space, [0, 0], [3, 4])
    A = RNG.normal(size=(3, 4))
    assert pk.parallel_reduce(box, box_max, reducer=pk.Max, acc=-math.inf, A=A) == A.max()
