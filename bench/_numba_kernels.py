"""The benchmark kernels in Numba: ``@njit(parallel=True)`` with ``prange`` over the same
axis the pkernels workunit is dispatched over, same loop order and arithmetic, Numba's
defaults otherwise (no ``fastmath``, no bounds checks). Importing this module raises
ImportError when Numba is not installed.
"""

from __future__ import annotations

from numba import njit, prange


@njit(parallel=True)
def yax(y, x, A):
    N, M = A.shape
    total = 0.0
    for j in prange(N):
        temp2 = 0.0
        for i in range(M):
            temp2 += A[j, i] * x[i]
        total += y[j] * temp2
    return total


@njit(parallel=True)
def stencil7(u, out, c0, c1):
    n0, n1, n2 = u.shape
    for i in prange(1, n0 - 1):
        for j in range(1, n1 - 1):
            for k in range(1, n2 - 1):
                out[i, j, k] = c0 * u[i, j, k] + c1 * (
                    u[i - 1, j, k]
                    + u[i + 1, j, k]
                    + u[i, j - 1, k]
                    + u[i, j + 1, k]
                    + u[i, j, k - 1]
                    + u[i, j, k + 1]
                )


@njit(parallel=True)
def lj(x, neigh, counts, f, cutsq):
    n = x.shape[0]
    for i in prange(n):
        xi = x[i, 0]
        yi = x[i, 1]
        zi = x[i, 2]
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for k in range(counts[i]):
            j = neigh[i, k]
            dx = xi - x[j, 0]
            dy = yi - x[j, 1]
            dz = zi - x[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < cutsq:
                sr2 = 1.0 / r2
                sr6 = sr2 * sr2 * sr2
                fpair = 48.0 * sr6 * (sr6 - 0.5) * sr2
                fx += dx * fpair
                fy += dy * fpair
                fz += dz * fpair
        f[i, 0] = fx
        f[i, 1] = fy
        f[i, 2] = fz


@njit(parallel=True)
def noop(out):
    for i in prange(out.shape[0]):
        out[i] += 1.0
