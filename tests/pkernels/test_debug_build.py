"""Debug builds (asked for by a dispatch observer): -O0 -g with bounds and integer
division checks that raise Python exceptions naming the view, index, extent and the
Python file:line; results equal the release build. Checked release builds
(BuildMode.CHECKED, -O3) raise the same errors: each check test runs both."""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk
from pkernels.runtime.hooks import BuildMode


@pk.workunit
def shifted_copy(i, shift, src, dst):
    dst[i] = src[i + shift]


@pk.workunit
def row_sums(i, cols, m, out):
    s: float = 0
    for j in range(cols):
        s += m[i, j]
    out[i] = s


@pk.workunit
def int_divide(i, a, b, out):
    out[i, 0] = a[i] // b[i]
    out[i, 1] = a[i] % b[i]


@pk.workunit
def guarded_divide(i, a, b, out):
    if b[i] == 0 or a[i] // b[i] > 2:
        out[i] = 1
    out[i] = out[i] + (b[i] != 0 and a[i] % b[i] == 0)


@pk.function
def divide(a: int, b: int) -> int:
    return a // b


@pk.workunit
def divide_in_helper(i, a, out):
    out[i] = divide(a[i], i - 3)


@pk.workunit
def mixed_work(i, acc, x, y):
    t = x[i] * y[i] + x[i] / (1 + i)
    if i % 3 == 0:
        t = -t
    acc += t * t - y[i]


@pytest.fixture(params=[BuildMode.DEBUG, BuildMode.CHECKED], ids=["debug", "checked"])
def checking(request) -> ForceDebugBuild:
    """An observer asking for a build that checks: the debug build (-O0 -g), or the
    checked release build (-O3 code keeping the same checks, raising the same errors)."""
    return ForceDebugBuild(request.param)


def _line_of(func, text: str) -> int:
    lines, start = inspect.getsourcelines(func)
    for k, line in enumerate(lines):
        if text in line:
            return start + k
    raise AssertionError(text)


def test_debug_build_is_a_distinct_unoptimised_module(native_space):
    src = np.arange(8.0)
    dst = np.zeros(8)
    with observing(ForceDebugBuild()) as obs:
        pk.parallel_for(pk.RangePolicy(native_space, 0, 8), shifted_copy, shift=0, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)
    (kernel,) = obs.launched
    assert kernel.debug
    assert kernel.library.exists() and kernel.source.exists()
    release = [k for k in shifted_copy.__pkernels__.specializations.values() if not k.debug]
    for k in release:
        assert k.library != kernel.library


def test_checked_build_is_a_third_module_of_optimised_code(native_space):
    src, dst = np.arange(8.0), np.zeros(8)
    policy = pk.RangePolicy(native_space, 0, 8)
    with observing(ForceDebugBuild(BuildMode.RELEASE)):  # whatever $PKERNELS_CHECKS says
        pk.parallel_for(policy, shifted_copy, shift=0, src=src, dst=dst)
    with observing(ForceDebugBuild()) as debug:
        pk.parallel_for(policy, shifted_copy, shift=0, src=src, dst=dst)
    with observing(ForceDebugBuild(BuildMode.CHECKED)) as checked:
        pk.parallel_for(policy, shifted_copy, shift=0, src=dst, dst=dst)  # in place too
    np.testing.assert_array_equal(dst, src)
    (kernel,) = checked.launched
    assert kernel.checked and not kernel.debug
    assert kernel.vector_width is None  # no 512-bit twin loops to time
    release = [k for k in shifted_copy.__pkernels__.specializations.values() if not k.debug]
    libraries = {k.library for k in release} | {debug.launched[0].library}
    assert len(libraries) == 3  # release, checked, debug


def test_out_of_bounds_read(native_space, checking):
    src = np.arange(10.0)
    dst = np.zeros(10)
    with observing(checking):
        with pytest.raises(pk.KernelIndexError) as info:
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 10), shifted_copy, shift=3, src=src, dst=dst
            )
    text = str(info.value)
    line = _line_of(shifted_copy, "dst[i] = src[i + shift]")
    assert text.startswith(f"{__file__}:{line}: "), text
    assert "view 'src'" in text
    assert "extent 10" in text
    assert "axis 0" in text
    # The first failing index reported is one of the out-of-range ones.
    index = int(re.search(r"index (-?\d+)", text).group(1))
    assert 10 <= index <= 12
    assert isinstance(info.value, IndexError)
    # Iterations that were in range did their work.
    np.testing.assert_array_equal(dst[:7], src[3:10])


def test_negative_index(native_space, checking):
    with observing(checking):
        with pytest.raises(pk.KernelIndexError, match=r"index -2 is out of range .* view 'src'"):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 1),
                shifted_copy,
                shift=-2,
                src=np.zeros(4),
                dst=np.zeros(4),
            )


@pk.workunit
def next_difference(i, src, dst):
    dst[i] = src[i + 1] - src[i]


