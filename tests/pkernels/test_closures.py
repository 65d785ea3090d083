"""Workunits defined inside a function read what they captured from it, as Python does:
helpers (PyKokkos' test_implicit_functions), numbers and arrays (passed to the compiled
kernel at each dispatch, see translate.closures), in every space alike."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk


@pk.function
def doubled_next(i: int) -> int:
    return (i + 1) * 2


def make_reducer_calling(functor):
    @pk.workunit
    def total(i: int, acc: pk.Acc[pk.int64]) -> None:
        acc += functor(i)

    return total


def test_a_captured_helper_is_called(space):
    total = make_reducer_calling(doubled_next)
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 10), total) == 110


def make_scaler(out):
    factor = 2.0

    @pk.workunit
    def scale(i, x):
        out[i] = factor * x[i]

    def set_factor(value):
        nonlocal factor
        factor = value

    return scale, set_factor


def test_captured_numbers_and_arrays_are_read_at_each_dispatch(space):
    out = np.zeros(5)
    scale, set_factor = make_scaler(out)
    x = np.arange(5.0)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), scale, x=x)
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    set_factor(-1.5)  # the cell is rebound: the next dispatch reads the new value
    pk.parallel_for(pk.RangePolicy(space, 0, 5), scale, x=x)
    assert out.tolist() == [-0.0, -1.5, -3.0, -4.5, -6.0]


values = np.full(10, 100.0)  # a module global named as the captured array below


def make_sum_and_scan(values):
    @pk.workunit
    def total(i: int, acc: pk.Acc[pk.double]) -> None:
        acc += values[i]

    @pk.workunit
    def running(i: int, acc: pk.Acc[pk.double], last_pass: bool) -> None:
        acc += values[i]
        if last_pass:
            values[i] = acc

    return total, running


def test_the_captured_variable_wins_over_a_global_of_the_same_name(space):
    mine = np.ones(10)
    total, running = make_sum_and_scan(mine)
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 10), total) == 10.0
    assert pk.parallel_scan(pk.RangePolicy(space, 0, 10), running) == 10.0
    assert mine.tolist() == [float(k) for k in range(1, 11)]
    assert values[0] == 100.0  # the global is untouched


def make_counter():
    count = 0

    @pk.workunit
    def bump(i):
        nonlocal count
        count += 1

    return bump


def test_assigning_a_captured_variable_is_refused(native_space):
    with pytest.raises(pk.TranslationError, match="nonlocal is not supported in kernels"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 3), make_counter())


def test_an_argument_named_as_a_captured_variable_is_refused(space):
    out = np.zeros(3)
    scale, _ = make_scaler(out)
    with pytest.raises(pk.DispatchError, match="reads factor from its enclosing function"):
        pk.parallel_for(pk.RangePolicy(space, 0, 3), scale, x=np.ones(3), factor=5.0)
    assert not out.any()


@pk.function
def times_100(i: int) -> int:
    return i * 100


def make_swappable():
    helper = doubled_next

    @pk.workunit
    def apply(i, out):
        out[i] = helper(i)

    def swap(new):
        nonlocal helper
        helper = new

    return apply, swap


def test_a_captured_helper_rebound_is_called_anew(space):
    apply, swap = make_swappable()
    out = np.zeros(3, np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), apply, out=out)
    assert out.tolist() == [2, 4, 6]
    swap(times_100)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), apply, out=out)
    assert out.tolist() == [0, 100, 200]
