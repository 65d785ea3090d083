"""Kernels compute what Python computes: integer and float arithmetic (``//``, ``%`` with
negative operands, ``**``, ``/`` on ints), comparisons, boolean logic, conversions, and
math functions. The oracle is the kernel body run as plain Python on Python numbers
(:func:`pkt_support.run_python`), compared bit for bit."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from fractions import Fraction
from math import inf, pi

import numpy as np
import pytest
from numpy import e as numpy_e
from pkt_support import ForceDebugBuild, observing, run_python

import pkernels as pk

# ------------------------------------------------------------------ kernels


@pk.workunit
def int_arith(i, a, b, out):
    x = a[i]
    y = b[i]
    out[i, 0] = x // y
    out[i, 1] = x % y
    out[i, 2] = x * y - x + y
    out[i, 3] = -x
    out[i, 4] = abs(x)
    out[i, 5] = min(x, y)
    out[i, 6] = max(x, y, 3)
    out[i, 7] = x**2
    out[i, 8] = y**3
    out[i, 9] = 7 // y
    out[i, 10] = -7 % y
    out[i, 11] = x // -3
    out[i, 12] = x % -3
    out[i, 13] = (x & 12) | (y ^ 5)
    out[i, 14] = (x << 2) >> 1
    out[i, 15] = ~x
    out[i, 16] = 2**10 + 0**0
    out[i, 17] = x**0
    out[i, 18] = (y // 2) * 2 + y % 2
    out[i, 19] = -x // y
    out[i, 20] = x - -y


@pk.workunit
def int_true_division(i, a, b, out):
    out[i, 0] = a[i] / b[i]
    out[i, 1] = a[i] / 4
    out[i, 2] = 2**-1 * a[i]
    q = a[i] / b[i]
    out[i, 3] = q * 2
    out[i, 4] = b[i] ** -2
    out[i, 5] = 7 / 2


@pk.workunit
def float_arith(i, x, y, out):
    a = x[i]
    b = y[i]
    out[i, 0] = a // b
    out[i, 1] = a % b
    out[i, 2] = a / b
    out[i, 3] = a * b + a
    out[i, 4] = a - b * 0.5
    out[i, 5] = a**2
    out[i, 6] = abs(a) ** 0.5
    out[i, 7] = abs(b) ** 1.5
    out[i, 8] = -a
    out[i, 9] = abs(a)
    out[i, 10] = min(a, b)
    out[i, 11] = max(a, b)
    out[i, 12] = int(a)
    out[i, 13] = float(int(b) // 3)
    out[i, 14] = a // 0.1
    out[i, 15] = a % 0.1
    out[i, 16] = 1.0 // b
    out[i, 17] = a + 1
    out[i, 18] = 3 / 2 + a
    out[i, 19] = a * b - b * a + a * a * b
    out[i, 20] = -a % b


@pk.workunit
def mixed_arith(i, n, x, out):
    out[i, 0] = n[i] + x[i]
    out[i, 1] = n[i] * 0.5
    out[i, 2] = n[i] // x[i]
    out[i, 3] = n[i] % x[i]
    out[i, 4] = x[i] ** n[i]
    out[i, 5] = n[i] ** 2.0
    out[i, 6] = n[i] - x[i] * n[i]


@pk.workunit
def logic(i, a, b, c, out):
    out[i, 0] = a[i] < b[i] < c[i]
    out[i, 1] = a[i] <= b[i] != c[i]
    out[i, 2] = a[i] > 0 and b[i] > 0
    out[i, 3] = a[i] > 0 or b[i] > 0 and c[i] > 0
    out[i, 4] = not a[i] > b[i]
    out[i, 5] = not a[i]
    out[i, 6] = a[i] != b[i]
    out[i, 7] = 1 if a[i] else 2
    out[i, 8] = (a[i] > b[i]) + (b[i] > c[i])
    out[i, 9] = a[i] == 0 or b[i] // a[i] > 1
    out[i, 10] = a[i] != 0 and b[i] % a[i] == 0
    out[i, 11] = a[i] == b[i] == c[i]
    out[i, 12] = -5 < a[i] <= 0 < c[i]


@pk.workunit
def bool_values(i, a, b, out):
    x = a[i] or b[i]
    y = a[i] and b[i]
    z = a[i] > b[i]
    out[i, 0] = x
    out[i, 1] = y
    out[i, 2] = z + z
    out[i, 3] = (a[i] or 7) * 2


@pk.workunit
def math_funcs(i, x, out):
    v = x[i]
    out[i, 0] = math.sqrt(v)
    out[i, 1] = math.exp(v)
    out[i, 2] = math.log(v)
    out[i, 3] = math.pow(v, 1.7)
    out[i, 4] = math.sin(v)
    out[i, 5] = math.cos(v)
    out[i, 6] = math.tan(v)
    out[i, 7] = math.fabs(-v)
    out[i, 8] = math.floor(v * 3)
    out[i, 9] = math.ceil(v * 3)
    out[i, 10] = math.atan2(v, 2.0)
    out[i, 11] = math.hypot(v, 2.0)
    out[i, 12] = math.log10(v) + math.log2(v)
    out[i, 13] = math.pi * v + math.e
    out[i, 14] = math.fmod(v * 10, 3.0)
    out[i, 15] = math.tanh(v) + math.asin(v / 4) + math.acos(v / 4) + math.atan(v)
    out[i, 16] = math.sinh(v) - math.cosh(v)
    out[i, 17] = math.floor(-v) + math.ceil(-v)
    out[i, 18] = math.trunc(-v * 2)
    out[i, 19] = math.copysign(v, -1.0) + math.expm1(v) + math.log1p(v)
    out[i, 20] = math.erf(v) + math.erfc(v)
    out[i, 21] = math.gamma(v)
    out[i, 22] = math.lgamma(v)


@pk.workunit
def pk_math_funcs(i, x, out):
    v = x[i]
    out[i, 0] = pk.sqrt(v)
    out[i, 1] = pk.exp(v)
    out[i, 2] = pk.log(v)
    out[i, 3] = pk.pow(v, 2.5)
    out[i, 4] = pk.sin(v)
    out[i, 5] = pk.cos(v)
    out[i, 6] = pk.tan(v)
    out[i, 7] = pk.fabs(-v)
    out[i, 8] = pk.floor(v * 3)
    out[i, 9] = pk.ceil(v * 3)
    out[i, 10] = pk.fmin(v, 1.0)
    out[i, 11] = pk.fmax(v, 1.0)
    out[i, 12] = pk.pi * v + pk.e
    out[i, 13] = pk.cbrt(v) + pk.exp2(v) + pk.log10(v)
    out[i, 14] = pk.trunc(v * 2) + pk.fmod(v, 0.3)
    out[i, 15] = pk.isnan(v) + pk.isinf(v) * 2 + pk.isfinite(v) * 4
    out[i, 16] = pk.abs(-v) + pk.min(v, 1.0) + pk.max(v, 2.0)
    out[i, 17] = pk.cyl_bessel_j0(v * 7) + 3 * pk.cyl_bessel_j1(-v * 5)


@pk.workunit
def float32_arith(i, x, y, out):
    out[i] = x[i] * 0.1 + y[i] / 3 - x[i] * y[i]


@pk.workunit
def print_types(i, a, x):
    print(7 // 2, 7 / 2, 2**-1, 2**3, int(2.7), int(-2.7), float(3))
    print(math.floor(2.5), pk.floor(2.5), math.ceil(x[0]), pk.ceil(x[0]), math.trunc(-x[0]))
    print(i > 2, a[0] > 0, not a[0], abs(-3), abs(-3.5), math.sqrt(4), math.pow(2, 3))
    print(-7 // 2, -7 % 2, 7 % -2, -7.5 // 2, -7.5 % 2, a[0] / a[0], x[0] * 2, 1e300 * 1e10)


@pk.workunit
def print_floats(i, x):
    print(x[i])


@pk.workunit
def unpacking(i, x, v, out):
    a = x[i]
    b = float(i)
    a, b = b, a  # a swap: both values are taken before either name is bound
    out[i, 0] = a
    out[i, 1] = b
    c = d = a * 2 + 1  # one value, both names
    out[i, 2] = c + d
    out[i, 3], out[i, 4] = math.modf(x[i])
    m, e = math.frexp(x[i])
    out[i, 5] = m
    out[i, 6] = e
    out[i, 7] = math.remainder(x[i], 0.75)
    out[i, 8] = math.ldexp(x[i], i - 3)
    if i == 0:
        v[0], v[len(v) - 1] = v[len(v) - 1], v[0]  # two elements exchanged


# ------------------------------------------------------------------ data

INTS_A = np.array([-17, -7, -6, -3, -1, 0, 1, 2, 3, 7, 13, 100, -100, 12345, -99999], np.int64)
INTS_B = np.array([5, 2, -4, 3, -2, 7, -1, 3, -3, 2, -5, 7, 9, -11, 13], np.int64)


def _check(space, kernel, n, /, **arrays):
    expected = run_python(kernel, n, **arrays)
    pk.parallel_for(pk.RangePolicy(space, 0, n), kernel, **arrays)
    for name, value in arrays.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, expected[name], err_msg=f"view {name}")


def test_integer_arithmetic(space):
    out = np.zeros((len(INTS_A), 21), dtype=np.int64)
    _check(space, int_arith, len(INTS_A), a=INTS_A, b=INTS_B, out=out)
    # Spot checks of Python's floor semantics, so the oracle is not trusted blindly.
    row = list(INTS_A).index(-7)
    assert out[row, 0] == -4 and out[row, 1] == 1  # -7 // 2, -7 % 2
    row = list(INTS_A).index(-6)
    assert out[row, 0] == 1 and out[row, 1] == -2  # -6 // -4, -6 % -4


def test_true_division_of_ints_is_float(space):
    out = np.zeros((len(INTS_A), 6))
    _check(space, int_true_division, len(INTS_A), a=INTS_A, b=INTS_B, out=out)
    assert out[0, 5] == 3.5
    assert out[list(INTS_A).index(-7), 0] == -3.5


FLOATS_X = np.array(
    [1.0, -1.0, 0.5, -0.5, 2.75, -3.25, 7.0, 1e-3, -1e-3, 123.456, -98.7, 0.3, 0.7, 5.5, 0.0]
)
FLOATS_Y = np.array(
    [0.1, 0.1, -0.3, 0.3, 1.5, -2.0, 2.0, 3.0, -7.0, 0.25, 3.3, -0.1, 0.1, -1.5, 2.5]
)


def test_float_arithmetic(space):
    out = np.zeros((len(FLOATS_X), 21))
    _check(space, float_arith, len(FLOATS_X), x=FLOATS_X, y=FLOATS_Y, out=out)
    assert out[0, 14] == 9.0  # 1.0 // 0.1 == 9.0 in Python (not floor(1.0 / 0.1) == 10)
    assert out[0, 0] == 9.0


def test_mixed_int_float_arithmetic(space):
    n = np.array([-3, -1, 0, 1, 2, 5, 9, 4], np.int64)
    x = np.array([0.5, -1.5, 2.0, -0.25, 3.0, 0.1, -7.5, 1.25])
    out = np.zeros((len(n), 7))
    _check(space, mixed_arith, len(n), n=n, x=x, out=out)


def test_comparisons_and_boolean_logic(space):
    rng = np.random.default_rng(4)
    a, b, c = (rng.integers(-3, 4, 60) for _ in range(3))
    out = np.zeros((60, 13), dtype=np.int64)
    _check(space, logic, 60, a=a, b=b, c=c, out=out)


def test_and_or_return_an_operand_as_in_python(space):
    a = np.array([0, 3, 0, -2, 5], np.int64)
    b = np.array([4, 0, 0, 6, 7], np.int64)
    out = np.zeros((5, 4), dtype=np.int64)
    _check(space, bool_values, 5, a=a, b=b, out=out)
    assert out[:, 0].tolist() == [4, 3, 0, -2, 5]
    assert out[:, 1].tolist() == [0, 0, 0, 6, 7]


@pk.workunit
def rounding_builtins(i, x, single, n, out):
    out[i, 0] = round(x[i])
    out[i, 1] = round(single[i])
    out[i, 2] = round(n[i]) + 1
    out[i, 3] = pow(x[i], 2) + pow(n[i], 2) + pow(2, n[i] % 5)
    out[i, 4] = float("inf") if n[i] > 10 else float("-1.5e-3")


def test_round_pow_and_float_of_text_as_python(space):
    # Halves round to the even neighbour: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2.
    x = np.array([0.5, 1.5, 2.5, -2.5, -0.5, 2.675, 1e15 + 0.5, -3.4999999, 7.0, 1e14 + 1.5])
    single = np.where(np.abs(x) < 1e30, x, 3.5).astype(np.float32)  # finite: round(inf) raises
    n = np.array([3, -4, 0, 7, -9, 1, 2, 5, 8, 11], dtype=np.int64)
    out = np.zeros((len(x), 5))
    expected = run_python(rounding_builtins, len(x), x=x, single=single, n=n, out=out.copy())
    pk.parallel_for(
        pk.RangePolicy(space, 0, len(x)), rounding_builtins, x=x, single=single, n=n, out=out
    )
    np.testing.assert_array_equal(out, expected["out"])
    assert out[:5, 0].tolist() == [0, 2, 2, -2, 0]


def test_math_module_functions(space):
    x = np.linspace(0.1, 3.9, 23)
    out = np.zeros((len(x), 23))
    expected = run_python(math_funcs, len(x), x=x, out=out.copy())["out"]
    pk.parallel_for(pk.RangePolicy(space, 0, len(x)), math_funcs, x=x, out=out)
    np.testing.assert_array_equal(out[:, :21], expected[:, :21])
    # CPython computes gamma and lgamma itself; C's tgamma/lgamma differ in the last bit.
    np.testing.assert_allclose(out[:, 21:], expected[:, 21:], rtol=4e-15, atol=1e-15)
    assert out[3, 8] == math.floor(x[3] * 3)


@pk.workunit
def math_formulas(i, x, n, out):
    out[i, 0] = math.log(x[i], 2)
    out[i, 1] = math.log(n[i], 10)
    out[i, 2] = math.degrees(x[i])
    out[i, 3] = math.radians(n[i])


def test_math_log_with_a_base_and_angle_conversions_as_python(space):
    # CPython's own formulas (log(x) / log(base), x * (180 / pi)), bit for bit.
    x = np.array([0.1, 1.0, 2.0, 1024.0, 1e-300, 7.5, math.pi])
    n = np.array([1, 10, 1000, 7, 180, 360, 45])
    out = np.zeros((len(x), 4))
    expected = run_python(math_formulas, len(x), x=x, n=n, out=out.copy())["out"]
    pk.parallel_for(pk.RangePolicy(space, 0, len(x)), math_formulas, x=x, n=n, out=out)
    np.testing.assert_array_equal(out, expected)
    assert out[3, 0] == 10.0 and out[6, 2] == 180.0


@pk.workunit
def imported_constants(i, x, out):
    out[i, 0] = pi * x[i] + numpy_e
    out[i, 1] = 1.0 if x[i] < inf else -inf


def test_math_constants_imported_by_name(space):
    # `from math import pi` binds math's own float: the kernel reads it as math.pi.
    x = np.array([0.5, 2.0, np.inf])
    out = np.zeros((3, 2))
    pk.parallel_for(pk.RangePolicy(space, 0, 3), imported_constants, x=x, out=out)
    expected = run_python(imported_constants, 3, x=x, out=np.zeros((3, 2)))["out"]
    np.testing.assert_array_equal(out, expected)
    assert out[1, 0] == math.pi * 2.0 + math.e and out[2, 1] == -math.inf


@pk.workunit
def division_edges(i, a, b, f, g, out, fout):
    out[i, 0] = a[i] // b[i]
    out[i, 1] = a[i] % b[i]
    fout[i, 0] = f[i] // g[i]
    fout[i, 1] = f[i] % g[i]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_division_edges_give_numpys_answers_in_release_builds(native_space, dtype):
    # Python raises where NumPy warns; a release build goes on with NumPy's values (a
    # debug build stops), and MIN // -1 (a trap in C++: SIGFPE) wraps to MIN.
    low = np.iinfo(dtype).min
    a = np.array([low, low, 7, -7, 5, low + 1], dtype)
    b = np.array([-1, -1, 0, 0, -1, -1], dtype)
    f = np.array([7.5, -7.5, 0.0, 1.0, -2.0, 3.0])
    g = np.array([0.0, 0.0, 0.0, np.inf, -0.0, np.nan])
    out, fout = np.zeros((6, 2), dtype), np.zeros((6, 2))
    policy = pk.RangePolicy(native_space, 0, 6)
    pk.parallel_for(policy, division_edges, a=a, b=b, f=f, g=g, out=out, fout=fout)
    with np.errstate(all="ignore"):
        expected = np.stack([a // b, a % b], axis=1)
        fexpected = np.stack([f // g, f % g], axis=1)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(fout, fexpected)
    assert out[0, 0] == low and out[2, 0] == 0 and fout[0, 0] == np.inf


@pk.workunit
def exact_comparisons(i, u8, i8, u32, u64, i64, out):
    out[i, 0] = u8[i] < 256
    out[i, 1] = i8[i] == 300
    out[i, 2] = u32[i] == -1
    out[i, 3] = u64[i] > i64[i]
    out[i, 4] = i64[i] < u64[i]
    out[i, 5] = u8[i] > -129
    out[i, 6] = u64[i] >= i
    out[i, 7] = i8[i] < u8[i]


def test_comparisons_are_of_values_as_in_python(space):
    # C++ would convert 256 to uint8 (0) and -1 to 2**32 - 1, and compare int64 with
    # uint64 as uint64: Python and NumPy 2 compare the values.
    u8 = np.array([255, 0], np.uint8)
    i8 = np.array([44, -128], np.int8)
    u32 = np.array([2**32 - 1, 1], np.uint32)
    u64 = np.array([2**64 - 1, 0], np.uint64)
    i64 = np.array([-1, 0], np.int64)
    out = np.zeros((2, 8), np.bool_)
    arrays = dict(u8=u8, i8=i8, u32=u32, u64=u64, i64=i64)
    pk.parallel_for(pk.RangePolicy(space, 0, 2), exact_comparisons, **arrays, out=out)
    expected = np.array(  # the kernel's expressions on NumPy's scalars
        [
            [u8[i] < 256, i8[i] == 300, u32[i] == -1, u64[i] > i64[i], i64[i] < u64[i],
             u8[i] > -129, u64[i] >= i, i8[i] < u8[i]]
            for i in range(2)
        ]
    )  # fmt: skip
    np.testing.assert_array_equal(out, expected)
    assert out[0].tolist() == [True, False, False, True, True, True, True, True]


@pk.workunit
def mixed_signedness(i, u64, i64, u32, i32, out):
    out[i, 0] = u64[i] + i64[i]
    out[i, 1] = u32[i] + i32[i]
    out[i, 2] = u64[i] // i64[i]
    out[i, 3] = u64[i] - 1


def test_uint64_with_a_signed_integer_computes_in_float64_as_numpy(native_space):
    # (The Debug space reads int64 elements as Python ints, which NumPy then converts to
    # uint64: -2 raises there. The README says so.)
    u64 = np.array([2**63 + 10, 7], np.uint64)
    i64 = np.array([3, -2], np.int64)
    u32 = np.array([2**32 - 1, 0], np.uint32)
    i32 = np.array([-(2**31), 5], np.int32)
    out = np.zeros((2, 4))
    args = dict(u64=u64, i64=i64, u32=u32, i32=i32)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 2), mixed_signedness, **args, out=out)
    assert (u64 + i64).dtype == np.float64 and (u32 + i32).dtype == np.int64
    expected = np.stack([u64 + i64, u32 + i32, u64 // i64, u64 - 1], axis=1)
    np.testing.assert_array_equal(out, expected)
    assert out[0, 0] > 9e18  # not wrapped to a negative int64


@pk.workunit
def math_of_narrow_types(i, f32, i8, out):
    out[i, 0] = math.sin(f32[i])
    out[i, 1] = math.sqrt(f32[i]) * 3
    out[i, 2] = math.ceil(i8[i]) + 1
    out[i, 3] = pk.sin(f32[i])


def test_math_functions_compute_in_double_as_python(space):
    # math.sin(np.float32(0.1)) widens to double; pk.sin keeps float32 (Kokkos).
    f32 = np.array([0.1, 2.0], np.float32)
    i8 = np.array([127, -128], np.int8)
    out = np.zeros((2, 4))
    pk.parallel_for(pk.RangePolicy(space, 0, 2), math_of_narrow_types, f32=f32, i8=i8, out=out)
    for i in range(2):
        x = float(f32[i])
        assert out[i, 0] == math.sin(x) and out[i, 1] == math.sqrt(x) * 3
        if space is not pk.Debug:  # (Debug's pk.sin is Python's: double)
            assert out[i, 3] == np.sin(f32[i])
    assert out[:, 2].tolist() == [128.0, -127.0]


def bessel_series(order: int, x: float) -> float:
    """J0 / J1 by their power series, summed exactly in rationals (a reference that
    shares nothing with C's j0 / j1)."""
    half = Fraction(x) / 2
    term = half**order  # k = 0: (x/2)^n / n!, n = 0 or 1
    total = Fraction(0)
    for k in range(90):
        total += term
        term *= -(half * half) / ((k + 1) * (k + 1 + order))
    return float(total)


def bessel_j0(x: float) -> float:
    return bessel_series(0, x)


def bessel_j1(x: float) -> float:
    return bessel_series(1, x)


def test_pk_math_functions(space):
    x = np.linspace(0.05, 3.2, 17)
    out = np.zeros((len(x), 18))
    pk.parallel_for(pk.RangePolicy(space, 0, len(x)), pk_math_funcs, x=x, out=out)
    expected = np.stack(
        [
            np.sqrt(x),
            np.exp(x),
            np.log(x),
            np.power(x, 2.5),
            np.sin(x),
            np.cos(x),
            np.tan(x),
            np.abs(x),
            np.floor(x * 3),
            np.ceil(x * 3),
            np.fmin(x, 1.0),
            np.fmax(x, 1.0),
            math.pi * x + math.e,
            np.cbrt(x) + np.exp2(x) + np.log10(x),
            np.trunc(x * 2) + np.fmod(x, 0.3),
            np.full_like(x, 4.0),
            x + np.minimum(x, 1.0) + np.maximum(x, 2.0),
            [bessel_j0(v * 7) + 3 * bessel_j1(-v * 5) for v in x],
        ],
        axis=1,
    )
    np.testing.assert_allclose(out, expected, rtol=1e-15, atol=0)


def test_float32_arithmetic_stays_single_precision(space):
    rng = np.random.default_rng(5)
    x = rng.random(50, dtype=np.float32)
    y = rng.random(50, dtype=np.float32)
    out = np.zeros(50, dtype=np.float32)
    pk.parallel_for(pk.RangePolicy(space, 0, 50), float32_arith, x=x, y=y, out=out)
    # NumPy 2 semantics: Python scalars do not widen float32 operands.
    expected = x * 0.1 + y / 3 - x * y
    assert expected.dtype == np.float32
    np.testing.assert_array_equal(out, expected)


def test_printed_values_show_python_types(space, capfd):
    a = np.array([3], np.int64)
    x = np.array([2.25])
    print_types(0, a, x)  # plain Python: the reference output
    expected = capfd.readouterr().out
    assert expected.splitlines()[1] == "2 2.0 3 3.0 -2"
    pk.parallel_for(pk.RangePolicy(space, 0, 1), print_types, a=a, x=x)
    assert capfd.readouterr().out == expected


SPECIAL_FLOATS = [
    0.1, 1e-05, 100000.0, 1e16, 1e15, 1.5e-07, 123456789.123, -0.0, 0.0, 1 / 3, 2.5e300,
    5e-324, 1.7976931348623157e308, 0.0001, 0.00012345, 9999999999999998.0, 1e22, -2.5,
    float("inf"), float("-inf"), float("nan"), 3.0, 1e-320, 2.0**-1022, 12.0, 1e100,
    2.0**-24, 2.0**-44, 2.0**70, -(2.0**-24),  # powers of two: lopsided rounding intervals
]  # fmt: skip


def test_print_of_floats_matches_python_repr(space, capfd):
    # One index per dispatch keeps the lines in order on OpenMP too.
    for value in SPECIAL_FLOATS:
        pk.parallel_for(pk.RangePolicy(space, 0, 1), print_floats, x=np.array([value]))
    lines = capfd.readouterr().out.splitlines()
    assert lines == [repr(v) for v in SPECIAL_FLOATS]
    assert lines[:4] == ["0.1", "1e-05", "100000.0", "1e+16"]


def test_print_of_float32_is_the_shortest_single_precision_repr(capfd):
    x = np.array([0.1, 1e-5, 3.0, 100000.0, 1e16], dtype=np.float32)
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, len(x)), print_floats, x=x)
    assert capfd.readouterr().out.split() == ["0.1", "1e-05", "3.0", "100000.0", "1e+16"]


