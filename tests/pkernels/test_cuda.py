"""The Cuda execution space: workunits on CuPy arrays, checked against NumPy (and against
the OpenMP space where both must give the same bits: pk.rand, print).

The GPU tests are skipped, with the reason, where CuPy or a GPU is missing. Two kinds of
test run everywhere: the generated CUDA C++ of a set of kernels compiles with nvcc (when
nvcc is on the PATH; NVRTC's built-ins are stood in for by nvcc's own headers), and the
errors a CPU-only machine gives (no CuPy; a GPU array passed to a CPU space).

Run on a GPU machine: ``python3 -m pytest -q -p no:cacheprovider tests/pkernels/test_cuda.py``.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import numpy as np
import pytest
from team_kernels import (
    box_fill_and_sum,
    divergent_barrier_at_run_time,
    matrix_rows_vector,
    once_per_team,
    own_scratch,
    pooled_scratch,
    pooled_scratch_expected,
    reverse_rows,
    row_extremes,
    row_prefix,
    row_totals_through_nonlocal,
    team_extremes_where,
    team_yax,
)

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime.marshal import argument_type
from pkernels.translate.emit_cuda import emit_cuda_module
from pkernels.translate.kernel import TEAM, lower_workunit


def _gpu_missing() -> str | None:
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
    except Exception as exc:  # noqa: BLE001 - the driver's reason
        return f"CuPy finds no GPU ({exc})"
    return "CuPy finds no GPU"


GPU_MISSING = _gpu_missing()
gpu = pytest.mark.skipif(
    GPU_MISSING is not None, reason=f"needs CuPy and an NVIDIA GPU: {GPU_MISSING}"
)


@pytest.fixture
def cp():
    import cupy

    return cupy


# ---------------------------------------------------------------- kernels


@pk.workunit
def axpy(i, out, x, a: float):
    out[i] = a * x[i] + out[i]


@pk.workunit
def dot(i, acc: pk.Acc[float], x, y):
    acc += x[i] * y[i]


@pk.workunit
def row_tail_sums(j: int, A, out):
    tail = A[j, 1::2]  # a subview: every other element after the first
    total: float = 0.0
    for i in range(len(tail)):
        total += tail[i]
    out[j] = total


@pk.workunit
def bounds_of(i: int, table, queries, lower, upper):
    lower[i] = pk.lower_bound(table, len(table), queries[i])
    upper[i] = pk.upper_bound(table, len(table), queries[i])


@pk.workunit
def smallest_of(i: int, acc: pk.Acc[pk.int64], data):
    if data[i] < acc:
        acc = data[i]


@pk.workunit
def largest_in_box(i: int, j: int, acc: pk.Acc[pk.double], A):
    acc = max(acc, A[i, j])


@pk.workunit
def common_bits(i: int, acc: pk.Acc[pk.int64], data):
    acc &= data[i]


@pk.workunit
def team_row_min(team_member: pk.TeamMember, acc: pk.Acc[pk.double], A):
    row: int = team_member.league_rank()
    j: int = team_member.team_rank()
    while j < A.extent(1):
        if A[row, j] < acc:
            acc = A[row, j]
        j += team_member.team_size()


@pk.workunit
def where_largest(i: int, acc: pk.Acc[pk.float], data):
    if data[i] > acc.val:
        acc.val = data[i]
        acc.loc = i


@pk.workunit
def box_extremes(i: int, j: int, acc: pk.Acc[pk.int64], A):
    acc.min_val = min(acc.min_val, A[i, j])
    acc.max_val = max(acc.max_val, A[i, j])


@pk.workunit
def product_of(i: int, acc: pk.Acc[pk.double], data):
    acc *= data[i]


@pk.workunit
def count_odd(i, acc: pk.Acc[pk.int64], v):
    if v[i] % 2 == 1:
        acc += v[i]


@pk.workunit
def sum_f32(i, acc: pk.Acc[pk.float32], v, half):
    acc += v[i] * half


@pk.workunit
def prefix(i, acc: pk.Acc[pk.int64], last_pass: bool, inp, out):
    acc += inp[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def prefix_float(i, acc: pk.Acc[float], last_pass: bool, inp, out):
    acc += inp[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def matvec_rows(i, y, A, x):
    total: float = 0
    for k in range(A.extent(1)):
        total += A[i, k] * x[k]
    y[i] = total


@pk.workunit
def python_arithmetic(i, q, r, fq, fr, a, b, fa, fb):
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]
    fq[i] = fa[i] // fb[i]
    fr[i] = fa[i] % fb[i]


@pk.workunit
def small_types(i, out32, outf, a32, af, two):
    out32[i] = a32[i] * 3 - 7
    outf[i] = af[i] * two + math.sqrt(af[i])


@pk.workunit
def value_logic(i, out, a, b, smallest):
    out[i] = (a[i] and b[i]) or 7
    pk.atomic_min(smallest, [i % 2], a[i] - b[i])
    pk.atomic_mul(smallest, [2], 1)


@pk.workunit
def scale(i, out, v, s):
    out[i] = v[i] * s


@pk.workunit
def math_calls(i, out, x):
    out[i, 0] = math.sqrt(x[i]) + math.exp(-x[i])
    out[i, 1] = math.sin(x[i]) * math.cos(x[i]) + math.atan2(x[i], 2.0)
    out[i, 2] = pk.floor(x[i] * 3.7) + math.fmod(x[i], 0.3) + abs(-x[i]) + x[i] ** 1.5
    out[i, 3] = float(math.isnan(x[i] - x[i])) + min(x[i], 0.5) + max(i, 2)
    out[i, 4] = round(x[i] * 4)  # halves to even: 0.5 -> 0, 1.5 -> 2


@pk.workunit
def unpacking_math(i, out, x):
    a, b = x[i], float(i)
    a, b = b, a
    out[i, 0], out[i, 1] = math.modf(x[i] * 3.0)
    m, e = math.frexp(x[i])
    out[i, 2] = m
    out[i, 3] = e
    out[i, 4] = math.remainder(x[i], 0.75) + math.ldexp(a, 3) + b


@pk.workunit
def histogram(i, counts64, counts32, sums64, sums32, data):
    b: int = data[i] % 4
    pk.atomic_add(counts64, [b], 1)
    pk.atomic_add(counts32, [b], 1)
    pk.atomic_add(sums64, [b], 0.5)
    pk.atomic_add(sums32, [b], 0.25)


@pk.workunit
def tickets(i, next_ticket, got):
    got[i] = pk.atomic_fetch_add(next_ticket, [0], 1)


@pk.workunit
def small_atomics(i, bytes8, shorts, biggest, flags):
    pk.atomic_add(bytes8, [i % 3], 1)
    pk.atomic_sub(shorts, [i % 2], 2)
    pk.atomic_max(biggest, [0], i)
    pk.atomic_compare_exchange(flags, [i % 4], 0, i + 1)


@pk.workunit
def loads_and_stores(i, ints, out):
    out[i] = pk.atomic_load(ints, [i])
    pk.atomic_store(ints, [i], i * 10)


@pk.workunit
def integer_updates(i, ints, shorts):
    pk.atomic_div(ints, [1], i)  # pk_rt::truncdiv
    pk.atomic_lshift(ints, [2], i)
    pk.atomic_mod(ints, [3], i + 1)
    shorts[0] = shorts[1] >> i  # pk_rt::rshift


@pk.workunit
def random_fill(i, out, picks, seed: int):
    out[i] = pk.rand(seed, i)
    picks[i] = pk.rand_int(seed, i, 1000)


@pk.workunit
def box_fill(i, j, k, out):
    out[i, j, k] = 100 * i + 10 * j + k


@pk.workunit
def box_sum(i, j, acc: pk.Acc[float], A):
    acc += A[i, j] * (i + 1)


@pk.workunit
def reverse_rows_level1(team_member: pk.TeamMember, out, inp, m: int):
    row: int = team_member.league_rank()
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(1), m)

    def stage(i: int):
        s[i] = inp[row, i]

    pk.parallel_for(pk.TeamThreadRange(team_member, m), stage)
    team_member.team_barrier()

    def write(i: int):
        out[row, i] = s[m - 1 - i]

    pk.parallel_for(pk.TeamThreadRange(team_member, m), write)


@pk.workunit
def show(i, vals, singles):
    print(i, vals[i], singles[i], i % 2 == 0)


@pk.workunit
def show_formatted(i, vals, ints):
    print(f"{i:>4}|{vals[i]:<12}|{ints[i]:x}|{ints[i]:+06d}|{ints[i]:^9}|{i % 2 == 0:2}", "end")


@pk.workunit
def show_float_formats(i, vals):
    v = vals[i]
    print(f"{i} {v:.3f} {v:e} {v:.0e} {v:#.0f} {v:g} {v:.17g} {v:#.3G} {v:+012.4E} {v:<9.1f}|")
    print(f"{i} {v:.30f} {v:.25e}")


@pk.workunit
def show_printf(i, vals):
    pk.printf("row %d: %.3f\n", i, vals[i])


@pk.workunit
def pool_draws(i, out, small, pool):
    for _ in range(2):
        out[i] = out[i] + pk.rand(pk.double) * pk.rand(pk.float)
    small[i] = pk.rand(pk.int8) + pk.rand(pk.uint16) + pk.rand(pk.int64) + pk.rand(pk.uint64)


@pk.workunit
def team_pool_draws(m: pk.TeamMember, out, pool):
    out[m.league_rank(), m.team_rank()] = pk.rand(pk.uint32) + pk.rand(pk.int32)


@pk.workload
class Saxpy:
    def __init__(self, cp, n: int):
        self.n = n
        self.a = 2.5
        self.x = cp.arange(n, dtype=cp.float64)
        self.y = cp.ones(n, dtype=cp.float64)
        self.total = 0.0

    @pk.main
    def run(self):
        pk.parallel_for(self.n, self.update)
        self.total = pk.parallel_reduce(self.n, self.sum)

    @pk.workunit
    def update(self, i):
        self.y[i] = self.a * self.x[i] + self.y[i]

    @pk.workunit
    def sum(self, i, acc: pk.Acc[float]):
        acc += self.y[i]


# ---------------------------------------------------------------- without a GPU


def _cuda_source(workunit, operation: str, rank: int = 1, reducer=pk.Sum, **kwargs) -> str:
    arg_types = {name: argument_type(name, value) for name, value in kwargs.items()}
    function, helpers = lower_workunit(workunit, operation, arg_types, rank, reducer)
    index = function.params[0].type if rank != TEAM else pk.int64
    return emit_cuda_module(function, helpers, operation, index, rank, reducer).source


def test_generated_cuda_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    v, m, ints = np.zeros(8), np.zeros((4, 8)), np.zeros(8, dtype=np.int64)
    sources = {
        "range_for": _cuda_source(axpy, "for", out=v, x=v[::2].astype(np.float32), a=1.0),
        "range_reduce": _cuda_source(count_odd, "reduce", v=ints),
        "scan": _cuda_source(prefix, "scan", inp=ints, out=ints[::-1]),
        "mdrange": _cuda_source(box_sum, "reduce", 2, A=m.T),
        "reduce_min": _cuda_source(smallest_of, "reduce", reducer=pk.Min, data=ints),
        "reduce_band": _cuda_source(common_bits, "reduce", reducer=pk.BAnd, data=ints),
        "team_reduce_min": _cuda_source(team_row_min, "reduce", TEAM, reducer=pk.Min, A=m),
        "reduce_maxloc": _cuda_source(
            where_largest, "reduce", reducer=pk.MaxLoc, data=v.astype(np.float32)
        ),
        "box_minmax": _cuda_source(box_extremes, "reduce", 2, reducer=pk.MinMax, A=ints[:4, None]),
        "team_minmaxloc": _cuda_source(
            team_extremes_where, "reduce", TEAM, reducer=pk.MinMaxLoc, A=m
        ),
        "math": _cuda_source(math_calls, "for", out=np.zeros((5, 8)).T, x=v),
        "unpacking": _cuda_source(unpacking_math, "for", out=np.zeros((8, 5)), x=v),
        "bessel": _cuda_source(bessel_calls, "for", out=m.T, x=v, x32=v.astype(np.float32)),
        "list_local": _cuda_source(row_moments, "for", A=m, out=m),
        "atomics": _cuda_source(
            small_atomics,
            "for",
            bytes8=np.zeros(3, np.int8),
            shorts=np.zeros(2, np.int16),
            biggest=ints,
            flags=np.zeros(4, np.uint8),
        ),
        "atomic_load_store": _cuda_source(loads_and_stores, "for", ints=ints, out=v),
        "integer_updates": _cuda_source(
            integer_updates, "for", ints=ints, shorts=np.zeros(2, np.int16)
        ),
        "print": _cuda_source(show, "for", vals=v, singles=v.astype(np.float32)),
        "print_formatted": _cuda_source(show_formatted, "for", vals=v, ints=ints),
        "print_float_formats": _cuda_source(show_float_formats, "for", vals=v),
        "logic": _cuda_source(
            value_logic,
            "for",
            out=np.zeros(3, np.int16),
            a=np.zeros(3, np.int16),
            b=np.zeros(3, np.int16),
            smallest=np.zeros(3, np.int16),
        ),  # fmt: skip
        "teams": _cuda_source(reverse_rows, "for", TEAM, out=m, inp=m, m=8),
        "team_scan": _cuda_source(row_prefix, "for", TEAM, out=m, totals=v, inp=m),
        "team_md": _cuda_source(box_fill_and_sum, "reduce", TEAM, out=np.zeros((2, 3, 4))),
        "subview": _cuda_source(row_tail_sums, "for", A=m, out=v[:4]),
        "random_pool": _cuda_source(
            pool_draws,
            "for",
            out=v,
            small=np.zeros(8, np.uint64),
            pool=pk.Random_XorShift64_Pool(1, 1),
        ),
        "team_random_pool": _cuda_source(
            team_pool_draws, "for", TEAM, out=m, pool=pk.Random_XorShift1024_Pool(1, 1)
        ),
        "search": _cuda_source(bounds_of, "for", table=v, queries=v, lower=ints, upper=ints),
        "team_nonlocal": _cuda_source(
            row_totals_through_nonlocal, "reduce", TEAM, A=m, out=np.zeros(4, np.int64)
        ),
        "team_nested_reducers": _cuda_source(
            row_extremes,
            "for",
            TEAM,
            A=m,
            largest=v,
            smallest=v,
            product=v,
            positive=np.zeros(8, bool),
            bits=ints,
        ),  # fmt: skip
    }
    # NVRTC declares printf itself; nvcc takes it from <cstdio>.
    stand_in = tmp_path / "nvrtc_builtins.h"
    stand_in.write_text("#include <cstdio>\n")
    procs = {}
    for name, source in sources.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(source.replace(GENERATED_PATH, str(cu)))
        procs[name] = subprocess.Popen(
            [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", include_option(),
             "--pre-include", str(stand_in),
             "-c", "-x", "cu", str(cu), "-o", str(tmp_path / f"{name}.o")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    # nvcc takes GNU statement expressions, NVRTC does not: none may be generated.
    assert not [name for name, source in sources.items() if "({ " in source]
    failures = {}
    for name, proc in procs.items():
        output, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures[name] = output[-3000:]
    assert not failures, failures
    # Errors point at the Python lines: every statement has its #line.
    assert f'#line {axpy.__code__.co_firstlineno + 1} "{__file__}"' in sources["range_for"]


@gpu
def test_views_live_on_the_gpu_when_the_default_space_is_cuda(cp):
    # PyKokkos' tutorial 04: set the default space, allocate pk.View, dispatch on an int.
    pk.set_default_space(pk.Cuda)
    x = pk.View([6], pk.double)
    assert isinstance(x.data, cp.ndarray) and x.dtype == cp.float64 and not x.any()
    x[:] = cp.arange(6.0)
    out = pk.View([6], pk.double)
    pk.parallel_for(6, axpy, out=out, x=x, a=2.0)
    np.testing.assert_array_equal(out.get(), 2.0 * np.arange(6))
    assert pk.parallel_reduce(6, count_odd, v=pk.array(cp.arange(6))) == 1 + 3 + 5
    pk.fence()
    pk.set_default_space(pk.OpenMP)
    assert isinstance(pk.View([2], pk.double, space=pk.CudaSpace).data, cp.ndarray)
    assert isinstance(pk.View([2], pk.double), pk.View)  # the host again


@gpu
def test_subviews_on_the_gpu(cp):
    A = np.arange(35.0).reshape(5, 7)
    out = cp.zeros(5)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 5), row_tail_sums, A=cp.asarray(A), out=out)
    np.testing.assert_array_equal(out.get(), A[:, 1::2].sum(axis=1))


@gpu
def test_lower_and_upper_bound_on_the_gpu(cp):
    table = np.sort(np.random.default_rng(6).integers(0, 10, 25)).astype(np.float64)
    queries = np.arange(-1.0, 12.0, 0.5)
    lower, upper = (cp.zeros(len(queries), dtype=cp.int64) for _ in range(2))
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, len(queries)), bounds_of, table=cp.asarray(table),
        queries=cp.asarray(queries), lower=lower, upper=upper,
    )  # fmt: skip
    np.testing.assert_array_equal(lower.get(), np.searchsorted(table, queries, side="left"))
    np.testing.assert_array_equal(upper.get(), np.searchsorted(table, queries, side="right"))


@gpu
def test_reducers_on_the_gpu(cp):
    rng = np.random.default_rng(12)
    ints = rng.integers(-(2**40), 2**40, 100_000) | 0b101
    floats = rng.uniform(0.999, 1.001, 50_000)
    A = rng.normal(size=(300, 70))
    policy = pk.RangePolicy(pk.Cuda, 0, len(ints))
    assert pk.parallel_reduce(policy, smallest_of, reducer=pk.Min, data=cp.asarray(ints)) == (
        ints.min()
    )
    band = pk.parallel_reduce(policy, common_bits, reducer=pk.BAnd, data=cp.asarray(ints))
    assert band == np.bitwise_and.reduce(ints)
    product = pk.parallel_reduce(
        pk.RangePolicy(pk.Cuda, 0, len(floats)), product_of, reducer=pk.Prod,
        data=cp.asarray(floats),
    )  # fmt: skip
    assert product == pytest.approx(np.prod(floats), rel=1e-10)
    box = pk.MDRangePolicy(pk.Cuda, [0, 0], list(A.shape))
    assert pk.parallel_reduce(box, largest_in_box, reducer=pk.Max, A=cp.asarray(A)) == A.max()
    empty = pk.RangePolicy(pk.Cuda, 0, 0)
    assert pk.parallel_reduce(empty, smallest_of, reducer=pk.Min, data=cp.asarray(ints)) == (
        2**63 - 1
    )
    for team in (pk.AUTO, 4, 32):  # each member starts from the identity, even idle ones
        teams = pk.TeamPolicy(pk.Cuda, A.shape[0], team)
        assert pk.parallel_reduce(teams, team_row_min, reducer=pk.Min, A=cp.asarray(A)) == (A.min())


@gpu
def test_reducers_with_locations_on_the_gpu(cp):
    rng = np.random.default_rng(13)
    ties = rng.integers(0, 1000, 300_000).astype(np.float32)  # each value at many indices
    policy = pk.RangePolicy(pk.Cuda, 0, len(ties))
    found = pk.parallel_reduce(policy, where_largest, reducer=pk.MaxLoc, data=cp.asarray(ties))
    assert found == (999.0, int(ties.argmax()))  # the first index holding the largest
    assert type(found) is pk.ValLocScalar
    B = rng.integers(-(2**40), 2**40, (500, 33))
    box = pk.MDRangePolicy(pk.Cuda, [0, 0], list(B.shape))
    assert pk.parallel_reduce(box, box_extremes, reducer=pk.MinMax, A=cp.asarray(B)) == (
        B.min(), B.max()
    )  # fmt: skip
    A = rng.normal(size=(300, 70))
    expected = (A.min(), A.max(), int(A.argmin()), int(A.argmax()))
    for team in (pk.AUTO, 4, 32):  # the accumulator struct is larger than a slot of 8 bytes
        teams = pk.TeamPolicy(pk.Cuda, A.shape[0], team)
        got = pk.parallel_reduce(teams, team_extremes_where, reducer=pk.MinMaxLoc, A=cp.asarray(A))
        assert got == expected
    empty = pk.RangePolicy(pk.Cuda, 0, 0)
    assert pk.parallel_reduce(empty, where_largest, reducer=pk.MaxLoc, data=cp.asarray(ties)) == (
        -math.inf, 2**63 - 1
    )  # fmt: skip


@gpu
def test_host_math_names_run_on_gpu_arrays_with_cupy(cp):
    x = np.linspace(0.1, 0.9, 9)
    on_gpu = cp.asarray(x)
    for name, reference in [("sqrt", np.sqrt), ("log", np.log), ("atan", np.arctan)]:
        result = getattr(pk, name)(on_gpu)
        assert isinstance(result, cp.ndarray)
        np.testing.assert_allclose(result.get(), reference(x), rtol=1e-15)
    np.testing.assert_allclose(pk.erf(on_gpu).get(), [math.erf(v) for v in x], rtol=1e-14)
    assert float(pk.sum(on_gpu)) == pytest.approx(x.sum(), rel=1e-15)
    assert pk.array(on_gpu).data is on_gpu  # a view of it, as PyKokkos' pk.array


@pytest.mark.skipif(GPU_MISSING is None, reason="this machine has CuPy and a GPU")
def test_without_cupy_and_a_gpu_the_error_says_what_to_install():
    with pytest.raises(pk.DispatchError) as info:
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), axpy, out=np.zeros(3), x=np.ones(3), a=1.0)
    assert "the Cuda execution space needs CuPy and an NVIDIA GPU: " in str(info.value)
    assert "pip install 'pkernels[cuda]'" in str(info.value)


class _FakeGpuArray:
    """What the CPU spaces see of a CuPy array: ``__cuda_array_interface__``."""

    __cuda_array_interface__ = property(lambda self: {"shape": (3,), "typestr": "<f8"})
    dtype, ndim, shape, strides, itemsize = np.dtype(np.float64), 1, (3,), (8,), 8


def test_a_gpu_array_passed_to_a_cpu_space_says_to_copy_it_to_the_host(native_space):
    with pytest.raises(pk.DispatchError, match=r"out: a CuPy array .*pass out\.get\(\)"):
        pk.parallel_for(
            pk.RangePolicy(native_space, 0, 3), axpy, out=_FakeGpuArray(), x=np.ones(3), a=1.0
        )


# ---------------------------------------------------------------- on the GPU


@gpu
def test_range_for_on_contiguous_and_strided_views(cp):
    rng = np.random.default_rng(0)
    x, y = rng.random(1000), rng.random(1000)
    out = cp.asarray(y)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 1000), axpy, out=out, x=cp.asarray(x), a=2.0)
    np.testing.assert_array_equal(out.get(), 2.0 * x + y)
    # a reversed view and a column of a matrix (strides in elements, negative too)
    big = cp.asarray(rng.random((1000, 3)))
    target = cp.zeros(2000)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 1000), axpy, out=target[::-2], x=big[:, 1], a=-1.5)
    expected = np.zeros(2000)
    expected[::-2] = -1.5 * big.get()[:, 1]
    np.testing.assert_array_equal(target.get(), expected)


@gpu
def test_range_for_with_a_begin_and_an_empty_range(cp):
    out = cp.zeros(10)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 4, 9), axpy, out=out, x=cp.ones(10), a=1.0)
    np.testing.assert_array_equal(out.get(), [0, 0, 0, 0, 1, 1, 1, 1, 1, 0])
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 5, 5), axpy, out=out, x=cp.ones(10), a=1.0)
    assert pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 3, 2), dot, x=out, y=out) == 0.0


@gpu
def test_range_reduce_float_int_and_float32_deterministic(cp):
    rng = np.random.default_rng(1)
    x, y = rng.random(100_000), rng.random(100_000)
    policy = pk.RangePolicy(pk.Cuda, 0, 100_000)
    first = pk.parallel_reduce(policy, dot, x=cp.asarray(x), y=cp.asarray(y))
    assert isinstance(first, float)
    assert first == pytest.approx(x @ y, rel=1e-12)
    for _ in range(3):  # block partials added in block order: the same bits every run
        assert pk.parallel_reduce(policy, dot, x=cp.asarray(x), y=cp.asarray(y)) == first
    v = np.arange(-50_000, 50_001, dtype=np.int64)
    total = pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, len(v)), count_odd, v=cp.asarray(v))
    assert isinstance(total, int)
    assert total == int(v[v % 2 == 1].sum())
    f = rng.random(4096).astype(np.float32)
    s = pk.parallel_reduce(
        pk.RangePolicy(pk.Cuda, 0, 4096), sum_f32, v=cp.asarray(f), half=np.float32(0.5)
    )
    assert s == pytest.approx(float((f * np.float32(0.5)).sum()), rel=1e-5)


@gpu
def test_scan_gives_prefix_sums_and_the_total(cp):
    rng = np.random.default_rng(2)
    inp = rng.integers(-100, 100, size=100_003).astype(np.int64)
    out = cp.zeros_like(cp.asarray(inp))
    total = pk.parallel_scan(
        pk.RangePolicy(pk.Cuda, 0, len(inp)), prefix, inp=cp.asarray(inp), out=out
    )
    np.testing.assert_array_equal(out.get(), np.cumsum(inp))
    assert total == int(inp.sum()) and isinstance(total, int)
    small = np.arange(1, 6, dtype=np.int64)
    out_small = cp.zeros(5, dtype=cp.int64)
    total = pk.parallel_scan(
        pk.RangePolicy(pk.Cuda, 0, 5), prefix, inp=cp.asarray(small), out=out_small
    )
    assert out_small.get().tolist() == [1, 3, 6, 10, 15] and total == 15
    f = rng.random(5000)
    fout = cp.zeros(5000)
    ftotal = pk.parallel_scan(
        pk.RangePolicy(pk.Cuda, 0, 5000), prefix_float, inp=cp.asarray(f), out=fout
    )
    np.testing.assert_allclose(fout.get(), np.cumsum(f), rtol=1e-12)
    assert ftotal == pytest.approx(f.sum(), rel=1e-12)


@gpu
def test_strided_and_transposed_matrices(cp):
    rng = np.random.default_rng(3)
    A = rng.random((40, 30))
    x = rng.random(30)
    for view in (cp.asarray(A), cp.asarray(A.T.copy()).T, cp.asarray(A)[::-1][::-1]):
        y = cp.zeros(40)
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 40), matvec_rows, y=y, A=view, x=cp.asarray(x))
        np.testing.assert_allclose(y.get(), A @ x, rtol=1e-13)


@pk.workunit
def yax_rows(j, acc: pk.Acc[pk.double], y, A, x):
    temp2: float = 0.0
    for i in range(A.extent(1)):
        temp2 += A[j][i] * x[i]
    acc += y[j] * temp2


@gpu
def test_views_are_layout_left_on_the_gpu_and_yax_agrees_with_layout_right(cp):
    # Kokkos' (and PyKokkos') CudaSpace default: column-major, so a thread per row j
    # reads coalesced memory; layout=LayoutRight gives C order; the results agree.
    assert pk.get_default_layout(pk.CudaSpace) is pk.LayoutLeft
    rng = np.random.default_rng(5)
    M, N = 300, 200
    host_A, host_x, host_y = rng.random((M, N)), rng.random(N), rng.random(M)
    left = pk.View([M, N], pk.double, space=pk.CudaSpace)
    right = pk.View([M, N], pk.double, space=pk.CudaSpace, layout=pk.LayoutRight)
    assert left.data.flags.f_contiguous and not left.data.flags.c_contiguous
    assert left.layout is pk.LayoutLeft and right.layout is pk.LayoutRight
    assert right.data.flags.c_contiguous
    left.data[:] = cp.asarray(host_A)
    right.data[:] = cp.asarray(host_A)
    x, y = cp.asarray(host_x), cp.asarray(host_y)
    policy = pk.RangePolicy(pk.Cuda, 0, M)
    total_left = pk.parallel_reduce(policy, yax_rows, y=y, A=left, x=x)
    total_right = pk.parallel_reduce(policy, yax_rows, y=y, A=right, x=x)
    expected = host_y @ (host_A @ host_x)
    assert total_left == pytest.approx(expected, rel=1e-12)
    assert total_right == pytest.approx(total_left, rel=1e-13)
    pk.set_default_space(pk.Cuda)
    default = pk.View([4, 3], pk.double)
    assert default.layout is pk.LayoutLeft and default.data.flags.f_contiguous
    assert pk.View([4, 1], pk.double).layout is pk.LayoutLeft  # both orders: as made
    pk.set_default_space(pk.OpenMP)
    assert pk.View([4, 3], pk.double).layout is pk.LayoutRight  # the host's default


class _InterfaceOnly:
    """Another library's GPU array: only ``__cuda_array_interface__`` (that of a CuPy
    array, its strides given in bytes, or None when C-contiguous, as version 2 allows)."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        face = dict(self.array.__cuda_array_interface__)
        if self.array.flags.c_contiguous:
            face["strides"] = None
        return face