def test_constant_shift_reports_the_shifted_index(native_space, checking):
    # src[i + 1] is emitted as i shifted by one (pk_rt::at_shifted): the check and the
    # message are about the element read, index 4, not i.
    src, dst = np.arange(4.0), np.zeros(4)
    with observing(checking):
        with pytest.raises(pk.KernelIndexError) as info:
            pk.parallel_for(pk.RangePolicy(native_space, 0, 4), next_difference, src=src, dst=dst)
    text = str(info.value)
    line = _line_of(next_difference, "dst[i] = src[i + 1] - src[i]")
    assert text.startswith(f"{__file__}:{line}: ")
    assert "index 4 is out of range for axis 0 of view 'src' with extent 4" in text
    np.testing.assert_array_equal(dst[:3], [1.0, 1.0, 1.0])


def test_out_of_bounds_on_the_second_axis(native_space, checking):
    m = np.ones((4, 3))
    out = np.zeros(4)
    with observing(checking):
        with pytest.raises(pk.KernelIndexError) as info:
            pk.parallel_for(pk.RangePolicy(native_space, 0, 4), row_sums, cols=5, m=m, out=out)
    text = str(info.value)
    line = _line_of(row_sums, "s += m[i, j]")
    assert text.startswith(f"{__file__}:{line}: ")
    assert "index 3 is out of range for axis 1 of view 'm' with extent 3" in text


def test_out_of_bounds_write(native_space, checking):
    with observing(checking):
        with pytest.raises(pk.KernelIndexError, match=r"index 5 .* view 'out' with extent 5"):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 6), row_sums, cols=3, m=np.ones((6, 3)),
                out=np.zeros(5),
            )  # fmt: skip


def test_integer_division_by_zero(native_space, checking):
    a = np.array([7, 8, 9], np.int64)
    b = np.array([2, 0, 3], np.int64)
    out = np.zeros((3, 2), np.int64)
    with observing(checking):
        with pytest.raises(pk.KernelZeroDivisionError) as info:
            pk.parallel_for(pk.RangePolicy(native_space, 0, 3), int_divide, a=a, b=b, out=out)
    text = str(info.value)
    line = _line_of(int_divide, "a[i] // b[i]")
    assert text.startswith(f"{__file__}:{line}: ")
    assert "division or modulo by zero" in text
    assert isinstance(info.value, ZeroDivisionError)


def test_modulo_by_zero(native_space, checking):
    a = np.array([7], np.int64)
    b = np.array([0], np.int64)
    with observing(checking):
        with pytest.raises(pk.KernelZeroDivisionError, match="modulo by zero"):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 1), int_divide, a=a, b=b, out=np.zeros((1, 2), int)
            )


def test_division_by_zero_in_a_helper_names_the_helper_line(native_space, checking):
    with observing(checking):
        with pytest.raises(pk.KernelZeroDivisionError) as info:
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 6),
                divide_in_helper,
                a=np.arange(6),
                out=np.zeros(6, np.int64),
            )
    assert str(info.value).startswith(f"{__file__}:{_line_of(divide, 'return a // b')}: ")


def test_the_debug_space_raises_python_errors_too():
    with pytest.raises(ZeroDivisionError):
        pk.parallel_for(
            pk.RangePolicy(pk.Debug, 0, 2),
            int_divide,
            a=np.array([1, 2]),
            b=np.array([1, 0]),
            out=np.zeros((2, 2), np.int64),
        )
    with pytest.raises(IndexError):
        pk.parallel_for(
            pk.RangePolicy(pk.Debug, 0, 2), shifted_copy, shift=1, src=np.zeros(2), dst=np.zeros(2)
        )


def test_short_circuit_guards_are_not_faults(native_space, checking):
    a = np.array([5, 0, 9, 4], np.int64)
    b = np.array([0, 0, 3, 2], np.int64)
    out = np.zeros(4, np.int64)
    with observing(checking):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), guarded_divide, a=a, b=b, out=out)
    assert out.tolist() == [1, 1, 2, 1]


def test_a_fault_does_not_leak_into_the_next_launch(native_space, checking):
    src = np.arange(4.0)
    with observing(checking):
        with pytest.raises(pk.KernelIndexError):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 4), shifted_copy, shift=1, src=src, dst=np.zeros(4)
            )
        dst = np.zeros(3)
        pk.parallel_for(pk.RangePolicy(native_space, 0, 3), shifted_copy, shift=1, src=src, dst=dst)
    np.testing.assert_array_equal(dst, [1, 2, 3])


def test_many_threads_faulting_report_one_error(checking):
    src = np.zeros(10)
    with observing(checking):
        with pytest.raises(pk.KernelIndexError) as info:
            pk.parallel_for(
                pk.RangePolicy(pk.OpenMP, 0, 1000),
                shifted_copy,
                shift=0,
                src=src,
                dst=np.zeros(1000),
            )
    assert len(re.findall("out of range", str(info.value))) == 1


