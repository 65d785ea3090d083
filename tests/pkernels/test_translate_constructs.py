"""The kernel language: locals, control flow, loops, helpers, atomics, printf/print.

Each kernel is checked on every space against the same body run as plain Python
(:func:`pkt_support.run_python`), plus explicit values where the oracle alone could hide
a shared mistake."""

from __future__ import annotations

import inspect
import math
import re
from typing import List  # noqa: UP035 - as PyKokkos programs write it

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing, run_python

import pkernels as pk
from pkernels.translate.ir import ViewLayout, ViewType
from pkernels.translate.kernel import translate_workunit

# ------------------------------------------------------------------ helpers (@pk.function)


@pk.function
def hypot2(x: float, y: float) -> float:
    return x * x + y * y


@pk.function
def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@pk.function
def norm(x: float, y: float) -> float:
    return math.sqrt(hypot2(x, y))


@pk.function
def collatz_steps(n: int) -> int:
    steps: int = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@pk.function
def fact(n: int) -> int:
    if n <= 1:
        return 1
    return n * fact(n - 1)


@pk.function
def sign_of(x):
    if x > 0:
        return 1.0
    if x < 0:
        return -1.5
    return 0


@pk.function
def int_first(x):
    if x > 0:
        return 1
    return 0.5


# ------------------------------------------------------------------ kernels


@pk.workunit
def locals_kernel(i, x, out):
    a: float = 0
    b: int = 7
    c = i * 2
    d = x[i] * 0.5
    e: pk.int32 = 3
    f = c > 4
    a += d
    a = a * b
    b = b // 2
    b += int(1.5)  # declared int: a float is converted first (C++ would do it silently)
    out[i, 0] = a
    out[i, 1] = b
    out[i, 2] = c
    out[i, 3] = d + e
    out[i, 4] = f


@pk.workunit
def unicode_names(i, x, out):
    α = 0.5
    β_2 = α * x[i]
    out[i] = β_2 + α


@pk.workunit
def branches(i, x, out):
    v = x[i]
    if v < -1:
        out[i] = -2
    elif v < 0:
        out[i] = -1
    elif v == 0:
        out[i] = 0
    else:
        if v > 10:
            out[i] = 2
        else:
            out[i] = 1


@pk.workunit
def loops(i, n, k, out):
    s: int = 0
    for j in range(5):
        s += j
    out[i, 0] = s
    s = 0
    for j in range(i, 10):
        s += j
    out[i, 1] = s
    s = 0
    for j in range(10, i, -3):
        s = s * 3 + j
    out[i, 2] = s
    s = 0
    for j in range(-i, n, k):
        s = s * 2 + j
    out[i, 3] = s
    s = 0
    for j in range(n, -i - 1, -k):
        s += j * j
    out[i, 4] = s
    s = 0
    for j in range(3):
        j = j * 10  # rebinding the loop variable does not change the iteration
        s += j
    out[i, 5] = s
    last = -1
    for j in range(i):
        last = j
    out[i, 6] = last
    m = 100
    for m in range(i, i + 3):
        pass
    out[i, 7] = m  # the loop variable keeps its last value after the loop
    s = 0
    for j in range(0, 0):
        s += 1
    for j in range(5, 1):
        s += 1
    for j in range(1, 5, -1):
        s += 1
    out[i, 8] = s


@pk.workunit
def control(i, x, out):
    # while, break, continue, early return
    n = 0
    total = 0
    while True:
        n += 1
        if n % 3 == 0:
            continue
        if n > 10 + i:
            break
        total += n
    out[i, 0] = total
    found = -1
    for j in range(20):
        if j * j > x[i]:
            found = j
            break
    out[i, 1] = found
    count = 0
    for j in range(4):
        for k in range(4):
            if k > j:
                break
            if (j + k) % 2 == 1:
                continue
            count += 1
    out[i, 2] = count
    w = i
    while w > 0 and w % 7 != 0:
        w -= 1
    out[i, 3] = w
    if x[i] < 0:
        out[i, 4] = -1
        return
    out[i, 4] = 1
    out[i, 5] = 99


