"""A loop shared by a group of GPU threads (pkernels.translate.lane_split): which loops
qualify, the CUDA the release build gets (nvcc, without a GPU), and, on a GPU, that a
short range run that way gives what NumPy gives (integer sums exactly, float sums to
rounding, the same bits every run), where a long range runs one index per thread."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from test_cuda import gpu

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime.marshal import argument_type
from pkernels.translate.emit_cuda import ENTRY_SPLIT, emit_cuda_module
from pkernels.translate.kernel import lower_workunit
from pkernels.translate.lane_split import lane_split

# ---------------------------------------------------------------- workunits


@pk.workunit
def row_dot(j, acc, cols, y, x, A):
    row: float = 0
    for i in range(cols):
        row += A[j][i] * x[i]
    acc += y[j] * row


@pk.workunit
def pair_forces(i, cutsq, x, neigh, counts, f):
    xi: float = x[i, 0]
    fx: float = 0.0
    fy: float = 0.0
    hits: int = 0
    for k in range(counts[i]):
        j = neigh[i, k]
        dx = xi - x[j, 0]
        if dx * dx >= cutsq:
            continue
        fx += dx
        fy -= 2.0 * dx
        hits += 1
    f[i, 0] = fx
    f[i, 1] = fy + hits


@pk.workunit
def offset_sum(i, n, y, out):
    total: float = y[i]  # lane 0's start: the others start from 0
    for k in range(2, n, 3):
        total += k * 0.5 + y[(i + k) % n]
    out[i] = total


@pk.workunit
def integer_mix(i, m, out):
    s: pk.int64 = 0
    for k in range(m):
        s += (i * k) % 7 - 3
        for j in range(5):  # a nested loop may break
            if j * k > 6:
                break
            s += j
    out[i] = s


def _integer_mix(i: int, m: int) -> int:
    total = 0
    for k in range(m):
        total += (i * k) % 7 - 3
        for j in range(5):
            if j * k > 6:
                break
            total += j
    return total


@pk.workunit
def carried(i, x, y):
    prev: float = 0.0
    s: float = 0.0
    for k in range(10):
        s += x[k] - prev
        prev = x[k]
    y[i] = s


@pk.workunit
def last_value(i, x, y):
    v: float = 0.0
    for k in range(10):
        v = x[k]
    y[i] = v


@pk.workunit
def stores_in_loop(i, x, y):
    for k in range(10):
        y[k] = x[k]


@pk.workunit
def reads_its_sum(i, x, y):
    a: float = 0.0
    for k in range(10):
        a += x[k]
        if a > 3.0:
            a += 1.0
    y[i] = a


@pk.workunit
def bounded_by_its_sum(i, x, y):
    a: int = 3
    for k in range(a):  # noqa: B007 - the range reads the sum
        a += 1
    y[i] = a


@pk.workunit
def breaks_out(i, x, y):
    a: float = 0.0
    for k in range(10):
        if x[k] > 0.5:
            break
        a += x[k]
    y[i] = a


@pk.workunit
def stores_before(i, x, y):
    y[i] = 0.0
    a: float = 0.0
    for k in range(10):
        a += x[k]
    y[i] = a


@pk.workunit
def product(i, x, y):
    a: float = 1.0
    for k in range(10):
        a *= x[k]
    y[i] = a


@pk.workunit
def narrow_sum(i, x, y):
    a: pk.float32 = 0.0
    for k in range(10):
        a += x[k]  # a float64: rounded to float32 at every step
    y[i] = a


def _ir(workunit, operation, **kwargs):
    types = {name: argument_type(name, value) for name, value in kwargs.items()}
    function, helpers = lower_workunit(workunit, operation, types, 1)
    return function, helpers


def _row_dot():
    return _ir(
        row_dot, "reduce", cols=4, y=np.zeros(4), x=np.zeros(4), A=np.zeros((4, 4), order="F")
    )


def _pair_forces():
    return _ir(pair_forces, "for", cutsq=1.0, x=np.zeros((4, 3)),
               neigh=np.zeros((4, 2), np.int32), counts=np.zeros(4, np.int32),
               f=np.zeros((4, 2)))  # fmt: skip


def _short(workunit):
    return _ir(workunit, "for", x=np.zeros(10), y=np.zeros(10))


# ---------------------------------------------------------------- which loops


def test_sums_over_a_loop_are_split_with_their_sums():
    split = lane_split(_row_dot()[0])
    assert split is not None and split.loop.var.name == "i"
    assert [v.name for v in split.sums] == ["row"]
    split = lane_split(_pair_forces()[0])
    assert split is not None and [v.name for v in split.sums] == ["fx", "fy", "hits"]
    function, _ = _ir(offset_sum, "for", n=5, y=np.zeros(5), out=np.zeros(5))
    assert [v.name for v in lane_split(function).sums] == ["total"]
    function, _ = _ir(integer_mix, "for", m=5, out=np.zeros(5, np.int64))
    assert [v.name for v in lane_split(function).sums] == ["s"]


@pytest.mark.parametrize(
    "workunit",
    [carried, last_value, stores_in_loop, reads_its_sum, bounded_by_its_sum, breaks_out,
     stores_before, product, narrow_sum],
)  # fmt: skip
def test_loops_whose_iterations_depend_on_each_other_or_have_effects_stay_whole(workunit):
    assert lane_split(_short(workunit)[0]) is None


# ---------------------------------------------------------------- the CUDA


def _source(function_and_helpers, operation):
    function, helpers = function_and_helpers
    return emit_cuda_module(function, helpers, operation, pk.int64).source


def test_the_split_entry_is_in_release_builds_only(tmp_path):
    entry = emit_cuda_module(*_row_dot(), "reduce", pk.int64)
    assert entry.splits
    assert not emit_cuda_module(*_short(carried), "for", pk.int64).splits
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    stand_in = tmp_path / "nvrtc_builtins.h"  # NVRTC declares printf; nvcc needs <cstdio>
    stand_in.write_text("#include <cstdio>\n")
    for name, source in (
        ("row_dot", entry.source),
        ("pair_forces", _source(_pair_forces(), "for")),
    ):
        cu = tmp_path / f"{name}.cu"
        cu.write_text(source.replace(GENERATED_PATH, str(cu)))
        for build, options in (("release", []), ("checked", ["-DPK_CHECKS=1"]),
                               ("debug", ["-G", "-DPK_DEBUG=1"])):  # fmt: skip
            ptx = tmp_path / f"{name}_{build}.ptx"
            subprocess.run(
                [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", include_option(),
                 "--pre-include", str(stand_in), *options, "-ptx", "-x", "cu", str(cu),
                 "-o", str(ptx)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            has_entry = f".entry {ENTRY_SPLIT}(" in ptx.read_text()
            assert has_entry == (build == "release"), (name, build)


# ---------------------------------------------------------------- on a GPU


@pytest.fixture
def cp():
    import cupy

    return cupy


def _launched_split(cp, workunit, policy) -> bool:
    """Whether the last release launch of ``workunit`` over ``policy`` ran ENTRY_SPLIT."""
    (kernel,) = [k for key, k in workunit.__pkernels__.specializations.items()
                 if key[1] == ("cuda", "release")]  # fmt: skip
    function = kernel._range_plan(cp, policy)[2]
    return function is kernel._range_state(cp).split_entry(kernel.module)[0]


@gpu
def test_a_short_row_dot_runs_split_and_agrees_with_numpy(cp):
    rows, cols = 300, 1001
    rng = np.random.default_rng(3)
    A, x, y = rng.random((rows, cols)), rng.random(cols), rng.random(rows)
    A_view = pk.View([rows, cols], pk.double, space=pk.CudaSpace, layout=pk.LayoutLeft)
    A_view.data = cp.asarray(A, order="F")
    policy = pk.RangePolicy(pk.Cuda, 0, rows)
    args = {"cols": cols, "y": cp.asarray(y), "x": cp.asarray(x), "A": A_view}
    totals = {pk.parallel_reduce(policy, row_dot, **args) for _ in range(3)}
    assert len(totals) == 1  # the same bits every run
    assert totals.pop() == pytest.approx(float(y @ (A @ x)), rel=1e-12)
    assert _launched_split(cp, row_dot, policy)


@gpu
def test_split_and_whole_launches_give_the_same_integers(cp):
    # 40 indices run split; 2**20 fill the GPU one per thread: every integer sum exact.
    m = 61
    for n in (40, 1 << 20):
        out = cp.zeros(n, dtype=cp.int64)
        policy = pk.RangePolicy(pk.Cuda, 0, n)
        pk.parallel_for(policy, integer_mix, m=m, out=out)
        rows = [*range(40), n - 1]
        assert out.get()[rows].tolist() == [_integer_mix(i, m) for i in rows]
        assert _launched_split(cp, integer_mix, policy) == (n == 40)


@gpu
def test_sums_with_continue_and_a_start_value_run_split(cp):
    n, maxn = 50, 7
    rng = np.random.default_rng(5)
    x = rng.random((n, 3))
    neigh = rng.integers(0, n, (n, maxn)).astype(np.int32)
    counts = rng.integers(0, maxn + 1, n).astype(np.int32)
    f = cp.zeros((n, 2))
    policy = pk.RangePolicy(pk.Cuda, 0, n)
    pk.parallel_for(policy, pair_forces, cutsq=0.09, x=cp.asarray(x), neigh=cp.asarray(neigh),
                    counts=cp.asarray(counts), f=f)  # fmt: skip
    expected = np.zeros((n, 2))
    for i in range(n):
        dx = x[i, 0] - x[neigh[i, : counts[i]], 0]
        near = dx[dx * dx < 0.09]
        expected[i] = [near.sum(), -2.0 * near.sum() + len(near)]
    np.testing.assert_allclose(f.get(), expected, rtol=1e-12, atol=1e-12)
    assert _launched_split(cp, pair_forces, policy)

    y = rng.random(n)
    out = cp.zeros(n)
    policy = pk.RangePolicy(pk.Cuda, 0, n)
    pk.parallel_for(policy, offset_sum, n=n, y=cp.asarray(y), out=out)
    ks = np.arange(2, n, 3)
    want = y + np.array([(ks * 0.5 + y[(i + ks) % n]).sum() for i in range(n)])
    np.testing.assert_allclose(out.get(), want, rtol=1e-13)
    assert _launched_split(cp, offset_sum, policy)


@gpu
def test_a_loop_carrying_a_value_runs_whole_and_right(cp):
    x = np.linspace(0.0, 1.0, 10)
    y = cp.zeros(10)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 10), carried, x=cp.asarray(x), y=y)
    np.testing.assert_allclose(y.get(), np.full(10, x[-1]), rtol=1e-14)
