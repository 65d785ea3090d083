"""Workload classes: @pk.workload, @pk.main, @pk.callback, @pk.workunit methods reading
``self.*`` fields, pk.execute; checked against NumPy on every space."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk


@pk.workload
class RandomSum:
    """The PyKokkos tutorial's random-sum workload."""

    def __init__(self, n: int) -> None:
        self.N = n
        self.total = 0
        self.a = pk.View([n], pk.int64)
        self.a[:] = np.random.default_rng(7).integers(0, 10, n)
        self.reported: list[float] = []

    @pk.main
    def run(self) -> None:
        self.total = pk.parallel_reduce(self.N, self.my_reduction)

    @pk.callback
    def results(self) -> None:
        self.reported.append(self.total)

    @pk.workunit
    def my_reduction(self, i: int, accumulator: pk.Acc[pk.double]):
        accumulator += self.a[i]


@pk.workload
class Saxpy:
    """Fields of every kind: a scalar, an input view, an output view; plus a kwarg."""

    def __init__(self, n: int, a: float) -> None:
        self.n = n
        self.a = a
        self.x = np.linspace(0.0, 1.0, n)
        self.y = np.zeros(n)

    @pk.main
    def run(self) -> None:
        pk.parallel_for("saxpy", self.n, self.saxpy, shift=1.0)

    @pk.workunit
    def saxpy(self, i, shift):
        self.y[i] = self.a * self.x[i] + shift


@pk.workload
class AssignsAField:
    def __init__(self) -> None:
        self.count = 0

    @pk.main
    def run(self) -> None:
        pk.parallel_for(4, self.bad)

    @pk.workunit
    def bad(self, i):
        self.count = i


def test_random_sum_workload(space) -> None:
    workload = RandomSum(1000)
    pk.execute(space, workload)
    assert workload.total == float(workload.a.sum())
    assert workload.reported == [workload.total]  # the callback ran after main


def test_fields_scalars_views_and_keyword_arguments(space) -> None:
    workload = Saxpy(64, 3.0)
    pk.execute(space, workload)
    np.testing.assert_array_equal(workload.y, 3.0 * workload.x + 1.0)


def test_fields_are_read_at_each_dispatch(native_space) -> None:
    workload = Saxpy(16, 2.0)
    pk.execute(native_space, workload)
    workload.a = -1.0  # the same compiled kernel, new field values
    workload.x = workload.x[::-1].copy()
    pk.execute(native_space, workload)
    np.testing.assert_array_equal(workload.y, -1.0 * workload.x + 1.0)


def test_execute_uses_the_space_then_restores_the_default() -> None:
    pk.set_default_space(pk.Serial)
    seen = []

    @pk.workload
    class Probe:
        @pk.main
        def run(self) -> None:
            seen.append(pk.get_default_space())

    pk.execute(pk.OpenMP, Probe())
    pk.execute(pk.ExecutionSpace.Default, Probe())
    assert seen == [pk.OpenMP, pk.Serial]
    assert pk.get_default_space() is pk.Serial


def test_assigning_a_field_in_a_kernel_is_a_translation_error() -> None:
    with pytest.raises(pk.TranslationError) as info:
        pk.execute(pk.OpenMP, AssignsAField())
    message = str(info.value)
    assert "cannot assign the field self.count" in message
    assert "self.count = i" in message and "^" in message


def test_execute_needs_a_workload_with_a_main_method() -> None:
    class Plain:
        pass

    @pk.workload
    class NoMain:
        pass

    with pytest.raises(TypeError, match="@pk.workload"):
        pk.execute(pk.OpenMP, Plain())
    with pytest.raises(TypeError, match="no @pk.main"):
        pk.execute(pk.OpenMP, NoMain())