@pk.workunit
def use_helpers(i, x, y, out):
    out[i, 0] = hypot2(x[i], y[i])
    out[i, 1] = clamp(x[i], -1.0, 1.0)
    out[i, 2] = clamp(i, 2, 5)
    out[i, 3] = norm(x[i], y[i])
    out[i, 4] = collatz_steps(i + 1)
    out[i, 5] = fact(i % 8)
    out[i, 6] = sign_of(x[i])
    out[i, 7] = int_first(x[i])


@pk.workunit
def atomic_counts(i, bins, hist, total):
    pk.atomic_add(hist, [bins[i]], 1)
    pk.atomic_add(total, [0], 0.5)


@pk.workunit
def atomic_fetch_ops(i, counter, slots, lo, hi, bits_and, bits_or, flips):
    old = pk.atomic_fetch_add(counter, [0], 1)
    slots[old] = i
    pk.atomic_fetch_sub(counter, [1], 2)
    pk.atomic_fetch_max(hi, [0], i * 3 % 101)
    pk.atomic_fetch_min(lo, [0], (i * 7) % 103 - 50)
    pk.atomic_fetch_and(bits_and, [0], ~(1 << (i % 40)))
    pk.atomic_fetch_or(bits_or, [0], 1 << (i % 50))
    pk.atomic_xor(flips, [i % 3], 1)


@pk.workunit
def atomic_cas_claim(i, owner, claims):
    # Exactly one iteration wins each slot: the one that sees -1 as the old value.
    slot = i % 4
    old = pk.atomic_compare_exchange(owner, [slot], -1, i)
    if old == -1:
        pk.atomic_add(claims, [slot], 1)


@pk.workunit
def atomic_2d(i, grid, top):
    pk.atomic_add(grid, [i % 3, i % 2], 1.0)
    pk.atomic_max(top, [1, 0], 1000.0 + i)


@pk.workunit
def atomic_misc(i, v, out):
    out[i, 0] = pk.atomic_fetch_add(v, [0], 0)
    pk.atomic_increment(v, [1])
    pk.atomic_decrement(v, [2])
    pk.atomic_sub(v, [3], 2)
    pk.atomic_max(v, [4], i)
    pk.atomic_min(v, [5], -i)
    out[i, 1] = pk.atomic_exchange(v, [6], i) >= 0


@pk.workunit
def printf_plain(i, x, n):
    pk.printf("i=%d x=%.3f n=%5d hex=%x pct=%%\n", i, x[i], n, 255)


@pk.workunit
def print_kernel(i, x, b):
    print("i", i, "x", x[i], b[i], i > 0)
    print(i, x[i], sep=", ", end=";\n")
    print()


@pk.workunit
def print_formatted(i, x, n, flag):
    print(f"{x[i]!s:>12}|{flag[i]!s:6}|{n[i]!s:^5}|{x[i]!s}")
    print(f"{i}: {x[i]} {x[i]:.3f}|{x[i]:>12.4e}|{x[i]:<10.2f}|{x[i]:+08.2F}|{x[i]:#.3g}|{x[i]:10}")
    print(
        f"{n[i]:5d}|{n[i]:<5}|{n[i]:^7}|{n[i]:x}|{n[i]:X}|{n[i]:o}|{n[i]:+05}|{n[i]: }|{n[i]:.1e}",
        "and",
        f"{flag[i]}/{flag[i]:3}/{flag[i]:.1f}",
        sep=" ~ ",
    )


@pk.workunit
def docstring_and_pass(i, out):
    """A docstring is not a statement of the kernel."""
    "a bare string is a comment"
    pass
    out[i] = 1


# ------------------------------------------------------------------ tests


def _check(space, kernel, n, /, **arrays):
    expected = run_python(kernel, n, **arrays)
    pk.parallel_for(pk.RangePolicy(space, 0, n), kernel, **arrays)
    for name, value in arrays.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, expected[name], err_msg=f"view {name}")
    return expected