@gpu
def test_cuda_array_interface_objects_are_views_and_see_the_kernels_writes(cp):
    rng = np.random.default_rng(6)
    A = rng.random((40, 30))
    x = rng.random(30)
    for matrix in (cp.asarray(A), cp.asarray(A.T.copy()).T, cp.asarray(A)[::-1][::-1]):
        y = cp.zeros(40)
        pk.parallel_for(
            pk.RangePolicy(pk.Cuda, 0, 40), matvec_rows,
            y=_InterfaceOnly(y), A=_InterfaceOnly(matrix), x=_InterfaceOnly(cp.asarray(x)),
        )  # fmt: skip
        np.testing.assert_allclose(y.get(), A @ x, rtol=1e-13)  # written in y's memory
    out = cp.zeros(20)
    view = pk.array(_InterfaceOnly(out[::2]))  # a view of its memory, strides and all
    assert view.data.data.ptr == out.data.ptr and view.data.strides == (16,)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 10), axpy, out=view, x=cp.ones(10), a=2.0)
    np.testing.assert_array_equal(out.get()[::2], 2.0)
    np.testing.assert_array_equal(out.get()[1::2], 0.0)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.mark.skipif(_torch_cuda() is None, reason="needs PyTorch with CUDA")
def test_pytorch_cuda_tensors_are_views_of_cuda_kernels(cp):
    torch = _torch_cuda()
    out = torch.zeros(6, dtype=torch.float64, device="cuda")
    x = torch.arange(12, dtype=torch.float64, device="cuda")[::2]  # strided
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 6), axpy, out=out, x=x, a=3.0)
    assert out.cpu().tolist() == [3.0 * v for v in range(0, 12, 2)]
    A = torch.arange(12.0, dtype=torch.float64, device="cuda").reshape(3, 4).t()  # transposed
    y = torch.zeros(4, dtype=torch.float64, device="cuda")
    ones = torch.ones(3, dtype=torch.float64, device="cuda")
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), matvec_rows, y=y, A=A, x=ones)
    assert y.cpu().tolist() == A.sum(dim=1).cpu().tolist()
    with pytest.raises(pk.DispatchError, match=r"out: .*GPU memory.* CPU space"):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 6), axpy, out=out, x=x, a=1.0)