@pk.workunit
def smallest_int64(i, out):
    out[i] = -(2**63) + i
    out[i] += -(2**63) - (-(2**63))


def test_the_smallest_int64_written_as_a_power_is_a_literal(space):
    # 2**63 alone does not fit in int64 (refused), -2**63 does.
    out = np.zeros(2, np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 2), smallest_int64, out=out)
    assert out.tolist() == [-(2**63), -(2**63) + 1]


@pk.workunit
def negative_literal_powers(i, out):
    out[i] = (i + 2) ** (0 - 1) + 2 ** -(1 + 1)


def test_a_negative_exponent_written_as_literal_arithmetic_gives_a_float(space):
    out = np.zeros(2)
    pk.parallel_for(pk.RangePolicy(space, 0, 2), negative_literal_powers, out=out)
    assert out.tolist() == [0.5 + 0.25, 1 / 3 + 0.25]


def test_tuple_and_chained_assignment_and_two_valued_math_as_python(space):
    # Python takes every value on the right before it binds a target, left to right;
    # math.modf / math.frexp give both parts (frexp's exponent an int), remainder is
    # IEEE's, ldexp scales by a power of two: bit for bit, signed zeros included.
    x = np.array([0.3, -2.0, -0.0, 1e300, 7.5, 5e-324, 3.0, -1.25, 1.0, 2.5])
    v = np.arange(5.0)
    out = np.zeros((len(x), 9))
    expected = run_python(unpacking, len(x), x=x, v=v.copy(), out=out.copy())
    pk.parallel_for(pk.RangePolicy(space, 0, len(x)), unpacking, x=x, v=v, out=out)
    np.testing.assert_array_equal(out, expected["out"])
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected["out"]))
    np.testing.assert_array_equal(v, expected["v"])
    assert v.tolist() == [4.0, 1.0, 2.0, 3.0, 0.0]
    assert out[1, :3].tolist() == [1.0, -2.0, 6.0]  # a, b = b, a with x[1] = -2.0
    assert out[4, 3:7].tolist() == [0.5, 7.0, 0.9375, 3.0]  # modf(7.5), frexp(7.5)


