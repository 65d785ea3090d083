"""The kernels of ``bench_vector_width.py``: stencils, streams and reductions, each a
plain ``@pk.workunit`` with the arrays it runs on (NumPy's allocation, as a user has)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pkernels as pk


@pk.workunit
def stencil7(i, u, out):
    if i > 0 and i < u.extent(0) - 1:
        for j in range(1, u.extent(1) - 1):
            for k in range(1, u.extent(2) - 1):
                out[i, j, k] = 0.5 * u[i, j, k] + 0.1 * (
                    u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                    + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                )  # fmt: skip


@pk.workunit
def box27(i, u, out):
    if i > 0 and i < u.extent(0) - 1:
        for j in range(1, u.extent(1) - 1):
            for k in range(1, u.extent(2) - 1):
                s: float = 0.0
                for a in range(-1, 2):
                    for b in range(-1, 2):
                        s += u[i + a, j + b, k - 1] + u[i + a, j + b, k] + u[i + a, j + b, k + 1]
                out[i, j, k] = s / 27.0


@pk.workunit
def stencil13(i, u, out):
    if i > 1 and i < u.extent(0) - 2:
        for j in range(2, u.extent(1) - 2):
            for k in range(2, u.extent(2) - 2):
                out[i, j, k] = 0.4 * u[i, j, k] + 0.1 * (
                    u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                    + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                ) - 0.01 * (
                    u[i - 2, j, k] + u[i + 2, j, k] + u[i, j - 2, k]
                    + u[i, j + 2, k] + u[i, j, k - 2] + u[i, j, k + 2]
                )  # fmt: skip


@pk.workunit
def varcoef7(i, u, c, out):
    if i > 0 and i < u.extent(0) - 1:
        for j in range(1, u.extent(1) - 1):
            for k in range(1, u.extent(2) - 1):
                out[i, j, k] = u[i, j, k] + c[i, j, k] * (
                    u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                    + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1] - 6.0 * u[i, j, k]
                )  # fmt: skip


@pk.workunit
def map3d(i, a, out):
    for j in range(a.extent(1)):
        for k in range(a.extent(2)):
            out[i, j, k] = 2.0 * a[i, j, k] + 1.0


@pk.workunit
def stencil5(i, u, out):
    if i > 0 and i < u.extent(0) - 1:
        for j in range(1, u.extent(1) - 1):
            out[i, j] = 0.5 * u[i, j] + 0.125 * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
            )


@pk.workunit
def jacobi2d(i, u, f, out):
    if i > 0 and i < u.extent(0) - 1:
        for j in range(1, u.extent(1) - 1):
            out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - f[i, j])


@pk.workunit
def row_map(i, a, out):
    for j in range(a.extent(1)):
        out[i, j] = 2.0 * a[i, j] + 1.0


@pk.workunit
def matvec(i, A, x, y):
    s: float = 0.0
    for j in range(A.extent(1)):
        s += A[i, j] * x[j]
    y[i] = s


@pk.workunit
def dot(i, acc, x, y):
    acc += x[i] * y[i]


def _rand(*shape: int, dtype: Any = np.float64) -> np.ndarray:
    return np.random.default_rng(1).random(shape).astype(dtype, copy=False)


def _same(*names: str, shape: tuple[int, ...], dtype: Any = np.float64) -> Arrays:
    return lambda: {name: _rand(*shape, dtype=dtype) for name in names}


Arrays = Callable[[], dict[str, np.ndarray]]

# name -> (workunit, "for" or "reduce", its arrays, what it is)
CASES: dict[str, tuple[Any, str, Arrays, str]] = {
    "stencil7 192³": (stencil7, "for", _same("u", "out", shape=(192,) * 3), "as bench_kernels"),
    "stencil7 f32": (
        stencil7, "for", _same("u", "out", shape=(192, 192, 256), dtype=np.float32), "float32",
    ),
    "stencil7 long rows": (
        stencil7, "for", _same("u", "out", shape=(24, 24, 12290)), "24x24x12290",
    ),
    "stencil7 64³": (stencil7, "for", _same("u", "out", shape=(64,) * 3), "in L2"),
    "stencil7 96³": (stencil7, "for", _same("u", "out", shape=(96,) * 3), "in L2/L3"),
    "stencil7 320³": (stencil7, "for", _same("u", "out", shape=(320,) * 3), "2 x 262 MB"),
    "stencil7 flat": (
        stencil7, "for", _same("u", "out", shape=(768, 768, 20)), "768x768x20, short rows",
    ),
    "stencil13 192³": (stencil13, "for", _same("u", "out", shape=(192,) * 3), "radius 2"),
    "varcoef7 192³": (varcoef7, "for", _same("u", "c", "out", shape=(192,) * 3), "c[i,j,k]"),
    "map3d 192³": (map3d, "for", _same("a", "out", shape=(192,) * 3), "out = 2a + 1, 3D"),
    "box27 128³": (box27, "for", _same("u", "out", shape=(128,) * 3), "27-point box"),
    "jacobi 2048²": (jacobi2d, "for", _same("u", "f", "out", shape=(2048, 2048)), "5-point + f"),
    "stencil5 4096²": (stencil5, "for", _same("u", "out", shape=(4096, 4096)), "5-point 2D"),
    "row map 4096²": (row_map, "for", _same("a", "out", shape=(4096, 4096)), "out = 2a + 1"),
    "matvec 4096²": (
        matvec, "for", lambda: dict(A=_rand(4096, 4096), x=_rand(4096), y=_rand(4096)),
        "row sums in order",
    ),
    "dot 16M": (dot, "reduce", _same("x", "y", shape=(1 << 24,)), "parallel_reduce"),
}  # fmt: skip
