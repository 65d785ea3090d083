"""Diffusion kernels shared by the bounds-proof and hybrid-build tests (the same
algorithm as examples/heat.py, which stands alone)."""

import pkernels as pk


@pk.workunit
def diffuse(i, n, alpha, u, u_new):
    for j in range(1, n - 1):
        lap = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * u[i][j]
        u_new[i][j] = u[i][j] + alpha * lap


@pk.workunit
def total(i, acc, n, u):
    for j in range(n):
        acc += u[i][j]


@pk.workunit
def laplacian_2d(i, j, u, out):
    out[i][j] = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * u[i][j]
