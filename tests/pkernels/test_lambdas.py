"""PyKokkos' lambda dispatches: `pk.parallel_reduce(n, lambda i, acc: acc + ...)` and
`pk.parallel_for(n, lambda i: value, view)`, reading what the enclosing function and the
module hold (numbers, arrays, an object's fields), on every space; what cannot be a
lambda kernel says what to write."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk

GRID = np.linspace(0.0, 1.0, 11)  # a module global the lambdas read


@pk.workload
class Squares:
    def __init__(self, n: int) -> None:
        self.n = n
        self.x = np.arange(n, dtype=np.float64)
        self.out = np.zeros(n)
        self.total = 0.0
        self.largest = 0.0
        self.on_grid = 0.0

    @pk.main
    def run(self) -> None:
        scale = 3.0  # a local of the main method
        pk.parallel_for("fill", self.n, lambda i: self.x[i] * self.x[i] * scale, self.out)
        self.total = pk.parallel_reduce(self.n, lambda i, acc: acc + self.out[i])
        self.largest = pk.parallel_reduce(
            self.n, lambda i, acc: max(acc, self.out[i] - 2 * i), reducer=pk.Max
        )
        self.on_grid = pk.parallel_reduce("grid", 11, lambda i, acc: acc + GRID[i] * scale)


def test_lambdas_in_a_main_method_as_pykokkos(space):
    work = Squares(9)
    pk.execute(space, work)
    expected = np.arange(9.0) ** 2 * 3.0
    assert work.out.tolist() == expected.tolist()
    assert work.total == expected.sum()
    assert work.largest == (expected - 2 * np.arange(9)).max()
    assert work.on_grid == pytest.approx(GRID.sum() * 3.0, rel=1e-14)


def test_a_lambda_sees_the_values_of_each_dispatch(space):
    # Captured values are arguments, read at every dispatch (not frozen at the first).
    out = np.zeros(4)
    for k in (1, 2):
        pk.parallel_for(pk.RangePolicy(space, 0, 4), lambda i: i * k, out)  # noqa: B023
        assert out.tolist() == [0.0, k, 2.0 * k, 3.0 * k]


def test_what_cannot_be_a_lambda_kernel_says_what_to_write():
    x = np.arange(4.0)
    with pytest.raises(pk.TranslationError, match=r"is written pk.parallel_for\(n, lambda i:"):
        pk.parallel_for(4, lambda i: x[i])  # no view to fill
    with pytest.raises(pk.TranslationError, match="is written pk.parallel_reduce"):
        pk.parallel_reduce(4, lambda i: x[i])
    with pytest.raises(pk.TranslationError, match="parallel_scan is not possible: write a def"):
        pk.parallel_scan(4, lambda i, acc, last: acc + x[i])
    thing = object()
    with pytest.raises(pk.TranslationError, match="the lambda uses 'thing' itself") as info:
        pk.parallel_reduce(4, lambda i, acc: acc + thing)
    assert f"{__file__}:" in str(info.value) and "^" in str(info.value)
    first, second = (lambda i, acc: acc + 1.0), (lambda i, acc: acc + 2.0)
    with pytest.raises(pk.TranslationError, match="which lambda of this line"):
        pk.parallel_reduce(4, second)
    assert first is not second


def test_the_same_lambda_text_in_two_modules_keeps_each_modules_names(make_module):
    # Equal code objects of two files compare equal in Python; each keeps its helper.
    text = """
import pkernels as pk

@pk.function
def f(v: float) -> float:
    return v + OFFSET

def run():
    return pk.parallel_reduce(4, lambda i, acc: acc + f(1.0))
"""
    first = make_module(text.replace("OFFSET", "1.0"))
    second = make_module(text.replace("OFFSET", "100.0"))
    assert (first.run(), second.run(), first.run()) == (8.0, 404.0, 8.0)


class Holder:
    def __init__(self) -> None:
        self.x = np.arange(4.0)


def test_captured_names_never_clash_and_what_a_lambda_cannot_read_is_named():
    o = Holder()
    o_x = 100.0  # the parameter `o.x` would take
    assert pk.parallel_reduce(4, lambda i, acc: acc + o.x[i] + o_x) == 406.0
    assert pk.parallel_reduce(4, lambda o_x, acc: acc + o.x[o_x]) == 6.0
    import math

    with pytest.raises(pk.TranslationError, match="'math', made in its enclosing function"):
        pk.parallel_reduce(4, lambda i, acc: acc + math.sqrt(o.x[i]))
    k = 3.0
    with pytest.raises(pk.TranslationError, match="plain parameters"):
        pk.parallel_reduce(4, lambda i, acc, *, k=k: acc + k)


@pk.workload
class BareFieldLambda:
    def __init__(self) -> None:
        self.n = 4
        self.x = np.arange(4.0)
        self.total = 0.0

    @pk.main
    def run(self) -> None:
        self.total = pk.parallel_reduce(n, lambda i, acc: acc + x[i])  # noqa: F821


def test_a_lambda_in_main_reads_bare_fields_too(space):
    work = BareFieldLambda()
    pk.execute(space, work)
    assert work.total == 6.0


def test_running_on_debug_first_leaves_the_kernels_intact():
    # The Debug space runs a rewritten copy (the accumulator as a one-element list); the
    # compiled spaces later translate the source tree it was made from, so that tree
    # must not change: Debug, then OpenMP and Serial give the same totals.
    totals = {}
    for space in (pk.Debug, pk.OpenMP, pk.Serial):
        work = Squares(9)
        pk.execute(space, work)
        totals[space] = (work.total, work.largest, work.on_grid)
    # (Sums of floats in another order may differ in the last bit: the threads' partials.)
    assert totals[pk.OpenMP] == pytest.approx(totals[pk.Debug], rel=1e-12)
    assert totals[pk.Serial] == pytest.approx(totals[pk.Debug], rel=1e-12)
    assert totals[pk.OpenMP][0] == 3.0 * sum(k * k for k in range(9))
