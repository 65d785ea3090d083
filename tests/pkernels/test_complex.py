"""complex64 / complex128 views and arithmetic in kernels: the compiled spaces give what
the kernel run as Python over the same NumPy arrays gives (the Debug space: NumPy's
complex scalars), bit for bit, over random numbers of every magnitude and the edge
values (inf, nan, signed zeros, subnormals, huge and tiny divisors); what kernels do not
support is refused with the fix."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime.marshal import ArgumentPlan, argument_type
from pkernels.translate.emit_cuda import emit_cuda_module
from pkernels.translate.kernel import TEAM, lower_workunit

COLUMNS = 22


@pk.workunit
def complex_ops(i, out, mags, same, a, b, x, k):
    z = a[i] * b[i]
    w: pk.complex128 = a[i] / b[i]
    out[i, 0] = z
    out[i, 1] = w
    out[i, 2] = a[i] + b[i]
    out[i, 3] = a[i] - b[i]
    out[i, 4] = -a[i]
    out[i, 5] = a[i] + x[i]
    out[i, 6] = x[i] - b[i]
    out[i, 7] = a[i] * x[i]
    out[i, 8] = x[i] / b[i]
    out[i, 9] = a[i] / x[i]
    out[i, 10] = a[i] * 2 + 1.5
    out[i, 11] = 3 / b[i]
    out[i, 12] = pk.complex128(x[i], a[i].imag) * pk.complex128(b[i].real, -x[i])
    out[i, 13] = pk.conj(a[i]) - abs(b[i])
    t = a[i]
    t += b[i]
    t *= x[i]
    t -= k[i]
    t /= b[i]
    out[i, 14] = t
    out[i, 15] = a[i]
    out[i, 15] *= b[i]
    out[i, 16] = x[i]
    out[i, 16] /= a[i]
    out[i, 17] = pk.square(a[i]) + k[i] * b[i]
    u: pk.complex128 = 0
    for j in range(3):
        u = u * a[i] + b[i] / (j + 1)
    out[i, 18] = u
    out[i, 19] = pk.complex128(a[i])
    out[i, 20] = pk.complex128(k[i], 0.5) / x[i]
    out[i, 21] = +b[i] - (a[i] - x[i]) * (b[i] + 1)
    mags[i, 0] = abs(a[i])
    mags[i, 1] = a[i].real * b[i].imag
    mags[i, 2] = (a[i] * b[i]).imag
    mags[i, 3] = abs(z / w)
    same[i, 0] = a[i] == b[i]
    same[i, 1] = a[i] != b[i]
    same[i, 2] = a[i] == x[i]
    same[i, 3] = not a[i]


@pk.workunit
def single_ops(i, out, wide, a, b, f, d, h):
    out[i, 0] = a[i] * b[i]
    out[i, 1] = a[i] / b[i]
    out[i, 2] = a[i] + f[i]
    out[i, 3] = f[i] / a[i]
    out[i, 4] = a[i] * h[i] - b[i]
    out[i, 5] = a[i] * 0.1
    out[i, 6] = pk.complex64(f[i], d[i])
    z: pk.complex64 = a[i]
    z /= b[i]
    z *= f[i]
    out[i, 7] = z
    wide[i, 0] = a[i] * d[i]  # complex64 with float64: complex128
    wide[i, 1] = a[i] / pk.complex128(d[i], f[i])
    wide[i, 2] = abs(a[i])
    wide[i, 3] = pk.conj(b[i])


def _edge_numbers(rng, shape, dtype):
    """Normal numbers of magnitudes 1e-20 to 1e20 (1e-12 to 1e12 for float32), one in
    six an edge value."""
    span = 12 if dtype == np.float32 else 20
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-span, span, shape)
    finfo = np.finfo(dtype)
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 0.5,
         float(finfo.tiny) / 4, -float(finfo.tiny) / 8, float(finfo.max), -float(finfo.max),
         float(finfo.max) / 3, float(finfo.tiny), 1e-300 if dtype == np.float64 else 1e-40]
    )  # fmt: skip
    mask = rng.random(shape) < 1 / 6
    values[mask] = rng.choice(edges, int(mask.sum()))
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def _complex(rng, n, dtype):
    part = np.float32 if dtype == np.complex64 else np.float64
    z = np.empty(n, dtype)
    z.real, z.imag = _edge_numbers(rng, n, part), _edge_numbers(rng, n, part)
    return z


def _same_bits(got, want):
    """Equal bit for bit, NaN payloads aside (C and NumPy both give x86's default NaN,
    but a NaN's sign is not a value)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind == "c":
        return _same_bits(got.real, want.real) & _same_bits(got.imag, want.imag)
    if got.dtype.kind != "f":
        return got == want
    return (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")) | (
        np.isnan(got) & np.isnan(want)
    )


def _run(space, kernel, outputs, **inputs):
    results = {name: np.zeros(shape, dtype) for name, (shape, dtype) in outputs.items()}
    n = len(next(iter(inputs.values())))
    with np.errstate(all="ignore"):
        pk.parallel_for(pk.RangePolicy(space, 0, n), kernel, **results, **inputs)
    return results


def _double_inputs(n=3000, seed=11):
    rng = np.random.default_rng(seed)
    a, b = _complex(rng, n, np.complex128), _complex(rng, n, np.complex128)
    b[::50] = a[::50]  # equal numbers (== and !=), x / x
    x = _edge_numbers(rng, n, np.float64)
    a[1::50] = x[1::50]  # real numbers as complex ones (a == x)
    return {"a": a, "b": b, "x": x, "k": rng.integers(-5, 5, n).astype(np.int32)}


def _double_outputs(n):
    return {
        "out": ((n, COLUMNS), np.complex128),
        "mags": ((n, 4), np.float64),
        "same": ((n, 4), np.bool_),
    }


@pytest.fixture(scope="module")
def double_reference():
    inputs = _double_inputs()
    return inputs, _run(pk.Debug, complex_ops, _double_outputs(len(inputs["a"])), **inputs)


def test_complex128_arithmetic_is_numpys_bit_for_bit(native_space, double_reference):
    inputs, want = double_reference
    got = _run(native_space, complex_ops, _double_outputs(len(inputs["a"])), **inputs)
    for name, expected in want.items():
        same = _same_bits(got[name], expected)
        bad = np.argwhere(~same)
        assert not len(bad), (name, bad[:5].tolist(), got[name][tuple(bad[0])])
    # The reference is NumPy's scalar arithmetic, and the inputs reach its edges.
    a, b = inputs["a"], inputs["b"]
    with np.errstate(all="ignore"):
        assert _same_bits(want["out"][:, 1], [p / q for p, q in zip(a, b, strict=True)]).all()
    assert np.isnan(want["out"][:, 1]).any() and np.isinf(want["out"][:, 1]).any()
    assert (want["out"][:, 1] == 0).any() and (want["out"][:, 1] == 1).any()
    assert want["same"][:, 0].any() and want["same"][:, 2].any()


def test_the_debug_build_computes_the_same(double_reference):
    inputs, want = double_reference
    with observing(ForceDebugBuild()):
        got = _run(pk.Serial, complex_ops, _double_outputs(len(inputs["a"])), **inputs)
    assert all(_same_bits(got[name], want[name]).all() for name in want)


def test_complex64_computes_in_single_precision_as_numpy(native_space):
    rng = np.random.default_rng(5)
    n = 3000
    inputs = {
        "a": _complex(rng, n, np.complex64),
        "b": _complex(rng, n, np.complex64),
        "f": _edge_numbers(rng, n, np.float32),
        "d": _edge_numbers(rng, n, np.float64),
        "h": rng.integers(-300, 300, n).astype(np.int16),
    }
    outputs = {"out": ((n, 8), np.complex64), "wide": ((n, 4), np.complex128)}
    want = _run(pk.Debug, single_ops, outputs, **inputs)
    got = _run(native_space, single_ops, outputs, **inputs)
    for name in outputs:
        assert _same_bits(got[name], want[name]).all(), name
    # complex64 products round each part to float32 (not a float64 product rounded once)
    a, b = inputs["a"], inputs["b"]
    with np.errstate(all="ignore"):
        assert _same_bits(want["out"][:, 0], [p * q for p, q in zip(a, b, strict=True)]).all()


@pk.workunit
def _from_ints(i, out, n, x):
    out[i, 0] = pk.complex64(n[i], x[i])
    out[i, 1] = pk.complex64(n[i])
    w: pk.complex64 = n[i]
    out[i, 2] = w


def test_an_int64_becomes_a_complex64_through_a_double_as_numpy_takes_it(native_space):
    # 2**60 + 2**36 + 1: a double rounds it to 2**60 + 2**36, a float then to 2**60 (a
    # tie, to even); rounded once it would be 2**60 + 2**37.
    n = np.array([2**60 + 2**36 + 1, 2**53 + 1, 16777217, -(2**62) - 2**38 - 3], np.int64)
    x = np.array([0.1, 1e-50, 3.4e38, 1e300])
    got, want = (np.zeros((4, 3), np.complex64) for _ in range(2))
    with np.errstate(over="ignore"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), _from_ints, out=got, n=n, x=x)
        pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 4), _from_ints, out=want, n=n, x=x)
    assert _same_bits(got, want).all() and want[0, 1].real == 2.0**60


