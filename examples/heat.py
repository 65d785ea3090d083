"""2D heat diffusion: many dispatches of two kernels, a larger program for pkdb benchmarks.

Run it:   python examples/heat.py [N] [STEPS]
"""

import sys

import numpy as np

import pkernels as pk


@pk.workunit
def diffuse(i, n, alpha, u, u_new):
    for j in range(1, n - 1):
        lap = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * u[i][j]
        u_new[i][j] = u[i][j] + alpha * lap


@pk.workunit
def heat_total(i, acc, n, u):
    for j in range(n):
        acc += u[i][j]


def run(n: int = 512, steps: int = 400) -> float:
    u = np.zeros((n, n))
    u[n // 4 : n // 2, n // 4 : n // 2] = 1.0
    u_new = u.copy()
    policy = pk.RangePolicy(pk.OpenMP, 1, n - 1)
    for _ in range(steps):
        pk.parallel_for(policy, diffuse, n=n, alpha=0.1, u=u, u_new=u_new)
        u, u_new = u_new, u
    total = pk.parallel_reduce(pk.RangePolicy(pk.OpenMP, 0, n), heat_total, n=n, u=u)
    print(f"total heat {total:.6f} after {steps} steps")
    return total


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:3]))