@pk.workunit
def add_typed_scalars(i, out, i8, i16, i32, i64):
    out[i] = i64 + i32 + i16 + i8


@pk.workunit
def sum_of_singles(i, acc, x):
    acc += x[i]


@pk.workunit
def sum_of_int32(i: int, acc: pk.Acc[pk.int64], x: pk.View1D[pk.int32]):
    acc += x[i]


def test_numpy_typed_arguments_and_accumulators_keep_their_types_in_every_space(space):
    # PyKokkos' test_all_numpyints / test_acc64: an np.int64 argument next to an np.int32
    # computes in int64, a double accumulator adding float32 values stays double.
    out = np.zeros(2, np.int64)
    args = dict(i8=np.int8(127), i16=np.int16(2**15 - 1), i32=np.int32(2**31 - 1))
    pk.parallel_for(
        pk.RangePolicy(space, 0, 2), add_typed_scalars, out=out, i64=np.int64(2**31), **args
    )
    assert out.tolist() == [2**31 + 127 + 2**15 - 1 + 2**31 - 1] * 2
    singles = np.full(50, 3.4e38, np.float32)
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 50), sum_of_singles, x=singles)
    assert total == 50 * float(np.float32(3.4e38)) and type(total) is float
    big = np.full(8, 2**31 - 1, np.int32)
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 8), sum_of_int32, x=big)
    assert total == 8 * (2**31 - 1) and type(total) is int


