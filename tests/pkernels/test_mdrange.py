"""``pk.MDRangePolicy``: kernels over 2- to 4-dimensional index boxes, on every space,
in release and debug builds, and the errors of a bad policy or workunit."""

from __future__ import annotations

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk


@pk.workunit
def laplacian(i, j, out, a):
    out[i][j] = a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1] - 4.0 * a[i][j]


@pk.workunit
def combine3(i, j, k, out, a, b, scale: float):
    out[i, j, k] = a[i, j, k] * scale + b[k, j, i] + i * 100 + j * 10 + k


@pk.workunit
def row_sums3(i, j, k, out, a, n: int):
    # A loop that stores into a view: the release build's restrict check applies.
    s: float = 0
    for m in range(n):
        s += a[i, j, m] * (k + 1)
    out[i, j, k] = s


@pk.workunit
def mark4(i, j, k, m, out):
    out[i, j, k, m] += 1


@pk.workunit
def weighted_sum(i, j, acc, a):
    acc += a[i, j] * (i + 1) - j


@pk.workunit
def count_cells(i: pk.int32, j: pk.int32, acc: pk.Acc[pk.int64]):
    acc += 1


@pk.workunit
def one_index_only(i, out):
    out[i] = 1.0


@pk.workunit
def one_index_reduce(i, acc):
    acc += i


@pk.workunit
def scan_like(i, j, acc, last_pass, out):
    acc += 1


def _laplacian_reference(a: np.ndarray) -> np.ndarray:
    ref = np.zeros_like(a)
    ref[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4.0 * a[1:-1, 1:-1]
    return ref


def test_2d_stencil(space):
    rng = np.random.default_rng(1)
    a = rng.random((37, 53))
    out = np.zeros_like(a)
    policy = pk.MDRangePolicy(space, [1, 1], [a.shape[0] - 1, a.shape[1] - 1])
    pk.parallel_for(policy, laplacian, out=out, a=a)
    np.testing.assert_array_equal(out, _laplacian_reference(a))


def test_3d_kernel(space):
    rng = np.random.default_rng(2)
    a = rng.random((6, 7, 8))
    b = rng.random((8, 7, 6))
    out = np.zeros_like(a)
    pk.parallel_for(
        pk.MDRangePolicy(space, [0, 0, 0], [6, 7, 8]), combine3, out=out, a=a, b=b, scale=2.5
    )
    i, j, k = np.meshgrid(np.arange(6), np.arange(7), np.arange(8), indexing="ij")
    ref = a * 2.5 + b.transpose(2, 1, 0) + i * 100 + j * 10 + k
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


def test_3d_kernel_with_a_storing_loop(space):
    a = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)
    out = np.zeros((4, 5, 3))
    pk.parallel_for(pk.MDRangePolicy(space, [0, 0, 0], [4, 5, 3]), row_sums3, out=out, a=a, n=6)
    ref = a.sum(axis=2)[:, :, None] * np.arange(1, 4)
    np.testing.assert_array_equal(out, ref)


def test_4d_every_index_once(space):
    out = np.zeros((3, 4, 2, 5), dtype=np.int64)
    pk.parallel_for(pk.MDRangePolicy(space, [0, 1, 0, 2], [3, 4, 2, 5]), mark4, out=out)
    ref = np.zeros_like(out)
    ref[:, 1:, :, 2:] = 1
    np.testing.assert_array_equal(out, ref)


def test_2d_reduce(space):
    rng = np.random.default_rng(3)
    a = rng.random((40, 30))
    total = pk.parallel_reduce(pk.MDRangePolicy(space, [2, 3], [40, 30]), weighted_sum, a=a)
    i, j = np.meshgrid(np.arange(40), np.arange(30), indexing="ij")
    assert isinstance(total, float)
    assert total == pytest.approx((a * (i + 1) - j)[2:, 3:].sum(), rel=1e-12)


def test_integer_reduce_with_annotated_indices(space):
    total = pk.parallel_reduce(pk.MDRangePolicy(space, [-3, 5], [4, 9]), count_cells)
    assert total == 7 * 4 and isinstance(total, int)


def test_begins_not_zero(space):
    out = np.zeros((10, 12))
    a = np.random.default_rng(4).random((10, 12))
    pk.parallel_for(pk.MDRangePolicy(space, [3, 5], [9, 11]), laplacian, out=out, a=a)
    ref = np.zeros_like(a)
    ref[3:9, 5:11] = _laplacian_reference(a)[3:9, 5:11]
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("begins, ends", [([0, 0], [0, 5]), ([2, 3], [5, 3]), ([4, 0], [1, 9])])
def test_empty_boxes(space, begins, ends):
    out = np.zeros((6, 10))
    a = np.ones((6, 10))
    pk.parallel_for(pk.MDRangePolicy(space, begins, ends), laplacian, out=out, a=a)
    assert not out.any()
    assert pk.parallel_reduce(pk.MDRangePolicy(space, begins, ends), count_cells) == 0


