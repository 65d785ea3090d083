"""The benchmark kernels written by hand in C++ with OpenMP, built with pkernels' release
flags (read from ``pkernels.build.toolchain``, so a change there applies here too).

Each kernel is the same algorithm as the pkernels workunit (same loop order, same
parallel loop, same per-iteration arithmetic, ``schedule(static)``), written the way a
C++ programmer would: raw pointers with row-major index arithmetic, no ``__restrict``,
no ``omp simd`` and no ``-ffast-math`` (pkernels emits none of those either). Each one
is compiled into its own shared library so its g++ time can be compared with the
pkernels cold compile of the same kernel, and is called through ctypes, like pkernels'
launchers.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# What pkernels' release builds used when this was written; the flags actually used are
# read from pkernels (src/pkernels/build/toolchain.py) so the two stay the same.
_FALLBACK_FLAGS = (
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fopenmp",
    "-std=c++17",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-w",
)


def _pkernels_release_flags() -> tuple[str, ...]:
    try:
        from pkernels.build.toolchain import COMMON_FLAGS, RELEASE_FLAGS
    except ImportError:
        return _FALLBACK_FLAGS
    return (*RELEASE_FLAGS, *COMMON_FLAGS)


CXX_FLAGS = _pkernels_release_flags()

_HEADER = """
#include <cstdint>
#define PK_EXPORT extern "C" __attribute__((visibility("default")))
"""

SOURCES: dict[str, str] = {
    "yax": r"""
// result = sum_j y[j] * sum_i A[j, i] * x[i]
PK_EXPORT double yax(int64_t N, int64_t M, const double* y, const double* x,
                     const double* A) {
    double total = 0;
    #pragma omp parallel for schedule(static) reduction(+:total)
    for (int64_t j = 0; j < N; ++j) {
        double temp2 = 0;
        for (int64_t i = 0; i < M; ++i) temp2 += A[j * M + i] * x[i];
        total += y[j] * temp2;
    }
    return total;
}
""",
    "stencil7": r"""
// out[i,j,k] = c0*u[i,j,k] + c1*(six neighbours) on the interior, parallel over i
PK_EXPORT void stencil7(int64_t n0, int64_t n1, int64_t n2, const double* u, double* out,
                        double c0, double c1) {
    const int64_t s0 = n1 * n2, s1 = n2;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 1; i < n0 - 1; ++i)
        for (int64_t j = 1; j < n1 - 1; ++j)
            for (int64_t k = 1; k < n2 - 1; ++k) {
                const int64_t c = i * s0 + j * s1 + k;
                out[c] = c0 * u[c] + c1 * (u[c - s0] + u[c + s0] + u[c - s1] + u[c + s1]
                                           + u[c - 1] + u[c + 1]);
            }
}
""",
    "lj": r"""
// Lennard-Jones forces (epsilon = sigma = 1) over a full neighbour list, parallel over i
PK_EXPORT void lj(int64_t n, int64_t maxn, const double* x, const int32_t* neigh,
                  const int32_t* counts, double* f, double cutsq) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const double xi = x[3 * i], yi = x[3 * i + 1], zi = x[3 * i + 2];
        double fx = 0, fy = 0, fz = 0;
        const int32_t* list = neigh + i * maxn;
        const int32_t count = counts[i];
        for (int32_t k = 0; k < count; ++k) {
            const int64_t j = list[k];
            const double dx = xi - x[3 * j];
            const double dy = yi - x[3 * j + 1];
            const double dz = zi - x[3 * j + 2];
            const double r2 = dx * dx + dy * dy + dz * dz;
            if (r2 < cutsq) {
                const double sr2 = 1.0 / r2;
                const double sr6 = sr2 * sr2 * sr2;
                const double fpair = 48.0 * sr6 * (sr6 - 0.5) * sr2;
                fx += dx * fpair;
                fy += dy * fpair;
                fz += dz * fpair;
            }
        }
        f[3 * i] = fx;
        f[3 * i + 1] = fy;
        f[3 * i + 2] = fz;
    }
}
""",
    "noop": r"""
// the dispatch-overhead probe: out[i] += 1 over [begin, end)
PK_EXPORT void noop(int64_t begin, int64_t end, double* out) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = begin; i < end; ++i) out[i] += 1.0;
}
""",
}

_I64, _F64, _P = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
_SIGNATURES = {
    "yax": (_F64, [_I64, _I64, _P, _P, _P]),
    "stencil7": (None, [_I64, _I64, _I64, _P, _P, _F64, _F64]),
    "lj": (None, [_I64, _I64, _P, _P, _P, _P, _F64]),
    "noop": (None, [_I64, _I64, _P]),
}


@dataclass
class HandKernel:
    name: str
    function: ctypes._CFuncPtr  # the loaded entry point, argtypes set
    compile_seconds: float
    library: Path


def compiler() -> str:
    name = os.environ.get("PKERNELS_CXX") or os.environ.get("CXX") or "g++"
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"C++ compiler {name!r} not found")
    return path


def build(name: str, directory: Path) -> HandKernel:
    """Compile the hand-written kernel ``name`` into ``directory`` and load it."""
    cpp = directory / f"hand_{name}.cpp"
    lib = directory / f"hand_{name}.so"
    cpp.write_text(_HEADER + SOURCES[name])
    start = time.perf_counter()
    proc = subprocess.run(
        [compiler(), *CXX_FLAGS, str(cpp), "-o", str(lib)],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"g++ failed on {cpp}:\n{proc.stderr}")
    fn = getattr(ctypes.CDLL(str(lib)), name)
    fn.restype, fn.argtypes = _SIGNATURES[name]
    return HandKernel(name, fn, seconds, lib)
