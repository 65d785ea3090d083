"""Random numbers in kernels: pk.rand / pk.rand_int, counter-based and reproducible."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk


@pk.workunit
def fill_uniform(i, out, seed):
    out[i] = pk.rand(seed, i)


@pk.workunit
def fill_ints(i, out, seed, n):
    out[i] = pk.rand_int(seed, i, n)


@pk.workunit
def monte_carlo_pi(i, acc, seed):
    x = pk.rand(seed, 2 * i)
    y = pk.rand(seed, 2 * i + 1)
    if x * x + y * y < 1.0:
        acc += 1.0


def _uniform(space, seed, n=4096):
    out = np.zeros(n)
    pk.parallel_for(pk.RangePolicy(space, 0, n), fill_uniform, out=out, seed=seed)
    return out


def test_the_same_numbers_in_every_space_and_python(space) -> None:
    values = _uniform(space, 12345)
    expected = np.array([pk.rand(12345, i) for i in range(len(values))])
    np.testing.assert_array_equal(values, expected)  # bit for bit
    assert values.min() >= 0.0 and values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.02 and abs(values.var() - 1 / 12) < 0.01


def test_seeds_give_different_streams_and_repeat_exactly() -> None:
    a, b = _uniform(pk.OpenMP, 1), _uniform(pk.OpenMP, 2)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, _uniform(pk.OpenMP, 1))
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05


def test_independent_of_the_thread_count() -> None:
    one = _uniform(pk.Serial, 99)
    np.testing.assert_array_equal(one, _uniform(pk.OpenMP, 99))


def test_integers_are_in_range_and_match_python(space) -> None:
    out = np.zeros(2000, dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 2000), fill_ints, out=out, seed=7, n=6)
    assert set(out.tolist()) == {0, 1, 2, 3, 4, 5}
    assert out.tolist() == [pk.rand_int(7, i, 6) for i in range(2000)]


def test_monte_carlo_pi_reduce(space) -> None:
    n = 20000
    hits = pk.parallel_reduce(pk.RangePolicy(space, 0, n), monte_carlo_pi, seed=2026)
    assert abs(4 * hits / n - np.pi) < 0.05
    expected = sum(
        1.0 for i in range(n) if pk.rand(2026, 2 * i) ** 2 + pk.rand(2026, 2 * i + 1) ** 2 < 1
    )
    assert hits == expected


def test_random_arguments_must_be_integers(make_module) -> None:
    module = make_module(
        """
import numpy as np
import pkernels as pk


@pk.workunit
def bad(i, out):
    out[i] = pk.rand(0.5, i)
"""
    )
    with pytest.raises(pk.TranslationError, match="integer arguments"):
        pk.parallel_for(2, module.bad, out=np.zeros(2))