def test_views_made_by_pk_view_and_strided_arrays(space):
    v = pk.View([6], pk.complex128)
    v[:] = np.arange(6) + 1j * np.arange(6, 0, -1)
    grid = (np.arange(12) * (1 - 2j)).reshape(4, 3).astype(np.complex64)
    out = np.zeros(6, np.complex128)
    pk.parallel_for(pk.RangePolicy(space, 0, 4), _scaled_column, out=out, v=v, col=grid[:, 1])
    expected = [v.data[i] / np.complex128(grid[i, 1]) for i in range(4)] + [0, 0]
    assert _same_bits(out, np.array(expected, np.complex128)).all()
    assert v.dtype == pk.complex128 and v.data.dtype == np.complex128


@pk.workunit
def _scaled_column(i, out, v, col):
    out[i] = v[i] / col[i]


@pk.function
def _rotate(z: pk.complex128, turns: int) -> pk.complex128:
    for _ in range(turns):
        z = z * pk.complex128(0.0, 1.0)
    return z


@pk.workunit
def _with_helper(i, out, a):
    out[i] = _rotate(a[i], i)


def test_helpers_take_and_return_complex_numbers(space):
    a = np.array([1 + 2j, -3 + 0.5j, 2.5 - 1j, 0j])
    out = np.zeros(4, np.complex128)
    pk.parallel_for(pk.RangePolicy(space, 0, 4), _with_helper, out=out, a=a)
    assert out.tolist() == [1 + 2j, -0.5 - 3j, -2.5 + 1j, 0j]


