"""pk.sqrt, pk.exp, ... of a complex number as the GPU computes them
(include/pkernels/complex_math.hpp), compiled for the host with g++ and compared with
NumPy's: within a few ulps of |result| on finite arguments of every magnitude (and near
the branch points and the unit circle), and C99's infinities, zeros and NaNs where a part
is not finite. The same header runs on the GPU in tests/pkernels/test_cuda_complex.py's
kernels."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import warnings

import numpy as np
import pytest

from pkernels.build.runtime import INCLUDE_DIR
from pkernels.translate.builtin_table import COMPLEX_MATH

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

NAMES = list(COMPLEX_MATH)

# One entry point per width; fn indexes NAMES.
PROGRAM = r"""
#include <cmath>
#include <limits>
#define PK_FN inline
template <typename T> T inf_value() { return std::numeric_limits<T>::infinity(); }
template <typename T> T nan_value() { return std::numeric_limits<T>::quiet_NaN(); }
#include "pkernels/shared/complex.hpp"
#include "pkernels/complex_math.hpp"
typedef complex<double> (*F64)(complex<double>);
typedef complex<float> (*F32)(complex<float>);
static const F64 f64[] = {FUNCTIONS};
static const F32 f32[] = {FUNCTIONS};
extern "C" void apply64(int fn, const double* z, double* out, long n) {
    for (long i = 0; i < n; ++i) {
        const complex<double> r = f64[fn](complex<double>(z[2 * i], z[2 * i + 1]));
        out[2 * i] = r.re, out[2 * i + 1] = r.im;
    }
}
extern "C" void apply32(int fn, const float* z, float* out, long n) {
    for (long i = 0; i < n; ++i) {
        const complex<float> r = f32[fn](complex<float>(z[2 * i], z[2 * i + 1]));
        out[2 * i] = r.re, out[2 * i + 1] = r.im;
    }
}
""".replace("FUNCTIONS", ", ".join(f"complex_{name}" for name in NAMES))


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    build = tmp_path_factory.mktemp("complex_math")
    source = build / "complex_math.cpp"
    source.write_text(PROGRAM)
    target = build / "complex_math.so"
    # -ffp-contract=off: the GPU builds compile without fused multiply-adds too.
    subprocess.run(
        ["g++", "-O2", "-std=c++17", "-ffp-contract=off", "-fPIC", "-shared",
         f"-I{INCLUDE_DIR}", str(source), "-o", str(target)],
        check=True,
    )  # fmt: skip
    library = ctypes.CDLL(str(target))
    for entry in (library.apply64, library.apply32):
        entry.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    return library


def apply(library: ctypes.CDLL, name: str, z: np.ndarray) -> np.ndarray:
    z = np.ascontiguousarray(z)
    out = np.empty_like(z)
    entry = library.apply64 if z.dtype == np.complex128 else library.apply32
    entry(NAMES.index(name), z.ctypes.data, out.ctypes.data, z.size)
    return out


def arguments(rng: np.random.Generator, n: int) -> np.ndarray:
    """Finite arguments from 1e-300 to 1e300, and near where the functions are hard:
    the branch points +-1 and +-i, the unit circle, the axes."""
    parts = [
        (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * scale
        for scale in (1e-300, 1e-150, 1e-20, 1e-8, 1e-3, 0.5, 1, 2, 10, 1e5, 1e10, 1e100, 1e300)
    ]
    near = lambda c: c + (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * 1e-9  # noqa: E731
    parts += [near(1), near(-1), near(1j), near(-1j)]
    parts.append(np.exp(1j * rng.uniform(0, 2 * np.pi, n)) * (1 + rng.standard_normal(n) * 1e-9))
    parts += [rng.standard_normal(n) * 3 + 0j, 1j * rng.standard_normal(n) * 3]
    return np.concatenate(parts)


def relative_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| / |want| in units of the type's epsilon (where want is finite)."""
    eps = np.finfo(got.real.dtype).eps
    scale = np.where(want == 0, 1.0, np.abs(want))
    return np.abs(got.astype(np.complex128) - want.astype(np.complex128)) / scale / eps


@pytest.mark.parametrize("name", NAMES)
def test_complex128_is_within_four_ulps_of_numpys(library: ctypes.CDLL, name: str) -> None:
    z = arguments(np.random.default_rng(NAMES.index(name)), 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow where NumPy's does too
        want = getattr(np, COMPLEX_MATH[name])(z)
    got = apply(library, name, z)
    finite = np.isfinite(want)
    assert finite.mean() > 0.8  # the exp and sinh of 1e300 overflow, as they must
    error = relative_error(got[finite], want[finite])
    worst = int(np.argmax(error))
    assert error[worst] <= 4, (z[finite][worst], got[finite][worst], want[finite][worst])
    # where NumPy overflows, so does the GPU's function
    assert not np.isfinite(got[~finite]).any()


@pytest.mark.parametrize("name", NAMES)
def test_complex64_is_within_three_ulps_of_numpys(library: ctypes.CDLL, name: str) -> None:
    rng = np.random.default_rng(100 + NAMES.index(name))
    scales = np.array([1e-30, 1e-4, 0.5, 1, 3, 1e4, 1e30])
    z = (rng.standard_normal((7, 300)) + 1j * rng.standard_normal((7, 300))) * scales[:, None]
    z = z.ravel().astype(np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, COMPLEX_MATH[name])(z)
    got = apply(library, name, z)
    assert got.dtype == np.complex64
    finite = np.isfinite(want)
    error = relative_error(got[finite], want[finite])
    worst = int(np.argmax(error))
    assert error[worst] <= 3, (z[finite][worst], got[finite][worst], want[finite][worst])


def kind(v: float) -> str:
    """What C99 Annex G fixes of a part: NaN (any sign), or an infinity or zero with its
    sign, or a finite number with its sign."""
    if np.isnan(v):
        return "nan"
    sign = "-" if np.signbit(v) else "+"
    return sign + ("inf" if np.isinf(v) else "0" if v == 0 else "x")


@pytest.mark.parametrize("name", NAMES)
def test_infinite_nan_and_signed_zero_parts_give_numpys_kind_of_result(
    library: ctypes.CDLL, name: str
) -> None:
    special = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan, 800.0, -800.0]
    z = np.array([complex(a, b) for a in special for b in special])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, COMPLEX_MATH[name])(z)
    got = apply(library, name, z)
    wrong = [
        f"{name}({a!r}) = {g!r}, NumPy {w!r}"
        for a, g, w in zip(z, got, want, strict=True)
        if (kind(g.real), kind(g.imag)) != (kind(w.real), kind(w.imag))
    ]
    assert not wrong, "\n".join(wrong)