BARE_MATH_PROGRAM = """
import pkernels as pk

@pk.workunit
def bare(i, v, out):
    out[i] = sqrt(v[i]) + exp(-v[i]) + floor(v[i] * 1.5) + degrees(v[i])

@pk.workunit
def sin(tid, view):  # PyKokkos' gh-192: a workunit named as the function it calls
    view[tid] = sin(view[tid])

@pk.workunit
def logs(i, acc, v):
    acc += log(v[i])

@pk.workunit
def team_roots(tm: pk.TeamMember, v, out):
    def inner(k: int, acc: pk.Acc[pk.double]):
        acc += sqrt(v[k])
    out[tm.league_rank()] = pk.parallel_reduce(pk.TeamThreadRange(tm, len(v)), inner)
"""


def test_math_functions_called_bare_without_an_import_as_pykokkos(space, make_module):
    # PyKokkos translates sqrt(x) in a kernel as the math function, imported or not
    kernels = make_module(BARE_MATH_PROGRAM)
    x = np.array([1.0, 4.0, 9.0])
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), kernels.bare, v=x, out=out)
    np.testing.assert_array_equal(out, np.sqrt(x) + np.exp(-x) + np.floor(x * 1.5) + np.degrees(x))
    y = x.copy()
    pk.parallel_for(pk.RangePolicy(space, 0, 3), kernels.sin, view=y)
    np.testing.assert_array_equal(y, np.sin(x))
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 3), kernels.logs, v=x)
    assert total == pytest.approx(np.log(x).sum(), rel=1e-15)
    roots = np.zeros(2)
    pk.parallel_for(pk.TeamPolicy(space, 2, pk.AUTO), kernels.team_roots, v=x, out=roots)
    assert roots.tolist() == [6.0, 6.0]