@pytest.mark.parametrize("build", ["release", "debug", "checked"])
def test_results_equal_release_builds(native_space, build):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(500)
    y = rng.standard_normal(500)
    m = rng.standard_normal((50, 7))
    a = rng.integers(-100, 100, 50)
    b = rng.integers(1, 9, 50) * rng.choice([-1, 1], 50)

    def run_all():
        out_rows = np.zeros(50)
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 50), row_sums, cols=7, m=m, out=out_rows)
        out_div = np.zeros((50, 2), np.int64)
        pk.parallel_for(pk.RangePolicy(native_space, 0, 50), int_divide, a=a, b=b, out=out_div)
        total = pk.parallel_reduce(pk.RangePolicy(pk.Serial, 0, 500), mixed_work, x=x, y=y)
        return out_rows, out_div, total

    if build != "release":
        with observing(ForceDebugBuild(BuildMode(build))) as obs:
            results = run_all()
        assert len(obs.launched) == 3
        assert all(k.debug == (build == "debug") for k in obs.launched)
        assert all(k.checked == (build == "checked") for k in obs.launched)
    else:
        results = run_all()
    rows, div, total = results
    # Against NumPy / Python, exactly: the same operations in the same order.
    expected_rows = np.zeros(50)
    for j in range(7):
        expected_rows += m[:, j]
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(div, np.stack([a // b, a % b], axis=1))
    expected_total = 0.0
    for i in range(500):
        t = float(x[i]) * float(y[i]) + float(x[i]) / (1 + i)
        t = -t if i % 3 == 0 else t
        expected_total += t * t - float(y[i])
    assert total == expected_total


@pk.workunit
def to_ints(i, x, out):
    out[i, 0] = int(x[i])
    out[i, 1] = round(x[i])
    out[i, 2] = math.floor(x[i])


def test_int_of_nan_infinity_or_a_huge_float_is_an_error(native_space, checking):
    # Python raises (NaN, infinities) or makes a bigger integer; C++ would give any number.
    line = _line_of(to_ints, "int(x[i])")
    cases = [
        (math.nan, pk.KernelValueError, ValueError, "cannot convert float NaN to integer"),
        (math.inf, pk.KernelOverflowError, OverflowError, "cannot convert inf to a 64-bit"),
        (-1e30, pk.KernelOverflowError, OverflowError, "cannot convert -1e+30 to a 64-bit signed"),
    ]
    for bad, error, python_error, message in cases:
        x = np.array([2.5, -7.75, bad])
        with observing(checking):
            with pytest.raises(error) as info:
                pk.parallel_for(
                    pk.RangePolicy(native_space, 0, 3), to_ints, x=x, out=np.zeros((3, 3), int)
                )
        assert str(info.value).startswith(f"{__file__}:{line}: {message}"), str(info.value)
        assert isinstance(info.value, python_error)
    # The largest and smallest int64 convert (exactly representable as doubles).
    x = np.array([2.5, -(2.0**63), 2.0**62])
    out = np.zeros((3, 3), np.int64)
    with observing(checking):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 3), to_ints, x=x, out=out)
    assert out[:, 0].tolist() == [2, -(2**63), 2**62]
    assert out[:, 1].tolist() == [2, -(2**63), 2**62]  # halves to even, as Python's round


@pk.workunit
def powers(i, a, n, out):
    out[i] = a[i] ** n[i]


def test_an_integer_to_a_negative_power_is_an_error(native_space, checking):
    # Python's 3 ** -2 is 0.111...: a float where this kernel's result is an integer.
    a, out = np.array([3, 3, 3]), np.zeros(3, np.int64)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 2), powers, a=a, n=np.array([4, 0]), out=out)
    assert out[:2].tolist() == [81, 1]
    with observing(checking):
        with pytest.raises(pk.KernelValueError) as info:
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 3), powers, a=a, n=np.array([2, 0, -2]), out=out
            )
    line = _line_of(powers, "a[i] ** n[i]")
    assert str(info.value).startswith(f"{__file__}:{line}: an integer ** -2: Python gives a float")


@pk.workunit
def store_floats(i, x, out):
    out[i] = x[i]


def test_a_float_stored_into_an_integer_view_is_checked(native_space, checking):
    # NumPy refuses `a[0] = nan` for an int array (ValueError); release code stores any
    # number, the debug build reports it at the line.
    x, out = np.array([1.5, -2.5, math.nan]), np.zeros(3, np.int64)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 2), store_floats, x=x, out=out)
    assert out[:2].tolist() == [1, -2]  # truncated, as NumPy's astype
    with observing(checking):
        with pytest.raises(pk.KernelValueError, match="cannot convert float NaN to integer"):
            pk.parallel_for(pk.RangePolicy(native_space, 0, 3), store_floats, x=x, out=out)
