"""Subviews in kernels: `row = A[j, :]` (Kokkos' subview, PyKokkos' `A[j, :]`), read,
written, sliced again, measured with len/extent/shape, used in atomics and in team
bodies; Python's slice rules; out-of-range indices caught in debug builds by the
subview's own extent; every result against NumPy, on every space."""

from __future__ import annotations

import re

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk


@pk.workunit
def row_dot(j: int, acc: pk.Acc[pk.double], A, x):
    row = A[j, :]
    total: float = 0.0
    for i in range(len(row)):
        total += row[i] * x[i]
    acc += total


@pk.workunit
def column_scale(j: int, A, out, factor: float):
    col = A[:, j]  # strided
    dst = out[:, j]
    for i in range(col.extent(0)):
        dst[i] = factor * col[i]


@pk.workunit
def python_slices(i: int, A, out):
    # A[i, 1:-1:2], then the last two of those, then negative and clamped bounds.
    part = A[i, 1:-1:2]
    tail = part[-2:]
    out[i, 0] = len(part)
    out[i, 1] = tail[0] + 10 * tail[1]
    past_the_end = A[i, 100:]
    out[i, 2] = len(past_the_end)
    last_three = A[i, -3:]
    out[i, 3] = len(last_three)
    whole = A[i]  # fewer indices than axes: the row, as NumPy
    out[i, 4] = whole.shape[0]


@pk.workunit
def block_sum(b: int, acc: pk.Acc[pk.double], A, size: int):
    block = A[b * size : (b + 1) * size, 1:]
    for r in range(block.extent(0)):
        for c in range(block.extent(1)):
            acc += block[r, c]


@pk.workunit
def rows_in_a_loop(i: int, A, out):
    total: float = 0.0
    for j in range(A.extent(0)):
        row = A[j]  # rebound at every iteration, as in Python
        total += row[i]
    out[i] = total


@pk.workunit
def count_into_row(i: int, counts, labels):
    mine = counts[i % 2, :]
    pk.atomic_add(mine, [labels[i]], 1)


def test_a_row_subview_in_a_reduction(space):
    rng = np.random.default_rng(1)
    A, x = rng.random((6, 5)), rng.random(5)
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 6), row_dot, A=A, x=x)
    assert total == pytest.approx((A @ x).sum(), rel=1e-13)


def test_strided_column_subviews_read_and_written(space):
    A = np.arange(12.0).reshape(3, 4)
    out = np.zeros((3, 4))
    pk.parallel_for(pk.RangePolicy(space, 0, 4), column_scale, A=A, out=out, factor=2.0)
    np.testing.assert_array_equal(out, 2.0 * A)


def test_slices_follow_pythons_rules(space):
    A = np.arange(40.0).reshape(4, 10)
    out = np.zeros((4, 5))
    pk.parallel_for(pk.RangePolicy(space, 0, 4), python_slices, A=A, out=out)
    for i in range(4):
        part = A[i, 1:-1:2]
        tail = part[-2:]
        expected = [len(part), tail[0] + 10 * tail[1], len(A[i, 100:]), len(A[i, -3:]), 10]
        np.testing.assert_array_equal(out[i], expected)


def test_two_dimensional_blocks_and_rebinding_in_a_loop(space):
    A = np.random.default_rng(2).random((6, 4))
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 3), block_sum, A=A, size=2)
    assert total == pytest.approx(A[:, 1:].sum(), rel=1e-13)
    out = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(space, 0, 4), rows_in_a_loop, A=A, out=out)
    np.testing.assert_allclose(out, A.sum(axis=0), rtol=1e-13)


def test_atomics_on_a_subview(space):
    labels = np.array([0, 2, 2, 1, 0, 2, 1, 1], dtype=np.int64)
    counts = np.zeros((2, 3), dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 8), count_into_row, counts=counts, labels=labels)
    expected = np.zeros((2, 3), dtype=np.int64)
    for i, label in enumerate(labels):
        expected[i % 2, label] += 1
    np.testing.assert_array_equal(counts, expected)