def test_annotated_and_inferred_locals(space):
    x = np.linspace(-2, 2, 9)
    out = np.zeros((9, 5))
    _check(space, locals_kernel, 9, x=x, out=out)
    np.testing.assert_array_equal(out[:, 1], 4.0)
    np.testing.assert_array_equal(out[:, 4], np.arange(9) * 2 > 4)


def test_non_ascii_names(space):
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), unicode_names, x=np.arange(3.0), out=out)
    assert out.tolist() == [0.5, 1.0, 1.5]


def test_if_elif_else(space):
    x = np.array([-5.0, -1.0, -0.5, 0.0, 0.5, 10.0, 11.0])
    out = np.zeros(7, dtype=np.int64)
    _check(space, branches, 7, x=x, out=out)
    assert out.tolist() == [-2, -1, -1, 0, 1, 1, 2]


@pytest.mark.parametrize("n, k", [(7, 2), (4, 3)])
def test_for_range_forms(space, n, k):
    out = np.zeros((8, 9), dtype=np.int64)
    _check(space, loops, 8, n=n, k=k, out=out)
    assert out[0, 0] == 10 and out[3, 1] == sum(range(3, 10))
    assert out[:, 5].tolist() == [30] * 8
    assert out[0, 6] == -1 and out[5, 6] == 4
    assert out[2, 7] == 4 and out[:, 8].tolist() == [0] * 8


def test_variable_negative_step(space):
    # k negative through a variable: the loop counts down.
    out = np.zeros((8, 9), dtype=np.int64)
    _check(space, loops, 8, n=3, k=-2, out=out)


def test_while_break_continue_return(space):
    x = np.array([-1.0, 0.0, 2.0, 17.0, 50.0, -3.0, 9.0, 8.5])
    out = np.full((8, 6), -7, dtype=np.int64)
    _check(space, control, 8, x=x, out=out)
    assert out[0, 4] == -1 and out[0, 5] == -7  # returned early
    assert out[2, 4] == 1 and out[2, 5] == 99


def test_function_helpers(space):
    x = np.array([-2.5, -0.5, 0.0, 0.25, 3.0, 1.5, -1.0, 2.0, 0.75, -3.5])
    y = np.linspace(-1, 1, 10)
    out = np.zeros((10, 8))
    _check(space, use_helpers, 10, x=x, y=y, out=out)
    assert out[6, 4] == 16  # collatz(7)
    assert out[5, 5] == 120  # 5!
    assert out[:3, 6].tolist() == [-1.5, -1.5, 0.0]
    # Unannotated helpers return the common type of all their returns, as Python would.
    assert out[:4, 7].tolist() == [0.5, 0.5, 0.5, 1.0]


def test_helpers_are_callable_from_python():
    assert hypot2(3.0, 4.0) == 25.0
    assert fact(5) == 120
    assert clamp(5, 0, 3) == 3


def test_atomic_add_with_contention(space):
    n = 20000 if space is not pk.Debug else 2000
    bins = (np.arange(n) * 7919) % 5
    hist = np.zeros(5, dtype=np.int64)
    total = np.zeros(1)
    pk.parallel_for(pk.RangePolicy(space, 0, n), atomic_counts, bins=bins, hist=hist, total=total)
    np.testing.assert_array_equal(hist, np.bincount(bins, minlength=5))
    assert total[0] == n * 0.5