def test_pk_complex_makes_numpys_complex_scalars():
    z = pk.complex128(1.5, -0.0)
    assert type(z) is np.complex128 and z.real == 1.5 and str(z.imag) == "-0.0"
    assert type(pk.complex64(0.1, 2)) is np.complex64
    assert pk.complex64.np_equiv is np.complex64 and np.dtype(pk.complex128) == np.complex128
    with pytest.raises(TypeError):
        pk.double(1.0)


REFUSED = [
    ("out[i] = a[i] < a[i]", "complex numbers are not ordered", "abs(z) < abs(w)"),
    ("out[i] = a[i] // a[i]", "`//` of a complex number", "no floor division"),
    ("out[i] = a[i] ** 2", "`**` of a complex number", "z * z"),
    ("out[i] = pk.fmod(a[i], a[i])", "pk.fmod of a complex number", "np.fmod"),
    ("out[i] = math.exp(a[i])", "math.exp takes a real number, not a complex", "pk.exp(z)"),
    ("out[i] = pk.exp(a[i], a[i])", "pk.exp() takes one number", ""),
    ("n[i] = a[i]", "a complex number (complex128) stored into 'n'", "z.real or z.imag"),
    ("r[i] += a[i]", "stored into 'r', a view of float64", "pk.complex128"),
    ("t: float = a[i]", "is assigned a complex number (complex128)", "z.real or z.imag"),
    ("t = r[i]\n    t = a[i]", "'t' is a real number (float64", "t: pk.complex128 = 0"),
    ("pk.atomic_add(out, [i], a[i])", "pk.atomic_add on a complex view", "two views"),
    ("out[i] = a[i] * 1j", "the complex literal 1j", "pk.complex128(0.0, 1.0)"),
    ("out[i] = complex(1.0, 2.0)", "Python's complex() in a kernel", "pk.complex128(re, im)"),
    ("r[i] = float(a[i])", "float() of a complex number", "z.real"),
    ("r[i] = max(a[i], a[i])", "max() of a complex number", "abs(z)"),
    ("r[i] = r[i].imag", "of a real number (float64)", "imaginary part is 0"),
    ("out[i] = pk.complex128(a[i], 1.0)", "takes real numbers, this is complex128", "re, im"),
    ("print(f'{a[i]:.3f}')", "a format spec for a complex number", "{a[i].imag:+.3f}j"),
    ("pk.printf('%f', a[i])", "a complex number with pk.printf", "a[i].real, a[i].imag"),
]


