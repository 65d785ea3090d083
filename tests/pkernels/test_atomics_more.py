"""The rest of PyKokkos's atomics: the ``*_fetch`` forms (return the new value), modulo
and shifts (integer views), ``atomic_load`` and ``atomic_store``, on every space."""

from __future__ import annotations

import numpy as np
import pytest
from pkt_support import ALL_SPACES

import pkernels as pk


@pk.workunit
def new_values(i, a, b, out):
    out[i, 0] = pk.atomic_mul_fetch(a, [i, 0], 3)
    out[i, 1] = pk.atomic_max_fetch(a, [i, 1], 7)
    out[i, 2] = pk.atomic_min_fetch(a, [i, 2], 7)
    out[i, 3] = pk.atomic_and_fetch(a, [i, 3], 6)
    out[i, 4] = pk.atomic_or_fetch(a, [i, 4], 8)
    out[i, 5] = pk.atomic_xor_fetch(a, [i, 5], 5)
    out[i, 6] = pk.atomic_mod_fetch(a, [i, 6], 4)
    out[i, 7] = pk.atomic_lshift_fetch(a, [i, 7], 2)
    out[i, 8] = pk.atomic_rshift_fetch(a, [i, 8], 1)
    out[i, 9] = pk.atomic_fetch_mod(b, [i, 0], 3)
    pk.atomic_mod(b, [i, 1], 5)
    out[i, 10] = pk.atomic_fetch_lshift(b, [i, 2], 1)
    pk.atomic_rshift(b, [i, 3], 2)
    pk.atomic_lshift(b, [i, 4], 3)
    out[i, 11] = pk.atomic_fetch_rshift(b, [i, 5], 1)
    out[i, 12] = pk.atomic_load(b, [i, 6])
    pk.atomic_store(b, [i, 7], i * 10)


@pk.workunit
def float_new_values(i, x, total, out):
    out[i] = pk.atomic_div_fetch(x, [i], 4.0)
    pk.atomic_add(total, [0], out[i])


@pytest.mark.parametrize("space", ALL_SPACES)
def test_fetch_forms_modulo_shifts_load_and_store(space):
    n = 9
    a = (np.arange(n * 9, dtype=np.int64).reshape(n, 9) % 13) - 4
    b = (np.arange(n * 8, dtype=np.int64).reshape(n, 8) % 17) - 6
    a0, b0 = a.copy(), b.copy()
    out = np.zeros((n, 13), dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, n), new_values, a=a, b=b, out=out)
    expected_a = a0.copy()
    expected_a[:, 0] *= 3
    expected_a[:, 1] = np.maximum(a0[:, 1], 7)
    expected_a[:, 2] = np.minimum(a0[:, 2], 7)
    expected_a[:, 3] &= 6
    expected_a[:, 4] |= 8
    expected_a[:, 5] ^= 5
    expected_a[:, 6] %= 4  # Python's (and NumPy's) modulo: never negative here
    expected_a[:, 7] <<= 2
    expected_a[:, 8] >>= 1
    np.testing.assert_array_equal(a, expected_a)
    np.testing.assert_array_equal(out[:, :9], expected_a)
    expected_b = b0.copy()
    expected_b[:, 0] %= 3
    expected_b[:, 1] %= 5
    expected_b[:, 2] <<= 1
    expected_b[:, 3] >>= 2
    expected_b[:, 4] <<= 3
    expected_b[:, 5] >>= 1
    expected_b[:, 7] = np.arange(n) * 10
    np.testing.assert_array_equal(b, expected_b)
    np.testing.assert_array_equal(out[:, 9], b0[:, 0])
    np.testing.assert_array_equal(out[:, 10], b0[:, 2])
    np.testing.assert_array_equal(out[:, 11], b0[:, 5])
    np.testing.assert_array_equal(out[:, 12], b0[:, 6])


@pytest.mark.parametrize("space", ALL_SPACES)
def test_div_fetch_on_floats(space):
    x = np.arange(1.0, 9.0)
    total = np.zeros(1)
    out = np.zeros(8)
    pk.parallel_for(pk.RangePolicy(space, 0, 8), float_new_values, x=x, total=total, out=out)
    np.testing.assert_array_equal(out, np.arange(1.0, 9.0) / 4)
    assert total[0] == pytest.approx(out.sum())


def test_modulo_of_a_float_view_is_refused(make_module):
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def k(i, x):
    pk.atomic_mod(x, [i], 2)
"""
    )
    with pytest.raises(pk.TranslationError, match="pk.atomic_mod needs an integer view"):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), module.k, x=np.zeros(2))


@pk.workunit
def atomic_of_views_named_a_and_v(i, a, v, smallest, total):
    pk.atomic_min(smallest, [0], a[i] - v[i])
    pk.atomic_add(total, [0], a[i] * v[i])


@pytest.mark.parametrize("space", ALL_SPACES)
def test_operands_may_name_any_view(space):
    a, v = np.arange(5.0), np.arange(5.0)[::-1].copy()
    smallest, total = np.array([100.0]), np.zeros(1)
    pk.parallel_for(
        pk.RangePolicy(space, 0, 5), atomic_of_views_named_a_and_v, a=a, v=v,
        smallest=smallest, total=total,
    )  # fmt: skip
    assert smallest[0] == (a - v).min() and total[0] == (a * v).sum()