@gpu
def test_python_arithmetic_and_small_types(cp):
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 7], dtype=np.int64)
    fa, fb = np.array([7.5, -7.5, 1.0, -1.0, 0.3, 5.0]), np.array([2.0, 2.0, -0.1, 0.1, 0.1, 7.0])
    q, r = cp.zeros(6, dtype=cp.int64), cp.zeros(6, dtype=cp.int64)
    fq, fr = cp.zeros(6), cp.zeros(6)
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, 6), python_arithmetic, q=q, r=r, fq=fq, fr=fr,
        a=cp.asarray(a), b=cp.asarray(b), fa=cp.asarray(fa), fb=cp.asarray(fb),
    )  # fmt: skip
    assert q.get().tolist() == [x // y for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert r.get().tolist() == [x % y for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert fq.get().tolist() == [x // y for x, y in zip(fa.tolist(), fb.tolist(), strict=True)]
    assert fr.get().tolist() == [x % y for x, y in zip(fa.tolist(), fb.tolist(), strict=True)]
    a32 = np.arange(-5, 5, dtype=np.int32)
    af = np.linspace(0, 4, 10, dtype=np.float32)
    out32, outf = cp.zeros(10, dtype=cp.int32), cp.zeros(10, dtype=cp.float32)
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, 10), small_types, out32=out32, outf=outf,
        a32=cp.asarray(a32), af=cp.asarray(af), two=np.float32(2),
    )  # fmt: skip
    np.testing.assert_array_equal(out32.get(), a32 * 3 - 7)
    np.testing.assert_allclose(outf.get(), af * 2 + np.sqrt(af), rtol=1e-6)