def test_atomic_fetch_operations(space):
    n = 5000 if space is not pk.Debug else 500
    counter = np.array([0, 0], dtype=np.int64)
    slots = np.full(n, -1, dtype=np.int64)
    lo = np.array([1000], dtype=np.int32)
    hi = np.array([-1000], dtype=np.int32)
    bits_and = np.array([-1], dtype=np.int64)
    bits_or = np.array([0], dtype=np.int64)
    flips = np.zeros(3, dtype=np.int8)
    pk.parallel_for(
        pk.RangePolicy(space, 0, n),
        atomic_fetch_ops,
        counter=counter,
        slots=slots,
        lo=lo,
        hi=hi,
        bits_and=bits_and,
        bits_or=bits_or,
        flips=flips,
    )
    # Every fetch_add returned a distinct old value: slots is a permutation of the indices.
    assert counter.tolist() == [n, -2 * n]
    assert sorted(slots.tolist()) == list(range(n))
    assert hi[0] == max(i * 3 % 101 for i in range(n))
    assert lo[0] == min((i * 7) % 103 - 50 for i in range(n))
    assert bits_and[0] == -1 & ~((1 << 40) - 1)
    assert bits_or[0] == (1 << 50) - 1
    assert flips.tolist() == [len(range(r, n, 3)) % 2 for r in range(3)]


def test_atomic_compare_exchange(space):
    n = 4000 if space is not pk.Debug else 400
    owner = np.full(4, -1, dtype=np.int64)
    claims = np.zeros(4, dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, n), atomic_cas_claim, owner=owner, claims=claims)
    assert claims.tolist() == [1, 1, 1, 1]
    assert all(owner[s] % 4 == s for s in range(4))


def test_atomics_on_rank2_views(space):
    grid = np.zeros((3, 2))
    top = np.zeros((2, 2))
    pk.parallel_for(pk.RangePolicy(space, 0, 600), atomic_2d, grid=grid, top=top)
    np.testing.assert_array_equal(grid, np.full((3, 2), 100.0))
    np.testing.assert_array_equal(top, [[0, 0], [1599.0, 0]])


def test_other_atomics(space):
    v = np.array([5, 0, 0, 10, -100, 100, 0], dtype=np.int64)
    out = np.zeros((50, 2), dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 50), atomic_misc, v=v, out=out)
    assert v[:6].tolist() == [5, 50, -50, 10 - 100, 49, -49]
    assert 0 <= v[6] < 50
    np.testing.assert_array_equal(out, [[5, 1]] * 50)


ORDERED = pytest.mark.parametrize("space", [pk.Serial, pk.Debug], ids=["Serial", "Debug"])


@ORDERED
def test_printf(space, capfd):
    x = np.array([0.5, 1.25, -2.0])
    pk.parallel_for(pk.RangePolicy(space, 0, 3), printf_plain, x=x, n=42)
    assert capfd.readouterr().out.splitlines() == [
        f"i={i} x={x[i]:.3f} n={42:5d} hex=ff pct=%" for i in range(3)
    ]


def test_printf_from_openmp_threads(capfd):
    x = np.arange(64.0)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 64), printf_plain, x=x, n=7)
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"i={i} x={i:.3f} n=    7 hex=ff pct=%" for i in range(64))


@ORDERED
def test_print(space, capfd):
    x = np.array([0.1, 2.0])
    b = np.array([True, False])
    print_kernel(0, x, b)  # plain Python for the expected text
    print_kernel(1, x, b)
    expected = capfd.readouterr().out
    assert expected.startswith("i 0 x 0.1 True False\n0, 0.1;\n\n")
    pk.parallel_for(pk.RangePolicy(space, 0, 2), print_kernel, x=x, b=b)
    assert capfd.readouterr().out == expected


def test_print_formats_fstrings_as_python(space, capfd):
    # 999.9995 as #.3g: 1.00e+03 (glibc's printf writes 1.e+03)
    x = np.array([1.5, -2.25e-7, math.inf, -math.nan, 123456.789, -0.0, 999.9995, 1e300])
    n = np.array([5, -255, 0, 7, 123456, -1, 2**62, -(2**63)], dtype=np.int64)
    flag = np.array([True, False, True, False, True, False, True, True])
    for i in range(len(x)):
        print_formatted(i, x, n, flag)  # plain Python for the expected text
    expected = capfd.readouterr().out
    assert "1: -2.25e-07 -0.000|" in expected and " -255|-255 | -255  |-ff|" in expected
    pk.parallel_for(pk.RangePolicy(space, 0, len(x)), print_formatted, x=x, n=n, flag=flag)
    assert sorted(capfd.readouterr().out.splitlines()) == sorted(expected.splitlines())