@pk.workunit
def float32_total(i: int, acc: pk.Acc[pk.float], x):
    acc += x[i]


def test_a_float32_accumulator_rounds_each_update_in_every_space(space):
    # compiled: `acc += x[i]` stores into a float; the Debug space converts back each index
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 3), float32_total, x=np.full(3, 0.2))
    expected = np.float32(0.0)
    for _ in range(3):
        expected = np.float32(np.float64(expected) + 0.2)
    assert total == float(expected)


@pk.workunit
def single_precision_math(i, x, out):
    out[i, 0] = pk.sqrt(x[i])
    out[i, 1] = pk.sin(x[i]) + pk.trunc(x[i] * 3) + pk.floor(-x[i])
    out[i, 2] = pk.acos(x[i] + 1.5)  # outside [-1, 1]: NaN, as C's acos


def test_pk_math_of_float32_is_single_precision_in_every_space(space):
    x = np.array([2.0, 0.3, 0.7], np.float32)
    out = np.zeros((3, 3), np.float32)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), single_precision_math, x=x, out=out)
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.sinf.restype, libm.sinf.argtypes = ctypes.c_float, [ctypes.c_float]
    for i, v in enumerate(x):
        assert out[i, 0] == np.sqrt(v)  # correctly rounded in float32, not float64 rounded
        assert out[i, 1] == np.float32(libm.sinf(v)) + np.trunc(v * np.float32(3)) + np.floor(-v)
    assert np.isnan(out[:, 2]).all()