@gpu
def test_value_and_or_small_atomics_and_float32_subnormals(cp):
    a = np.array([0, 3, 5, 0, 2, -4], dtype=np.int16)
    b = np.array([1, 0, 6, 0, 9, 8], dtype=np.int16)
    out, smallest = cp.zeros(6, dtype=cp.int16), cp.asarray(np.array([99, 99, 5], np.int16))
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, 6), value_logic, out=out, a=cp.asarray(a), b=cp.asarray(b),
        smallest=smallest,
    )  # fmt: skip
    assert out.get().tolist() == [
        ((x and y) or 7) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]
    assert smallest.get().tolist() == [min((a - b)[0::2]), min((a - b)[1::2]), 5]
    # float32 subnormals are kept (NVRTC without CuPy's -ftz=true), as NumPy keeps them
    v = np.array([1e-38, 3e-39, 1e-45, 1.0], dtype=np.float32)
    out32 = cp.zeros(4, dtype=cp.float32)
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, 4), scale, out=out32, v=cp.asarray(v), s=np.float32(0.5)
    )
    np.testing.assert_array_equal(out32.get(), v * np.float32(0.5))
    assert out32.get()[0] != 0


@gpu
def test_math_functions_match_numpy(cp):
    x = np.linspace(0.01, 3.0, 64)
    x[:4] = [0.125, 0.375, 0.625, 0.875]  # x * 4 halfway between integers
    out = cp.zeros((64, 5))
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), math_calls, out=out, x=cp.asarray(x))
    got = out.get()
    np.testing.assert_allclose(got[:, 0], np.sqrt(x) + np.exp(-x), rtol=1e-14)
    np.testing.assert_allclose(got[:, 1], np.sin(x) * np.cos(x) + np.arctan2(x, 2.0), rtol=1e-13)
    expected2 = np.floor(x * 3.7) + np.fmod(x, 0.3) + x + x**1.5
    np.testing.assert_allclose(got[:, 2], expected2, rtol=1e-14)
    np.testing.assert_allclose(got[:, 3], np.minimum(x, 0.5) + np.maximum(np.arange(64), 2))
    assert got[:, 4].tolist() == [round(v * 4) for v in x]
    assert got[:4, 4].tolist() == [0, 2, 2, 4]