@pytest.mark.parametrize("line,message,fix", REFUSED, ids=[r[1][:30] for r in REFUSED])
def test_unsupported_complex_uses_are_refused_with_the_fix(make_module, line, message, fix):
    module = make_module(
        f"""
import math
import pkernels as pk

@pk.workunit
def kernel(i, out, a, r, n):
    {line}
"""
    )
    arrays = {
        "out": np.zeros(2, np.complex128),
        "a": np.ones(2, np.complex128),
        "r": np.zeros(2),
        "n": np.zeros(2, np.int64),
    }
    with pytest.raises(pk.TranslationError) as caught:
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 2), module.kernel, **arrays)
    text = str(caught.value)
    assert message in text and fix in text, text
    assert f"{module.__file__}" in text and "^" in text  # the line, with a caret


@pk.workunit
def _complex_sum(i, acc: pk.Acc[pk.complex128], a):
    acc += a[i]


@pk.workunit
def _weighted_sum(i, acc, a, x):  # unannotated: given complex numbers, a complex128
    acc += a[i] * x[i]


@pk.workunit
def _single_sum(i, acc: pk.Acc[pk.complex64], f):
    acc += f[i] * f[i]


@pk.workunit
def _box_sum(i, j, acc: pk.Acc[pk.complex128], grid):
    acc += grid[i, j]


@pk.workunit
def _box_scale(i, j, out, grid, z):
    out[i, j] = grid[i, j] * z


