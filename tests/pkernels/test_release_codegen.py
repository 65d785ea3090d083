"""Release-build code generation: the body inlined, views restrict-qualified only when no
written view overlaps another, and reductions run several indices interleaved. None of it
may change a result: each kernel here is checked bit for bit against plain Python."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk
from pkernels.runtime.marshal import argument_type
from pkernels.translate.interleave import LANES
from pkernels.translate.kernel import translate_workunit


@pk.workunit
def row_dot(j, acc, cols, y, x, A):
    t: float = 0
    for i in range(cols):
        t += A[j][i] * x[i]
    acc += y[j] * t


@pk.workunit
def uniform_branches(j, acc, cols, scale, y, A):
    t: float = 0
    half = cols // 2  # the same for every index
    for i in range(cols):
        if i < half:
            t += A[j, i] * scale
        else:
            t -= A[j, i] / (i + 1.0)
    if cols > 3:
        t = t * y[j]
    acc += t


@pk.workunit
def two_updates(j, acc, y):
    for k in range(2):
        acc += y[j] * k
    acc += y[j]


@pk.workunit
def ragged_rows(j, acc, counts, A):
    for i in range(counts[j]):  # bounds depend on the index: not interleaved
        acc += A[j, i]


@pk.workunit
def rebinds_parameters(j, acc, cols, A):
    t: float = 0
    for i in range(cols):
        t += A[j, i]
    cols = j % 3  # a parameter given a value that depends on the index
    acc += t * cols


@pk.workunit
def shift_double(i, n, src, dst):
    for k in range(n):
        dst[i, k] = src[i, k] * 2.0


@pk.workunit
def plane_sum(i, n, src, dst):
    for k in range(n):
        dst[i, k] = src[i, k] + 1.0


@pk.workunit
def neighbours(i, n, u, out):
    for j in range(1, n - 1):
        small: pk.int32 = j  # an int32 index: its shift stays inside the cast
        out[i, j] = (
            u[i - 1, j] + u[i + 1, j] * 2.0 + u[i, j - 1] * 3.0 + u[1 + i, small + 1] * 5.0
            + u[i - 1 + 2, j] * 7.0 + u[(i - 1) - 1 + 2, j + 1 - 2 + 1] * 11.0
            + u[2 * i - i, j] * 13.0
        )  # fmt: skip


def _source(workunit, operation, **kwargs) -> str:
    types = {name: argument_type(name, value) for name, value in kwargs.items()}
    return translate_workunit(workunit, operation, types).source


def _data(rows: int, cols: int):
    rng = np.random.default_rng(7)
    return rng.random(rows), rng.random(cols), rng.random((rows, cols))


def test_interleaved_body_is_generated_for_a_read_only_reduction():
    y, x, A = _data(4, 4)
    source = _source(row_dot, "reduce", cols=4, y=y, x=x, A=A)
    assert "pk_lanes_row_dot" in source
    assert "#if !PK_DEBUG" in source  # release only: debug builds keep one index per call


@pytest.mark.parametrize(
    "workunit, kwargs",
    [
        (two_updates, {"y": np.ones(4)}),
        (rebinds_parameters, {"cols": 4, "A": np.ones((4, 4))}),
        (ragged_rows, {"counts": np.ones(4, dtype=np.int64), "A": np.ones((4, 4))}),
        (plane_sum, {"n": 4, "src": np.ones((4, 4)), "dst": np.ones((4, 4))}),
    ],
)
def test_no_interleaving_where_the_lanes_could_differ(workunit, kwargs):
    operation = "for" if workunit is plane_sum else "reduce"
    assert "pk_lanes_" not in _source(workunit, operation, **kwargs)


@pytest.mark.parametrize("begin, end", [(0, 64), (3, 64), (5, 6), (0, LANES - 1), (7, 7)])
@pytest.mark.parametrize(
    "workunit", [row_dot, uniform_branches, two_updates, ragged_rows, rebinds_parameters]
)
def test_reductions_match_python_bit_for_bit(workunit, begin, end):
    rows, cols = 64, 37
    y, x, A = _data(rows, cols)
    kwargs = {
        row_dot: {"cols": cols, "y": y, "x": x, "A": A},
        uniform_branches: {"cols": cols, "scale": 0.75, "y": y, "A": A},
        two_updates: {"y": y},
        ragged_rows: {"counts": np.arange(rows, dtype=np.int64) % cols, "A": A},
        rebinds_parameters: {"cols": cols, "A": A},
    }[workunit]
    expected = pk.parallel_reduce(pk.RangePolicy(pk.Debug, begin, end), workunit, **kwargs)
    # Serial adds in index order, as Python does: the same bits.
    serial = pk.parallel_reduce(pk.RangePolicy(pk.Serial, begin, end), workunit, **kwargs)
    assert serial == expected
    # OpenMP adds per-thread partial sums: the same up to rounding.
    parallel = pk.parallel_reduce(pk.RangePolicy(pk.OpenMP, begin, end), workunit, **kwargs)
    assert parallel == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_parallel_for_gives_each_thread_one_block_of_indices():
    # schedule(static): neighbouring indices share data (rows, planes) that chunks dealt
    # out in turn would split between threads; measured 2-3% faster on the stencil bench.
    src, dst = np.ones((4, 4)), np.ones((4, 4))
    source = _source(plane_sum, "for", n=4, src=src, dst=dst)
    release = source[source.index("static void pk_run(") :]
    release = release[: release.index("#endif")]
    assert release.count("#pragma omp parallel for schedule(static) if(pk_parallel)") == 2
    assert "dynamic" not in release


def test_restrict_is_guarded_by_an_overlap_check():
    src, dst = np.ones((4, 4)), np.ones((4, 4))
    source = _source(plane_sum, "for", n=4, src=src, dst=dst)
    assert "pk_rt::overlap(pk_rt::span(dst), pk_rt::span(src))" in source


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial])
def test_overlapping_views_keep_sequential_semantics(space):
    # In each row dst is src shifted by one element: every step of the body's loop reads
    # what the previous one wrote, so each row becomes a geometric sequence. A loop
    # compiled as if dst and src could not overlap would read stale values.
    rows, n = 5, 257
    a = np.zeros((rows, n + 1))
    a[:, 0] = np.arange(1, rows + 1)
    policy = pk.RangePolicy(space, 0, rows)
    pk.parallel_for(policy, shift_double, n=n, src=a[:, :-1], dst=a[:, 1:])
    np.testing.assert_array_equal(a, np.arange(1, rows + 1)[:, None] * 2.0 ** np.arange(n + 1))


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial])
def test_disjoint_and_identical_views(space):
    rng = np.random.default_rng(3)
    src = rng.random((9, 33))
    dst = np.zeros_like(src)
    pk.parallel_for(pk.RangePolicy(space, 0, 9), plane_sum, n=33, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src + 1.0)
    same = src.copy()
    pk.parallel_for(pk.RangePolicy(space, 0, 9), plane_sum, n=33, src=same, dst=same)
    np.testing.assert_array_equal(same, src + 1.0)


def test_constant_shifts_share_the_offset_of_the_unshifted_index():
    # u[i - 1, j] is emitted as (i, j) shifted by (-1, 0): g++ then computes i*s0 + j once
    # for all of a stencil's neighbours (bench_kernels: the 7-point stencil).
    u, out = np.ones((4, 4)), np.zeros((4, 4))
    source = _source(neighbours, "for", n=4, u=u, out=out)
    assert 'pk_rt::at_shifted(u, "u", __FILE__, __LINE__, {INT64_C(-1), INT64_C(0)}, i, j)' in (
        source
    )
    assert "{INT64_C(1), INT64_C(0)}, i, j)" in source  # u[1 + i, ...] and u[i - 1 + 2, ...]
    assert 'pk_rt::at(out, "out", __FILE__, __LINE__, i, j)' in source  # no shift: at()


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial])
def test_shifted_indices_read_the_elements_python_reads(space):
    rng = np.random.default_rng(11)
    base = rng.random((14, 23))
    u = base[::2, 1::2]  # strided on both axes
    n = u.shape[1]
    expected = np.zeros((u.shape[0], n))
    pk.parallel_for(pk.RangePolicy(pk.Debug, 1, u.shape[0] - 1), neighbours, n=n, u=u,
                    out=expected)  # fmt: skip
    out = np.zeros_like(expected)
    pk.parallel_for(pk.RangePolicy(space, 1, u.shape[0] - 1), neighbours, n=n, u=u, out=out)
    np.testing.assert_array_equal(out, expected)
    assert np.count_nonzero(out) == (u.shape[0] - 2) * (n - 2)


@pk.workunit
def overflow_probes(i, x, out):
    y: int = x[i] + 1
    out[i, 0] = 1 if y > x[i] else 0  # g++ folds this to 1 unless overflow is defined
    v: int = x[i]
    n: int = 0
    while v > 0 and n < 100:  # doubles until the product wraps negative
        v = v * 2
        n += 1
    out[i, 1] = n


@pytest.mark.parametrize("build", ["release", "debug"])
def test_int64_overflow_wraps_in_release_and_debug_builds_alike(build):
    # NumPy's int64 arithmetic wraps; so do both builds (-fwrapv), so a release run and
    # the debug build pkdb runs compute the same thing.
    from pkt_support import ForceDebugBuild, observing

    x = np.array([2**63 - 1, 5], np.int64)
    out = np.zeros((2, 2), np.int64)
    if build == "debug":
        with observing(ForceDebugBuild()):
            pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), overflow_probes, x=x, out=out)
    else:
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), overflow_probes, x=x, out=out)
    with np.errstate(over="ignore"):
        assert (x + 1 > x).astype(np.int64).tolist() == [0, 1]
    assert out.tolist() == [[0, 1], [1, 61]]