@gpu
def test_unpacking_and_two_valued_math_as_python(cp):
    x = np.array([0.3, -2.0, -0.0, 1e300, 7.5, 5e-324, 3.0, -1.25])
    out = cp.zeros((len(x), 5))
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, len(x)), unpacking_math, out=out, x=cp.asarray(x))
    expected = []
    for i, v in enumerate(x):
        frac, whole = math.modf(v * 3.0)
        m, e = math.frexp(v)
        rest = math.remainder(v, 0.75) + math.ldexp(float(i), 3) + v
        expected.append([frac, whole, m, e, rest])
    np.testing.assert_array_equal(out.get(), np.array(expected))


@gpu
def test_atomics(cp):
    data = np.random.default_rng(4).integers(0, 1000, size=20_000)
    c64, c32 = cp.zeros(4, dtype=cp.int64), cp.zeros(4, dtype=cp.int32)
    s64, s32 = cp.zeros(4), cp.zeros(4, dtype=cp.float32)
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, len(data)), histogram, counts64=c64, counts32=c32,
        sums64=s64, sums32=s32, data=cp.asarray(data),
    )  # fmt: skip
    expected = np.bincount(data % 4, minlength=4)
    np.testing.assert_array_equal(c64.get(), expected)
    np.testing.assert_array_equal(c32.get(), expected)
    np.testing.assert_array_equal(s64.get(), expected * 0.5)  # exact: multiples of 0.5
    np.testing.assert_array_equal(s32.get(), expected * 0.25)
    next_ticket, got = cp.zeros(1, dtype=cp.int64), cp.zeros(5000, dtype=cp.int64)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 5000), tickets, next_ticket=next_ticket, got=got)
    assert sorted(got.get().tolist()) == list(range(5000))
    bytes8, shorts = cp.zeros(3, dtype=cp.int8), cp.zeros(2, dtype=cp.int16)
    biggest, flags = cp.zeros(1, dtype=cp.int64), cp.zeros(4, dtype=cp.uint8)
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, 90), small_atomics, bytes8=bytes8, shorts=shorts,
        biggest=biggest, flags=flags,
    )  # fmt: skip
    assert bytes8.get().tolist() == [30, 30, 30]
    assert shorts.get().tolist() == [-90, -90]
    assert biggest.get().tolist() == [89]
    f = flags.get().tolist()  # one index of each residue won the exchange
    assert all(v != 0 and (v - 1) % 4 == k for k, v in enumerate(f))


@gpu
def test_random_numbers_equal_the_openmp_ones(cp):
    n = 10_000
    out, picks = cp.zeros(n), cp.zeros(n, dtype=cp.int64)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), random_fill, out=out, picks=picks, seed=42)
    cpu_out, cpu_picks = np.zeros(n), np.zeros(n, dtype=np.int64)
    pk.parallel_for(
        pk.RangePolicy(pk.OpenMP, 0, n), random_fill, out=cpu_out, picks=cpu_picks, seed=42
    )
    np.testing.assert_array_equal(out.get(), cpu_out)
    np.testing.assert_array_equal(picks.get(), cpu_picks)


@gpu
def test_mdrange_for_and_reduce(cp):
    out = cp.zeros((5, 6, 7), dtype=cp.int64)
    pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [1, 0, 2], [5, 6, 7]), box_fill, out=out)
    i, j, k = np.indices((5, 6, 7))
    expected = np.where(i >= 1, 100 * i + 10 * j + k, 0)
    expected[:, :, :2] = 0
    np.testing.assert_array_equal(out.get(), expected)
    A = np.random.default_rng(5).random((30, 20))
    total = pk.parallel_reduce(
        pk.MDRangePolicy(pk.Cuda, [0, 0], [30, 20]), box_sum, A=cp.asarray(A)
    )
    assert total == pytest.approx(float((A * np.arange(1, 31)[:, None]).sum()), rel=1e-12)
    tail = pk.parallel_reduce(pk.MDRangePolicy(pk.Cuda, [3, 5], [9, 8]), box_sum, A=cp.asarray(A))
    assert tail == pytest.approx(float((A[3:9, 5:8] * np.arange(4, 10)[:, None]).sum()), rel=1e-12)


