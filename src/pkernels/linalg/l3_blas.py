"""Level-3 BLAS over views, as PyKokkos' ``pykokkos.linalg.l3_blas``.

``from pkernels.linalg.l3_blas import dgemm``: the product runs as a pkernels kernel on
the default execution space (OpenMP threads, a GPU for CuPy arrays when the default space
is ``pk.Cuda``), one row of the result per index.
"""

from __future__ import annotations

from typing import Any

from ..api.decorators import workunit
from ..api.views import View
from ..runtime.dispatch import parallel_for


@workunit
def _dgemm_rows(i, k_a, alpha, view_a, view_b, out):
    for j in range(out.extent(1)):
        total: float = 0.0
        for k in range(k_a):
            total += view_a[i, k] * view_b[k, j]
        out[i, j] = alpha * total


@workunit
def _dgemm_rows_plus_c(i, k_a, alpha, beta, view_a, view_b, view_c, out):
    for j in range(out.extent(1)):
        total: float = 0.0
        for k in range(k_a):
            total += view_a[i, k] * view_b[k, j]
        out[i, j] = alpha * total + beta * view_c[i, j]


def dgemm(
    alpha: float,
    view_a: Any,
    view_b: Any,
    beta: float = 0.0,
    view_c: Any = None,
    league_size: int = 4,
    tile_width: int | None = None,
) -> Any:
    """``alpha * A @ B`` (``+ beta * C`` when ``view_c`` is given) as a new float64 view of
    shape ``(m, n)``, for ``A`` of shape ``(m, k)`` and ``B`` ``(k, n)``; a ValueError
    when their inner extents differ. PyKokkos' tiling arguments (``league_size``,
    ``tile_width``) choose its team kernel; they are accepted here and change nothing
    in the result."""
    k_a, k_b = view_a.shape[1], view_b.shape[0]
    if k_a != k_b:
        raise ValueError(
            f"Second dimensions shape of a is {k_a} which does not match first dimension "
            f"shape of b, {k_b}."
        )
    out = View([view_a.shape[0], view_b.shape[1]], float)
    common = {"k_a": k_a, "alpha": float(alpha), "view_a": view_a, "view_b": view_b, "out": out}
    if view_c is None:
        parallel_for("dgemm", view_a.shape[0], _dgemm_rows, **common)
    else:
        if tuple(view_c.shape) != tuple(out.shape):
            raise ValueError(f"view_c has shape {tuple(view_c.shape)}, the product {out.shape}")
        parallel_for(
            "dgemm", view_a.shape[0], _dgemm_rows_plus_c, beta=float(beta), view_c=view_c, **common
        )
    return out