def test_a_team_body_reads_the_workunits_subview(make_module):
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def k(team_member: pk.TeamMember, acc: pk.Acc[pk.double], A):
    row = A[team_member.league_rank(), :]
    def add(i: int, inner: pk.Acc[pk.double]):
        inner += row[i]
    total: float = pk.parallel_reduce(pk.TeamThreadRange(team_member, len(row)), add)
    if team_member.team_rank() == 0:
        acc += total
"""
    )
    A = np.random.default_rng(4).random((5, 7))
    for space in (pk.OpenMP, pk.Serial, pk.Debug):
        total = pk.parallel_reduce(pk.TeamPolicy(space, 5, pk.AUTO), module.k, A=A)
        assert total == pytest.approx(A.sum(), rel=1e-13)


@pk.workunit
def past_the_subview(i: int, A, out):
    row = A[i, 0:3]
    out[i] = row[i + 1]  # inside A, past the subview for i >= 2


@pk.workunit
def fixed_index_out_of_range(i: int, A, out):
    row = A[i + 1]
    out[i] = row[0]


def test_debug_builds_check_indices_against_the_subview(native_space):
    A = np.arange(20.0).reshape(4, 5)
    out = np.zeros(4)
    with observing(ForceDebugBuild()):
        with pytest.raises(pk.KernelIndexError, match=r"view 'row' with extent 3") as info:
            pk.parallel_for(pk.RangePolicy(native_space, 0, 4), past_the_subview, A=A, out=out)
        line = next(n for n, text in enumerate(open(__file__), 1) if "out[i] = row[i + 1]" in text)
        # i = 2 and i = 3 are past the subview (threads may report either first).
        assert re.match(
            rf"{re.escape(__file__)}:{line}: index [34] is out of range", str(info.value)
        )
        with pytest.raises(pk.KernelIndexError, match=r"index 4 is out of range .* view 'A'"):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 4), fixed_index_out_of_range, A=A, out=out
            )
    # Release builds run the same subviews without the checks: in range, the same results.
    pk.parallel_for(pk.RangePolicy(native_space, 0, 2), past_the_subview, A=A, out=out)
    np.testing.assert_array_equal(out[:2], [A[0, 1], A[1, 2]])


def test_subview_misuse_is_a_clear_error(make_module):
    cases = {
        "    total = helper(A[i, :])\n": "a slice of a view here: assign the subview to a name",
        "    row = A[i, :]\n    total = helper(row)\n": "subview 'row' must be indexed here",
        "    row = A[i, ::-1]\n    total = row[0]\n": "a subview's step must be a positive integer",
        "    row = A[i, :]\n    total = row[0, 1]\n": "subview 'row' has rank 1 but is indexed with 2",
        "    row = A[i, :]\n    row = A[1 - i, 1:]\n    total = row[0]\n": None,  # same axes kept
        "    row = A[i, :]\n    row = A[:, i]\n    total = row[0]\n": "keeps other axes",
        "    row = A[i, :]\n    row = 2.0\n    total = 0.0\n": "cannot rebind view 'row'",
        "    total = len(A[i, 1:])\n": "len\\(\\) of a subview: assign the subview to a name",
    }
    for body, message in cases.items():
        module = make_module(
            f"""
import pkernels as pk

@pk.function
def helper(v) -> float:
    return v[0]

@pk.workunit
def k(i: int, A, out):
{body}    out[i] = total
"""
        )
        policy = pk.RangePolicy(pk.OpenMP, 0, 2)
        arrays = {"A": np.ones((2, 2)), "out": np.zeros(2)}
        if message is None:
            pk.parallel_for(policy, module.k, **arrays)
        else:
            with pytest.raises(pk.TranslationError, match=message):
                pk.parallel_for(policy, module.k, **arrays)
