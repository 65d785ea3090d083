"""The rest of PyKokkos' host API that its example programs use: pk.Timer, pk.fence,
view options (Layout, MemorySpace, Trait, ViewTypeInfo), pk.array / pk.asarray, `int`
views as int32, @pk.functor and @pk.workload(**view_types), the keyword and older
positional forms of TeamPolicy and MDRangePolicy. Each is checked by what a program
does with it: the kernel's results."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from team_kernels import team_yax

import pkernels as pk


@pk.workunit
def add_ten(i, out, a):
    out[i] = a[i] + 10


@pk.workunit
def write_index(i: int, v: pk.View1D[int]):
    v[i] = i * 3


@pk.workunit
def fill_2d(i: int, j: int, out: pk.View2D[pk.double]):
    out[i, j] = 10.0 * i + j


def test_timer_measures_elapsed_seconds_and_resets():
    timer = pk.Timer()
    time.sleep(0.05)
    first = timer.seconds()
    assert 0.05 <= first < 5
    assert timer.seconds() >= first  # it keeps counting
    timer.reset()
    assert timer.seconds() < first


def test_fence_returns_once_kernels_finished(space):
    out = np.zeros(64, dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 64), add_ten, out=out, a=np.arange(64))
    pk.fence()
    pk.fence(space)
    np.testing.assert_array_equal(out, np.arange(64) + 10)
    with pytest.raises(TypeError, match="fence takes an ExecutionSpace"):
        pk.fence("OpenMP")


def test_host_and_device_spaces():
    assert pk.is_host_execution_space(pk.OpenMP) and pk.is_host_execution_space(pk.Debug)
    assert not pk.is_host_execution_space(pk.Cuda)
    assert pk.Cuda in pk.DeviceExecutionSpace and pk.OpenMP not in pk.DeviceExecutionSpace


def test_array_shares_memory_so_kernel_writes_show(space):
    # The GPU-Puzzles idiom: out=pk.array(out) and read `out` afterwards.
    out = np.zeros(4, dtype=int)
    pk.parallel_for(
        pk.RangePolicy(space, 0, 4), add_ten, out=pk.array(out), a=pk.array([1, 2, 3, 4])
    )
    np.testing.assert_array_equal(out, [11, 12, 13, 14])
    assert isinstance(pk.array(out), pk.View)


def test_asarray_copies_only_when_asked():
    data = np.arange(3.0)
    shared = pk.asarray(data)
    shared[0] = 7.0
    assert data[0] == 7.0
    copied = pk.asarray(data, dtype=pk.float32, copy=True)
    copied[1] = 9.0
    assert data[1] == 1.0 and copied.dtype == np.float32


def test_int_views_are_int32_as_in_pykokkos_and_int_annotations_take_both(space):
    v = pk.View([5], int)
    assert v.dtype == np.int32
    pk.parallel_for(pk.RangePolicy(space, 0, 5), write_index, v=v)
    np.testing.assert_array_equal(v, np.arange(5) * 3)
    # NumPy's default integer is int64: the same annotation takes it.
    w = np.zeros(5, dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), write_index, v=w)
    np.testing.assert_array_equal(w, np.arange(5) * 3)


def test_int_annotation_still_rejects_other_element_types(native_space):
    with pytest.raises(pk.TranslationError, match=r"annotated View1D\[int\] but the array"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 5), write_index, v=np.zeros(5))


def test_layout_left_views_are_column_major_and_kernels_index_them_alike(space):
    left = pk.View([3, 4], pk.double, layout=pk.LayoutLeft)
    right = pk.View([3, 4], pk.double, layout=pk.Layout.LayoutRight)
    assert left.flags["F_CONTIGUOUS"] and right.flags["C_CONTIGUOUS"]
    for out in (left, right):
        pk.parallel_for(pk.MDRangePolicy(space, [0, 0], [3, 4]), fill_2d, out=out)
        np.testing.assert_array_equal(out, 10.0 * np.arange(3)[:, None] + np.arange(4))


def test_view_options_are_checked():
    assert pk.View([2], pk.double, space=pk.HostSpace, trait=pk.RandomAccess).shape == (2,)
    data = np.arange(4.0)
    wrapped = pk.View([4], pk.double, trait=pk.Unmanaged, array=data)
    wrapped[0] = 5.0
    assert data[0] == 5.0
    with pytest.raises(ValueError, match="cannot wrap an array of shape"):
        pk.View([3], pk.double, trait=pk.Unmanaged, array=data)
    with pytest.raises(TypeError, match="wraps an existing array"):
        pk.View([3], pk.double, trait=pk.Unmanaged)
    with pytest.raises(TypeError, match="layout must be a pk.Layout"):
        pk.View([3], pk.double, layout="LayoutLeft")
    with pytest.raises(TypeError, match="ViewTypeInfo layout must be a pk.Layout"):
        pk.ViewTypeInfo(layout=pk.HostSpace)


@pk.functor(y=pk.ViewTypeInfo(layout=pk.LayoutRight))
class Axpy:
    def __init__(self, n: int, a: float) -> None:
        self.a = a
        self.x = np.arange(n, dtype=np.float64)
        self.y = pk.View([n], pk.double)

    @pk.workunit
    def run(self, i: int):
        self.y[i] = self.a * self.x[i] + 1.0


@pk.workload(out=pk.ViewTypeInfo(layout=pk.LayoutRight))
class Squares:
    def __init__(self, n: int) -> None:
        self.n = n
        self.out = pk.View([n], pk.int64)

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.n, self.square)

    @pk.workunit
    def square(self, i: int):
        self.out[i] = i * i


def test_functor_and_workload_with_view_type_keywords(space):
    f = Axpy(6, 2.0)
    pk.parallel_for(pk.RangePolicy(space, 0, 6), f.run)
    np.testing.assert_array_equal(f.y, 2.0 * np.arange(6) + 1.0)
    w = Squares(5)
    pk.execute(space, w)
    np.testing.assert_array_equal(w.out, np.arange(5) ** 2)
    with pytest.raises(TypeError, match=r"@pk.functor\(y=...\) takes a pk.ViewTypeInfo"):
        pk.functor(y=pk.LayoutRight)


def test_team_policy_keyword_and_older_positional_forms(space):
    rows, cols = 5, 7
    rng = np.random.default_rng(3)
    y, x, A = rng.random(rows), rng.random(cols), rng.random((rows, cols))
    expected = y @ (A @ x)
    team = 1 if space is pk.Serial else 2  # Serial teams have one thread
    policies = [
        pk.TeamPolicy(space, rows, pk.AUTO),
        pk.TeamPolicy(rows, "auto", space=space),
        pk.TeamPolicy(rows, team, 1, space),  # older PyKokkos: the space last
        pk.TeamPolicy(league_size=rows, team_size=team, space=space),
    ]
    for policy in policies:
        assert policy.space is space and policy.league_size == rows
        total = pk.parallel_reduce(policy, team_yax, cols=cols, y=y, x=x, A=A)
        assert total == pytest.approx(expected, rel=1e-12)


def test_team_policy_forms_that_say_something_twice_are_errors():
    with pytest.raises(TypeError, match="team_size is given twice"):
        pk.TeamPolicy(8, 4, team_size=2)
    with pytest.raises(TypeError, match="the space is given twice"):
        pk.TeamPolicy(pk.OpenMP, 8, 2, space=pk.Serial)
    with pytest.raises(TypeError, match="vector_length without the arguments before it"):
        pk.TeamPolicy(8, vector_length=2)


def test_mdrange_policy_keywords(space):
    rank = pk.Rank(2, pk.Iterate.Left, pk.Iterate.Right)
    policies = [
        pk.MDRangePolicy([0, 0], [3, 4], [2, 2], space=space, rank=rank),
        pk.MDRangePolicy([0, 0], [3, 4], space=space, iter_outer=pk.Iterate.Right),
    ]
    for policy in policies:
        out = np.full((3, 4), np.nan)
        pk.parallel_for(policy, fill_2d, out=out)
        np.testing.assert_array_equal(out, 10.0 * np.arange(3)[:, None] + np.arange(4))
    with pytest.raises(ValueError, match="does not match the 2 dimensions"):
        pk.MDRangePolicy([0, 0], [3, 4], rank=pk.Rank(3, pk.Iterate.Left, pk.Iterate.Left))
    with pytest.raises(TypeError, match="iter_inner must be a pk.Iterate"):
        pk.MDRangePolicy([0, 0], [3, 4], iter_inner="Left")


def test_the_functor_subview_example_runs_and_agrees_with_numpy():
    example = Path(__file__).resolve().parents[2] / "examples" / "functor_subview.py"
    result = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "(NumPy: " in result.stdout and ", matches)" in result.stdout, result.stdout


def test_data_type_class_is_the_type_of_the_element_types():
    # PyKokkos code annotates dtype parameters `dtype: pk.DataTypeClass = pk.int32`.
    # As in PyKokkos, the element types are its subclasses (classes themselves).
    assert all(issubclass(t, pk.DataTypeClass) for t in (pk.int32, pk.double, pk.bool))
    assert all(isinstance(t, pk.DataType) for t in (pk.int32, pk.double, pk.bool))
    assert pk.View([3], pk.int32).dtype == pk.int32


def run_with(policy: pk.ExecutionPolicy, out) -> None:
    """A helper annotated with PyKokkos' policy base class, as its programs write them."""
    pk.parallel_for(policy, add_ten, out=out, a=np.arange(len(out)))