@pk.workunit
def square_sum_uint8_index(i: pk.uint8, acc: pk.Acc[pk.int32]):
    acc += i * i  # PyKokkos' SquareSumUInt8


@pk.workunit
def double_with_uint8_index(i: pk.uint8, out):
    out[i] = i * 2


def test_an_index_annotated_with_a_narrow_type_is_the_ranges_int64(space):
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 100), square_sum_uint8_index) == 328350
    out = np.zeros(300, np.int64)  # past 255: the index does not wrap
    pk.parallel_for(pk.RangePolicy(space, 0, 300), double_with_uint8_index, out=out)
    assert out.tolist() == [2 * k for k in range(300)]


@pk.workunit
def int8_total(i: int, acc: pk.Acc[pk.int8], data):
    acc += data[i]


@pk.workunit
def uint32_total(i: int, acc: pk.Acc[pk.uint32], data):
    acc += data[i]


@pk.workunit
def int_total_of_halves(i: int, acc: pk.Acc[pk.int64]):
    acc += 0.5


def test_narrow_and_integer_accumulators_store_as_compiled_in_every_space(space):
    # C's conversion into the accumulator: 300 wraps to 44 in an int8, 5 - 1 is 4 in a
    # uint32, and an int64 accumulator truncates 0 + 0.5 to 0 at each store
    data = np.array([300], np.int64)
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 1), int8_total, data=data) == 44
    data = np.array([5, -1], np.int64)
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 2), uint32_total, data=data) == 4
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 10), int_total_of_halves) == 0


@pk.workunit
def int8_min_max(i: int, acc: pk.Acc[pk.int8], data):
    if data[i] < acc.min_val:
        acc.min_val = data[i]
    if data[i] > acc.max_val:
        acc.max_val = data[i]


@pk.workunit
def float32_max_loc(i: int, acc: pk.Acc[pk.float], data):
    if data[i] > acc.val:
        acc.val = data[i]
        acc.loc = i


def test_fields_of_a_several_value_reducer_store_as_compiled(space):
    # each field store converts to the struct field's C type: 300 is 44 in an int8, -200
    # is 56 (one element each: no combining of threads' results; the comparisons are of
    # int64 data with the int8 fields, which start at 127 and -128)
    for value, expected in ((300, (127, 44)), (-200, (56, -128))):
        data = np.array([value], np.int64)
        result = pk.parallel_reduce(pk.RangePolicy(space, 0, 1), int8_min_max, data=data,
                                    reducer=pk.MinMax)  # fmt: skip
        assert result == expected
    # (in order: OpenMP's threads would each keep their own first, then the smaller loc)
    data = np.array([1.0, 1.0 + 2.0**-30, 1.0 + 2.0**-29, 0.5])
    if space is not pk.OpenMP:
        policy = pk.RangePolicy(space, 0, 4)
        result = pk.parallel_reduce(policy, float32_max_loc, data=data, reducer=pk.MaxLoc)
        assert (result.val, result.loc) == (1.0, 2)