@pytest.mark.parametrize(
    "spec, problem",
    [
        ("{x[i]:d}", "format type 'd' needs an integer; this is a float"),
        ("{x[i]:,.2f}", "kernels do not group digits"),
        ("{x[i]:.3}", "give a type with the precision, e.g. .3g"),
        ("{x[i]:*>8}", "kernels pad with spaces"),
        ("{x[i]:%}", "format type '%' is not supported in kernels"),
        ("{x[i]:{w}}", "format specs in kernels are literal"),
        ("{x[i]!r:.3f}", "after !s or !r the value is text"),
    ],
)
def test_fstring_specs_kernels_cannot_format_are_errors(make_module, spec, problem):
    mod = make_module(
        f'import pkernels as pk\n\n@pk.workunit\ndef k(i, x, w: int):\n    print(f"value {spec}")\n'
    )
    with pytest.raises(pk.TranslationError) as err:
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 1), mod.k, x=np.ones(1), w=3)
    message = str(err.value)
    assert problem in message
    assert ":5:" in message.splitlines()[0]  # the line of the print
    assert "e.g. {x:10.3f}" in message  # what kernels can format


@pk.workunit
def print_float_formats(i, x):
    v = x[i]
    print(f"{i} {v:.3f} {v:e} {v:.0e} {v:#.0f} {v:g} {v:.17g} {v:#.3G} {v:+012.4E} {v:<9.1f}|")
    print(f"{i}: {v:.30f} {v:.25e} {v:.1g} {v:F} {v: .2f} {v:^9} {v:>10}")


def test_fstring_float_types_round_the_exact_value_as_python(capfd):
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**63, 2000, dtype=np.uint64) | np.where(
        rng.random(2000) < 0.5, np.uint64(2**63), np.uint64(0)
    )
    places = rng.integers(0, 7, 2000)
    decimals = [round(v, int(d)) for v, d in zip(rng.normal(0, 1e3, 2000), places, strict=True)]
    x = np.concatenate([
        bits.view(np.float64),  # every magnitude, subnormals and nan/inf included
        decimals,  # values near decimal ties
        [0.5, 1.5, 2.5, 0.125, 0.375, 999.9995, 9.5, 5e-324, 1.7976931348623157e308],
    ])  # fmt: skip
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, len(x)), print_float_formats, x=x)
    got = capfd.readouterr().out
    for i in range(len(x)):
        print_float_formats(i, x)  # Python's f-strings
    assert sorted(got.splitlines()) == sorted(capfd.readouterr().out.splitlines())


@pk.workunit
def print_singles(i, s):
    v = s[i]
    print(f"{v} {v!s} {v:.3f} {v:>12} {v:e}|", v, v * 3)


def test_fstrings_format_float32_as_numpy_does(space, capfd):
    # NumPy hands a float32 to format() as the Python float it converts to; str() and
    # print write its shortest single-precision digits.
    s = np.array([0.1, 1 / 3, 3e-8, 16777217.0], dtype=np.float32)
    for i in range(len(s)):
        print_singles(i, s)
    expected = capfd.readouterr().out
    assert "0.10000000149011612 0.1 0.100 0.10000000149011612 1.000000e-01| 0.1 0.3" in expected
    pk.parallel_for(pk.RangePolicy(space, 0, len(s)), print_singles, s=s)
    assert sorted(capfd.readouterr().out.splitlines()) == sorted(expected.splitlines())