@gpu
@pytest.mark.parametrize("team", [pk.AUTO, 64, 3])
def test_team_yax_with_a_team_thread_range_reduce(cp, team):
    rng = np.random.default_rng(6)
    rows, cols = 37, 200
    A, x, y = rng.random((rows, cols)), rng.random(cols), rng.random(rows)
    policy = pk.TeamPolicy(pk.Cuda, rows, team)
    args = {"cols": cols, "y": cp.asarray(y), "x": cp.asarray(x), "A": cp.asarray(A)}
    result = pk.parallel_reduce(policy, team_yax, **args)
    assert isinstance(result, float)
    assert result == pytest.approx(y @ A @ x, rel=1e-12)
    assert pk.parallel_reduce(policy, team_yax, **args) == result  # deterministic


@gpu
@pytest.mark.parametrize("team", [pk.AUTO, 64, 3])
def test_scratch_and_barrier_reverse_each_row(cp, team):
    rng = np.random.default_rng(7)
    league, m = 9, 130
    inp = rng.random((league, m))
    for level, kernel in ((0, reverse_rows), (1, reverse_rows_level1)):
        out = cp.zeros((league, m))
        scratch = pk.ScratchView1D[pk.double].shmem_size(m)
        policy = pk.TeamPolicy(pk.Cuda, league, team).set_scratch_size(level, pk.PerTeam(scratch))
        pk.parallel_for(policy, kernel, out=out, inp=cp.asarray(inp), m=m)
        np.testing.assert_array_equal(out.get(), inp[:, ::-1])


@gpu
def test_thread_scratch_is_each_threads_own(cp):
    n, team, league = 5, 32, 4
    out = cp.zeros((league, team), dtype=cp.int64)
    policy = pk.TeamPolicy(pk.Cuda, league, team).set_scratch_size(
        0, pk.PerThread(pk.ScratchView1D[pk.int64].shmem_size(n))
    )
    pk.parallel_for(policy, own_scratch, out=out, n=n)
    expected = np.array([r * 1000 * n + n * (n - 1) // 2 for r in range(team)])
    np.testing.assert_array_equal(out.get(), np.tile(expected, (league, 1)))


@gpu
@pytest.mark.parametrize("level", [0, 1])
def test_team_and_thread_scratch_share_one_pool_per_level(cp, level):
    n, league, team = 4, 3, 32
    size = pk.ScratchView1D[pk.int64].shmem_size
    out = cp.zeros((league, team), dtype=cp.int64)
    policy = (
        pk.TeamPolicy(pk.Cuda, league, team)
        .set_scratch_size(0, pk.PerTeam(size(n) + size(1)))
        .set_scratch_size(0, pk.PerThread(size(n)))
    )
    pk.parallel_for(policy, pooled_scratch, out=out, n=n)
    np.testing.assert_array_equal(out.get(), pooled_scratch_expected(league, team, n))

    # PyKokkos' own scratch test: PerThread reserved, team_scratch(level) allocated.
    inp = np.arange(12.0).reshape(3, 4)
    reversed_ = cp.zeros((3, 4))
    per_thread_only = pk.TeamPolicy(pk.Cuda, 3, team).set_scratch_size(
        level, pk.PerThread(pk.ScratchView1D[pk.double].shmem_size(4))
    )
    kernel = reverse_rows if level == 0 else reverse_rows_level1
    pk.parallel_for(per_thread_only, kernel, out=reversed_, inp=cp.asarray(inp), m=4)
    np.testing.assert_array_equal(reversed_.get(), inp[:, ::-1])

    tight = (
        pk.TeamPolicy(pk.Cuda, 1, 2)
        .set_scratch_size(0, pk.PerTeam(8))
        .set_scratch_size(0, pk.PerThread(24))
    )
    with pytest.raises(pk.KernelTeamError) as info:
        pk.parallel_for(tight, pooled_scratch, out=cp.zeros((1, 2), cp.int64), n=4)
    assert (
        "ScratchView1D 'mine' needs 32 bytes of level-0 thread scratch but only 8 are left"
        in str(info.value)
    )


@gpu
@pytest.mark.parametrize("team", [pk.AUTO, 4, 32])
def test_nested_scan_md_range_vector_range_and_single(cp, team):
    inp = np.arange(5 * 11, dtype=np.int64).reshape(5, 11) % 7 - 2
    out, totals = cp.zeros((5, 11), dtype=cp.int64), cp.zeros(5, dtype=cp.int64)
    pk.parallel_for(
        pk.TeamPolicy(pk.Cuda, 5, team), row_prefix, out=out, totals=totals, inp=cp.asarray(inp)
    )
    np.testing.assert_array_equal(out.get(), np.cumsum(inp, axis=1))
    np.testing.assert_array_equal(totals.get(), inp.sum(axis=1))

    box = cp.zeros((3, 4, 5), dtype=cp.int64)
    total = pk.parallel_reduce(pk.TeamPolicy(pk.Cuda, 3, team), box_fill_and_sum, out=box)
    b, i, j = np.indices((3, 4, 5))
    np.testing.assert_array_equal(box.get(), 100 * b + 10 * i + j)
    assert total == int((100 * b + 10 * i + j).sum())

    rng = np.random.default_rng(8)
    A, x = rng.random((12, 7)), rng.random(7)
    y = cp.zeros(12)
    pk.parallel_for(
        pk.TeamPolicy(pk.Cuda, 4, team), matrix_rows_vector, out=y, A=cp.asarray(A),
        x=cp.asarray(x),
    )  # fmt: skip
    np.testing.assert_allclose(y.get(), A @ x, rtol=1e-13)

    out = cp.zeros(12, dtype=cp.int64)
    total = pk.parallel_reduce(
        pk.TeamPolicy(pk.Cuda, 12, team), row_totals_through_nonlocal, A=cp.asarray(A), out=out
    )
    assert total == pytest.approx(A.sum(), rel=1e-13)
    np.testing.assert_array_equal(out.get(), 7)

    count, sizes = cp.zeros(1, dtype=cp.int64), cp.zeros(6, dtype=cp.int64)
    pk.parallel_for(pk.TeamPolicy(pk.Cuda, 6, team), once_per_team, count=count, sizes=sizes)
    assert count.get()[0] == 6
    if team is not pk.AUTO:
        np.testing.assert_array_equal(sizes.get(), team)


@gpu
@pytest.mark.parametrize("team", [pk.AUTO, 4, 32])
def test_nested_reduces_with_reducers_on_the_gpu(cp, team):
    rng = np.random.default_rng(9)
    A = rng.uniform(0.5, 1.5, (7, 37))
    A[2, 5] = -1.0
    out = {
        "largest": cp.zeros(7), "smallest": cp.zeros(7), "product": cp.zeros(7),
        "positive": cp.zeros(7, dtype=bool), "bits": cp.zeros(7, dtype=cp.int64),
    }  # fmt: skip
    pk.parallel_for(pk.TeamPolicy(pk.Cuda, 7, team), row_extremes, A=cp.asarray(A), **out)
    assert out["largest"].get().tolist() == A.max(axis=1).tolist()
    assert out["smallest"].get().tolist() == A.min(axis=1).tolist()
    np.testing.assert_allclose(out["product"].get(), A.prod(axis=1), rtol=1e-13)
    assert out["positive"].get().tolist() == (A > 0).all(axis=1).tolist()
    assert (out["bits"].get() == 2**37 - 1).all()


@gpu
def test_pykokkos_lambdas_on_the_gpu(cp):
    x, out = cp.arange(1000, dtype=cp.float64), cp.zeros(1000)
    scale = 0.5
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 1000), lambda i: x[i] * scale, out)
    np.testing.assert_array_equal(out.get(), np.arange(1000) * 0.5)
    total = pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, 1000), lambda i, acc: acc + out[i])
    assert total == np.arange(1000).sum() * 0.5