LIST_IN_BRANCHES = """
import pkernels as pk

@pk.workunit
def pick(i, out):
    if i % 2 == 0:
        x = [1.0, 2.0]
    else:
        x = [3.0, 7.0]
    out[i] = x[0] + x[1]

@pk.function
def doubled(v: float) -> float:
    return sqrt(v) * 2

def not_a_kernel(a, b):
    pair = [a, b]
    return pair[-1]

@pk.workunit
def uses(i, out):
    out[i] = doubled(4.0) + 2.0
"""


def test_lists_in_branches_and_helpers_leave_host_code_alone(space, make_module):
    module = make_module(LIST_IN_BRANCHES)
    out = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(space, 0, 4), module.pick, out=out)
    assert out.tolist() == [3.0, 10.0, 3.0, 10.0]
    pk.parallel_for(pk.RangePolicy(space, 0, 4), module.uses, out=out)
    assert out.tolist() == [6.0] * 4
    assert module.not_a_kernel(1, 2) == 2  # Python's list, whatever ran before


@pk.workunit
def float32_cancellation(i: int, acc: pk.Acc[pk.float]):
    acc += 1e8
    acc += 1.0  # lost in float32 at this store
    acc -= 1e8


@pk.workunit
def float32_running(i: int, acc: pk.Acc[pk.float], last_pass: bool, x, out):
    acc += x[i]
    if last_pass:
        out[i] = acc


def test_every_store_into_a_float32_accumulator_rounds_in_every_space(space):
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 1), float32_cancellation) == 0.0
    out = np.zeros(3)
    pk.parallel_scan(pk.RangePolicy(space, 0, 3), float32_running, x=np.full(3, 0.1), out=out)
    expected, partial = [], np.float32(0.0)
    for _ in range(3):
        partial = np.float32(np.float64(partial) + 0.1)
        expected.append(float(partial))
    assert out.tolist() == expected


@pk.workunit
def widened(i, x, n16, out):
    out[i, 0] = float(x[i]) + 0.1  # Python's float() is a double
    out[i, 1] = x[i] / n16[i]  # NumPy: float32 / int16 is float32
    out[i, 2] = x[i] / 3  # a literal takes the view's type


def test_float_of_a_float32_is_a_double_and_division_promotes_as_numpy(space):
    x = np.array([1.0, 9.2e18], np.float32)
    n16 = np.array([3, 13], np.int16)
    out = np.zeros((2, 3))
    pk.parallel_for(pk.RangePolicy(space, 0, 2), widened, x=x, n16=n16, out=out)
    assert out[:, 0].tolist() == [float(v) + 0.1 for v in x]
    assert out[:, 1].tolist() == [float(v) for v in x / n16]
    assert (x / n16).dtype == np.float32
    assert out[:, 2].tolist() == [float(v) for v in x / np.float32(3)]


@pk.workunit
def shifted(i, a, s, out):
    out[i, 0] = a[i] << s[i]
    out[i, 1] = a[i] >> s[i]


def test_shifts_by_the_type_width_or_more_give_numpys_answer(space):
    # C++ leaves these undefined (x86 takes the count modulo the width: 1 << 33 == 2)
    for dtype, counts in ((np.int32, [32, 33, 40]), (np.int8, [8, 33, 9])):
        a = np.array([1, -8, 3], dtype)
        s = np.array(counts, dtype)
        out = np.zeros((3, 2), dtype)
        pk.parallel_for(pk.RangePolicy(space, 0, 3), shifted, a=a, s=s, out=out)
        assert out[:, 0].tolist() == (a << s).tolist() == [0, 0, 0]
        assert out[:, 1].tolist() == (a >> s).tolist() == [0, -1, 0]


@pk.workunit
def divide_atomically(i, v, d):
    pk.atomic_div(v, [i], d[i])


def test_integer_atomic_div_truncates_exactly_and_by_zero_does_not_crash(space):
    v = np.array([2**62 + 1, -7, 7], np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), divide_atomically, v=v, d=np.array([1, 2, -2]))
    assert v.tolist() == [2**62 + 1, -3, -3]  # C's (and Kokkos') truncating division
    zero = np.array([5], np.int64)
    if space is pk.Debug:
        with pytest.raises(ZeroDivisionError):
            pk.parallel_for(pk.RangePolicy(space, 0, 1), divide_atomically, v=zero,
                            d=np.zeros(1, np.int64))  # fmt: skip
    else:  # NumPy's answer in a release build (was SIGFPE: the process died)
        pk.parallel_for(pk.RangePolicy(space, 0, 1), divide_atomically, v=zero,
                        d=np.zeros(1, np.int64))  # fmt: skip
        assert zero.tolist() == [0]


MACRO_NAMES = """
import pkernels as pk

@pk.workunit
def INFINITY(i, EOF, M_PI, RAND_MAX, _OPENMP):
    NAN: float = M_PI * 2.0
    __LINE__ = i
    RAND_MAX[i] = NAN + __LINE__ + _OPENMP
    EOF += RAND_MAX[i]
"""


def test_names_that_are_c_macros_work_as_any_name(space, make_module):
    # M_PI, NAN, EOF, ... are macros in the C/C++ headers kernels include: the
    # preprocessor would have replaced them in the generated code
    module = make_module(MACRO_NAMES)
    out = np.zeros(3)
    policy = pk.RangePolicy(space, 0, 3)
    total = pk.parallel_reduce(policy, module.INFINITY, M_PI=0.5, RAND_MAX=out, _OPENMP=1)
    assert out.tolist() == [2.0, 3.0, 4.0]
    assert total == 9.0