def test_print_from_openmp_threads_keeps_lines_whole(capfd):
    n = 200
    x = np.arange(n) / 8
    b = np.arange(n) % 2 == 0
    xs = x.tolist()
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, n), print_kernel, x=x, b=b)
    lines = capfd.readouterr().out.splitlines()
    expected = []
    for i in range(n):
        expected += [f"i {i} x {xs[i]!r} {b[i]} {i > 0}", f"{i}, {xs[i]!r};", ""]
    assert sorted(lines) == sorted(expected)


def test_python_output_before_a_kernel_print_comes_first(native_space, capfd):
    print("before", end=" ")
    x, b = np.ones(1), np.ones(1, bool)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 1), print_kernel, x=x, b=b)
    print("after")
    out = capfd.readouterr().out
    assert out.startswith("before i 0 x 1.0 True False\n")
    assert out.endswith("after\n")


def test_docstrings_and_pass(space):
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), docstring_and_pass, out=out)
    assert out.tolist() == [1, 1, 1]


def test_generated_source_has_a_line_directive_for_each_statement():
    entry = translate_workunit(
        control,
        "for",
        {
            "x": ViewType(pk.float64, 1, ViewLayout.LAST_UNIT),
            "out": ViewType(pk.int64, 2, ViewLayout.LAST_UNIT),
        },
    )
    here = re.escape(__file__)
    directives = {int(n) for n in re.findall(rf'#line (\d+) "{here}"', entry.source)}
    source, start = inspect.getsourcelines(control)
    code_lines = {
        start + k
        for k, text in enumerate(source)
        if text.strip() and not text.strip().startswith(("#", "@", "else"))
    }
    assert directives == code_lines


@pk.workunit
def search_sorted(i: int, table, queries, lower, upper, count: int):
    lower[i] = pk.lower_bound(table, count, queries[i])
    upper[i] = pk.upper_bound(table, count, queries[i])


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_lower_and_upper_bound_as_numpy_searchsorted(space, dtype):
    rng = np.random.default_rng(11)
    table = np.sort(rng.integers(0, 20, 30)).astype(dtype)  # with repeats
    queries = np.arange(-2, 24).astype(dtype) + (0.5 if dtype == np.float64 else 0)
    queries = np.concatenate([queries, table[::3]])  # values that are in the table
    lower, upper = np.zeros(len(queries), np.int64), np.zeros(len(queries), np.int64)
    for count in (len(table), 17, 0):
        pk.parallel_for(
            pk.RangePolicy(space, 0, len(queries)), search_sorted, table=table, queries=queries,
            lower=lower, upper=upper, count=count,
        )  # fmt: skip
        part = table[:count]
        np.testing.assert_array_equal(lower, np.searchsorted(part, queries, side="left"))
        np.testing.assert_array_equal(upper, np.searchsorted(part, queries, side="right"))


def test_a_search_past_the_view_is_caught_in_debug_builds(native_space):
    table, queries = np.arange(5.0), np.array([10.0])
    out = np.zeros(1, np.int64)
    with observing(ForceDebugBuild()):
        with pytest.raises(
            pk.KernelIndexError, match=r"out of range .* view 'table' with extent 5"
        ):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 1), search_sorted, table=table, queries=queries,
                lower=out, upper=out, count=9,
            )  # fmt: skip


def test_search_bound_misuse_is_a_clear_error(make_module):
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def on_a_matrix(i: int, A, out):
    out[i] = pk.lower_bound(A, 3, 1.0)

@pk.workunit
def on_a_number(i: int, out):
    out[i] = pk.upper_bound(i, 3, 1.0)
"""
    )
    out = np.zeros(2, np.int64)
    with pytest.raises(pk.TranslationError, match="searches a rank-1 view; this one has rank 2"):
        pk.parallel_for(2, module.on_a_matrix, A=np.zeros((2, 2)), out=out)
    with pytest.raises(
        pk.TranslationError, match="first argument of pk.upper_bound must be a view"
    ):
        pk.parallel_for(2, module.on_a_number, out=out)


def test_plain_functions_of_the_kernels_module_are_compiled_as_helpers(space, make_module):
    # PyKokkos compiles the undecorated functions a kernel calls; so does pkernels, for
    # functions of the kernel's own module (a library's functions are not kernel code).
    module = make_module(
        """