@gpu
def test_a_large_league_runs_on_fewer_blocks(cp):
    rows, cols = 5000, 16
    A = np.random.default_rng(9).random((rows, cols))
    x, y = np.ones(cols), np.ones(rows)
    result = pk.parallel_reduce(
        pk.TeamPolicy(pk.Cuda, rows, 16), team_yax, cols=cols, y=cp.asarray(y),
        x=cp.asarray(x), A=cp.asarray(A),
    )  # fmt: skip
    assert result == pytest.approx(A.sum(), rel=1e-12)


@gpu
def test_workload_class_on_cuda(cp):
    obj = Saxpy(cp, 1000)
    pk.execute(pk.Cuda, obj)
    expected = 2.5 * np.arange(1000) + 1
    np.testing.assert_array_equal(obj.y.get(), expected)
    assert obj.total == pytest.approx(expected.sum(), rel=1e-12)


@gpu
def test_print_and_printf_from_the_gpu(cp, capfd):
    # Python's repr (the shortest digits that read back) for doubles and float32 alike,
    # as the CPU prints them: edge cases, then values of every magnitude.
    edges = [0.1, 1.5, -0.0, 1e20, 1 / 3, 0.1 + 0.2, 123456789.0, 2.0**-30, 1e-5, 5e-324]
    edges += [1e16, 1e23, 9.999999999999999e22, 2.2250738585072014e-308, 1.7976931348623157e308]
    edges += [100.0, 1e-4, 0.0001234, 16777217.0, 3.4028235e38, -2.5, float("inf"), float("nan")]
    rng = np.random.default_rng(10)
    vals = np.array(edges + list(rng.random(200) * 10.0 ** rng.integers(-40, 40, 200)))
    with np.errstate(over="ignore"):
        singles = vals.astype(np.float32)
    n = len(vals)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, n), show, vals=vals, singles=singles)
    cpu = capfd.readouterr().out
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, n), show, vals=cp.asarray(vals), singles=cp.asarray(singles)
    )
    gpu_out = capfd.readouterr().out
    assert sorted(gpu_out.splitlines()) == sorted(cpu.splitlines())
    ints = (rng.integers(-(2**40), 2**40, n)).astype(np.int64)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, n), show_formatted, vals=vals, ints=ints)
    cpu = capfd.readouterr().out
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, n), show_formatted, vals=cp.asarray(vals), ints=cp.asarray(ints)
    )
    assert sorted(capfd.readouterr().out.splitlines()) == sorted(cpu.splitlines())
    # f-strings' float types: the exact decimal value rounded as Python (and the CPU) round it
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, n), show_float_formats, vals=vals)
    cpu = capfd.readouterr().out
    assert (
        "0 0.100 1.000000e-01 1e-01 0. 0.1 0.10000000000000001 0.100 +01.0000E-01 0.1      |" in cpu
    )
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), show_float_formats, vals=cp.asarray(vals))
    assert sorted(capfd.readouterr().out.splitlines()) == sorted(cpu.splitlines())
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), show_printf, vals=cp.asarray(vals[:3]))
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == ["row 0: 0.100", "row 1: 1.500", "row 2: -0.000"]


@gpu
def test_before_launch_hook_sees_the_cuda_kernel(cp):
    seen = []

    class Observer:
        def before_launch(self, dispatch, kernel):
            seen.append((dispatch.space, kernel))

    observer = Observer()
    pk.hooks.add_observer(observer)
    try:
        out = cp.zeros(4)
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), axpy, out=out, x=cp.ones(4), a=1.0)
    finally:
        pk.hooks.remove_observer(observer)
    ((space, kernel),) = seen
    assert space is pk.Cuda and not kernel.debug
    assert kernel.name == "axpy" and kernel.operation == "for"
    assert axpy.__code__.co_firstlineno + 1 in kernel.lines
    text = kernel.source.read_text()
    assert f'"{__file__}"' in text and "__global__" in text


@gpu
def test_errors_name_the_argument_and_the_fix(cp):
    with pytest.raises(pk.DispatchError, match=r"x: .*NumPy array: pass cupy\.asarray\(x\)"):
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), axpy, out=cp.zeros(3), x=np.ones(3), a=1.0)
    with pytest.raises(pk.DispatchError, match=r"out: a CuPy array .*pass out\.get\(\)"):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), axpy, out=cp.zeros(3), x=np.ones(3), a=1.0)
    with pytest.raises(pk.DispatchError, match="missing a"):
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), axpy, out=cp.zeros(3), x=cp.ones(3))


@gpu
def test_too_little_scratch_is_a_kernel_team_error(cp):
    inp = cp.ones((2, 8))
    policy = pk.TeamPolicy(pk.Cuda, 2, 2).set_scratch_size(0, pk.PerTeam(16))
    with pytest.raises(pk.KernelTeamError) as info:
        pk.parallel_for(policy, reverse_rows, out=cp.zeros_like(inp), inp=inp, m=8)
    message = str(info.value)
    assert (
        "ScratchView1D 's' needs 64 bytes of level-0 team scratch but only 16 are left" in message
    )
    assert "set_scratch_size(0, pk.PerTeam(...))" in message
    line = reverse_rows.__code__.co_firstlineno + 3  # the decorator's, then the def
    assert f"team_kernels.py:{line}: " in message and "(block " in message
    # The same kernel runs clean with enough scratch (the fault is not reported again),
    # and a second overflow is reported again.
    out = cp.zeros_like(inp)
    roomy = pk.TeamPolicy(pk.Cuda, 2, 2).set_scratch_size(0, pk.PerTeam(64))
    pk.parallel_for(roomy, reverse_rows, out=out, inp=inp, m=8)
    np.testing.assert_array_equal(out.get(), inp.get()[:, ::-1])
    with pytest.raises(pk.KernelTeamError, match="needs 64 bytes of level-0 team scratch"):
        pk.parallel_for(policy, reverse_rows, out=cp.zeros_like(inp), inp=inp, m=8)


@gpu
def test_a_barrier_only_some_threads_reach_is_reported_not_a_hang(cp):
    tickets_view = cp.zeros(3, dtype=cp.int64)
    with pytest.raises(pk.KernelTeamError) as info:
        pk.parallel_for(
            pk.TeamPolicy(pk.Cuda, 3, 2), divergent_barrier_at_run_time, tickets=tickets_view
        )
    line = divergent_barrier_at_run_time.__code__.co_firstlineno + 4
    message = str(info.value)
    assert re.match(rf".*team_kernels.py:{line}: team_barrier\(\) mismatch in league \d", message)
    kernels = divergent_barrier_at_run_time.__code__.co_filename
    assert re.search(rf"team_rank [01] waits at {re.escape(kernels)}:{line}", message)
    assert "at the end of the workunit" in message
    # The GPU is still usable afterwards.
    out = cp.zeros(3)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), axpy, out=out, x=cp.ones(3), a=1.0)
    assert out.get().tolist() == [1.0, 1.0, 1.0]


@gpu
def test_a_repeated_dispatch_reuses_the_loaded_kernel(cp):
    out = cp.zeros(8)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 8), axpy, out=out, x=cp.ones(8), a=1.0)
    cuda = {k: v for k, v in axpy.__pkernels__.specializations.items() if k[0] == "cuda"}
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 8), axpy, out=cp.ones(8), x=cp.ones(8), a=3.0)
    after = {k: v for k, v in axpy.__pkernels__.specializations.items() if k[0] == "cuda"}
    assert after == cuda


@pk.workunit
def negate(i, out):
    out[i] = -out[i]