@pk.workunit
def store_float_constants(i, counts, big: float):
    counts[i, 0] = 1e30
    counts[i, 1] = big
    counts[i, 2] = math.inf
    counts[i, 3] = -2.7


def test_float_constants_out_of_an_int_range_convert_as_any_float():
    # folded before: a raw OverflowError at translation (inf), or int(1e30)'s low bits
    # 5076964154930102272; now C's conversion, whose out-of-range result C leaves open
    counts = np.zeros((1, 4), np.int64)
    policy = pk.RangePolicy(pk.OpenMP, 0, 1)
    pk.parallel_for(policy, store_float_constants, counts=counts, big=1e30)
    assert counts[0, 0] in (2**63 - 1, -(2**63))
    assert counts[0, 3] == -2
    with observing(ForceDebugBuild()):  # the debug build stops at the first one
        with pytest.raises(pk.KernelOverflowError, match="cannot convert 1e\\+30 to a 64-bit"):
            pk.parallel_for(policy, store_float_constants, counts=counts, big=1.0)


@pk.function
def sign_every_path(v: float) -> int:
    if v > 0:
        return 1
    elif v < 0:
        return -1
    else:
        return 0


@pk.function
def first_power_above(limit: float) -> int:
    k = 0
    while True:
        if 2.0**k > limit:
            return k
        k += 1


@pk.function
def count_below(v: float, n: int) -> int:
    for j in range(n):
        if j >= v:
            return j
    return n


@pk.function
def truncated_half(n: int) -> int:
    return int(n / 2)


@pk.workunit
def every_path_assigns(i, x, out):
    if x[i] > 0:
        t = 1.0
    else:
        t = -1.0
    prev = 0.0
    for j in range(i):
        prev = prev * 0.5 + j
    while True:
        found = i * 2
        break
    n: int = int(x[i] * 2.5)
    i = i + 1  # an integer into the index: Python's local, the C++ parameter's copy
    out[i - 1, 0] = t + prev + found + n
    out[i - 1, 1] = sign_every_path(x[i - 1]) + first_power_above(x[i - 1] * 8)
    out[i - 1, 2] = count_below(x[i - 1], 3) + truncated_half(i + 2)


def test_locals_and_helpers_assigned_and_returning_on_every_path_run_as_python(space):
    # Kernels that give a local a value and return from a helper on every path (if/else,
    # an endless while left by return or break, a return after a loop) translate, and
    # compute what Python computes; int(...) makes the float explicit where a float would
    # go into an int.
    x = np.array([-1.5, 0.0, 0.75, 2.5, 3.25])
    out = np.zeros((len(x), 3))
    expected = run_python(every_path_assigns, len(x), x=x, out=out.copy())
    pk.parallel_for(pk.RangePolicy(space, 0, len(x)), every_path_assigns, x=x, out=out)
    np.testing.assert_array_equal(out, expected["out"])
    assert out[3].tolist() == [1.0 + 2.5 + 6 + 6, 1 + 5, 3 + 3]


@pk.workunit
def literal_arithmetic_stays_weak(i, v8, u8, f32, o8, ou8, of32):
    o8[i, 0] = v8[i] + 1
    o8[i, 1] = v8[i] + (1 + 1)
    o8[i, 2] = v8[i] + -(2)
    o8[i, 3] = v8[i] * (3 - 1) * (2 * 3)
    o8[i, 4] = v8[i] + ~1
    o8[i, 5] = (v8[i] + (50 + 50)) + (50 * 2)  # wraps in int8, as NumPy
    ou8[i, 0] = u8[i] + (100 + 100) + +(60)  # wraps in uint8
    ou8[i, 1] = u8[i] * (2**4)
    of32[i, 0] = f32[i] + 1 / 3  # the float32 nearest to f32[i] + float32(1/3)
    of32[i, 1] = f32[i] * (0.1 * 3)
    of32[i, 2] = f32[i] - +(0.1) - 2**-1


def test_literal_only_arithmetic_keeps_python_scalar_typing_as_numpy(space):
    # NumPy 2 lets a Python scalar take the other operand's type, also when the scalar
    # is literal arithmetic: v8[i] + (1 + 1) is an int8 (wrapping), f32[i] + 1 / 3 a
    # float32. The compiled kernel folds such literals so they stay Python scalars.
    v8 = np.array([1, 27, -100, 120], np.int8)
    u8 = np.array([0, 3, 100, 250], np.uint8)
    f32 = np.array([1.5, 0.1, -3.25, 1e-3], np.float32)
    o8, ou8, of32 = np.zeros((4, 6), np.int8), np.zeros((4, 2), np.uint8), np.zeros((4, 3))
    kernel = literal_arithmetic_stays_weak
    with np.errstate(over="ignore"):  # the Debug space's NumPy scalars wrap, warning
        pk.parallel_for(
            pk.RangePolicy(space, 0, 4), kernel, v8=v8, u8=u8, f32=f32, o8=o8, ou8=ou8, of32=of32
        )
        for i in range(4):
            a, b, x = v8[i], u8[i], f32[i]  # NumPy scalars
            want8 = [a + 1, a + 2, a + -2, a * 2 * 6, a + ~1, (a + 100) + 100]
            assert [type(v) for v in want8] == [np.int8] * 6
            assert o8[i].tolist() == [int(v) for v in want8]
            assert ou8[i].tolist() == [int(b + 200 + 60), int(b * 16)]
            want32 = [x + 1 / 3, x * (0.1 * 3), x - 0.1 - 0.5]
            assert [type(v) for v in want32] == [np.float32] * 3
            assert of32[i].tolist() == [float(v) for v in want32]