import numpy as np
import pkernels as pk
from statistics import fmean

def leaf(i: int) -> int:
    return i + 1

def helper(i: int) -> int:
    return leaf(i) * 2

@pk.workunit
def total(i: int, acc: pk.Acc[pk.int64]):
    acc += helper(i)

@pk.workunit
def calls_a_library(i: int, acc: pk.Acc[pk.int64]):
    acc += fmean(i)
"""
    )
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 10), module.total) == 110
    if space is not pk.Debug:
        with pytest.raises(pk.TranslationError, match="'fmean' is not a kernel function"):
            pk.parallel_reduce(pk.RangePolicy(space, 0, 10), module.calls_a_library)


@pk.workunit
def deep_views(i, v: pk.View5D[pk.double], w: pk.View8D[pk.int32], out):
    for a in range(v.extent(1)):
        for b in range(v.shape[2]):
            v[i, a, b, 1, 0] = i * 100 + a * 10 + b + w[i][a][b][0][1][0][0][1]
            out[i] += v[i, a, b, 1, 0]


def test_views_of_rank_five_to_eight_as_kokkos(space):
    v = np.zeros((3, 2, 4, 2, 1))
    w = np.arange(3 * 2 * 4 * 2 * 2 * 2, dtype=np.int32).reshape(3, 2, 4, 2, 2, 1, 1, 2)
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), deep_views, v=v, w=w, out=out)
    i, a, b = np.meshgrid(np.arange(3), np.arange(2), np.arange(4), indexing="ij")
    expected = i * 100 + a * 10 + b + w[:, :, :, 0, 1, 0, 0, 1]
    np.testing.assert_array_equal(v[:, :, :, 1, 0], expected)
    np.testing.assert_array_equal(out, expected.sum(axis=(1, 2)))
    assert not v[:, :, :, 0, 0].any()


def test_rank_nine_is_refused_and_a_debug_build_checks_every_axis(native_space):
    with pytest.raises(pk.DispatchError, match="views must have rank 1 to 8, this array has 9"):
        pk.parallel_for(
            pk.RangePolicy(native_space, 0, 1), deep_views, v=np.zeros((1,) * 5),
            w=np.zeros((1,) * 9, np.int32), out=np.zeros(1),
        )  # fmt: skip
    w = np.zeros((3, 2, 4, 2, 1, 1, 1, 2), dtype=np.int32)  # axis 4 too short: index 1
    with observing(ForceDebugBuild()):
        with pytest.raises(
            pk.KernelIndexError, match=r"index 1 .* axis 4 of view 'w' with extent 1"
        ):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 3), deep_views, v=np.zeros((3, 2, 4, 2, 1)),
                w=w, out=np.zeros(3),
            )  # fmt: skip


@pk.workunit
def list_sums(tid: int, acc: pk.Acc[pk.double], a: int, b: int):
    x: List[int] = [a, b]  # noqa: UP006 - PyKokkos' test_list_type writes typing's List
    acc += x[0]
    acc += x[1]


@pk.workunit
def list_forces(i, x, f):
    total = [0.0] * 3
    for j in range(x.shape[0]):
        for d in range(len(total)):
            total[d] += x[j, d] - x[i, d]
    for d in range(3):
        f[i, d] = total[d]
    total = [f[i, 0], 1.0, 2.0]  # assigned again: the same length
    f[i, 2] += total[0] * total[2]


@pk.workunit
def list_counts(i, acc, v):
    counts: list[pk.int32] = [0, 0, 0, 0]
    counts[v[i] % 4] += 1
    acc += counts[0] * 10 + counts[3]


@pk.workunit
def list_out_of_range(i, out):
    pair = [1.0, 2.0]
    out[i] = pair[i]


def test_list_locals_as_pykokkos(space):
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 50), list_sums, a=7, b=2) == 450.0
    x = np.random.default_rng(1).random((6, 3))
    f = np.zeros((6, 3))
    pk.parallel_for(pk.RangePolicy(space, 0, 6), list_forces, x=x, f=f)
    expected = x.sum(axis=0) - 6 * x
    expected[:, 2] += expected[:, 0] * 2.0
    np.testing.assert_allclose(f, expected, rtol=1e-12, atol=1e-14)
    assert pk.parallel_reduce(pk.RangePolicy(space, 0, 8), list_counts, v=np.arange(8)) == 22


def test_a_debug_build_checks_list_indices(native_space):
    with observing(ForceDebugBuild()):
        with pytest.raises(pk.KernelIndexError, match=r"index 2 .* view 'pair' with extent 2"):
            pk.parallel_for(pk.RangePolicy(native_space, 0, 3), list_out_of_range, out=np.zeros(3))


LIST_ERRORS = """
from typing import List
import pkernels as pk

