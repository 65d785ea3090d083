"""PyKokkos' ufuncs from host code: pk.sqrt(view) and the other math names over whole
arrays, and the array-only names (pk.add, pk.sum, pk.unique, pk.zeros, ...), checked
against NumPy; the same names on numbers keep their kernel meaning."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pkernels as pk

X = np.linspace(0.05, 0.95, 7)  # inside every function's domain

ELEMENTWISE = {
    "sqrt": np.sqrt,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "atanh": np.arctanh,
    "fabs": np.fabs,
    "cbrt": np.cbrt,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "erf": np.vectorize(math.erf),
    "erfc": np.vectorize(math.erfc),
    "tgamma": np.vectorize(math.gamma),
    "lgamma": np.vectorize(math.lgamma),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_math_names_run_element_wise_over_a_view(name):
    view = pk.View([7], pk.double)
    view[:] = X
    result = getattr(pk, name)(view)
    assert isinstance(result, pk.View) and result.shape == (7,)
    np.testing.assert_array_equal(result, ELEMENTWISE[name](X))
    np.testing.assert_array_equal(view, X)  # a new array: the view is unchanged


def test_two_argument_math_names_broadcast_as_numpy():
    a, b = X.reshape(7, 1), X[::-1]
    for name, reference in [
        ("pow", np.power),
        ("atan2", np.arctan2),
        ("hypot", np.hypot),
        ("fmod", np.fmod),
        ("copysign", np.copysign),
        ("fmin", np.fmin),
        ("fmax", np.fmax),
    ]:
        np.testing.assert_array_equal(getattr(pk, name)(a, b), reference(a, b), err_msg=name)
    np.testing.assert_array_equal(pk.fmin(X, 0.5), np.fmin(X, 0.5))  # an array and a number


def test_on_numbers_the_names_keep_their_kernel_meaning():
    assert pk.sqrt(4.0) == 2.0 and isinstance(pk.sqrt(4.0), float)
    assert pk.floor(-1.5) == -2.0 and isinstance(pk.floor(-1.5), float)  # Kokkos: a float
    assert pk.fmin(float("nan"), 1.0) == 1.0
    assert pk.sqrt(np.float64(9.0)) == 3.0
    # Kokkos' (C's) answers where Python's math raises, as compiled kernels give them
    assert math.isnan(pk.sqrt(-1.0)) and pk.exp(1000.0) == math.inf
    assert type(pk.sqrt(np.float32(2.0))) is np.float32  # single precision kept


def test_array_only_names_match_numpy():
    rng = np.random.default_rng(2)
    a, b = rng.random((4, 5)), rng.random((4, 5))
    ints = rng.integers(-5, 5, 20)
    for name in ("add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
                 "power", "greater", "logaddexp", "logaddexp2", "logical_and", "logical_or",
                 "logical_xor"):  # fmt: skip
        np.testing.assert_array_equal(getattr(pk, name)(a, b), getattr(np, name)(a, b), name)
    for name in ("reciprocal", "sign", "negative", "positive", "square", "logical_not"):
        np.testing.assert_array_equal(getattr(pk, name)(a - 0.5), getattr(np, name)(a - 0.5))
    np.testing.assert_array_equal(pk.matmul(a, b.T), a @ b.T)
    np.testing.assert_array_equal(pk.transpose(a), a.T)
    assert pk.sum(a) == np.sum(a) and pk.mean(a) == np.mean(a) and pk.var(a) == np.var(a)
    np.testing.assert_array_equal(pk.sum(a, axis=0), a.sum(axis=0))
    assert pk.argmax(a) == np.argmax(a)
    assert pk.all(a > 0) and not pk.any(a > 1)
    np.testing.assert_array_equal(pk.unique(ints), np.unique(ints))
    np.testing.assert_array_equal(pk.in1d(ints, [0, 1]), np.isin(ints, [0, 1]))
    sorted_a = np.sort(a.ravel())
    np.testing.assert_array_equal(
        pk.searchsorted(sorted_a, [0.5]), np.searchsorted(sorted_a, [0.5])
    )
    assert isinstance(pk.add(a, b), pk.View)


def test_zeros_and_type_limits():
    z = pk.zeros((2, 3), dtype=pk.int32)
    assert isinstance(z, pk.View) and z.shape == (2, 3) and z.dtype == np.int32 and not z.any()
    assert pk.zeros(4).dtype == np.float64
    assert pk.iinfo(pk.int32).max == 2**31 - 1 and pk.iinfo(int).max == 2**63 - 1
    assert pk.finfo(pk.float32).eps == np.finfo(np.float32).eps
    assert math.isinf(pk.inf) and math.isnan(pk.nan)


def test_pykokkos_spellings_view_keyword_and_extra_names():
    view = pk.View([4], pk.double)
    view[:] = [1.0, 4.0, 9.0, 16.0]
    np.testing.assert_array_equal(pk.sqrt(view=view), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(pk.sign(view=view - 5.0), [-1.0, -1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="unexpected keyword argument viewA"):
        pk.sqrt(viewA=view)
    np.testing.assert_array_equal(pk.np_matmul(np.eye(2), [3.0, 4.0]), [3.0, 4.0])
    values = np.array([0.5, 1.5, 2.5, 2.675])
    np.testing.assert_array_equal(pk.round(values), [0.0, 2.0, 2.0, 3.0])  # halves to even
    np.testing.assert_array_equal(pk.round(values, 2), np.round(values, 2))
    target = np.zeros(3)
    pk.copyto(target, np.arange(3.0))
    np.testing.assert_array_equal(target, [0.0, 1.0, 2.0])
    assert pk.result_type(pk.uint8, pk.int16) is pk.int16
    assert pk.result_type(pk.float32, np.float64) is pk.float64


def test_data_types_compare_with_numpy_dtypes():
    v = pk.View([3], pk.int32)
    assert v.dtype == pk.int32 and pk.int32 == v.dtype and v.dtype != pk.int64
    assert np.zeros(2, dtype=pk.float32).dtype == np.float32
    assert pk.View([2, 3], pk.double, layout=pk.LayoutLeft).layout is pk.LayoutLeft
    assert pk.View([4], pk.int64, layout=pk.LayoutLeft).layout is pk.LayoutLeft
    assert pk.View([2, 3], pk.double).T.layout is pk.LayoutLeft  # a transpose is column-major
    assert v.layout is pk.LayoutRight and v.space is pk.HostSpace and v.trait is pk.TraitDefault


def test_star_import_leaves_pythons_own_sum_all_any_round(make_module):
    module = make_module(
        "from pkernels import *\n"
        "checks = (any(x > 5 for x in [1, 2]), all([]), sum([1, 2]), round(2.5), bool(0),"
        " sqrt(4.0))\n"
    )
    assert module.checks == (False, True, 3, 2, False, 2.0)


def test_bessel_functions_run_element_wise_over_a_view():
    view = pk.View([3], pk.double)
    view[:] = [0.0, 1.0, 2.404825557695773]  # J0(1) = 0.76519768655796655...; a zero of J0
    np.testing.assert_allclose(pk.cyl_bessel_j0(view), [1.0, 0.7651976865579666, 0.0], atol=1e-15)
    np.testing.assert_allclose(pk.cyl_bessel_j1(view[:2]), [0.0, 0.44005058574493355], rtol=1e-15)
    assert pk.cyl_bessel_j0(1.0) == pytest.approx(0.7651976865579666, rel=1e-15)


def test_reducing_a_view_to_one_value_gives_a_scalar_as_numpy():
    view = pk.View([4], pk.double)
    view[:] = [1.0, 2.0, 3.0, 4.0]
    for total in (pk.sum(view), view.sum(), np.sum(view), pk.mean(view) * 4, view.max() + 6):
        assert type(total) is np.float64 and total == 10.0
        assert round(total, 1) == 10.0 and {total: 1}[10.0] == 1  # what a 0-d array refuses
    assert type(pk.all(view)) is np.bool_ and bool(pk.all(view))
    rows = pk.View([2, 3], pk.int32)
    assert isinstance(rows.sum(axis=0), pk.View) and rows.sum(axis=0).shape == (3,)
    assert isinstance(view + 1, pk.View) and isinstance(pk.sqrt(view), pk.View)


def test_pykokkos_array_creation_and_manipulation_names():
    ones = pk.ones((2, 3), pk.int32)
    assert isinstance(ones, pk.View) and ones.dtype == np.int32 and ones.tolist() == [[1] * 3] * 2
    assert pk.full(3, 7).tolist() == [7, 7, 7] and pk.full(3, 7).dtype == np.int64  # NumPy's
    assert pk.full([2], 1.5, pk.float32).dtype == np.float32
    like = pk.zeros_like(pk.View([4], pk.int8))
    assert isinstance(like, pk.View) and like.dtype == np.int8 and not like.any()
    assert pk.ones_like(np.zeros((2, 2)), dtype=pk.int64).tolist() == [[1, 1], [1, 1]]
    assert pk.full_like(np.zeros(2), 2.5).tolist() == [2.5, 2.5]
    assert pk.zeros_like(view=np.ones(3)).tolist() == [0.0] * 3  # PyKokkos' keyword
    assert pk.ones_like(np.ones(3), dtype=int).dtype == np.int32  # int is int32, as pk.View
    np.testing.assert_array_equal(pk.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5))
    np.testing.assert_array_equal(pk.logspace(0.0, 2.0, 3), [1.0, 10.0, 100.0])
    grid = pk.reshape(np.arange(6.0), (2, 3))
    assert isinstance(grid, pk.View) and grid.shape == (2, 3)
    assert pk.ravel(grid).tolist() == list(range(6))
    assert pk.ravel(grid, order="F").tolist() == [0, 3, 1, 4, 2, 5]
    assert pk.expand_dims(np.ones(3), 0).shape == (1, 3)
    assert pk.expand_dims(np.ones((2, 3)), 1).shape == (2, 1, 3)
    assert pk.hstack([np.ones(2), np.zeros(1)]).tolist() == [1.0, 1.0, 0.0]
    assert pk.dot(np.arange(3.0), np.arange(3.0)) == 5.0
    assert pk.equal(np.array([1, 2]), 2).tolist() == [False, True]
    assert pk.find_max(np.array([3, 9, 2])) == 9
    data = np.zeros(3)
    wrapped = pk.from_numpy(data)  # PyKokkos' earlier name of pk.array: no copy
    wrapped[0] = 5.0
    assert data[0] == 5.0 and pk.from_array is pk.array and pk.from_cupy is pk.array