@pk.workunit
def _running_sum(i, acc: pk.Acc[pk.complex128], last_pass, a, out):
    acc += a[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def _team_sums(team, acc: pk.Acc[pk.complex128], grid):
    row = team.league_rank()

    def body(j: int, part: pk.Acc[pk.complex128]):
        part += grid[row, j]

    total: pk.complex128 = pk.parallel_reduce(pk.TeamThreadRange(team, grid.extent(1)), body)
    if team.team_rank() == 0:
        acc += total


def _sums(space, a, x, f):
    with np.errstate(all="ignore"):
        policy = pk.RangePolicy(space, 0, len(a))
        return [
            pk.parallel_reduce(policy, _complex_sum, a=a),
            pk.parallel_reduce(policy, _weighted_sum, a=a, x=x),
            pk.parallel_reduce(policy, _single_sum, f=f),
        ]


@pk.workunit
def complex_math(i, out, a):
    out[i, 0] = pk.sqrt(a[i])
    out[i, 1] = pk.exp(a[i])
    out[i, 2] = pk.log(a[i])
    out[i, 3] = pk.log10(a[i])
    out[i, 4] = pk.log2(a[i])
    out[i, 5] = pk.sin(a[i])
    out[i, 6] = pk.cos(a[i])
    out[i, 7] = pk.tan(a[i])
    out[i, 8] = pk.sinh(a[i])
    out[i, 9] = pk.cosh(a[i])
    out[i, 10] = pk.tanh(a[i])
    out[i, 11] = pk.asin(a[i])
    out[i, 12] = pk.acos(a[i])
    out[i, 13] = pk.atan(a[i])
    out[i, 14] = pk.asinh(a[i])
    out[i, 15] = pk.acosh(a[i])
    out[i, 16] = pk.atanh(a[i])


MATH_COLUMNS = ["sqrt", "exp", "log", "log10", "log2", "sin", "cos", "tan", "sinh", "cosh",
                "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial, pk.Debug])
def test_complex_math_functions_are_numpys_bit_for_bit(space, dtype):
    """pk.exp(z) ... of a complex number: what NumPy's np.exp ... gives on each scalar (the
    kernel run as Python), over numbers of every magnitude and the edge values, in the
    argument's precision."""
    a = _complex(np.random.default_rng(5), 2000, dtype)
    got = _run(space, complex_math, {"out": ((len(a), len(MATH_COLUMNS)), dtype)}, a=a)["out"]
    with np.errstate(all="ignore"):
        want = np.array([[getattr(np, f)(z) for f in MATH_COLUMNS] for z in a], dtype)
    for column, name in enumerate(MATH_COLUMNS):
        same = _same_bits(got[:, column], want[:, column])
        assert same.all(), (name, a[~same][:3], got[~same, column][:3], want[~same, column][:3])


def test_complex_sums_are_the_debug_spaces_in_serial_bit_for_bit():
    """Serial adds in index order, as the Debug space (NumPy's complex scalars) does:
    the same bits, inf, nan and signed zeros included."""
    rng = np.random.default_rng(5)
    tries = [(_complex(rng, 64, np.complex128), _edge_numbers(rng, 64, np.float64),
              _complex(rng, 64, np.complex64)) for _ in range(12)]  # fmt: skip
    tries.append((-np.zeros(3, np.complex128), np.ones(3), -np.zeros(3, np.complex64)))
    for a, x, f in tries:
        want = _sums(pk.Debug, a, x, f)
        assert all(type(w) is complex for w in want)
        got = _sums(pk.Serial, a, x, f)
        assert _same_bits(np.array(got), np.array(want)).all(), (got, want)
    assert str(want[0]) == "0j"  # from 0, as Python's sum: 0.0 + -0.0 is 0.0
    with observing(ForceDebugBuild()):  # the debug build (pkdb's) adds alike
        assert _same_bits(np.array(_sums(pk.Serial, a, x, f)), np.array(want)).all()


def test_complex_sums_in_openmp_round_as_the_threads_add():
    """OpenMP adds each thread's partial sum in turn: the rounding of a float sum's."""
    rng = np.random.default_rng(6)
    n = 5001
    a = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    x, f = rng.random(n), (rng.random(n) + 1j * rng.random(n)).astype(np.complex64)
    got, want = _sums(pk.OpenMP, a, x, f), _sums(pk.Debug, a, x, f)
    assert got[:2] == pytest.approx(want[:2], rel=1e-12) and type(got[0]) is complex
    assert got[2] == pytest.approx(want[2], rel=1e-5)  # float32 parts
    assert want[0] == pytest.approx(a.sum(), rel=1e-12)


def test_complex_accumulators_over_boxes_scans_and_teams(space):
    grid = (np.arange(12.0) + 1j * np.arange(12.0)[::-1]).reshape(3, 4)
    box = pk.MDRangePolicy(space, [0, 0], [3, 4])
    assert pk.parallel_reduce(box, _box_sum, grid=grid) == grid.sum()
    out = np.zeros(12, np.complex128)
    total = pk.parallel_scan(pk.RangePolicy(space, 0, 12), _running_sum, a=grid.ravel(), out=out)
    assert total == grid.sum() and (out == np.cumsum(grid)).all()
    teams = pk.TeamPolicy(space, 3, 1 if space is pk.Serial else 2)
    assert pk.parallel_reduce(teams, _team_sums, grid=grid) == grid.sum()
    product = pk.parallel_reduce(
        pk.RangePolicy(space, 0, 1), _complex_sum, reducer=pk.Prod, a=grid[0]
    )
    assert product == 1 + grid[0, 0] and type(product) is complex


def test_complex_accumulators_refused_with_the_fix():
    with pytest.raises(pk.TranslationError, match=r"does not reduce complex.*pk.Prod"):
        pk.parallel_reduce(
            pk.RangePolicy(pk.Serial, 0, 2), _complex_sum, reducer=pk.Max, a=np.ones(2, complex)
        )
    with pytest.raises(pk.TranslationError, match=r"Declare it complex \(`acc: pk.Acc"):
        pk.parallel_reduce(pk.RangePolicy(pk.Serial, 0, 2), _real_sum, a=np.ones(2, complex))
    assert pk.Acc[pk.complex64].dtype is pk.complex64


@pk.workunit
def _real_sum(i, acc: float, a):
    acc += a[i]


@pk.workunit
def _affine(i, out, a, z, w):
    out[i] = a[i] * z + w


@pk.workunit
def _scaled_sum(i, acc, a, z):
    acc += a[i] / z


def test_complex_scalar_arguments_give_the_debug_spaces_bits(native_space):
    """A Python complex and np.complex128 are complex128 arguments, np.complex64 a
    complex64 one (computed in single precision); edge parts arrive as they are."""
    rng = np.random.default_rng(7)
    a = _complex(rng, 200, np.complex128)
    edges = [complex(-0.0, np.inf), complex(np.nan, -0.0), 1e-310 - 3e300j]
    pairs = [(1.5 - 2j, np.complex128(0.25 + 1j)), (np.complex64(0.1 - 3j), np.complex64(-0.0))]
    pairs += [(z, w) for z, w in zip(edges, edges[::-1], strict=True)]
    for z, w in pairs:
        got, want = np.zeros(200, complex), np.zeros(200, complex)
        with np.errstate(all="ignore"):
            for space, out in ((native_space, got), (pk.Debug, want)):
                pk.parallel_for(pk.RangePolicy(space, 0, 200), _affine, out=out, a=a, z=z, w=w)
            total = [
                pk.parallel_reduce(pk.RangePolicy(space, 0, 50), _scaled_sum, a=a[:50], z=z)
                for space in (pk.Serial, pk.Debug)
            ]
        assert _same_bits(got, want).all(), (z, w)
        assert _same_bits(np.array(total[0]), np.array(total[1])), (z, total)
    single = np.zeros(200, complex)
    pk.parallel_for(
        pk.RangePolicy(native_space, 0, 200), _affine, out=single, a=a, z=np.complex64(0.1), w=0j
    )
    with np.errstate(all="ignore"):  # 0.1 rounded to float32
        assert _same_bits(single, a * np.complex64(0.1)).all()
    # A Python complex is a complex128 in the Debug space too (not NumPy's weak scalar,
    # which a complex64 element would keep in single precision).
    runs = [np.zeros(200, complex), np.zeros(200, complex)]
    with np.errstate(all="ignore"):
        f = a.astype(np.complex64)
    for space, out in zip((native_space, pk.Debug), runs, strict=True):
        with np.errstate(all="ignore"):
            pk.parallel_for(pk.RangePolicy(space, 0, 200), _affine, out=out, a=f, z=0.1j, w=0j)
    with np.errstate(all="ignore"):
        wide = np.array([np.complex128(v) * np.complex128(0.1j) + 0j for v in f])
    assert _same_bits(runs[0], runs[1]).all() and _same_bits(runs[1], wide).all()


@pytest.mark.parametrize("to_debug", [False, True], ids=["release code", "handed to debug"])
def test_hybrid_launches_take_complex_arguments_and_sums(to_debug):
    """pkdb's HYBRID launch: release loops that hand indices to the debug build, whose
    one-index entry takes the complex argument's parts and the complex accumulator."""
    from test_hybrid_build import Hybrid

    a, out = np.arange(40) * (1 - 0.5j), np.zeros(40, complex)
    grid, scaled = a.reshape(5, 8), np.zeros((5, 8), complex)
    policy = pk.RangePolicy(pk.OpenMP, 0, 40)
    with observing(Hybrid(to_debug)) as observer:
        pk.parallel_for(policy, _affine, out=out, a=a, z=0.5 + 2j, w=np.complex128(-1j))
        total = pk.parallel_reduce(policy, _weighted_sum, a=a, x=np.ones(40))
        # an MDRange box: its for has a hybrid launcher (of rank 2, taking z's parts);
        # its reduce none (emit_hybrid.has_hybrid_launch): the debug build sums it all
        box = pk.MDRangePolicy(pk.OpenMP, [0, 0], [5, 8])
        pk.parallel_for(box, _box_scale, out=scaled, grid=grid, z=0.5 + 2j)
        box_total = pk.parallel_reduce(box, _box_sum, grid=grid)
    assert [fast is not None for _, fast in observer.seen] == [True, True, True, False]
    assert (out == a * (0.5 + 2j) - 1j).all() and total == a.sum()
    assert (scaled == grid * (0.5 + 2j)).all()
    assert box_total == a.sum() and type(box_total) is complex  # whole parts: exact


def test_a_scan_given_a_reducer_is_refused_with_what_scans_do():
    """Scans add (real ones as complex ones): reducer=pk.Prod is refused, saying so."""
    a, out = np.ones(4, complex), np.zeros(4, complex)
    for space in (pk.Debug, pk.Serial):
        with pytest.raises(pk.DispatchError, match=r"running total is a sum: parallel_scan"):
            pk.parallel_scan(
                pk.RangePolicy(space, 0, 4), _running_sum, a=a, out=out, reducer=pk.Prod
            )
    assert (out == 0).all()  # nothing ran


def test_complex_arguments_marshal_in_c(monkeypatch):
    """The C marshaller takes complex numbers: the Python one never runs."""
    out, a = np.zeros(4, complex), np.arange(4) * (1 + 1j)
    policy = pk.RangePolicy(pk.OpenMP, 0, 4)
    pk.parallel_for(policy, _affine, out=out, a=a, z=2j, w=np.complex128(1))  # built

    def refuse(*args, **kwargs):
        raise AssertionError("the Python marshaller ran")

    monkeypatch.setattr(ArgumentPlan, "marshal", refuse)
    for z in (3 - 1j, np.complex128(3 - 1j)):
        pk.parallel_for(policy, _affine, out=out, a=a, z=z, w=np.complex128(1))
        assert (out == a * (3 - 1j) + 1).all()
    assert argument_type("c", np.complex64(1)) == pk.complex64
    assert argument_type("c", 1j) == argument_type("c", np.complex128(1)) == pk.complex128


@pk.workunit
def _show(i, a, f):
    print(a[i], f[i], f"<{a[i]}|{f[i]}|{f[i]!s}|{a[i]!s:>28}|{f[i]!s:<9}>")


def test_printed_complex_numbers_are_what_python_prints(capfd):
    """print(z): NumPy's str() of the complex scalar (CPython's repr of a complex for a
    complex128: "1j", "-0j", "(-0+0j)", "(nan+nanj)", parts as repr() writes floats but
    "1" for 1.0); f"{z}" of a complex64 is its Python complex's."""
    nan, inf = np.nan, np.inf
    parts = [(1, 2), (1.5, -0.0), (0.0, -0.0), (-0.0, 0.0), (0.0, nan), (0.0, -inf),
             (nan, -nan), (inf, -inf), (1e16, 1e-5), (1e15, 1e-4), (0.1, 1 / 3), (-0.0, -0.0),
             (123456789.0, 2.5e-300), (0.0, 0.0), (1e6, -1e-4), (-2.5e-310, 5e-324)]  # fmt: skip
    a = np.array([complex(re, im) for re, im in parts])
    printed = []
    for space in (pk.Debug, pk.Serial):
        pk.parallel_for(pk.RangePolicy(space, 0, len(a)), _show, a=a, f=a.astype(np.complex64))
        printed.append(capfd.readouterr().out)
    assert printed[1] == printed[0]
    assert printed[0].splitlines()[:3] == [
        "(1+2j) (1+2j) <(1+2j)|(1+2j)|(1+2j)|                      (1+2j)|(1+2j)   >",
        "(1.5-0j) (1.5-0j) <(1.5-0j)|(1.5-0j)|(1.5-0j)|                    (1.5-0j)|(1.5-0j) >",
        "-0j -0j <-0j|-0j|-0j|                         -0j|-0j      >",
    ]
    assert [str(z) for z in a] == [line.split()[0] for line in printed[0].splitlines()]


def _nvcc_compiles(tmp_path, kernel, operation, arrays, rank=1):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    arg_types = {name: argument_type(name, value) for name, value in arrays.items()}
    function, helpers = lower_workunit(kernel, operation, arg_types, rank)
    source = emit_cuda_module(function, helpers, operation, pk.int64, rank).source
    assert "pk_rt::complex<" in source
    stand_in = tmp_path / "nvrtc_builtins.h"  # NVRTC declares printf itself
    stand_in.write_text("#include <cstdio>\n")
    cu = tmp_path / "complex.cu"
    cu.write_text(source.replace(GENERATED_PATH, str(cu)))
    done = subprocess.run(
        [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", include_option(),
         "--pre-include", str(stand_in), "-c", "-x", "cu", str(cu), "-o", str(tmp_path / "c.o")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return source


def test_generated_cuda_compiles_with_nvcc(tmp_path):
    inputs = _double_inputs(8)
    arrays = {**{k: np.zeros(s, d) for k, (s, d) in _double_outputs(8).items()}, **inputs}
    _nvcc_compiles(tmp_path, complex_ops, "for", arrays)


def test_complex_reductions_compile_for_the_gpu(tmp_path):
    """A complex range reduce and a team reduce with a nested complex reduce: each team
    rank's slot holds a complex128 (16 bytes)."""
    a, grid = np.ones(4, np.complex128), np.ones((3, 4), np.complex128)
    x = np.ones(4)
    assert "pk_reduce" in _nvcc_compiles(tmp_path, _weighted_sum, "reduce", {"a": a, "x": x})
    source = _nvcc_compiles(tmp_path, _team_sums, "reduce", {"grid": grid}, TEAM)
    assert "#define PK_SLOT_BYTES 16" in source
    _nvcc_compiles(tmp_path, _affine, "for", {"out": a, "a": a, "z": 1j, "w": np.complex64(1)})
    _nvcc_compiles(tmp_path, _show, "for", {"a": a, "f": a.astype(np.complex64)})


def test_complex_math_functions_compile_for_the_gpu(tmp_path):
    """Every pk.exp(z), pk.sqrt(z), ... of a complex128 and a complex64 (the GPU's own
    functions, include/pkernels/complex_math.hpp; their results: test_complex_math.py on
    the host, test_cuda_complex_random.py on a GPU)."""
    for dtype in (np.complex128, np.complex64):
        a = np.ones(4, dtype)
        out = np.zeros((4, len(MATH_COLUMNS)), dtype)
        source = _nvcc_compiles(tmp_path, complex_math, "for", {"out": out, "a": a})
        assert "complex_atanh(" in source