@pk.workunit
def regrown(i, out):
    x = [1.0, 2.0]
    x = [1.0, 2.0, 3.0]
    out[i] = x[0]

@pk.workunit
def empty(i, out):
    x = []
    out[i] = 0.0

@pk.workunit
def untyped(i, out):
    x: List = [1.0]
    out[i] = x[0]

@pk.workunit
def repeated_by_variable(i, out, n: int):
    x = [0.0] * n
    out[i] = x[0]
"""


@pytest.mark.parametrize(
    "name, message",
    [
        ("regrown", r"'x' is a list of 2 float64: a list local keeps its length"),
        ("empty", r"an empty list cannot be a kernel local"),
        ("untyped", r"a list local needs its element type: List\[float\]"),
        ("repeated_by_variable", r"this list cannot be a kernel local"),
    ],
)
def test_list_local_errors(make_module, name, message):
    module = make_module(LIST_ERRORS)
    with pytest.raises(pk.TranslationError, match=message):
        pk.parallel_for(
            2, getattr(module, name), out=np.zeros(2), **({"n": 3} if "variable" in name else {})
        )


@pk.workunit
def list_rebuilt_from_itself(i, out):
    x = [1.0, 2.0, 3.0]
    x = [x[1], x[0], x[0] * x[2]]  # every new element from the old list, as Python
    ints: List[int] = [0, 0]  # noqa: UP006
    ints[0] = 2.7  # stored as the list's type, as into a view
    ints = [5, ints[0]]
    out[i, 0] = x[0] * 100 + x[1] * 10 + x[2]
    out[i, 1] = ints[0] * 10 + ints[1] + ints.extent(0) * 1000
    pk.atomic_add(x, [2], 1.0)
    out[i, 2] = x[2] + len(x)


@pk.function
def squares(n: int) -> float:
    parts = [0.0, 0.0]
    for k in range(n):
        parts[k % 2] += sqrt(float(k))  # noqa: F821 - bare, as PyKokkos lets kernels write
    return parts[0] + parts[1]


@pk.workunit
def calls_a_list_helper(i, out):
    out[i] = squares(i)


def test_list_locals_behave_alike_in_every_space(space):
    out = np.zeros((2, 3))
    pk.parallel_for(pk.RangePolicy(space, 0, 2), list_rebuilt_from_itself, out=out)
    assert out.tolist() == [[213.0, 2052.0, 7.0]] * 2
    helped = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(space, 0, 4), calls_a_list_helper, out=helped)
    np.testing.assert_allclose(helped, [sum(k**0.5 for k in range(n)) for n in range(4)])


def test_a_list_literal_its_type_cannot_hold_is_refused(make_module):
    module = make_module(
        """
from typing import List
import pkernels as pk

@pk.workunit
def k(i, out):
    c: List[pk.uint8] = [300, 1]
    out[i] = c[0]
"""
    )
    with pytest.raises(pk.TranslationError, match="300 does not fit in uint8, the element type"):
        pk.parallel_for(2, module.k, out=np.zeros(2))