@gpu
def test_nvcc_compiles_when_nvrtc_cannot(cp, monkeypatch, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on the PATH")

    def no_nvrtc(*args):
        raise RuntimeError("NVRTC is not there")

    out = cp.arange(5, dtype=cp.float64)  # before: CuPy compiles arange with NVRTC
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cp.cuda.nvrtc, "createProgram", no_nvrtc)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 5), negate, out=out)
    assert out.get().tolist() == [0.0, -1.0, -2.0, -3.0, -4.0]
    assert list(tmp_path.rglob("kernel.cubin"))


@gpu
def test_a_cuda_compile_error_names_the_python_line(cp, tmp_path, monkeypatch):
    import dataclasses

    from pkernels.runtime.cuda_compile import build_cuda

    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path))
    arg_types = {"out": argument_type("out", np.zeros(3))}
    function, helpers = lower_workunit(negate, "for", arg_types)
    entry = emit_cuda_module(function, helpers, "for", pk.int64)
    broken = entry.source.replace(
        "namespace pk_kernel {", f'namespace pk_kernel {{\n#line 7 "{__file__}"\nnot_a_thing;', 1
    )
    with pytest.raises(pk.CompileError) as info:
        build_cuda(dataclasses.replace(entry, source=broken), "workunit negate")
    message = str(info.value)
    assert f"at {__file__}:7:" in message and "kernel.cu" in message


@pk.workunit
def bessel_calls(i, out, x, x32):
    out[i, 0] = pk.cyl_bessel_j0(x[i])
    out[i, 1] = pk.cyl_bessel_j1(x[i])
    x32[i] = pk.cyl_bessel_j0(x32[i])


@gpu
def test_bessel_functions_on_the_gpu_agree_with_the_cpu(cp):
    x = np.linspace(-30.0, 30.0, 97)
    x32 = x.astype(np.float32)
    out, out32 = cp.zeros((97, 2)), cp.asarray(x32)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 97), bessel_calls, out=out, x=cp.asarray(x),
                    x32=out32)  # fmt: skip
    cpu, cpu32 = np.zeros((97, 2)), x32.copy()
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 97), bessel_calls, out=cpu, x=x, x32=cpu32)
    # CUDA documents j0/j1 to a few ulp for |x| < 8 and to an absolute error (~1e-12)
    # beyond, where glibc's and CUDA's differ in the 13th digit (1.6e-13 at x = 30)
    near = np.abs(x) < 8
    np.testing.assert_allclose(out.get()[near], cpu[near], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(out.get(), cpu, rtol=0, atol=5e-12)
    np.testing.assert_allclose(out32.get(), cpu32, rtol=1e-5, atol=1e-6)


@gpu
def test_bin_sort_of_gpu_arrays_stays_on_the_gpu(cp):
    rng = np.random.default_rng(2)
    x = rng.random((500, 3)) * 3.0
    host = pk.BinSort(x, pk.BinOp3D(x, [3, 3, 3], [0.0] * 3, [3.0001] * 3), True)
    host.create_permute_vector()
    xd = cp.asarray(x)
    device = pk.BinSort(xd, pk.BinOp3D(xd, [3, 3, 3], [0.0] * 3, [3.0001] * 3), True)
    device.create_permute_vector()
    for name in ("get_permute_vector", "get_bin_offsets", "get_bin_count"):
        on_gpu = getattr(device, name)()
        assert isinstance(on_gpu, cp.ndarray), name
        np.testing.assert_array_equal(on_gpu.get(), getattr(host, name)(), err_msg=name)
    device.sort(xd)
    host.sort(x)
    np.testing.assert_array_equal(xd.get(), x)


def make_gpu_scaler(factor, out):
    @pk.workunit
    def scale(i, x):
        out[i] = factor * sqrt(x[i])  # noqa: F821 - bare, as PyKokkos lets kernels write

    return scale


@pk.workunit
def deep_copy_rank6(i, src, dst):
    for a in range(src.extent(5)):
        dst[i, 0, 1, 0, 0, a] = src[i, 0, 1, 0, 0, a] * 2


@gpu
def test_closures_bare_math_and_rank_six_views_on_the_gpu(cp):
    out = cp.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), make_gpu_scaler(3.0, out), x=cp.arange(4.0))
    np.testing.assert_allclose(out.get(), 3.0 * np.sqrt(np.arange(4.0)), rtol=1e-15)
    src = cp.arange(3 * 1 * 2 * 1 * 1 * 5, dtype=cp.float64).reshape(3, 1, 2, 1, 1, 5)
    dst = cp.zeros_like(src)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), deep_copy_rank6, src=src, dst=dst)
    np.testing.assert_array_equal(dst.get()[:, 0, 1], src.get()[:, 0, 1] * 2)
    assert not dst.get()[:, 0, 0].any()


@pk.workunit
def row_moments(i, A, out):
    moments = [0.0] * 3
    for j in range(A.shape[1]):
        for p in range(len(moments)):
            moments[p] += A[i, j] ** p
    for p in range(3):
        out[i, p] = moments[p]


@gpu
def test_list_locals_on_the_gpu(cp):
    a = np.random.default_rng(3).random((64, 9))
    out = cp.zeros((64, 9))
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), row_moments, A=cp.asarray(a), out=out)
    expected = np.stack([np.ones(64) * 9, a.sum(axis=1), (a**2).sum(axis=1)], axis=1)
    np.testing.assert_allclose(out.get()[:, :3], expected, rtol=1e-13)


def test_a_cubin_cupy_hands_back_one_byte_short_is_cached_whole(tmp_path):
    # CuPy's nvrtc.getCUBIN drops a cubin's last byte (it strips a C string's
    # terminator): the ELF check of the cache refused every NVRTC build on the H200.
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    from pkernels.build.elf import elf_problem
    from pkernels.runtime.cuda_compile import _whole_cubin

    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void k(double *x) { x[threadIdx.x] += 1.0; }\n')
    subprocess.run(
        [nvcc, "-cubin", "-arch=sm_90", str(source), "-o", str(tmp_path / "k.cubin")],
        check=True, capture_output=True,
    )  # fmt: skip
    cubin = (tmp_path / "k.cubin").read_bytes()
    assert elf_problem(cubin) is None and cubin[-1] == 0
    assert elf_problem(cubin[:-1]) is not None  # what CuPy hands back
    assert _whole_cubin(cubin[:-1]) == cubin
    assert _whole_cubin(cubin) == cubin
    assert _whole_cubin(cubin[:-9]) == cubin[:-9]  # cut short for real: left to the check


@pk.workunit
def gather(i, out, x, where):
    out[i] = x[where[i]]


class _AskBuild:
    """Asks every dispatch for ``mode``; records the build each launch ran."""

    def __init__(self, mode) -> None:
        self.mode = mode
        self.builds: list[str] = []

    def dispatch_started(self, dispatch) -> None:
        dispatch.build = self.mode

    def before_launch(self, dispatch, kernel) -> None:
        self.builds.append(kernel.build)


@gpu
@pytest.mark.parametrize(
    ("mode", "unproven"), [("HYBRID", "debug"), ("GUARDED", "checked")], ids=["hybrid", "guarded"]
)
def test_a_launch_proven_in_range_runs_the_release_build_on_the_gpu(cp, mode, unproven):
    from pkt_support import observing

    from pkernels.runtime.hooks import BuildMode

    n = 1000
    x, out = cp.arange(n, dtype=cp.float64), cp.zeros(n)
    with observing(_AskBuild(BuildMode[mode])) as observer:
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), axpy, out=out, x=x, a=2.0)
        # Indices read from data: no proof can hold, so the build that checks them.
        where = cp.asarray(np.arange(n)[::-1].copy())
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), gather, out=out, x=x, where=where)
        where[5] = n  # out of range: the checking build reports it, naming the line
        with pytest.raises(pk.KernelIndexError):
            pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), gather, out=out, x=x, where=where)
    assert observer.builds == ["release", unproven, unproven]
    assert out[0].item() == float(n - 1)