def test_policy_base_default_spaces_and_layouts_and_flush(space):
    for policy in (
        pk.RangePolicy(space, 0, 4),
        pk.MDRangePolicy(space, [0, 0], [2, 2]),
        pk.TeamPolicy(space, 2, 1),
    ):
        assert isinstance(policy, pk.ExecutionPolicy)
    memory = pk.get_default_memory_space(space)
    assert memory is pk.HostSpace
    assert pk.get_default_memory_space(pk.Cuda) is pk.CudaSpace
    out = pk.View([4], pk.int64, space=memory, layout=pk.get_default_layout(memory))
    run_with(pk.RangePolicy(space, 0, 4), out)
    pk.flush()  # PyKokkos' fusion flush: kernels here have already run
    assert out.tolist() == [10, 11, 12, 13] and out.layout is pk.LayoutRight
    with pytest.raises(TypeError, match="takes an ExecutionSpace"):
        pk.get_default_memory_space(pk.HostSpace)
    with pytest.raises(TypeError, match="takes a MemorySpace"):
        pk.get_default_layout(pk.OpenMP)


def test_default_layouts_are_kokkos_ones():
    # Kokkos (and PyKokkos) lay views out row-major on the host, column-major in CudaSpace.
    assert pk.get_default_layout(pk.HostSpace) is pk.LayoutRight
    assert pk.get_default_layout(pk.CudaSpace) is pk.LayoutLeft
    assert pk.get_default_layout(pk.MemorySpaceDefault) is pk.LayoutRight
    pk.set_default_space(pk.Cuda)  # the conftest fixture puts OpenMP back
    assert pk.get_default_layout(pk.MemorySpaceDefault) is pk.LayoutLeft
    # What a PyKokkos program allocates with it on the host: a column-major view there too.
    matrix = pk.View([3, 4], pk.double, space=pk.HostSpace, layout=pk.LayoutLeft)
    assert matrix.layout is pk.LayoutLeft and matrix.data.flags.f_contiguous