def test_debug_build(native_space):
    a = np.random.default_rng(5).random((9, 11))
    out = np.zeros_like(a)
    with observing(ForceDebugBuild()) as obs:
        pk.parallel_for(pk.MDRangePolicy(native_space, [1, 1], [8, 10]), laplacian, out=out, a=a)
        total = pk.parallel_reduce(
            pk.MDRangePolicy(native_space, [0, 0], [9, 11]), weighted_sum, a=a
        )
    np.testing.assert_array_equal(out, _laplacian_reference(a))
    i, j = np.meshgrid(np.arange(9), np.arange(11), indexing="ij")
    assert total == pytest.approx((a * (i + 1) - j).sum(), rel=1e-12)
    assert obs.launched and all(k.debug for k in obs.launched)
    source = obs.launched[0].source.read_text()
    # The body stays a real function, called on its own line below the loop headers.
    assert "collapse(2)" in source
    call = next(line for line in source.splitlines() if "pk_kernel::laplacian((int64_t)" in line)
    assert call.strip().startswith("pk_kernel::laplacian(")


def test_debug_build_checks_bounds(native_space):
    a = np.zeros((4, 4))
    out = np.zeros_like(a)
    with observing(ForceDebugBuild()), pytest.raises(pk.KernelIndexError):
        pk.parallel_for(pk.MDRangePolicy(native_space, [0, 0], [4, 4]), laplacian, out=out, a=a)


def test_policy_attributes_and_pykokkos_forms():
    p = pk.MDRangePolicy([1, 2], [3, 4])
    assert p.space is pk.get_default_space()
    assert p.begins == (1, 2) and p.ends == (3, 4) and p.rank == 2 and p.size == 4
    q = pk.MDRangePolicy(pk.Serial, (0, 0, 0), (2, 2, 2), [1, 1, 2])
    assert q.space is pk.Serial and q.rank == 3 and q.tiling == (1, 1, 2)
    assert pk.MDRangePolicy([0, 0], [4, 4], tiling=[2, 2]).tiling == (2, 2)
    assert pk.MDRangePolicy([np.int64(0), 0], [5, np.int32(5)]).ends == (5, 5)


def test_range_policy_launches_are_unchanged(native_space):
    # A workunit dispatched over a range and over a box gets two builds.
    out = np.zeros(5)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 5), one_index_only, out=out)
    assert (out == 1).all()
    assert pk.parallel_reduce(pk.MDRangePolicy(native_space, [0, 0], [3, 3]), count_cells) == 9
    assert pk.parallel_reduce(pk.RangePolicy(native_space, 0, 4), one_index_reduce) == 6


@pytest.mark.parametrize(
    "args, message",
    [
        (([0], [5]), "rank must be 2 to 4"),
        (([0] * 5, [1] * 5), "rank must be 2 to 4"),
        (([0, 0], [1, 1, 1]), "same length"),
        (([0, 0], [2, 2], [1]), "one entry per dimension"),
    ],
)
def test_bad_policies(args, message):
    with pytest.raises(ValueError, match=message):
        pk.MDRangePolicy(*args)


def test_non_integer_bounds():
    with pytest.raises(TypeError, match="integers"):
        pk.MDRangePolicy([0, 0.5], [2, 2])
    with pytest.raises(TypeError, match="integers"):
        pk.MDRangePolicy(0, 5)
    with pytest.raises(TypeError, match=r"\(\[space,\] begins, ends\[, tiling\]\)"):
        pk.MDRangePolicy([0, 0])


def test_fewer_index_parameters_than_the_rank(space):
    out = np.zeros(4)
    with pytest.raises(pk.DispatchError, match="rank 2"):
        pk.parallel_for(pk.MDRangePolicy(space, [0, 0], [2, 2]), one_index_only, out=out)
    with pytest.raises(pk.DispatchError, match="index parameters and the accumulator"):
        pk.parallel_reduce(pk.MDRangePolicy(space, [0, 0], [2, 2]), one_index_reduce)
    with pytest.raises(pk.DispatchError, match="rank 3"):
        pk.parallel_reduce(
            pk.MDRangePolicy(space, [0, 0, 0], [2, 2, 2]), weighted_sum, a=np.zeros((2, 2))
        )


def test_parallel_scan_is_refused(space):
    with pytest.raises(pk.DispatchError, match="parallel_scan over an MDRangePolicy"):
        pk.parallel_scan(pk.MDRangePolicy(space, [0, 0], [2, 2]), scan_like, out=np.zeros(4))
